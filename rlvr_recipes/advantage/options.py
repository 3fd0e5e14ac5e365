"""Reading and checking each method's options under ``algorithm.<name>.*``.

verl hands estimators ``config=self.config.algorithm`` (an OmegaConf ``DictConfig`` in the trainer, an ``AlgoConfig``
dataclass or None elsewhere). Each method keeps its options in its own sub-section, e.g.
``algorithm.agrae.alpha=0.5`` (``+algorithm.agrae.alpha=0.5`` on the stock command line, where the stock config has
no such section; this package's recipe configs declare every section so no ``+`` is needed). Missing keys take the
papers' defaults; unknown keys and invalid values raise at the first call, naming the full key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


class OptionError(ValueError):
    """An invalid ``algorithm.<name>.<key>`` value; the message names the key."""


def config_get(config: Any, key: str, default: Any = None) -> Any:
    """``config[key]`` for a DictConfig, a verl ``BaseConfig`` dataclass, a dict or None."""
    if config is None:
        return default
    getter = getattr(config, "get", None)
    if callable(getter):
        try:
            value = getter(key, default)
        except Exception:  # omegaconf raises for missing keys in struct mode
            value = default
        return default if value is None else value
    return getattr(config, key, default)


def norm_adv_by_std(config: Any) -> bool:
    """GRPO (True) or Dr.GRPO (False) base, from verl's ``algorithm.norm_adv_by_std_in_grpo``."""
    return bool(config_get(config, "norm_adv_by_std_in_grpo", True))


def _to_plain(section: Any) -> dict[str, Any]:
    if section is None:
        return {}
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(section, DictConfig):
            return dict(OmegaConf.to_container(section, resolve=True))
    except ImportError:  # pragma: no cover
        pass
    if isinstance(section, Mapping):
        return dict(section)
    raise OptionError(f"expected a mapping of options, got {type(section).__name__}")


def read_options(cls: type[T], config: Any, section: str) -> T:
    """Build the options dataclass ``cls`` from ``config.<section>``, with defaults for what is missing.

    Unknown keys are an error naming ``algorithm.<section>.<key>`` and listing the valid ones; the dataclass's own
    ``validate`` (if any) names the bad key too.
    """
    raw = _to_plain(config_get(config, section, None))
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - names)
    if unknown:
        raise OptionError(
            f"unknown option(s) {', '.join(f'algorithm.{section}.{k}' for k in unknown)}; "
            f"valid keys: {', '.join(sorted(names))}"
        )
    kwargs = {k: v for k, v in raw.items() if v is not None}
    opts = cls(**kwargs)
    validate = getattr(opts, "validate", None)
    if callable(validate):
        validate(section)
    return opts


def require(condition: bool, section: str, key: str, value: Any, rule: str) -> None:
    """Raise :class:`OptionError` naming ``algorithm.<section>.<key>`` unless ``condition`` holds."""
    if not condition:
        raise OptionError(f"algorithm.{section}.{key}={value!r} is invalid: {rule}")


def check_range(section: str, key: str, value: Any) -> tuple[float, float]:
    """Validate a ``[lo, hi]`` pair with ``lo < hi``."""
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise OptionError(f"algorithm.{section}.{key}={value!r} is invalid: expected [low, high]") from None
    require(lo < hi, section, key, value, "the low bound must be below the high bound")
    return lo, hi


def option_defaults(cls: type) -> dict[str, Any]:
    """``{key: default}`` of an options dataclass, for docs and recipe configs."""
    return {f.name: getattr(cls(), f.name) for f in fields(cls)}
