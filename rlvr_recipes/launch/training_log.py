"""Per-step metrics of a verl run, read back from its logs.

Two formats, detected line by line (so a console capture with other output mixed in works):

- verl's file logger (``trainer.logger=[file]``, ``verl.utils.tracking.FileLogger``): one JSON object per line,
  ``{"step": 3, "data": {"critic/score/mean": 0.41, ...}}``; written to ``$VERL_FILE_LOGGER_PATH`` or
  ``<$VERL_FILE_LOGGER_ROOT>/<project>/<experiment>.jsonl``.
- verl's console logger (``trainer.logger=[console]``, ``verl.utils.logger.aggregate_logger.LocalLogger``):
  ``step:3 - critic/score/mean:0.41 - actor/entropy:np.float64(0.52) - ...``, possibly after a Ray prefix such as
  ``(TaskRunner pid=123)``.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from typing import Optional

Curves = dict[str, list[tuple[int, float]]]

#: Panels of the training-curve plot: label -> metric names, first one logged wins.
DEFAULT_PANELS: dict[str, tuple[str, ...]] = {
    "reward": ("critic/score/mean", "critic/rewards/mean", "acr/reward_mean"),
    "ACR": ("acr/acr",),
    "entropy": ("actor/entropy",),
}

_CONSOLE_STEP = re.compile(r"\bstep:(\d+)\s*(?: - |$)")
_WRAPPED_NUMBER = re.compile(r"^(?:np\.|numpy\.)?\w*\((.*)\)$")  # np.float64(0.5), tensor(0.5)


def _number(text: str) -> Optional[float]:
    text = text.strip()
    wrapped = _WRAPPED_NUMBER.match(text)
    if wrapped:
        text = wrapped.group(1).split(",")[0].strip()
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def _parse_json_line(line: str) -> Optional[tuple[int, dict]]:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or "step" not in entry:
        return None
    data = entry.get("data", {k: v for k, v in entry.items() if k != "step"})
    return (int(entry["step"]), data) if isinstance(data, dict) else None


def _parse_console_line(line: str) -> Optional[tuple[int, dict]]:
    m = _CONSOLE_STEP.search(line)
    if not m:
        return None
    data = {}
    for part in line[m.end() :].split(" - "):
        key, sep, value = part.partition(":")
        if not sep:
            continue
        number = _number(value)
        if number is not None:
            data[key.strip()] = number
    return int(m.group(1)), data


def read_training_log(path: str) -> Curves:
    """``{metric: [(step, value), ...]}`` from a file-logger JSONL or a console log; non-numeric values skipped.

    Raises:
        ValueError: when no line of ``path`` holds metrics in either format.
    """
    curves: Curves = defaultdict(list)
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            parsed = _parse_json_line(line) if line.startswith("{") else _parse_console_line(line)
            if parsed is None:
                continue
            step, data = parsed
            for key, value in data.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                if math.isfinite(value):
                    curves[key].append((step, float(value)))
    if not curves:
        raise ValueError(f"{path}: no metrics found (expected verl file-logger JSON lines or console 'step:N - ...')")
    return dict(curves)


def pick_panels(curves: Curves, panels: dict[str, tuple[str, ...]] = DEFAULT_PANELS) -> dict[str, str]:
    """``{panel label: the first of its metric names present in curves}``; panels with none are left out."""
    chosen = {}
    for label, names in panels.items():
        name = next((n for n in names if n in curves), None)
        if name is not None:
            chosen[label] = name
    return chosen
