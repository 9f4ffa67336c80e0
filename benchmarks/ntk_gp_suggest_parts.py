"""Where ``ntk_gp``'s suggest spends its time at n = 2000 (Ackley-10, float32, capacity 2048): the
full suggest, without the 30 projected-gradient steps (``num_steps=0``), and with 64 screening
candidates instead of 1024 + 256 perturbations + 4 best points. Median of 5 suggests after a warm-up.

    OPENBLAS_NUM_THREADS=1 python benchmarks/ntk_gp_suggest_parts.py
"""
import time, jax, jax.numpy as jnp, numpy as np, ntkbo
P = ntkbo.benchmarks.get("ackley", dim=10)
bounds = jnp.asarray(P.bounds)
def timed(algo, n=2000, cap=2048, reps=5):
    st = algo.init(jax.random.PRNGKey(0), bounds, cap)
    x = ntkbo.qmc.sobol(jax.random.PRNGKey(1), n, bounds); st = jax.jit(algo.update)(st, x, jax.vmap(P.fn)(x))
    s = jax.jit(algo.suggest); jax.block_until_ready(s(jax.random.PRNGKey(2), st))
    ts=[]
    for r in range(reps):
        t=time.perf_counter(); jax.block_until_ready(s(jax.random.PRNGKey(3+r), st)); ts.append(time.perf_counter()-t)
    return np.median(ts)
for kw in ({}, {"num_steps": 0}, {"num_candidates": 64, "num_steps": 0}):
    print(kw, "%.3f s" % timed(ntkbo.algorithms.get("ntk_gp_ei", **kw)))
