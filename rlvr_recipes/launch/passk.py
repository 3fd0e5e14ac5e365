"""Unbiased pass@k and the per-benchmark / overall averages the papers report.

pass@k of one problem with ``n`` samples of which ``c`` are correct (A-GRAE paper 001 App. C.2, Eq. 37; two-stage
paper 004 Sec. 4, k up to 256)::

    pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i)

The product form has no factorials: every factor is in [0, 1), so it neither overflows nor cancels, for any n.
The benchmark figure is the mean over its problems; the overall figure is weighted by problem count (the ACR
paper's "total correct answers over total problems", 000 App. A.3), with the unweighted mean of benchmarks beside it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np


def pass_at_k(n: Any, c: Any, k: int) -> np.ndarray:
    """Unbiased pass@k per problem, vectorised over problems.

    Args:
        n: ``(P,)`` samples per problem, each ``>= k``.
        c: ``(P,)`` correct samples per problem, ``0 <= c <= n``.
        k: attempts, ``>= 1``.

    Returns:
        ``(P,)`` float64 in [0, 1].
    """
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c = np.atleast_1d(np.asarray(c, dtype=np.int64))
    if n.shape != c.shape:
        raise ValueError(f"pass@{k}: n and c differ in shape ({n.shape} vs {c.shape})")
    if k < 1:
        raise ValueError(f"pass@k needs k >= 1, got {k}")
    if n.size and ((n < k).any() or (c < 0).any() or (c > n).any()):
        bad = int(np.flatnonzero((n < k) | (c < 0) | (c > n))[0])
        raise ValueError(f"pass@{k} needs k <= n and 0 <= c <= n; problem {bad} has n={n[bad]}, c={c[bad]}")
    out = np.zeros(n.shape, dtype=np.float64)
    if not n.size:
        return out
    width = int(c.max())
    if width:
        # factor j of problem p: 1 - k / (n_p - c_p + 1 + j) for j < c_p, else 1 (padding)
        steps = np.arange(width, dtype=np.int64)
        denom = (n - c + 1)[:, None] + steps[None, :]
        factors = np.where(steps[None, :] < c[:, None], 1.0 - k / np.maximum(denom, 1), 1.0)
        out = 1.0 - np.prod(np.clip(factors, 0.0, 1.0), axis=1)
    return np.where(n - c < k, np.where(c > 0, 1.0, 0.0), out)


def default_ks(n: int) -> list[int]:
    """1, 2, 4, ... up to ``n`` (and ``n`` itself): the k grid of 001 Fig. 7-8 and 004 Table 1."""
    ks = [1 << i for i in range(max(n, 1).bit_length()) if (1 << i) <= n]
    return ks + ([n] if n not in ks and n > 0 else [])


def summarise(rows: Iterable[Mapping[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """pass@k and greedy accuracy per benchmark, and overall (weighted by problem count, and macro).

    Args:
        rows: one per problem: ``data_source``, ``n``, ``c`` and optionally ``greedy_correct`` (0/1 or None).
        ks: the k values; a benchmark reports pass@k only if every one of its problems has ``n >= k``, the overall
            figure only if every benchmark reports it.

    Returns:
        ``{"k": [...], "benchmarks": {source: {"problems", "samples_min", "samples_max", "pass@k"...,
        "greedy_acc"}}, "overall": {"problems", "weighted": {...}, "macro": {...}}}``.
    """
    by_source: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for i, r in enumerate(rows):
        for key in ("data_source", "n", "c"):
            if key not in r:
                raise ValueError(f"score row {i} lacks {key!r} (has {sorted(r)})")
        by_source[str(r["data_source"])].append(r)
    ks = sorted({int(k) for k in ks})
    benchmarks: dict[str, dict[str, Any]] = {}
    per_problem: dict[str, dict[str, np.ndarray]] = {}
    for source in sorted(by_source):
        group = by_source[source]
        n = np.array([int(r["n"]) for r in group])
        c = np.array([int(r["c"]) for r in group])
        entry: dict[str, Any] = {"problems": len(group), "samples_min": int(n.min()), "samples_max": int(n.max())}
        values: dict[str, np.ndarray] = {}
        for k in ks:
            if (n >= k).all():
                values[f"pass@{k}"] = pass_at_k(n, c, k)
                entry[f"pass@{k}"] = float(values[f"pass@{k}"].mean())
        greedy = [r.get("greedy_correct") for r in group]
        if all(g is not None for g in greedy) and greedy:
            values["greedy_acc"] = np.array([float(g) for g in greedy])
            entry["greedy_acc"] = float(values["greedy_acc"].mean())
        benchmarks[source] = entry
        per_problem[source] = values
    weighted: dict[str, float] = {}
    macro: dict[str, float] = {}
    metrics = [f"pass@{k}" for k in ks] + ["greedy_acc"]
    for m in metrics:
        if benchmarks and all(m in per_problem[s] for s in benchmarks):
            weighted[m] = float(np.concatenate([per_problem[s][m] for s in benchmarks]).mean())
            macro[m] = float(np.mean([benchmarks[s][m] for s in benchmarks]))
    total = sum(b["problems"] for b in benchmarks.values())
    return {"k": ks, "benchmarks": benchmarks, "overall": {"problems": total, "weighted": weighted, "macro": macro}}
