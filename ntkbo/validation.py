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


def check_acquisition_options(num_candidates, num_restarts, num_acq_steps, acq_method,
                              methods) -> None:
    """The options of ``ntkbo.optimize.maximize_acquisition`` as the algorithm factories name them:
    ``num_candidates`` and ``num_restarts`` ints ``>= 1`` with ``num_restarts <= num_candidates``,
    ``num_acq_steps`` an int ``>= 0`` and ``acq_method`` one of the strings ``methods``."""
    check_int("num_candidates", num_candidates, 1)
    check_int("num_restarts", num_restarts, 1)
    if num_restarts > num_candidates:
        raise ValueError(f"num_restarts must be <= num_candidates={num_candidates}, "
                         f"got {num_restarts}")
    check_int("num_acq_steps", num_acq_steps, 0)
    check_choice("acq_method", acq_method, methods)
