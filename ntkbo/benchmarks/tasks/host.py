"""Host objectives as JAX functions: one ``jax.pure_callback`` per batch of points.

A host task is a numpy function ``evaluate_one(x) -> float`` of one point ``x`` ``(d,)`` (a
simulation, a cross-validated fit). ``host_fn`` wraps it as the ``fn`` of a ``Problem``, a function
of one point ``x`` ``(d,)`` returning a scalar that works everywhere a closed-form ``fn`` does:
eagerly, under ``jit``, inside the ``lax.scan`` of ``ntkbo.minimize``, and under ``vmap`` (the
``q`` points of a round, the seeds of the experiment runner).

Batching: the callback is declared with ``vmap_method="broadcast_all"``, so under any number of
nested ``vmap``s the whole batch of points (``(seeds, q, d)`` in ``jax.vmap(minimize)``) arrives on
the host in ONE call, flattened to ``(n, d)`` rows and evaluated together: in this process
(``workers=1``), or spread over ``workers`` processes of a ``concurrent.futures``
``ProcessPoolExecutor`` (``spawn`` start method: forking a process that runs JAX's threads is not
safe). The pool is created on first use and kept for the life of the process (one per number of
workers, shared by the tasks); each worker imports a task's module once, and the ``__main__``
module as ``spawn`` does, so a script calling a task with ``workers > 1`` needs an
``if __name__ == "__main__":`` guard (without it each worker re-runs the script and dies; the
``TaskError`` raised then says so, the broken pool is dropped and the next call starts a new one).

Failures are never replaced by a value: if ``evaluate_one`` raises, or returns NaN or an
infinity, the callback raises ``TaskError`` whose message names the task and the offending point
(all ``d`` coordinates, ``repr`` precision). Through JAX (``problem.fn_batch``, ``jit``,
``ntkbo.minimize``) the user sees a ``jax.errors.JaxRuntimeError`` whose message is the callback's
traceback ending in that text, and JAX logs "jax.pure_callback failed" with the traceback to
stderr. Measured (jax 0.10.2), at the centre of ``robot_push3``'s box::

    jax.errors.JaxRuntimeError: ... File ".../ntkbo/benchmarks/tasks/host.py", ... in _checked
    TaskError: robot_push3 failed at x = [0.0, 0.0, 15.5]: ValueError: robot_push3: the hand
    starts on the object (rx = ry = 0), so the push direction (towards the object) is undefined

(JAX documents exceptions raised in a ``pure_callback`` as outside its API contract; this one
aborts the computation, which is what a failed evaluation should do here.)
``evaluate_host(problem_or_name, x)`` calls
the numpy function directly (no JAX), e.g. with ``ntkbo.ask_tell``.

The value's dtype follows ``x`` (float32 unless ``jax_enable_x64``); the host computes in float64.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np


class TaskError(RuntimeError):
    """A host task failed (raised, or returned NaN/inf) at a point; the message names it."""


def _point_text(x: np.ndarray) -> str:
    return "[" + ", ".join(repr(float(v)) for v in np.asarray(x, dtype=float).ravel()) + "]"


def _checked(name: str, evaluate_one: Callable, x: np.ndarray, nan_ok: bool = False) -> float:
    try:
        value = evaluate_one(x)
        if isinstance(value, (bool, np.bool_, complex, np.complexfloating, str, bytes)):
            raise TaskError(f"{name} returned {value!r} at x = {_point_text(x)}: an objective "
                            "returns a real number (a float)")
        y = float(value)
    except TaskError:
        raise
    except Exception as err:  # any simulator/fit failure: report it with its point
        raise TaskError(f"{name} failed at x = {_point_text(x)}: "
                        f"{type(err).__name__}: {err}") from err
    if not np.isfinite(y) and nan_ok:
        return float("nan")  # a failed evaluation: the driver records it and goes on
    if not np.isfinite(y):
        raise TaskError(f"{name} returned {y} at x = {_point_text(x)} (a non-finite value is a "
                        "failed evaluation; ntkbo does not replace it)")
    return y


def _run_chunk(name: str, evaluate_one: Callable, xs: np.ndarray, nan_ok: bool = False
               ) -> np.ndarray:
    return np.array([_checked(name, evaluate_one, x, nan_ok) for x in xs], dtype=np.float64)


#: The worker pools, by number of workers (created on first use, dropped when one breaks).
_POOLS: dict[int, cf.ProcessPoolExecutor] = {}


def _pool(workers: int) -> cf.ProcessPoolExecutor:
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS[workers] = cf.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        atexit.register(pool.shutdown, wait=True)  # before the interpreter tears modules down
    return pool


def evaluate_rows(name: str, evaluate_one: Callable, xs, workers: int = 1,
                  nan_ok: bool = False) -> np.ndarray:
    """``evaluate_one`` at every row of ``xs`` ``(n, d)`` -> float64 ``(n,)``; raises ``TaskError``
    naming the first failing point (with ``nan_ok``, a NaN or infinite value is returned as NaN
    instead, and only an exception fails). ``workers > 1`` spreads the rows over worker
    processes (``evaluate_one`` must then be a picklable module-level callable)."""
    xs = np.asarray(xs, dtype=np.float64)
    if xs.ndim != 2:
        raise ValueError(f"xs must have shape (n, d), got {xs.shape}")
    if workers <= 1 or xs.shape[0] <= 1:
        return _run_chunk(name, evaluate_one, xs, nan_ok)
    chunks = np.array_split(xs, min(workers, xs.shape[0]))
    try:
        futures = [_pool(workers).submit(_run_chunk, name, evaluate_one, c, nan_ok)
                   for c in chunks]
        return np.concatenate([f.result() for f in futures])  # re-raises a worker's TaskError
    except BrokenProcessPool as err:
        _POOLS.pop(workers).shutdown(wait=False)  # a broken pool refuses every later call
        raise TaskError(
            f"{name}: a worker process died (workers={workers}). The workers are started with "
            "the 'spawn' method, which imports the __main__ module in each of them: a script "
            "that runs ntkbo when imported needs its code under if __name__ == '__main__':. "
            "A worker killed for memory ends here too.") from err


def host_fn(name: str, evaluate_one: Callable, dim: int, workers: int = 1,
            nan_ok: bool = False) -> Callable:
    """A JAX function ``x (d,) -> ()`` evaluating ``evaluate_one`` on the host (module docstring).

    ``nan_ok``: a NaN or infinite value is returned as NaN, which ``ntkbo.minimize`` records as a
    failed evaluation (as it does a JAX objective's NaN), instead of aborting the run with
    ``TaskError``; an exception raised by ``evaluate_one`` still aborts it. Call through
    ``task_fn`` (cached) so that the same task and options give the same function object, and
    jitted code taking the ``Problem`` compiles once.
    """

    def callback(x):
        x = np.asarray(x)
        batch = x.shape[:-1]
        y = evaluate_rows(name, evaluate_one, x.reshape(-1, dim), workers, nan_ok)
        with np.errstate(over="ignore"):
            out = y.astype(x.dtype)
        lost = np.flatnonzero(np.isfinite(y) & ~np.isfinite(out))
        if lost.size:  # never a silent inf (a failed evaluation): the value is too large
            i = int(lost[0])
            raise TaskError(
                f"{name} returned {y[i]!r} at x = {_point_text(x.reshape(-1, dim)[i])}, which "
                f"overflows {np.dtype(x.dtype)} (largest finite value "
                f"{float(np.finfo(x.dtype).max):.4g}): rescale the objective or enable "
                "jax_enable_x64")
        return out.reshape(batch)

    def fn(x):
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        if x.shape != (dim,):
            raise ValueError(f"x must have shape ({dim},) for task {name!r}, got {x.shape}")
        out = jax.ShapeDtypeStruct((), x.dtype)
        return jax.pure_callback(callback, out, x, vmap_method="broadcast_all")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"The host task {name!r} (ntkbo.benchmarks.tasks) at one point x ({dim},)."
    return fn


def numpy_problem(fn: Callable, bounds, *, name: str = "objective", workers: int = 1,
                  optimum: float | None = None, noise_std: float = 0.0):
    """A ``Problem`` from a numpy (or any non-JAX) objective ``fn(x: ndarray (d,)) -> float``.

    ``fn`` runs on the host through one ``jax.pure_callback`` per batch of points (``host_fn``),
    so ``ntkbo.minimize`` can compile the run and ``jax.vmap`` it over seeds. A NaN or infinite
    value is a failed evaluation (recorded, kept out of the model, never the best); an exception
    raised by ``fn`` aborts the run with ``TaskError`` naming the point. ``workers > 1``
    evaluates a batch in that many processes (``fn`` must then be picklable, defined at module
    level, and the script guarded by ``if __name__ == "__main__":``).

    Args:
      fn: the objective of one point, to minimise.
      bounds: ``(2, d)`` box, lower row then upper row.
      name: the problem's name (in results and error messages).
      optimum: the known minimum, if any (regret is then reported).
      noise_std: observation noise added by the driver, as for every ``Problem``.
    """
    from ntkbo.benchmarks.problem import Problem
    from ntkbo.validation import check_bounds

    bounds = jnp.asarray(bounds, dtype=jnp.result_type(float))
    check_bounds(bounds, "bounds")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    return Problem(name=name, fn=host_fn(name, fn, bounds.shape[-1], workers, nan_ok=True),
                   bounds=bounds, optimum=optimum, noise_std=noise_std)
