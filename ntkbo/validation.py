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

import inspect
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
    """``value`` must be a finite number ``> 0`` (``>= 0`` with ``allow_zero``), not a string or a
    bool; returns it as float."""
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name} must be a number, got {value!r}")
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
    """``value`` must be a finite real number (not a bool, not a string) in ``[low, high]``
    (``(low, high]`` if not ``allow_low``); returns it as float."""
    if isinstance(value, (str, bytes, bool, np.bool_)):
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


# ---------------------------------------------------------------------------------------------
# Typed options: one rule for every way an option arrives (a call, ``--set``, a TOML file).

#: The spellings of a boolean option that the command line (``--set``) and TOML files accept.
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def option_kinds(annotation) -> frozenset[str]:
    """The kinds of value an option annotated ``annotation`` (a type, or a union of types) takes:
    ``"bool"``, ``"int"``, ``"float"``, ``"str"``, ``"none"``, and ``"other"`` for any other type
    (a callable, a ``Pde``). Empty for an option without an annotation (not checked here)."""
    import types
    import typing

    if annotation is None or annotation is inspect.Parameter.empty:
        return frozenset()
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    out = set()
    for a in typing.get_args(annotation) if union else (annotation,):
        out.add({bool: "bool", int: "int", float: "float", str: "str",
                 type(None): "none"}.get(a, "other"))
    return frozenset(out)


def _expected(kinds: frozenset[str]) -> str:
    words = []
    if "bool" in kinds:
        words += ["True", "False"]
    if "int" in kinds and "float" not in kinds:
        words.append("an int")
    if "float" in kinds:
        words.append("a number")
    if "str" in kinds:
        words.append("a string")
    if "other" in kinds:
        words.append("a callable or another value its documentation names")
    if "none" in kinds:
        words.append("None")
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]


def check_option(name: str, value, kinds: frozenset[str]) -> None:
    """The type rule of an option whose annotation has ``kinds`` (``option_kinds``): a boolean
    option takes only ``True``/``False`` (never a string, a number or ``None`` read for its truth),
    a numeric one never a string or a bool, an ``int`` one only an integer, a string only where
    the annotation has ``str``, ``None`` only where it has ``None``. ``ValueError`` naming
    ``name`` and what it takes; the factory checks ranges and choices after this."""
    if not kinds:
        return
    numeric = kinds & {"int", "float"}
    if value is None:
        ok = "none" in kinds or "other" in kinds
    elif isinstance(value, (bool, np.bool_)):
        ok = "bool" in kinds
    elif isinstance(value, (str, bytes)):
        ok = "str" in kinds
    elif isinstance(value, (int, np.integer)):
        ok = bool(numeric) or "other" in kinds
    elif isinstance(value, (float, np.floating)):
        ok = "float" in kinds or "other" in kinds
    else:  # a sequence, an array, a callable: the factory's own checks
        ok = not (kinds <= {"bool", "none"} or kinds <= {"bool", "str", "none"})
    if not ok:
        raise ValueError(f"{name} must be {_expected(kinds)}, got {value!r}")


def parse_option_text(name: str, value, kinds: frozenset[str]):
    """``value`` of an option with ``kinds`` as written in text (``--set``, a TOML file): for a
    boolean option, the words ``TRUE_WORDS`` / ``FALSE_WORDS`` (any case) and the integers 1 / 0
    are ``True`` / ``False``; any other string is left for ``check_option`` to refuse (so a typo
    such as ``"flase"`` is an error naming ``name``, never read for its truth). Other values are
    returned as they are, except a number written as text for a numeric option that takes no
    string (``nan``, ``inf``, which ``--set`` cannot read as a Python literal): its float, for the
    factory's range check."""
    del name
    if isinstance(value, str) and "float" in kinds and not kinds & {"str", "bool"}:
        try:
            return float(value)
        except ValueError:
            return value
    if "bool" not in kinds:
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    elif (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
          and not kinds & {"int", "float"} and value in (0, 1)):
        return bool(value)
    return value


# ---------------------------------------------------------------------------------------------
# Observations told to an algorithm: the same rule for ``update`` called with concrete arrays and
# for ``ntkbo.ask_tell.tell``.


