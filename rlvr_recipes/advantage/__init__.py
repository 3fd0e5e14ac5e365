"""Group-relative advantage estimators, policy losses and collapse diagnostics for verl.

Importing ``verl`` registers everything through the ``verl.plugins`` entry point (:mod:`rlvr_recipes.launch.plugin`):
estimators in :mod:`rlvr_recipes.advantage.estimators`, losses in :mod:`rlvr_recipes.advantage.losses`. The verl-free pieces (group
statistics, diagnostics, estimator state) are importable on their own.
"""

from rlvr_recipes.advantage.core import GroupStats, base_advantage, group_index, group_stats, outcome_scores
from rlvr_recipes.advantage.diagnostics import ACRTracker, advantage_collapse_rate, batch_diagnostics

__all__ = [
    "GroupStats",
    "base_advantage",
    "group_index",
    "group_stats",
    "outcome_scores",
    "ACRTracker",
    "advantage_collapse_rate",
    "batch_diagnostics",
]
