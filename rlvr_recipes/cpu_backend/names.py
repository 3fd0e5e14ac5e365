"""Names a CPU run is selected by (imported by the package and by :mod:`rlvr_recipes.cpu_backend.platform`, so neither imports the other)."""

#: ``VERL_PLATFORM`` value (and verl platform name) of CPU runs.
PLATFORM_NAME = "cpu"
#: ``actor_rollout_ref.rollout.name`` of the Hugging Face rollout.
ROLLOUT_NAME = "hf"
