"""verl's trainer, extended: ``trainer.v1.trainer_mode=rlvr`` (:mod:`trainer.extension`, docs/trainer.md)."""
