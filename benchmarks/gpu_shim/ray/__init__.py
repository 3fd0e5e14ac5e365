"""A stand-in for Ray on a GPU machine that has none (benchmarks/gpu_check.py): ``import verl`` imports Ray at the
top of ``verl.protocol``; nothing that gpu_check runs calls it. Every attribute is a permissive placeholder."""

IS_STAND_IN = True


class _Anything:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:  # used as a decorator
            return args[0]
        return _Anything()

    def __getattr__(self, name):
        return _Anything()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Anything
