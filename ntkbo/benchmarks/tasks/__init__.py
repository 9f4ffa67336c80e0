"""The papers' real-world tasks as ``Problem``s: robot pushing, rover, Lunar Lander, tuning.

These objectives are host programs (Box2D simulations, a spline, scikit-learn fits), not JAX
functions. ``get`` wraps each in a ``jax.pure_callback`` (``ntkbo.benchmarks.tasks.host``) so that
it is the ``fn`` of an ordinary ``Problem``: ``ntkbo.minimize``, ``jax.vmap`` over seeds, the
experiment runner and ``problem.fn_batch`` (e.g. with ``ntkbo.ask_tell``) all use the same code
path as the closed-form problems, and every vmapped batch of points reaches the host in one call.

They need the ``tasks`` extra (``pip install 'ntkbo[tasks]'``: box2d, gymnasium, pygame,
scikit-learn); nothing here imports those packages until a task is evaluated, and a missing one
raises an ``ImportError`` naming the extra.

**Sign: everything is minimised.** Rewards are negated (robot pushing, rover, Lunar Lander);
tuning tasks return a cross-validated error.

=======================  ====  ===================  =========================================
name                      d    box                  evaluation cost (this machine, one core)
=======================  ====  ===================  =========================================
robot_push3               3    [-5,-5,1]..[5,5,30]   2-9 ms
robot_push4               4    .. plus angle [0,2pi] 2-9 ms
robot_push14              14   see robot_push        5-20 ms
rover60                   60   [0, 1]^60             about 1 ms
lunar_lander12            12   [0, 2]^12             0.3-2 s (20 episodes; 1.2 s default w)
hpo_<model>_<dataset>     7-8  [0, 10]^d             ``hpo.COSTS``: 1 s to 40 s
hpo_mlp_digits_size       4    [0, 10]^4, 1 constr.  8 s (max 13 s)
=======================  ====  ===================  =========================================

Each module's docstring gives the task's definition, its paper and its options. Options are
keyword arguments of ``get`` (``ntkbo.benchmarks.get(name, **options)`` forwards them), e.g.
``get("lunar_lander12", episodes=50)``, ``get("robot_push14", velocity_noise=0.01)``,
``get("hpo_rf_wine", folds=3)``. Every task takes ``workers``: the number of worker processes that
evaluate a batch of points in parallel (default 1: in this process); worth it for the slow ones
(Lunar Lander, tuning) when ``q`` or the number of vmapped seeds is at least 2.

Determinism: with the default options every task gives the same value for the same ``x`` (fixed
simulator, episode seeds and folds); each module says which option makes it stochastic.
Failures (an exception, NaN, inf) raise ``host.TaskError`` naming the point (``host``'s docstring
shows what a user sees under ``jit``); nothing is replaced silently.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple, Optional

import numpy as np

from ntkbo.benchmarks.tasks import hpo, lunar_lander, robot_push, rover
from ntkbo.benchmarks.tasks.host import TaskError, evaluate_rows, host_fn

__all__ = ["Task", "TaskError", "evaluate", "get", "is_task", "names", "task"]


class Task(NamedTuple):
    """A catalogue entry: the box, the host function and its documented facts."""

    name: str
    lower: np.ndarray
    upper: np.ndarray
    evaluate: Callable  # module-level numpy function x (d,) -> float, keyword options
    fixed: tuple = ()  # keyword arguments that define this task (not options)
    options: tuple = ()  # (option, default) pairs the user may change
    paper: str = ""
    cost: str = ""
    constraint: Optional[Callable] = None  # x (d,) -> float, feasible iff <= 0 (and its options)
    constraint_options: tuple = ()

    @property
    def dim(self) -> int:
        return int(self.lower.shape[0])


_PUSH_PAPER = ("Wang & Jegelka 2017 (MES) / Wang et al. 2018 (EBO); NeuralBO (Phan-Trong et al. "
               "2023) section 6.6, STO-BNTS (Dai et al. 2022) section 3.4")
_PUSH_OPTS = (("velocity_noise", 0.0), ("noise_seed", None))

_TASKS: dict[str, Task] = {
    "robot_push3": Task("robot_push3", robot_push.PUSH3_LOWER, robot_push.PUSH3_UPPER,
                        robot_push.push3, options=(("goal", robot_push.DEFAULT_GOAL),) + _PUSH_OPTS,
                        paper=_PUSH_PAPER, cost="2-9 ms"),
    "robot_push4": Task("robot_push4", robot_push.PUSH4_LOWER, robot_push.PUSH4_UPPER,
                        robot_push.push4, options=(("goal", robot_push.DEFAULT_GOAL),) + _PUSH_OPTS,
                        paper=_PUSH_PAPER, cost="2-9 ms"),
    "robot_push14": Task("robot_push14", robot_push.PUSH14_LOWER, robot_push.PUSH14_UPPER,
                         robot_push.push14, options=_PUSH_OPTS, paper=_PUSH_PAPER,
                         cost="5-20 ms"),
    "rover60": Task("rover60", np.zeros(rover.DIM), np.ones(rover.DIM), rover.rover60,
                    options=(("jitter", 1e-4), ("jitter_seed", 0)),
                    paper="Wang et al. 2018 (EBO); TuRBO; STO-BNTS (Dai et al. 2022) section 3.4 (20-D)",
                    cost="about 1 ms"),
    "lunar_lander12": Task("lunar_lander12", np.full(lunar_lander.DIM, lunar_lander.LOWER),
                           np.full(lunar_lander.DIM, lunar_lander.UPPER),
                           lunar_lander.lunar_lander12, options=(("episodes", 20), ("seed0", 0)),
                           paper="TuRBO (Eriksson et al. 2019); STO-BNTS (Dai et al. 2022) section 3.4",
                           cost="0.3-2 s (20 episodes)"),
}
for _m in hpo.MODELS:
    for _d in hpo.DATASETS:
        _n = len(hpo.space(_m, _d in hpo.REGRESSION))
        _TASKS[f"hpo_{_m}_{_d}"] = Task(
            f"hpo_{_m}_{_d}", np.zeros(_n), np.full(_n, hpo.BOX_UPPER), hpo.hpo,
            fixed=(("model", _m), ("dataset", _d)), options=(("folds", 5),),
            paper=("GO-UCB (Liu and Wang 2023) section 6.3 (RF, MLP, GB); STO-BNTS (Dai et al. "
                   "2022) section 3.3 (RF)"),
            cost=hpo.COSTS.get(f"hpo_{_m}_{_d}", ""))
_TASKS["hpo_mlp_digits_size"] = Task(
    "hpo_mlp_digits_size", np.zeros(len(hpo.SIZE_SPACE)),
    np.full(len(hpo.SIZE_SPACE), hpo.BOX_UPPER), hpo.size_objective, options=(("folds", 5),),
    paper="constrained tuning in the manner of Neural-CBO (Phan Trong's thesis, chapter 4); not its "
          "MNIST task",
    cost=hpo.COSTS.get("hpo_mlp_digits_size", ""), constraint=hpo.size_constraint)


def names() -> list[str]:
    """The host tasks' names, sorted."""
    return sorted(_TASKS)


