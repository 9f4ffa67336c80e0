"""Benchmark suites: fixed lists of problems for tuning and reporting.

``suite("dev")`` is the public development suite: 14 problems from d = 2 to d = 20, built from the
registry's synthetic families, each with its optimum moved off the box centre so that no method
profits from a prior centred on the box. Every problem keeps its family's standard box
``[l, u]`` and evaluates the family's function ``f`` at transformed points, as COCO/BBOB does:

    g(x) = f(c + Q (x - c - s)),        c = (l + u) / 2,

with ``Q`` a fixed random rotation (``Q = I`` where the family's optimum depends on the box, i.e.
Michalewicz and Hartmann-6) and ``s`` a fixed shift. For a family whose known minimum ``f*`` is a
lower bound of ``f`` on all of ``R^d`` (``global_bound`` in the registry), ``s`` is chosen so that
the family's first listed minimiser ``x*`` lands at a fixed random target

    x_g = c + h * u,   h = (u - l) / 2,   u ~ U[-0.8, 0.8]^d with max_i |u_i| >= 0.4,

(``s = x_g - c - Q^T (x* - c)``), so ``g``'s minimum over the box is ``f*`` at ``x_g``; the other
listed minimisers are mapped the same way and kept where they fall inside the box. For
Michalewicz (no global bound) ``s = 0.3 h * u`` with ``u ~ U[-1, 1]^d`` and the optimum is
recomputed on the shifted box by ``optima.separable_minimum``. Hartmann-6's published minimum is
its minimum over ``R^6`` (checked in ``tests/test_suite.py`` by multi-start L-BFGS-B from points
far outside the unit cube), so it is shifted like the global-bound families.

All draws come from ``numpy.random.default_rng([SEED, i])`` for problem ``i``: the suite is the
same on every machine. Tune on it with keys from ``TUNING_KEYS``; report with keys from
``REPORTING_KEYS`` (``benchmarks/defaults.py``), which no tuning may use.

``suite("dev_constrained")`` does the same for the algorithms with black-box constraints
(Neural-CBO, constrained EI): the four synthetic problems of the Neural-CBO thesis (Table 4.1;
``ntkbo.benchmarks.constrained``), noise free. The constraints move with the objective,
``c_g(x) = c(c + Q (x - c - s))``, so a point's feasibility is that of its image. Branin, Ackley-5
and Hartmann-6 are moved as above: their constrained optimum ``f*`` is the family's global
minimum on ``R^d`` (Branin's 5 / (4 pi), Ackley's 0, Hartmann-6's published value) attained at a
feasible minimiser, so ``f*`` bounds ``g`` below on the whole box and is attained at the mapped
minimiser. Simionescu is kept as it is (its optimum ``+-(0.85, -0.85)`` is already at 0.68 of the
half-width; its feasible flower would leave the box if shifted, and ``f = 0.1 x_1 x_2`` has no
global bound to keep the optimum known). The constrained suite draws from
``default_rng([SEED, 1, i])``, so that its rotations and shifts differ from the dev suite's.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ntkbo.benchmarks import registry as R
from ntkbo.benchmarks import synthetic as S
from ntkbo.benchmarks.optima import separable_minimum
from ntkbo.benchmarks.problem import Problem, relative_noise_std

#: The suite's seed: problem ``i`` draws its rotation and shift from ``default_rng([SEED, i])``.
SEED = 20261123
#: Seeds (``jax.random.PRNGKey(k)``) that tuning on the dev suite may use.
TUNING_KEYS = range(0, 1000)
#: Seeds that reports use and tuning never does (``benchmarks/defaults.py``).
REPORTING_KEYS = range(100_000, 101_000)


class Transformed(NamedTuple):
    """``g(x) = f(c + Q (x - c - s))`` for one point ``x (d,)``; hashable (tuples), so jitted code
    taking a ``Problem`` with this ``fn`` compiles once."""

    fn: Callable
    centre: tuple
    shift: tuple
    rotation: Optional[tuple] = None  # rows of Q, or None for the identity

    def __call__(self, x):
        c = jnp.asarray(self.centre, x.dtype)
        z = x - c - jnp.asarray(self.shift, x.dtype)
        if self.rotation is not None:
            z = jnp.asarray(self.rotation, x.dtype) @ z
        return self.fn(c + z)

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """The point ``x`` with ``c + Q (x - c - s) = z`` (numpy, float64): ``c + s + Q^T (z - c)``."""
        c, s = np.asarray(self.centre), np.asarray(self.shift)
        q = np.eye(c.size) if self.rotation is None else np.asarray(self.rotation)
        return c + s + (np.asarray(z, float) - c) @ q


class _ShiftedTerms(NamedTuple):
    """Per-coordinate terms of a separable ``f`` at ``x - s`` (for ``separable_minimum``)."""

    terms: Callable
    shift: tuple

    def __call__(self, x):
        return self.terms(x - jnp.asarray(self.shift, x.dtype))


class _Member(NamedTuple):
    family: str
    dim: int
    rotate: bool
    move: bool = True  # False: the family's own problem, unshifted


#: The dev suite: (family, dimension, rotated?).
DEV: tuple[_Member, ...] = (
    _Member("branin", 2, True),
    _Member("six_hump_camel", 2, True),
    _Member("rosenbrock", 4, True),
    _Member("hartmann6", 6, False),
    _Member("styblinski_tang", 8, True),
    _Member("ackley", 10, True),
    _Member("levy", 10, True),
    _Member("rastrigin", 10, True),
    _Member("michalewicz", 10, False),
    _Member("dixon_price", 12, True),
    _Member("ackley", 20, True),
    _Member("levy", 20, True),
    _Member("rastrigin", 20, True),
    _Member("styblinski_tang", 20, True),
)

#: The constrained dev suite (module docstring): Neural-CBO's four synthetic problems.
DEV_CONSTRAINED: tuple[_Member, ...] = (
    _Member("branin_constrained", 2, True),
    _Member("simionescu_constrained", 2, False, move=False),
    _Member("ackley_constrained", 5, True),
    _Member("hartmann6_constrained", 6, False),
)

_SUITES = {"dev": DEV, "dev_constrained": DEV_CONSTRAINED}
#: The prefix of each suite's ``default_rng`` seed (problem ``i`` adds ``i``).
_SEEDS = {"dev": (SEED,), "dev_constrained": (SEED, 1)}


def _rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix with the signs of R's diagonal)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))[None, :]


def _target(rng: np.random.Generator, d: int) -> np.ndarray:
    """``u`` in ``[-0.8, 0.8]^d`` with ``max |u_i| >= 0.4`` (rejection; the first draw is kept with
    probability ``1 - 0.5^d``)."""
    while True:
        u = rng.uniform(-0.8, 0.8, size=d)
        if np.max(np.abs(u)) >= 0.4:
            return u


def _label(member: _Member) -> str:
    """``"ackley10"``; a family whose name ends in its dimension keeps it (``"hartmann6"``); a
    constrained family drops ``_constrained`` (``"branin2"`` in ``dev_constrained``)."""
    family = member.family.removesuffix("_constrained")
    return family if family[-1].isdigit() else f"{family}{member.dim}"


@functools.lru_cache(maxsize=64)
def _build(name: str, index: int, _x64: bool) -> Problem:
    """Problem ``index`` of suite ``name``; cached per JAX precision (``_x64``), as the registry's
    optima are, since Michalewicz's optimum is computed in JAX's default float type."""
    member = _SUITES[name][index]
    base = R.get(member.family, member.dim)
    label = f"{name}_{_label(member)}"
    if not member.move:
        return base.replace(name=label)
    lower, upper = (np.asarray(b, float) for b in base.bounds)
    c, h = (lower + upper) / 2.0, (upper - lower) / 2.0
    rng = np.random.default_rng([*_SEEDS[name], index])
    q = _rotation(rng, member.dim) if member.rotate else None
    rotation = None if q is None else tuple(map(tuple, q.tolist()))
    if member.family == "michalewicz":  # box-dependent optimum: shift, then recompute it
        shift = 0.3 * h * rng.uniform(-1.0, 1.0, size=member.dim)
        value, x_star = separable_minimum(
            _ShiftedTerms(S.michalewicz_terms, tuple(shift.tolist())), lower, upper)
        fn = Transformed(base.fn, tuple(c.tolist()), tuple(shift.tolist()), rotation)
        minimisers = x_star[None, :]
    else:  # global lower bound f*: put the first listed minimiser at the target x_g
        if base.optimum is None or base.optimizer is None:
            raise ValueError(f"suite {name!r}: a moved {member.family!r} needs its known optimum "
                             "and minimiser")
        x_star = np.asarray(base.optimizer, float)
        x_goal = c + h * _target(rng, member.dim)
        shift = x_goal - c - (x_star[0] - c) @ (np.eye(member.dim) if q is None else q)
        value = float(base.optimum)
        fn = Transformed(base.fn, tuple(c.tolist()), tuple(shift.tolist()), rotation)
        mapped = np.stack([fn.inverse(z) for z in x_star])
        minimisers = mapped[np.all((mapped >= lower) & (mapped <= upper), axis=1)]
    constraints = None if base.constraints is None else fn._replace(fn=base.constraints)
    if constraints is not None:  # only feasible minimisers are the constrained problem's
        values = np.asarray(jax.vmap(constraints)(jnp.asarray(minimisers)))
        minimisers = minimisers[np.all(values <= 0, axis=1)]
    return Problem(name=label, fn=fn, bounds=base.bounds, optimum=value,
                   optimizer=jnp.asarray(minimisers), constraints=constraints)


def suite(name: str = "dev") -> dict[str, Problem]:
    """The problems of suite ``name`` keyed by label (``"ackley10"``, ...), in the suite's order.

    Each ``Problem`` is noise free (set ``noise_std`` with ``problem.replace``), named
    ``"<suite>_<label>"``, with the family's standard box, its ``optimum`` and its minimiser(s) in
    ``optimizer`` (module docstring)."""
    if name not in _SUITES:
        raise ValueError(f"suite name={name!r} is not known; valid suites: {', '.join(_SUITES)}")
    x64 = bool(jax.config.read("jax_enable_x64"))
    return {_label(m): _build(name, i, x64) for i, m in enumerate(_SUITES[name])}


def suite_names() -> list[str]:
    """The suites ``suite`` accepts."""
    return sorted(_SUITES)


def get(
    name: str,
    dim: Optional[int] = None,
    noise_std: float = 0.0,
    *,
    noise: Optional[str] = None,
    noise_scale: float = 0.1,
    bounds=None,
    case: Optional[int] = None,
    **task_options,
) -> Problem:
    """``ntkbo.benchmarks.get``: the problem ``name``, a registry problem (``registry.get``, which
    documents the arguments) or a suite member named ``"<suite>/<member>"``, e.g.
    ``get("dev/ackley10")``: its shifted and rotated problem, with ``noise_std`` or
    ``noise="relative"``; ``dim``, if given, must be the member's."""
    if isinstance(name, str) and "/" in name:
        return _member(name, dim, noise_std, noise, noise_scale, bounds, case, task_options)
    return R.get(name, dim, noise_std, noise=noise, noise_scale=noise_scale, bounds=bounds,
                 case=case, **task_options)


