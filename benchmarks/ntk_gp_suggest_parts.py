"""Where ``ntk_gp``'s suggest spends its time at n = 2000 (Ackley-10, float32, capacity 2048).

    OPENBLAS_NUM_THREADS=1 python benchmarks/ntk_gp_suggest_parts.py

Three timings of ``ntk_gp(acquisition="ei")``'s jitted suggest (median of 5 after a warm-up): the
default; without the 30 projected-gradient steps (``num_steps=0``); and with 64 screening
candidates instead of 1024 Sobol points + 256 perturbations + 4 best points, also without steps.
The differences are the gradient steps' and the screening's shares (``docs/speed.md``).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo

VARIANTS = ({}, {"num_steps": 0}, {"num_candidates": 64, "num_steps": 0})


def suggest_time(algo, problem, n: int = 2000, capacity: int = 2048, reps: int = 5) -> float:
    """Median wall time of ``algo.suggest`` with ``n`` Sobol observations in a buffer of
    ``capacity`` rows (compiled once before timing)."""
    bounds = jnp.asarray(problem.bounds)
    state = algo.init(jax.random.PRNGKey(0), bounds, capacity)
    x = ntkbo.qmc.sobol(jax.random.PRNGKey(1), n, bounds)
    state, _ = jax.jit(algo.update)(state, x, jax.vmap(problem.fn)(x))
    suggest = jax.jit(algo.suggest)
    jax.block_until_ready(suggest(jax.random.PRNGKey(2), state))
    times = []
    for r in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(suggest(jax.random.PRNGKey(3 + r), state))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    problem = ntkbo.benchmarks.get("ackley", dim=10)
    print("| options | suggest at n = 2000 |\n|---|---:|")
    for options in VARIANTS:
        t = suggest_time(ntkbo.algorithms.get("ntk_gp_ei", **options), problem)
        print(f"| {options or 'defaults'} | {t:.3f} s |")


if __name__ == "__main__":
    main()