def is_task(name) -> bool:
    return isinstance(name, str) and name in _TASKS


def task(name: str) -> Task:
    """The catalogue entry of ``name`` (box, function, options, paper, cost)."""
    if not is_task(name):
        raise ValueError(f"name={name!r} is not a host task; valid names: {', '.join(names())}")
    return _TASKS[name]


def _resolve_options(t: Task, options: dict) -> tuple:
    known = dict(t.options)
    unknown = sorted(set(options) - set(known))
    if unknown:
        valid = ", ".join(sorted(known)) or "none"
        raise ValueError(f"option(s) {', '.join(unknown)} not accepted by {t.name!r}; valid "
                         f"options: {valid}, workers")
    merged = {**known, **options}
    for k, v in merged.items():  # hashable, so that equal options give the same fn object
        if isinstance(v, (list, np.ndarray)):
            merged[k] = tuple(float(e) for e in np.asarray(v).ravel())
    if "folds" in merged and not (isinstance(merged["folds"], int) and merged["folds"] >= 2):
        raise ValueError(f"folds={merged['folds']!r} must be an integer >= 2")
    if "episodes" in merged and not (isinstance(merged["episodes"], int)
                                     and merged["episodes"] >= 1):
        raise ValueError(f"episodes={merged['episodes']!r} must be an integer >= 1")
    return tuple(sorted(merged.items()))


def bound(name: str, options: tuple = ()) -> Callable:
    """The numpy function ``x (d,) -> float`` of task ``name`` with ``options`` applied."""
    t = task(name)
    return functools.partial(t.evaluate, **dict(t.fixed), **dict(options))


@functools.lru_cache(maxsize=None)
def _fns(name: str, options: tuple, workers: int):
    t = task(name)
    fn = host_fn(name, bound(name, options), t.dim, workers)
    if t.constraint is None:
        return fn, None
    one = host_fn(f"{name} (constraint)", t.constraint, t.dim, workers)

    def cons(x):  # x (d,) -> (1,)
        return one(x)[None]

    return fn, cons


def get(name: str, noise_std: float = 0.0, *, workers: int = 1, **options):
    """The host task ``name`` as a ``Problem`` (``fn`` a host callback; ``optimum`` ``None``).

    Args:
      name: one of ``names()``.
      noise_std: additive Gaussian observation noise added by ``Problem.evaluate`` (default 0).
      workers: worker processes for a batch of points (module docstring); default 1.
      **options: the task's options (its module's docstring; ``task(name).options`` lists them
        with their defaults). An unknown option raises a ``ValueError`` naming it.
    """
    from ntkbo.benchmarks.problem import Problem  # noqa: PLC0415 (no cycle at import)
    import jax.numpy as jnp  # noqa: PLC0415

    t = task(name)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r} must be an integer >= 1")
    if not (isinstance(noise_std, (int, float)) and math.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"noise_std={noise_std!r} must be a finite float >= 0")
    fn, cons = _fns(name, _resolve_options(t, options), workers)
    return Problem(name=name, fn=fn, bounds=jnp.asarray(np.stack([t.lower, t.upper])),
                   optimum=None, optimizer=None, noise_std=float(noise_std), constraints=cons)


def evaluate(name: str, x, *, workers: int = 1, **options) -> np.ndarray:
    """The task's values at the rows of ``x`` ``(n, d)`` directly on the host (no JAX), float64
    ``(n,)``; raises ``TaskError`` naming a failing point. Handy with ``ntkbo.ask_tell``."""
    t = task(name)
    return evaluate_rows(name, bound(name, _resolve_options(t, options)), np.atleast_2d(x),
                         workers)
