"""Memory of a process that runs one problem after another: mappings and resident memory.

Loops ``ntkbo.minimize`` over ``--problems`` distinct user-defined problems (each a new JAX
function, so each run is a new compiled program), cycling through the algorithms ``gp_ei``,
``ntk_gp`` and ``neural_bo`` at a small budget, and prints every ``--every`` problems the
process's memory mappings (lines of ``/proc/self/maps``) and resident memory (``VmRSS`` of
``/proc/self/status``). XLA:CPU keeps each executable's machine code in its own mappings, so a
process that kept every program would grow without bound (Linux stops it at
``vm.max_map_count``, 65,530 by default); the drivers keep a bounded number of programs
(``ntkbo.cache.KEEP_PROGRAMS``).

    python benchmarks/release.py --problems 60 --every 6
    python benchmarks/release.py --problems 60 --every 6 --keep-all   # without the release

``--keep-all`` turns the release off (``ntkbo.cache.KEEP_PROGRAMS`` set to a size no run
reaches), for the comparison. The persistent compilation cache is pointed at a temporary folder
(deleted at the end), so the runs neither read nor fill the user's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ALGORITHMS = ("gp_ei", "ntk_gp", "neural_bo")
#: Small options, so that a run costs about its compilation.
OPTIONS = {
    "gp_ei": {"fit": {"num_steps": 5}, "search": {"num_candidates": 64, "num_restarts": 2,
                                                   "num_steps": 5}},
    "ntk_gp": {"search": {"num_candidates": 64, "num_restarts": 2, "num_steps": 5}},
    "neural_bo": {"network": {"width": 16}, "training": {"num_steps": 5},
                  "search": {"num_candidates": 64, "num_restarts": 2, "num_steps": 5,
                             "num_perturbations": 8}},
}


def mappings() -> int:
    """Lines of ``/proc/self/maps``: the process's memory mappings."""
    with open("/proc/self/maps") as fh:
        return sum(1 for _ in fh)


def rss_mib() -> float:
    """Resident memory in MiB (``VmRSS``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def problem(i: int):
    """The ``i``-th user problem: a shifted quadratic plus a sine, 2-D, a new function each time."""
    import jax.numpy as jnp

    from ntkbo.benchmarks import Problem

    shift = 0.1 * (i % 7) - 0.3
    scale = 1.0 + 0.01 * i

    def fn(x):
        return scale * jnp.sum((x - shift) ** 2) + 0.1 * jnp.sin(3.0 * x[0])

    return Problem(name=f"user_{i}", fn=fn, bounds=jnp.array([[-1.0, -1.0], [1.0, 1.0]]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--problems", type=int, default=60)
    p.add_argument("--every", type=int, default=6, help="print every this many problems")
    p.add_argument("--budget", type=int, default=5)
    p.add_argument("--keep-all", action="store_true", help="turn the release off")
    p.add_argument("--minutes", type=float, default=None,
                   help="stop after this many minutes (the count reached is printed)")
    args = p.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="ntkbo-release-cache-")
    os.environ["NTKBO_CACHE_DIR"] = folder
    try:
        import jax

        import ntkbo
        from ntkbo import cache, compiling

        ntkbo.configure_blas_threads()
        compiling.quiet()  # every problem compiles: the table, not a notice per problem
        if args.keep_all:
            cache.KEEP_PROGRAMS = 1 << 30
        algos = {n: ntkbo.algorithms.get(n, **OPTIONS[n]) for n in ALGORITHMS}
        key = jax.random.PRNGKey(0)
        t0 = time.time()
        print(f"release={'off' if args.keep_all else 'on'} keep={cache.KEEP_PROGRAMS} "
              f"budget={args.budget}")
        print(f"{'problems':>8} {'maps':>7} {'rss_MiB':>8} {'seconds':>8}")
        print(f"{0:8d} {mappings():7d} {rss_mib():8.0f} {0.0:8.1f}", flush=True)
        done = 0
        for i in range(args.problems):
            name = ALGORITHMS[i % len(ALGORITHMS)]
            r = ntkbo.minimize(algos[name], problem(i), args.budget, key, n_init=3)
            if not bool(jax.numpy.isfinite(r.best_y)):
                raise SystemExit(f"problem {i} ({name}): best_y is {r.best_y}")
            done = i + 1
            if done % args.every == 0 or done == args.problems:
                print(f"{done:8d} {mappings():7d} {rss_mib():8.0f} {time.time() - t0:8.1f}",
                      flush=True)
            if args.minutes is not None and time.time() - t0 > 60 * args.minutes:
                break
        print(f"ran {done} problems in {time.time() - t0:.0f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
