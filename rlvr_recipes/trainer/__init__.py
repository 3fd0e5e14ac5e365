"""verl's trainer, extended: ``trainer.v1.trainer_mode=rlvr`` (:mod:`rlvr_recipes.trainer.extension`, docs/trainer.md)."""
