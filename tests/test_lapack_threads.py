"""ntkbo pins the LAPACK library behind jax's CPU Cholesky and triangular solves to one thread.

With OpenBLAS's default threads (one per core) every LAPACK call inside a compiled BO step competed
with XLA's own busy thread pool: a 300-evaluation ntk_gp run took 99 s instead of 10.6 s and three
vmapped seeds 426 s instead of 64 s on 2 cores (the "capacity-512 cliff" of
ntkbo/lapack_threads.py). The setting is one explicit call, ``ntkbo.configure_blas_threads()``
(the command line and the study runner make it; importing ntkbo does not: tests/test_layering.py).
Each case runs in a fresh interpreter, since the test session itself pins the threads
(conftest.py).
"""

import json
import os
import subprocess
import sys

import pytest

# Prints the thread count of scipy's OpenBLAS (the library jax's LAPACK calls) after
# ``ntkbo.configure_blas_threads()``, asked through threadpoolctl's ``threadpool_info`` (not through
# ntkbo's own functions), and, with "time",
# the wall time of the hot LAPACK pattern of a kernel model's suggest at capacity 1024 in float32:
# a Cholesky fit, then 30 gradient steps of the posterior variance at 4 points (two triangular
# solves each, as the acquisition optimiser does), vmapped over 2 seeds and looped over them.
SCRIPT = r"""
import json, sys, time
import jax, jax.numpy as jnp
import ntkbo
from ntkbo import data as D, gp as G, lapack_threads
ntkbo.configure_blas_threads()
try:
    import threadpoolctl
    libs = set(lapack_threads.lapack_libraries())
    threads = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["filepath"] in libs]
    threads = threads[0] if threads else None
except ImportError:
    threads = lapack_threads.get_lapack_threads()
out = {"threads": threads}
if sys.argv[1] == "time":
    cap = 1024
    kernel = lambda a, b: jnp.exp(-jnp.sum((a[:, None] - b[None]) ** 2, -1) / 0.5)

    def step(key):
        x = jax.random.uniform(key, (cap, 4))
        post = G.fit(kernel, D.Data(x, jnp.sin(x.sum(1)), jnp.int32(cap - 3)), 1e-3)
        grad = jax.grad(lambda z: jnp.sum(G.variance(kernel, post, z)))
        body = lambda z, _: (jnp.clip(z + 0.01 * grad(z), 0.0, 1.0), None)
        return jax.lax.scan(body, jax.random.uniform(key, (4, 4)), None, length=30)[0]

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    many = jax.jit(jax.vmap(step)).lower(keys).compile()
    one = jax.jit(step).lower(keys[0]).compile()

    def best_of(call, reps=3):
        jax.block_until_ready(call())
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            jax.block_until_ready(call())
            times.append(time.perf_counter() - t0)
        return min(times)

    out["vmap"] = best_of(lambda: many(keys))
    out["loop"] = best_of(lambda: [one(k) for k in keys])
print("@@" + json.dumps(out))
"""

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                  "NTKBO_LAPACK_THREADS")


def run(mode, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    # Compiled with XLA's optimisations mostly off (1.4 s instead of 4.6 s here): the LAPACK
    # calls, whose threads are under test, are the same custom calls either way.
    env.update(JAX_ENABLE_X64="0", JAX_DISABLE_MOST_OPTIMIZATIONS="1", **env_vars)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                          env=env, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")]
    assert lines, proc.stderr[-3000:]
    return json.loads(lines[-1][2:])


needs_cores = pytest.mark.skipif(
    (os.cpu_count() or 1) < 2, reason="OpenBLAS starts one thread on one core: nothing to pin")


@needs_cores
def test_the_call_pins_lapack_threads_and_the_vmapped_step_is_not_slowed():
    """Mutation caught: ``configure_blas_threads`` not setting the threads (the library keeps one
    thread per core). The thread count is read through threadpoolctl; the timing compares the
    vmapped hot step in a default environment with the same step under ``OPENBLAS_NUM_THREADS=1``
    (the known-good setting, run back to back). Measured here with OpenBLAS's default of 2 threads
    (what ntkbo left before it pinned them): 3.6 s against 0.31 s; after it 0.25 s against 0.31 s, so
    a factor of 3 (plus 50 ms for jitter on a loaded machine) separates them by far."""
    default = run("time")
    reference = run("time", OPENBLAS_NUM_THREADS="1")
    assert reference["threads"] in (1, None)
    if default["threads"] is None:
        pytest.skip("no OpenBLAS behind scipy's LAPACK here (MKL or Accelerate)")
    assert default["threads"] == 1
    assert default["vmap"] <= 3.0 * reference["vmap"] + 0.05, (default, reference)
    # How the vmapped step compares with the loop over seeds is a speed target, measured in
    # docs/decisions.md (2026-11-27: ntkbo.linalg factorises a batch one matrix at a time on CPU),
    # not asserted here.


@needs_cores
def test_user_choices_are_respected():
    """Mutations caught: ignoring ``NTKBO_LAPACK_THREADS`` (``keep`` or a number) or overriding a
    user's ``OPENBLAS_NUM_THREADS``. The library's own default is one thread per core (> 1)."""
    kept = run("threads", NTKBO_LAPACK_THREADS="keep")
    if kept["threads"] is None:
        pytest.skip("no OpenBLAS behind scipy's LAPACK here (MKL or Accelerate)")
    assert kept["threads"] > 1
    assert run("threads", NTKBO_LAPACK_THREADS="2")["threads"] == 2
    assert run("threads", OPENBLAS_NUM_THREADS="2")["threads"] == 2


# A script that never calls ``configure_blas_threads``: its objective (a host callback, run while
# the compiled program runs) records the LAPACK thread count it sees.
DURING = r"""
import json
import jax, numpy as np, ntkbo
from ntkbo import lapack_threads
seen = []

def objective(x):
    seen.append(lapack_threads.get_lapack_threads())
    return float(np.sum((np.asarray(x) - 0.3) ** 2))

problem = ntkbo.benchmarks.numpy_problem(objective, bounds=[[0.0, 0.0], [1.0, 1.0]])
before = lapack_threads.get_lapack_threads()
ntkbo.minimize(ntkbo.algorithms.random_search(), problem, 6, jax.random.PRNGKey(0), n_init=2)
print("@@" + json.dumps({"before": before, "seen": sorted(set(seen)),
                         "after": lapack_threads.get_lapack_threads()}))
"""


@needs_cores
def test_drivers_run_on_one_thread_and_give_the_threads_back():
    """``minimize`` runs its program on one LAPACK thread in a script that set nothing, and the
    process's own count is back afterwards. Mutations caught: the driver not entering
    ``lapack_threads.during_calls`` (the objective sees the default count); the count not
    restored (the script's own scipy code would be left on one thread)."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    env.update(JAX_ENABLE_X64="0", NTKBO_QUIET="1", NTKBO_CACHE_DIR="off")
    proc = subprocess.run([sys.executable, "-c", DURING], capture_output=True, text=True,
                          env=env, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")]
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][2:])
    if out["before"] is None:
        pytest.skip("no OpenBLAS behind scipy's LAPACK here (MKL or Accelerate)")
    assert out["before"] > 1 and out["seen"] == [1] and out["after"] == out["before"]
