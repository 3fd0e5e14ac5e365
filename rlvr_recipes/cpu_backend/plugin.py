"""verl plugin module for CPU runs: importing it calls :func:`rlvr_recipes.cpu_backend.activate` when a CPU run is requested.

``rlvr_recipes.launch.plugin`` (this package's ``verl.plugins`` entry point) imports it, so ``VERL_PLATFORM=cpu`` (or
``RLVR_CPU=1``) is all a run needs. Without the entry point (``VERL_USE_EXTERNAL_PLUGINS=none``, or this package
on ``PYTHONPATH`` only) the same comes from ``VERL_USE_EXTERNAL_MODULES=rlvr_recipes.cpu_backend.plugin``.
"""

from rlvr_recipes.cpu_backend import activate, requested

if requested():
    activate()
