"""Argument checks made once, outside ``jit``: each raises ``ValueError`` naming the argument."""

from __future__ import annotations

import math

import numpy as np


def check_choice(name: str, value, choices) -> None:
    """``value`` must be one of the strings ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_int(name: str, value, low: int) -> None:
    """``value`` must be an int (not a bool) ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """``value`` must be a finite number ``> 0`` (``>= 0`` with ``allow_zero``); returns it as float."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        op = ">=" if allow_zero else ">"
        raise ValueError(f"{name} must be finite and {op} 0, got {value!r}")
    return v
