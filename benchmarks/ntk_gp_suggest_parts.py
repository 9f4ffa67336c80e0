"""Where ``ntk_gp``'s suggest spends its time, and its posterior-inverse path against the solve.

    OPENBLAS_NUM_THREADS=1 python benchmarks/ntk_gp_suggest_parts.py                # parts
    OPENBLAS_NUM_THREADS=1 python benchmarks/ntk_gp_suggest_parts.py --compare --grid 500,1000,2000
    python benchmarks/ntk_gp_suggest_parts.py --accuracy --grid 2000

Default: three timings of ``ntk_gp(acquisition="ei")``'s jitted suggest at n = 2000 (Ackley-10,
float32, capacity 2048; median of 5 after a warm-up): the default; without the 30
projected-gradient steps (``num_steps=0``); and with 64 screening candidates instead of 1024
Sobol points + 256 perturbations + 4 best points, also without steps. The differences are the
gradient steps' and the screening's shares (``docs/speed.md``).

``--compare``: ``ntk_gp`` (its default UCB) with ``posterior_inverse=True`` (the factor's inverse
once per suggest, then matrix products) and ``False`` (a triangular solve per evaluation), at
each n of ``--grid`` (capacity ``next_capacity(n + 1)``), in one process, alternating the two
``--rounds`` times; then the largest distance between their suggestions over 3 keys (in units of
the box width) and the largest relative difference of their acquisition values.

``--accuracy``: float32 posterior variances of ``ntk_gp``'s NTK (depth 2, ReLU, sphere inputs)
by the solve and by the inverse, against the dense float64 variance (``np.linalg.inv``), at each
n of ``--grid`` (d = 10, 1000 test points): uniform points with ``lam = 1e-2`` (``ntk_gp``'s) and
clustered points (s.d. 0.05 around the centre, the test points 0.075) with ``lam = 1e-4``
(ill-conditioned). The float32
algebra runs on the gram tabulated in float64 and rounded, so only the algebra differs.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo

VARIANTS = ({}, {"num_steps": 0}, {"num_candidates": 64, "num_steps": 0})


def _state(algo, problem, n, capacity):
    bounds = jnp.asarray(problem.bounds)
    state = algo.init(jax.random.PRNGKey(0), bounds, capacity)
    x = ntkbo.qmc.sobol(jax.random.PRNGKey(1), n, bounds)
    return jax.jit(algo.update)(state, x, jax.vmap(problem.fn)(x))[0]


def suggest_time(algo, problem, n: int = 2000, capacity: int = 2048, reps: int = 5) -> float:
    """Median wall time of ``algo.suggest`` with ``n`` Sobol observations in a buffer of
    ``capacity`` rows (compiled once before timing)."""
    state = _state(algo, problem, n, capacity)
    suggest = jax.jit(algo.suggest)
    jax.block_until_ready(suggest(jax.random.PRNGKey(2), state))
    times = []
    for r in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(suggest(jax.random.PRNGKey(3 + r), state))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def compare(grid, rounds: int, reps: int) -> None:
    problem = ntkbo.benchmarks.get("ackley", dim=10)
    width = float(np.max(np.ptp(np.asarray(problem.bounds), axis=0)))
    print("| n | capacity | suggest, solve | suggest, inverse | solve / inverse | max |dx| / "
          "width | max rel. acq diff |\n|---:|---:|---:|---:|---:|---:|---:|")
    for n in grid:
        cap = ntkbo.data.next_capacity(n + 1)
        algos = {inv: ntkbo.algorithms.get("ntk_gp", search=dict(posterior_inverse=inv))
                 for inv in (False, True)}
        states = {inv: _state(a, problem, n, cap) for inv, a in algos.items()}
        fns = {inv: jax.jit(a.suggest) for inv, a in algos.items()}
        times = {False: [], True: []}
        for inv in (False, True):
            jax.block_until_ready(fns[inv](jax.random.PRNGKey(2), states[inv]))
        for _ in range(rounds):
            for inv in (False, True):
                for k in range(reps):
                    t = time.perf_counter()
                    jax.block_until_ready(fns[inv](jax.random.PRNGKey(3 + k), states[inv]))
                    times[inv].append(time.perf_counter() - t)
        dx, dv = 0.0, 0.0
        for k in range(3):
            (xa, ia), (xb, ib) = (fns[inv](jax.random.PRNGKey(100 + k), states[inv])
                                  for inv in (True, False))
            dx = max(dx, float(np.max(np.abs(np.asarray(xa) - np.asarray(xb)))) / width)
            va, vb = np.asarray(ia.acq_value), np.asarray(ib.acq_value)
            dv = max(dv, float(np.max(np.abs(va - vb) / np.maximum(np.abs(vb), 1e-30))))
        ts, ti = float(np.median(times[False])), float(np.median(times[True]))
        print(f"| {n} | {cap} | {ts * 1e3:.1f} ms | {ti * 1e3:.1f} ms | {ts / ti:.2f} | "
              f"{dx:.1e} | {dv:.1e} |", flush=True)


def accuracy(grid) -> None:
    jax.config.update("jax_enable_x64", True)  # the float64 reference gram
    from ntkbo import data as D
    from ntkbo import gp as G
    from ntkbo.algorithms.observations import to_sphere
    from ntkbo.kernels import as_kernel, mlp

    ntk = as_kernel(mlp(2, 1, "relu", W_std=2.0**0.5, b_std=0.1)[2], "ntk")
    d, m = 10, 1000
    print("| n | points | lam | cond | median var | max err, solve | max err, inverse |\n"
          "|---:|---|---:|---:|---:|---:|---:|")
    for n in grid:
        for label, lam, spread in (("uniform", 1e-2, 0.0), ("clustered", 1e-4, 0.05)):
            rng = np.random.default_rng(3)
            if spread:  # test points 1.5 times as spread as the data
                pts = np.clip(0.5 + spread * rng.standard_normal((n + m, d))
                              * np.repeat([1.0, 1.5], [n, m])[:, None], 0.0, 1.0)
            else:
                pts = rng.uniform(size=(n + m, d))
            z = to_sphere(jnp.asarray(pts))
            k64 = np.asarray(jax.jit(ntk)(z, z))
            noise = lam + G.default_jitter(jnp.float32) * np.mean(np.diag(k64)[:n])
            a = k64[:n, :n] + noise * np.eye(n)
            ks = k64[n:, :n]
            ref = np.diag(k64)[n:] - np.einsum("ij,ij->i", ks @ np.linalg.inv(a), ks)
            k32 = jnp.asarray(k64, jnp.float32)
            table = lambda u, v, k32=k32: k32[u[:, 0].astype(jnp.int32)][:, v[:, 0].astype(jnp.int32)]  # noqa: E731,E501
            idx = jnp.arange(n + m, dtype=jnp.float32)[:, None]
            y = jnp.asarray(np.sin(3 * pts[:n, 0]), jnp.float32)

            def var(inverse, table=table, idx=idx, y=y, lam=lam, n=n):
                data = D.append(D.empty(n, 1, jnp.float32), idx[:n], y)
                post = G.fit(table, data, lam)
                post = G.with_inverse(post) if inverse else post
                return G.variance(table, post, idx[n:])

            fn = jax.jit(var, static_argnums=0)
            err = [float(np.max(np.abs(np.asarray(fn(inv), np.float64) - ref)))
                   for inv in (False, True)]
            print(f"| {n} | {label} | {lam:g} | {np.linalg.cond(a):.1e} | {np.median(ref):.2e} | "
                  f"{err[0]:.1e} | {err[1]:.1e} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", action="store_true", help="posterior_inverse True vs False")
    ap.add_argument("--accuracy", action="store_true", help="float32 variance errors")
    ap.add_argument("--grid", default="2000", help="comma-separated n")
    ap.add_argument("--rounds", type=int, default=3, help="alternations (--compare)")
    ap.add_argument("--reps", type=int, default=3, help="calls per variant and round (--compare)")
    args = ap.parse_args()
    grid = [int(v) for v in args.grid.split(",")]
    if args.compare:
        compare(grid, args.rounds, args.reps)
        return
    if args.accuracy:
        accuracy(grid)
        return
    problem = ntkbo.benchmarks.get("ackley", dim=10)
    print("| options | suggest at n = 2000 |\n|---|---:|")
    for options in VARIANTS:
        t = suggest_time(ntkbo.algorithms.get("ntk_gp_ei", **options), problem)
        print(f"| {options or 'defaults'} | {t:.3f} s |")


if __name__ == "__main__":
    main()
