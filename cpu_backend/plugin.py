"""verl plugin module for CPU runs: importing it calls :func:`cpu_backend.activate` when a CPU run is requested.

``launch.plugin`` (this package's ``verl.plugins`` entry point) imports it, so ``VERL_PLATFORM=cpu`` (or
``RLVR_CPU=1``) is all a run needs. Without the entry point (``VERL_USE_EXTERNAL_PLUGINS=none``, or this package
on ``PYTHONPATH`` only) the same comes from ``VERL_USE_EXTERNAL_MODULES=cpu_backend.plugin``.
"""

from cpu_backend import activate, requested

if requested():
    activate()