def real_array(name: str, value) -> np.ndarray | None:
    """``value`` as a numpy array if it is concrete (``None`` under ``jit``/``vmap``), after
    checking that it holds real numbers: integers or floats, not bools, complex numbers, strings
    or objects. ``ValueError`` naming ``name`` otherwise (also for a traced value of such a
    dtype, whose dtype is known when traced)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and not isinstance(value, np.ndarray):
        _check_real_dtype(name, np.dtype(dtype), value)
    try:
        v = concrete(value)
    except (TypeError, ValueError):  # a ragged nesting of lists
        raise ValueError(f"{name} must be an array of real numbers, got {_short(value)}") from None
    if v is None:
        return None
    if v.dtype == object:
        try:
            v = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold real numbers, got {value!r}") from None
    _check_real_dtype(name, v.dtype, value)
    return v


def _check_real_dtype(name: str, dtype: np.dtype, value) -> None:
    if dtype == np.bool_ or dtype.kind not in "iuf":
        what = {"b": "bools", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(
            dtype.kind, f"values of dtype {dtype}")
        shown = repr(value) if np.size(value) <= 8 else f"an array of shape {np.shape(value)}"
        raise ValueError(f"{name} must hold real numbers (ints or floats), got {what}: {shown}")


def check_fits_dtype(name: str, v: np.ndarray, dtype) -> None:
    """Finite values of ``v`` must stay finite in ``dtype``: a value that would overflow to an
    infinity (``1e39`` in float32) is refused, never recorded as a failed evaluation."""
    v = np.asarray(v)
    if v.dtype.kind not in "iuf" or np.dtype(dtype).kind != "f":
        return
    with np.errstate(over="ignore", invalid="ignore"):
        lost = np.isfinite(v) & ~np.isfinite(v.astype(dtype))
    if np.any(lost):
        where = np.argwhere(lost).tolist()
        raise ValueError(
            f"{name} at {where} ({v[lost].tolist()}) overflows the state's dtype {np.dtype(dtype)} "
            f"(largest finite value {float(np.finfo(dtype).max):.4g}): rescale the objective or "
            "enable jax_enable_x64; nothing was recorded")


def check_update(x, y, *, dim: int, dtype, n_constraints: int = 0) -> None:
    """What ``algo.update(state, x, y)`` is given, against a state of ``dim`` inputs stored in
    ``dtype``: ``x`` ``(q, d)`` (or one point ``(d,)``) of real numbers and ``y`` ``(q,)``
    (``(q, 1 + K)`` with ``K = n_constraints``) of real numbers; where they are concrete (an
    eager call, ``ntkbo.ask_tell``), every ``x`` finite and no finite ``y`` that overflows
    ``dtype``. A NaN or infinite ``y`` is a failed evaluation and accepted. Shapes and dtypes are
    checked under ``jit`` too (they are static). ``ValueError`` naming the argument."""
    shape = np.shape(x)
    if not (len(shape) == 2 and shape[1] == dim or len(shape) == 1 and shape[0] == dim):
        raise ValueError(f"x must have shape (q, {dim}) (or ({dim},) for one point), got "
                         f"{shape}; nothing was recorded")
    xv = real_array("x", x)
    yv = real_array("y", y)
    check_told(np.zeros(shape if len(shape) == 2 else (1, dim)), y, n_constraints)
    if xv is not None and not np.all(np.isfinite(xv)):
        rows = np.flatnonzero(~np.all(np.isfinite(xv.reshape(-1, dim)), axis=1)).tolist()
        raise ValueError(f"x rows {rows} hold NaN or inf (a point must be finite; a failed "
                         "evaluation is a NaN y); nothing was recorded")
    if xv is not None:
        check_fits_dtype("x", xv, dtype)
    if yv is not None:
        check_fits_dtype("y", yv, dtype)


# ---------------------------------------------------------------------------------------------
# Problems: what the drivers read of one, checked before anything reads it.


def check_problem(problem, name: str = "problem") -> None:
    """``problem`` must be a problem (``ntkbo.benchmarks.Problem``, or any object with a callable
    ``fn`` and ``bounds``): ``bounds`` an array (jax or numpy) of shape ``(2, d)``, and, where
    concrete, ``noise_std`` (and ``constraint_noise_std``) finite and ``>= 0``. ``ValueError``
    naming ``name`` and the attribute otherwise, before anything reads it."""
    fn = getattr(problem, "fn", None)
    bounds = getattr(problem, "bounds", None)
    if not callable(fn) or bounds is None:
        if isinstance(problem, str):
            write = (f"a registered problem by name is ntkbo.benchmarks.get({problem!r}) (dim=... "
                     "for those of any dimension); your own is ntkbo.benchmarks.Problem(name=..., "
                     "fn=..., bounds=...)")
        elif callable(problem):
            write = ("a function needs its bounds: ntkbo.benchmarks.Problem(name=\"mine\", "
                     "fn=f, bounds=jnp.array([lower, upper])) for a JAX function of one point "
                     "x (d,) -> (), ntkbo.benchmarks.numpy_problem(f, bounds) for a numpy one")
        else:
            write = ("build one with ntkbo.benchmarks.Problem(name=..., fn=..., bounds=...) or "
                     "ntkbo.benchmarks.numpy_problem(fn, bounds)")
        raise ValueError(
            f"{name} must be an ntkbo.benchmarks.Problem (or have a callable fn and bounds), got "
            f"{type(problem).__name__} {_short(problem)}; {write}")
    if not (hasattr(bounds, "shape") and hasattr(bounds, "dtype")):
        raise ValueError(f"{name}.bounds must be an array of shape (2, d) (jax.numpy.asarray of "
                         f"the lower and upper rows), got a {type(bounds).__name__}")
    if getattr(bounds, "dtype", None) is not None and np.dtype(bounds.dtype).kind not in "iuf":
        raise ValueError(f"{name}.bounds must hold real numbers, got dtype {bounds.dtype}")
    for attr in ("noise_std", "constraint_noise_std"):
        value = getattr(problem, attr, 0.0)
        if value is None:
            continue
        if isinstance(value, (str, bytes, bool, np.bool_)):
            raise ValueError(f"{name}.{attr} must be a number >= 0, got {value!r}")
        v = concrete(value)
        if v is None:
            continue
        if v.dtype.kind not in "iuf":
            raise ValueError(f"{name}.{attr} must be a number >= 0, got {value!r}")
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            raise ValueError(f"{name}.{attr} must be finite and >= 0 (the standard deviation "
                             f"of the observation noise), got {v.tolist()}")


def check_output(name: str, shape_dtype) -> None:
    """An objective's traced output (``jax.eval_shape``) must be real: floats, or integers (the
    drivers convert those to the float dtype exactly as ``astype`` does); a bool or a complex
    output is refused with a ``ValueError`` naming ``name``."""
    dtype = np.dtype(shape_dtype.dtype)
    if dtype == np.bool_ or dtype.kind not in "iuf":
        raise ValueError(f"{name} must return a real number (a float), got dtype {dtype}: "
                         "return the objective's value as a float")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
