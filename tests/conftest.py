"""Test configuration: float64 everywhere so identities can be checked to tight tolerances."""

import os

os.environ.setdefault("JAX_ENABLE_X64", "1")
# One OpenBLAS thread: JAX's CPU Cholesky and triangular solves call LAPACK, whose threads fight
# XLA's own on small matrices (a 256x256 Cholesky measured 238 ms with default threads, 0.8 ms
# with one; benchmarks/README.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The command line turns on JAX's persistent compilation cache (ntkbo.cache); tests that call it
# in-process must not write to the user's cache folder.
os.environ.setdefault("NTKBO_CACHE_DIR", "off")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

#: The files that take longest, longest first (one worker's seconds per file, setup, call and
#: teardown summed from ``--durations=0`` of ``-n 2 --dist loadfile`` on the 2-core machine,
#: 2026-11-25): ``test_beats_random.py`` 231, ``test_theory_checks.py`` 197, ``test_gp_bo.py``
#: 158, ``test_pde_benchmarks.py`` 104, then 77 down to 18; the whole suite 1546) are
#: collected first, the rest keep their order: with ``--dist loadfile`` each file goes whole to
#: one worker in collection order, so a long file handed out last runs alone while the other
#: worker idles; longest-first keeps the short files for the end, where they fill both workers.
#: Simulated on those durations with xdist's hand-out rule: the two workers finish at 770 and
#: 776 s, against 864 and 682 s in pytest-xdist's own order (most tests first). The files added
#: on 2026-11-27 are placed by their durations measured alone under load: the tutorials and the
#: GPU script's tiny run about 60-100 s, the parallel ask/tell, no-repeat and linalg tests 25-40 s;
#: the examples, run as fresh processes, 178 s under load 8.
LONGEST_FIRST = ("test_beats_random.py", "test_theory_checks.py", "test_examples.py",
                 "test_gp_bo.py", "test_pde_benchmarks.py", "test_tutorials.py",
                 "test_gpu_script.py",
                 "test_failures.py", "test_experiments.py", "test_ask_tell_parallel.py",
                 "test_no_repeats.py", "test_linalg.py",
                 "test_pinn_bo.py", "test_sto_bnts.py", "test_neural_bo.py", "test_cli.py",
                 "test_neural_cbo.py", "test_theory_checks_memory.py", "test_neural_ucb.py",
                 "test_go_ucb.py", "test_neural_greedy.py", "test_neural_linear.py",
                 "test_constrained_problems.py", "test_validation.py", "test_kernels_native.py",
                 "test_loop.py")


def pytest_configure(config):
    """Keep the collection order when handing out files (``LONGEST_FIRST``): pytest-xdist
    (3.8.0 here) re-sorts ``--dist loadfile``'s files by their number of tests unless
    ``--no-loadscope-reorder``, which made the order above a no-op (measured: the two workers
    finished at 831 and 715 s, ``test_beats_random.py``'s 4 tests handed out after 600 s)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_runtest_setup(item):
    """Tests not marked ``slow`` are dominated by compilation: they compile with XLA's
    optimisations mostly off (``jax_disable_most_optimizations``), which cut ``test_gp_bo.py`` plus
    ``test_loop.py`` from 72 s to 59 s. Tests marked ``slow`` run long programs (the statistical
    runs), which that setting makes about twice as slow (STO-BNTS on Branin: 6.2 s -> 12.8 s of run
    time), so they keep the optimisations, unless also marked ``compile_bound``: the theory checks'
    smoke runs, many small programs, whose wall time the setting cut from 180 s to 140 s summed
    over the six checks (``sto_posterior`` 40 s -> 22 s; ``gd_ensemble`` 13.8 s -> 14.6 s, the one
    slower). Tests not marked ``slow`` but marked ``run_bound`` keep the optimisations too: a few
    programs run on large inputs (the heat equation's 4096-term series on 4 x 4001 boundary
    points, where one evaluation takes 1.8 s unoptimised and 0.7 s optimised; its tests went from
    64 s to 40 s). Set here, before the item's fixtures, so module-scoped fixtures compile under
    their first user's setting."""
    optimise = ((item.get_closest_marker("slow") is not None
                 or item.get_closest_marker("run_bound") is not None)
                and item.get_closest_marker("compile_bound") is None)
    jax.config.update("jax_disable_most_optimizations", not optimise)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: others keep order
