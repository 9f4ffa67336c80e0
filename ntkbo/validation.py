"""Argument checks made once, outside ``jit``: each raises ``ValueError`` naming the argument.

The one validation layer of ntkbo. Used by the algorithm factories (their options), every
algorithm's ``init`` (:func:`check_bounds`), ``ntkbo.data.append`` (the shapes ``update`` is
given, and a batch that does not fit), the drivers (``ntkbo.loop``, ``ntkbo.ask_tell``) and the
command line (``ntkbo run``). Checks of *values* need concrete arrays: under ``jit`` or ``vmap``
only the shapes are checked (inside ``jit`` failures are values, not exceptions; ``ntkbo.data``).

Observations are not validated for finiteness: a NaN or infinite ``y`` is a *failed evaluation*,
kept and excluded from every model (``ntkbo.data``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
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


def check_number(name: str, value, low: float | None = None, high: float | None = None,
                 allow_low: bool = True) -> float:
    """``value`` must be a finite real number (not a bool) in ``[low, high]`` (``(low, high]`` if
    not ``allow_low``); returns it as float."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (v < low or (v == low and not allow_low)):
        raise ValueError(f"{name} must be {'>=' if allow_low else '>'} {low}, got {value!r}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}")
    return v


def concrete(x) -> np.ndarray | None:
    """``x`` as a numpy array, or ``None`` if it is a tracer (under ``jit``/``vmap``)."""
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def check_bounds(bounds, name: str = "bounds") -> jax.Array:
    """The box ``bounds`` ``(2, d)`` (lower row, upper row) as a float array of the default float
    dtype, after checking its shape (``d >= 1``) and, when concrete, that every bound is finite
    and every lower bound is strictly below its upper bound, *in that dtype* (a box that rounds to
    zero width in float32 is degenerate there). ``ValueError`` naming ``name`` otherwise."""
    b = jnp.asarray(bounds, jnp.result_type(float))
    if b.ndim != 2 or b.shape[0] != 2 or b.shape[1] < 1:
        raise ValueError(f"{name} must have shape (2, d) with d >= 1 (lower row, upper row), "
                         f"got shape {b.shape}")
    v = concrete(b)
    if v is not None:
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must be finite, got {v.tolist()}")
        bad = np.flatnonzero(~(v[0] < v[1]))
        if bad.size:
            raise ValueError(
                f"{name}: every lower bound must be strictly below its upper bound; dimensions "
                f"{bad.tolist()} have lower {v[0, bad].tolist()} >= upper {v[1, bad].tolist()} "
                f"(in {v.dtype})")
    return b


def check_writable_folder(name: str, path) -> str:
    """Creates the folder ``path`` if needed and checks that a file can be written in it, so that a
    run fails *before* it starts rather than losing its results at the end. ``ValueError`` naming
    ``name`` otherwise; returns the path."""
    import os
    import tempfile

    path = os.fspath(path)
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".ntkbo-write-test-"):
            pass
    except OSError as err:
        raise ValueError(f"{name}: cannot write to the folder {path!r} ({err.strerror or err})"
                         ) from None
    return path


def check_told(x, y, n_constraints: int = 0) -> None:
    """The shapes ``update`` is given (static, so checked under ``jit`` too): ``x`` ``(q, d)`` and
    ``y`` ``(q,)``, or ``(q, 1 + K)`` for an algorithm with ``n_constraints = K > 0``. Values are
    not checked: a NaN or infinite ``y`` is a failed evaluation (``ntkbo.data``)."""
    q = np.shape(x)[0] if np.ndim(x) == 2 else 1
    want = (q,) if not n_constraints else (q, 1 + n_constraints)
    if int(np.size(y)) != int(np.prod(want)):
        raise ValueError(f"y must have shape {want} for x of shape {np.shape(x)} (objective"
                         f"{', then the constraints' if n_constraints else ''}), got "
                         f"{np.shape(y)}")
