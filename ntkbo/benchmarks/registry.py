"""The catalogue: ``get(name, dim, ...) -> Problem`` and ``names()``.

Each entry pairs a function from ``synthetic`` with its standard domain, the dimensions it
supports and a rule for its known optimum:

- ``_Known``: a published (or closed-form) optimum and minimiser(s). With a ``bounds=`` override
  the value is kept if at least one listed minimiser lies in the new box and either the value is
  a lower bound of ``f`` on all of ``R^d`` (``global_bound=True``) or the new box lies inside the
  standard domain; otherwise ``optimum`` and ``optimizer`` are ``None``.
- ``_Separable``: computed for any dimension and any box by ``optima.separable_minimum``.
- ``_UpperCorner`` / ``_Corners``: the minimum of a monotone / bilinear function is at a corner.

All validation happens here, outside ``jit``; errors are ``ValueError`` naming the argument and
listing the valid choices.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from itertools import product
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ntkbo.benchmarks import constrained as C
from ntkbo.benchmarks import gp_sample as G
from ntkbo.benchmarks import heat as H
from ntkbo.benchmarks import pde as P
from ntkbo.benchmarks import synthetic as S
from ntkbo.benchmarks.optima import separable_minimum
from ntkbo.benchmarks.problem import Problem, relative_noise_std
from ntkbo.pde import Pde

# ----------------------------------------------------------------------------------------------
# optimum rules: (dim, lower, upper, in_standard_box) -> (value | None, minimisers (k, d) | None)


class _Known(NamedTuple):
    value: Callable[[int], float]
    minimisers: Callable[[int], np.ndarray]  # (k, d)
    global_bound: bool = False  # is `value` a lower bound of f on all of R^d?

    def __call__(self, dim, lower, upper, in_standard_box):
        if not (self.global_bound or in_standard_box):
            return None, None
        xs = np.atleast_2d(np.asarray(self.minimisers(dim), dtype=float))
        inside = np.all((xs >= lower) & (xs <= upper), axis=1)
        if not inside.any():
            return None, None
        return float(self.value(dim)), xs[inside]


class _Separable(NamedTuple):
    terms: Callable  # x (d,) -> per-coordinate terms (d,)

    def __call__(self, dim, lower, upper, in_standard_box):
        value, x = separable_minimum(self.terms, lower, upper)
        return value, x[None, :]


class _UpperCorner(NamedTuple):
    """For a function that decreases in every coordinate."""

    fn: Callable

    def __call__(self, dim, lower, upper, in_standard_box):
        corner = np.asarray(upper, dtype=float)[None, :]
        return float(_values(self.fn, corner)[0]), corner


class _Corners(NamedTuple):
    """For a function whose minimum over a box is at a corner (e.g. bilinear); small d only."""

    fn: Callable

    def __call__(self, dim, lower, upper, in_standard_box):
        corners = np.array(list(product(*zip(lower, upper))), dtype=float)
        values = _values(self.fn, corners)
        best = values.min()
        return float(best), corners[values == best]


class _GridMin(NamedTuple):
    """For the interpolated GP sample path (``gp_sample.grid_minimum``; 1-D)."""

    fn: G.GpSample

    def __call__(self, dim, lower, upper, in_standard_box):
        value, x = G.grid_minimum(self.fn, float(lower[0]), float(upper[0]))
        return value, np.array([[x]])


def _values(fn, xs: np.ndarray) -> np.ndarray:
    """``fn`` at the rows of ``xs``, as float64 numpy (one compilation, no per-op dispatch)."""
    return np.asarray(jax.jit(jax.vmap(fn))(jnp.asarray(xs)), dtype=float)


def _const(v):
    return lambda d: v


def _full(v):
    return lambda d: np.full((1, d), v)


def _box(lo, hi):
    return lambda d: (np.full(d, lo, dtype=float), np.full(d, hi, dtype=float))


def _fixed_box(lo, hi):
    return lambda d: (np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))


def _dixon_price_minimisers(d):
    i = np.arange(1, d + 1, dtype=float)
    x = 2.0 ** (-(2.0**i - 2.0) / 2.0**i)
    if d == 1:
        return x[None, :]
    x_neg = x.copy()
    x_neg[-1] = -x_neg[-1]
    return np.stack([x, x_neg])


# ----------------------------------------------------------------------------------------------
# the catalogue


class _Entry(NamedTuple):
    fn: Callable
    domain: Callable[[int], tuple[np.ndarray, np.ndarray]]
    optimum: Callable
    dims: Optional[tuple[int, ...]] = None  # fixed dimensions; None = any d >= min_dim
    min_dim: int = 1
    constraints: Optional[Callable] = None  # x (d,) -> (K,), feasible iff all <= 0
    pde: Optional[Pde] = None  # N[f] = g obeyed by fn (PINN-BO, ntkbo.benchmarks.pde)


_ENTRIES: dict[str, _Entry] = {
    # any dimension
    "ackley": _Entry(S.ackley, _box(-32.768, 32.768), _Known(_const(0.0), _full(0.0), True)),
    "levy": _Entry(S.levy, _box(-10.0, 10.0), _Known(_const(0.0), _full(1.0), True)),
    "michalewicz": _Entry(S.michalewicz, _box(0.0, math.pi), _Separable(S.michalewicz_terms)),
    "rastrigin": _Entry(S.rastrigin, _box(-5.12, 5.12), _Known(_const(0.0), _full(0.0), True)),
    "styblinski_tang": _Entry(
        S.styblinski_tang, _box(-5.0, 5.0), _Separable(S.styblinski_tang_terms)
    ),
    "rosenbrock": _Entry(
        S.rosenbrock, _box(-5.0, 10.0), _Known(_const(0.0), _full(1.0), True), min_dim=2
    ),
    "griewank": _Entry(S.griewank, _box(-600.0, 600.0), _Known(_const(0.0), _full(0.0), True)),
    "sphere": _Entry(S.sphere, _box(-5.12, 5.12), _Known(_const(0.0), _full(0.0), True)),
    "sum_of_squares": _Entry(
        S.sum_of_squares, _box(-10.0, 10.0), _Known(_const(0.0), _full(0.0), True)
    ),
    "dixon_price": _Entry(
        S.dixon_price, _box(-10.0, 10.0), _Known(_const(0.0), _dixon_price_minimisers, True)
    ),
    "cosine_mixture": _Entry(
        S.cosine_mixture, _box(-1.0, 1.0), _Known(lambda d: -0.1 * d, _full(0.0), True)
    ),
    "cosine_mixture_pinnbo": _Entry(
        S.cosine_mixture_pinnbo, _box(-1.0, 1.0), _Separable(S.cosine_mixture_pinnbo_terms)
    ),
    "schwefel": _Entry(S.schwefel, _box(-500.0, 500.0), _Separable(S.schwefel_terms)),
    "goucb_f1": _Entry(S.goucb_f1, _box(-5.0, 5.0), _UpperCorner(S.goucb_f1)),
    # fixed dimension
    "branin": _Entry(
        S.branin,
        _fixed_box([-5.0, 0.0], [10.0, 15.0]),
        _Known(
            _const(5.0 / (4.0 * math.pi)),
            _const(np.array([[-math.pi, 12.275], [math.pi, 2.275], [3.0 * math.pi, 2.475]])),
            True,
        ),
        dims=(2,),
    ),
    "hartmann3": _Entry(
        S.hartmann3,
        _box(0.0, 1.0),
        _Known(_const(-3.86278214782076), _const(np.array([[0.114614, 0.555649, 0.852547]]))),
        dims=(3,),
    ),
    "hartmann6": _Entry(
        S.hartmann6,
        _box(0.0, 1.0),
        _Known(
            _const(-3.32236801141551),
            _const(
                np.array(
                    [
                        [
                            0.20168951105045376804,
                            0.15001069194240773674,
                            0.47687397419114102570,
                            0.27533243046651384445,
                            0.31165161659771911662,
                            0.65730053409130584363,
                        ]
                    ]
                )
            ),
        ),
        dims=(6,),
    ),
    "shekel5": _Entry(
        S.shekel5,
        _box(0.0, 10.0),
        _Known(
            _const(-10.1531996790582),
            _const(
                np.array(
                    [[4.00003715286186, 4.00013327674676, 4.00003715251722, 4.00013327684561]]
                )
            ),
        ),
        dims=(4,),
    ),
    "shekel7": _Entry(
        S.shekel7,
        _box(0.0, 10.0),
        _Known(
            _const(-10.4029405668187),
            _const(
                np.array(
                    [[4.00057291620137, 4.00068936636389, 3.99948970903618, 3.99960615912245]]
                )
            ),
        ),
        dims=(4,),
    ),
    "shekel10": _Entry(
        S.shekel10,
        _box(0.0, 10.0),
        _Known(
            _const(-10.5364098166920),
            _const(
                np.array(
                    [[4.00074653179631, 4.00059293441149, 3.99966339878225, 3.99950980042909]]
                )
            ),
        ),
        dims=(4,),
    ),
    "dropwave": _Entry(
        S.dropwave, _box(-5.12, 5.12), _Known(_const(-1.0), _full(0.0), True), dims=(2,)
    ),
    "simionescu": _Entry(S.simionescu, _box(-1.25, 1.25), _Corners(S.simionescu), dims=(2,)),
    "six_hump_camel": _Entry(
        S.six_hump_camel,
        _fixed_box([-3.0, -2.0], [3.0, 2.0]),
        _Known(
            _const(-1.03162845348988),
            _const(
                np.array(
                    [
                        [0.08984201372191424895, -0.71265640200326663134],
                        [-0.08984201372191424895, 0.71265640200326663134],
                    ]
                )
            ),
        ),
        dims=(2,),
    ),
    "eggholder": _Entry(
        S.eggholder,
        _box(-512.0, 512.0),
        _Known(_const(-959.640662720851), _const(np.array([[512.0, 404.231805138682]]))),
        dims=(2,),
    ),
    "goldstein_price": _Entry(
        S.goldstein_price,
        _box(-2.0, 2.0),
        _Known(_const(3.0), _const(np.array([[0.0, -1.0]]))),
        dims=(2,),
    ),
    "beam_deflection": _Entry(
        S.beam_deflection, _box(0.0, 1.0), _Separable(S.beam_deflection_terms), dims=(1,)
    ),
    # STO-BNTS's synthetic objective (its Section 5.1): a fixed SE-kernel GP sample path
    "gp_sample_1d": _Entry(G.GpSample(), _box(0.0, 1.0), _GridMin(G.GpSample()), dims=(1,)),
}

# constrained problems (ntkbo.benchmarks.constrained); the optima are of the constrained problems
_ENTRIES.update({
    "branin_constrained": _ENTRIES["branin"]._replace(
        optimum=_Known(_const(5.0 / (4.0 * math.pi)), _const(C.BRANIN_MINIMISER)),
        constraints=C.branin_constraint),
    "simionescu_constrained": _ENTRIES["simionescu"]._replace(
        optimum=_Known(_const(-0.072), _const(C.SIMIONESCU_MINIMISERS)),
        constraints=C.simionescu_constraint),
    "ackley_constrained": _Entry(
        S.ackley, _box(-5.0, 3.0), _Known(_const(0.0), _const(C.ACKLEY_MINIMISER)), dims=(5,),
        constraints=C.ackley_constraints),
    "hartmann6_constrained": _ENTRIES["hartmann6"]._replace(constraints=C.hartmann6_constraint),
    "gas_transmission": _Entry(
        C.gas_transmission, _fixed_box([20.0, 1.0, 20.0, 0.1], [50.0, 10.0, 50.0, 60.0]),
        _Known(_const(C.GAS_OPTIMUM), _const(C.GAS_MINIMISER)), dims=(4,),
        constraints=C.gas_transmission_constraint),
    "speed_reducer": _Entry(
        C.speed_reducer,
        _fixed_box([2.6, 0.7, 17.0, 7.3, 7.3, 2.9, 5.0], [3.6, 0.8, 28.0, 8.3, 8.3, 3.9, 5.5]),
        _Known(_const(C.SPEED_REDUCER_OPTIMUM), _const(C.SPEED_REDUCER_MINIMISER)), dims=(7,),
        constraints=C.speed_reducer_constraints),
})

# physics-informed problems (PINN-BO, thesis ch. 5): the same functions and boxes with their PDE
class _HeatBoundary(NamedTuple):
    """The maximum principle: the minimum of ``-T`` (harmonic) is on the boundary of the square."""

    fn: Callable

    def __call__(self, dim, lower, upper, in_standard_box):
        if not in_standard_box:
            return None, None
        value, x = _boundary_minimum(self.fn)
        return value, np.array(x)[None, :]  # a copy: the cached minimiser stays unchanged


@functools.lru_cache(maxsize=None)
def _boundary_minimum(fn):
    """``H.boundary_minimum`` once per objective (a few seconds: it searches 4 x 4001 points of a
    4096-term series); ``fn`` is the same object for the same case (``H.objective``)."""
    return H.boundary_minimum(fn)


_ENTRIES.update({
    "dropwave_pde": _ENTRIES["dropwave"]._replace(pde=P.DROPWAVE),
    "styblinski_tang_pde": _ENTRIES["styblinski_tang"]._replace(pde=P.STYBLINSKI_TANG),
    "rastrigin_pde": _ENTRIES["rastrigin"]._replace(pde=P.RASTRIGIN),
    "michalewicz_pde": _ENTRIES["michalewicz"]._replace(pde=P.MICHALEWICZ),
    "cosine_mixture_pde": _ENTRIES["cosine_mixture_pinnbo"]._replace(pde=P.COSINE_MIXTURE),
    "euler_beam": _ENTRIES["beam_deflection"]._replace(pde=P.EULER_BEAM),
})
# get("heat_equation", case=c) is the entry "heat_equation_<c>" (ntkbo.benchmarks.heat)
_CASES = {"heat_equation": H.CASES}
for _c in H.CASES:
    _ENTRIES[f"heat_equation_{_c}"] = _Entry(
        H.objective(_c), _box(0.0, 2.0 * math.pi), _HeatBoundary(H.objective(_c)), dims=(2,),
        pde=P.LAPLACE)

# other spellings found in the papers and their code
_ALIASES = {
    "michalewics": "michalewicz",  # NeuralBO / PINN-BO spelling
    "braninhoo": "branin",  # Neural-CBO code
    "sumsquares": "sum_of_squares",
    "camel6": "six_hump_camel",
    "sixhump": "six_hump_camel",
    "shekel": "shekel10",
    "beam": "beam_deflection",
    "gas_transmission_compressor": "gas_transmission",
    "speed_reducer_design": "speed_reducer",
}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_LOOKUP = {_key(n): n for n in _ENTRIES}
_LOOKUP.update({_key(a): n for a, n in _ALIASES.items()})
_LOOKUP.update({_key(n): n for n in _CASES})


def names() -> list[str]:
    """The registered problem names, sorted.

    ``get`` also accepts other spellings ("Styblinski-Tang", "Michalewics", "BraninHoo", ...):
    case, spaces, hyphens and underscores are ignored.
    """
    # includes "heat_equation_1", ... (also: get("heat_equation", case=1))
    return sorted([*_ENTRIES, *_TASK_NAMES])


def dims(name: str) -> str | None:
    """The dimensions registered problem ``name`` accepts, as text ("2", "any integer >= 2");
    ``None`` for a task (``ntkbo.benchmarks.tasks``), whose dimension is its own."""
    entry = _ENTRIES.get(name)
    return None if entry is None else _dims_text(entry)


def _dims_text(entry: _Entry) -> str:
    if entry.dims is not None:
        return ", ".join(str(d) for d in entry.dims)
    return f"any integer >= {entry.min_dim}"


def _resolve_name(name) -> str:
    if not isinstance(name, str) or _key(name) not in _LOOKUP:
        close = difflib.get_close_matches(_key(str(name)), list(_LOOKUP), n=3)
        hint = f" (did you mean {', '.join(repr(_LOOKUP[c]) for c in close)}?)" if close else ""
        raise ValueError(
            f"name={name!r} is not a known problem{hint}; valid names: {', '.join(names())}"
        )
    return _LOOKUP[_key(name)]


def _resolve_dim(name: str, entry: _Entry, dim) -> int:
    if dim is None:
        if entry.dims is not None and len(entry.dims) == 1:
            return entry.dims[0]
        raise ValueError(f"dim is required for {name!r}; valid dims: {_dims_text(entry)}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise ValueError(f"dim={dim!r} must be an integer; valid dims for {name!r}: "
                         f"{_dims_text(entry)}")
    dim = int(dim)
    ok = dim in entry.dims if entry.dims is not None else dim >= entry.min_dim
    if not ok:
        raise ValueError(f"dim={dim} is not supported by {name!r}; valid dims: {_dims_text(entry)}")
    return dim


def _resolve_bounds(name: str, dim: int, bounds) -> tuple[np.ndarray, np.ndarray]:
    b = np.asarray(bounds, dtype=float)
    if b.shape == (2,):
        b = np.repeat(b[:, None], dim, axis=1)
    if b.shape != (2, dim):
        raise ValueError(
            f"bounds must have shape (2,) (lower, upper for every coordinate) or (2, {dim}) for "
            f"{name!r} with dim={dim}; got shape {b.shape}"
        )
    if not np.all(np.isfinite(b)) or not np.all(b[0] < b[1]):
        raise ValueError(f"bounds must be finite with lower < upper in every coordinate; got {b}")
    return b[0], b[1]


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
    """Returns the benchmark ``name`` as a ``Problem`` (minimisation convention).

    Args:
      name: one of ``names()`` (case, spaces, hyphens and underscores ignored).
      dim: input dimension. Required for the functions defined in any dimension (Ackley, Levy,
        ...); optional for fixed-dimension ones (Branin: 2, Hartmann6: 6, ...).
      noise_std: standard deviation of the additive Gaussian observation noise.
      noise: ``None`` or ``"relative"``: noise std ``= noise_scale * std(f)`` over 10,000 uniform
        points of the box drawn with the fixed key ``PRNGKey(0)``, the rule of the NeuralBO and
        PINN-BO code (``problem.relative_noise_std``). Cannot be combined with ``noise_std``. For a
        constrained problem the same rule sets each constraint's ``constraint_noise_std``
        (``constrained.relative_constraint_noise_std``); otherwise the constraints are noise free.
      noise_scale: the factor of the ``"relative"`` rule (0.1: NeuralBO, PINN-BO; 0.05: Neural-CBO).
      bounds: replaces the standard domain: ``(lower, upper)`` for every coordinate, or an array
        ``(2, dim)``. The optimum is recomputed (separable functions), kept, or set to ``None``
        when it is no longer known (see the module docstring).
      case: for ``"heat_equation"``: the boundary-condition set, 1, 2 or 3 (default 1); the
        problem is then ``"heat_equation_<case>"``. Not accepted by other problems.
      **task_options: options of a host task (``ntkbo.benchmarks.tasks``: robot pushing, rover,
        Lunar Lander, tuning), e.g. ``workers=4``, ``episodes=50``; refused by other problems.
        A host task takes ``noise_std`` but not ``dim`` (other than its own), ``noise``, ``bounds``
        or ``case``.

    The paper setups, for example:

    - NeuralBO (Section 7.1): ``get("ackley" | "levy" | "michalewicz", dim=10, noise="relative")``.
    - Neural-CBO objectives (thesis chapter 4): ``get("branin")``, ``get("simionescu")``,
      ``get("ackley", 5, bounds=(-5, 3))``, ``get("hartmann6")``, ``noise_scale=0.05``; with their
      constraints ``c(x) <= 0`` (``ntkbo.benchmarks.constrained``): ``"branin_constrained"``,
      ``"simionescu_constrained"``, ``"ackley_constrained"``, ``"hartmann6_constrained"``,
      ``"gas_transmission"``, ``"speed_reducer"``.
    - PINN-BO (thesis chapter 5): ``get("dropwave")``, ``get("styblinski_tang", 10)``,
      ``get("rastrigin", 20)``, ``get("michalewicz", 30)``, ``get("cosine_mixture_pinnbo", 50)``,
      ``get("beam_deflection")``, with ``noise="relative"``; with their PDE attached
      (``Problem.pde``, ``ntkbo.benchmarks.pde``): ``"dropwave_pde"``, ``"styblinski_tang_pde"``,
      ``"rastrigin_pde"``, ``"michalewicz_pde"``, ``"cosine_mixture_pde"`` (the PINN-BO sign),
      ``get("euler_beam")`` and ``get("heat_equation", case=1 | 2 | 3)`` (noise free in the code).
    - GO-UCB (Section 6): ``get("goucb_f1", 20)``, ``get("styblinski_tang", 20, bounds=(-5, 5))``,
      ``get("rastrigin", 20, bounds=(-5, 5))``, ``noise_std=0.01``.
    - Greedy/SMB (Be Greedy, Section 3): ``get("ackley", d)``, ``get("hartmann6")``.

    A suite member, named ``"<suite>/<member>"`` (e.g. ``"dev/ackley10"``), is got through
    ``ntkbo.benchmarks.get`` (``ntkbo.benchmarks.suites.get``, which takes these arguments and
    passes every other name here).
    """
    if isinstance(name, str) and "/" in name:  # the suites sit above the registry: not here
        raise ValueError(f"problem {name!r} is a suite member: get it with ntkbo.benchmarks.get "
                         "(ntkbo.benchmarks.suites.get)")
    if _is_task(name):
        return _task(name, dim, noise_std, noise, bounds, case, task_options)
    if task_options:
        raise ValueError(f"option(s) {', '.join(sorted(task_options))} are only accepted by the "
                         f"host tasks (ntkbo.benchmarks.tasks), not {name!r}")
    name = _resolve_name(name)
    if name in _CASES:
        case = _CASES[name][0] if case is None else case
        if isinstance(case, bool) or case not in _CASES[name]:
            raise ValueError(f"case={case!r} is not valid for {name!r}; valid cases: "
                             f"{', '.join(str(c) for c in _CASES[name])}")
        name = f"{name}_{case}"
    elif case is not None:
        raise ValueError(f"case={case!r} is only accepted by {', '.join(_CASES)}, not {name!r}")
    entry = _ENTRIES[name]
    dim = _resolve_dim(name, entry, dim)

    std_lower, std_upper = entry.domain(dim)
    if bounds is None:
        lower, upper, in_standard = std_lower, std_upper, True
    else:
        lower, upper = _resolve_bounds(name, dim, bounds)
        in_standard = bool(np.all(lower >= std_lower) and np.all(upper <= std_upper))

    if noise not in (None, "relative"):
        raise ValueError(f"noise={noise!r} is not valid; valid choices: None, 'relative'")
    if not (isinstance(noise_std, (int, float, np.floating, np.integer))
            and math.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"noise_std={noise_std!r} must be a finite float >= 0")
    if noise == "relative" and noise_std != 0:
        raise ValueError("give either noise_std or noise='relative', not both")
    if not (math.isfinite(noise_scale) and noise_scale > 0):
        raise ValueError(f"noise_scale={noise_scale!r} must be a finite float > 0")

    value, minimisers = _optimum(
        name, dim, tuple(lower), tuple(upper), in_standard,
        bool(jax.config.read("jax_enable_x64"))
    )
    problem = Problem(
        name=name,
        fn=entry.fn,
        bounds=jnp.asarray(np.stack([lower, upper])),
        optimum=value,
        optimizer=None if minimisers is None else jnp.asarray(minimisers),
        noise_std=float(noise_std),
        constraints=entry.constraints,
        pde=entry.pde,
    )
    if noise == "relative":
        problem = problem.replace(noise_std=relative_noise_std(problem, scale=noise_scale))
        if entry.constraints is not None:
            problem = problem.replace(constraint_noise_std=jnp.asarray(
                C.relative_constraint_noise_std(entry.constraints, problem.bounds, noise_scale)))
    return problem


@functools.lru_cache(maxsize=512)
def _optimum(name, dim, lower, upper, in_standard, _x64):
    value, xs = _ENTRIES[name].optimum(dim, np.asarray(lower), np.asarray(upper), in_standard)
    if xs is not None:
        xs = np.asarray(xs, dtype=float)
        xs.setflags(write=False)
    return value, xs



# host tasks (ntkbo.benchmarks.tasks): imported lazily by name; their packages only on evaluation
_TASK_NAMES = (
    "robot_push3", "robot_push4", "robot_push14", "rover60", "lunar_lander12",
    *(f"hpo_{m}_{d}" for m in ("rf", "mlp", "hgb")
      for d in ("breast_cancer", "wine", "digits", "diabetes")),
    "hpo_mlp_digits_size",
)


def _is_task(name) -> bool:
    return isinstance(name, str) and name in _TASK_NAMES


def _task(name, dim, noise_std, noise, bounds, case, options) -> Problem:
    from ntkbo.benchmarks import tasks  # noqa: PLC0415

    t = tasks.task(name)
    for arg, value in (("noise", noise), ("bounds", bounds), ("case", case)):
        if value is not None:
            raise ValueError(f"{arg}={value!r} is not accepted by the host task {name!r}")
    if dim is not None and dim != t.dim:
        raise ValueError(f"dim={dim!r} is not supported by {name!r}; valid dims: {t.dim}")
    return tasks.get(name, noise_std, **options)
