"""Group-relative advantage estimators, policy losses and collapse diagnostics for verl.

Importing ``verl`` registers everything through the ``verl.plugins`` entry point (:mod:`launch.plugin`):
estimators in :mod:`advantage.estimators`, losses in :mod:`advantage.losses`. The verl-free pieces (group
statistics, diagnostics, estimator state) are importable on their own.
"""

from advantage.core import GroupStats, base_advantage, group_index, group_stats, outcome_scores
from advantage.diagnostics import ACRTracker, advantage_collapse_rate, batch_diagnostics

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