def _member(name, dim, noise_std, noise, noise_scale, bounds, case, task_options) -> Problem:
    """``get("<suite>/<member>")``: a member of ``suite(<suite>)``."""
    suite_name, member = name.split("/", 1)
    if suite_name not in suite_names():
        raise ValueError(f"problem {name!r}: unknown suite {suite_name!r}; choose one of: "
                         f"{', '.join(suite_names())}")
    members = suite(suite_name)
    if member not in members:
        raise ValueError(f"problem {name!r}: suite {suite_name!r} has no member {member!r}; its "
                         f"members: {', '.join(members)}")
    problem = members[member]
    if dim is not None and dim != problem.dim:
        raise ValueError(f"problem {name!r} has dim {problem.dim}, got dim={dim!r}")
    extra = sorted([*task_options] + [k for k, v in (("bounds", bounds), ("case", case))
                                      if v is not None])
    if extra:
        raise ValueError(f"problem {name!r}: a suite member takes noise_std or noise only, got "
                         f"{', '.join(extra)}")
    if noise not in (None, "relative"):
        raise ValueError(f"noise={noise!r} is not valid; valid choices: None, 'relative'")
    if not (isinstance(noise_std, (int, float, np.floating, np.integer))
            and math.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"noise_std={noise_std!r} must be a finite float >= 0")
    if noise == "relative":
        if noise_std != 0:
            raise ValueError("give either noise_std or noise='relative', not both")
        return problem.replace(noise_std=relative_noise_std(problem, scale=noise_scale))
    return problem.replace(noise_std=float(noise_std))
