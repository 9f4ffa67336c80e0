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

#: The files that take longest (summed ``--durations``, longest first), collected first: with
#: ``--dist loadfile`` each file goes whole to one worker in collection order, so a long file
#: collected last runs alone at the end while the other worker idles; longest-first keeps the
#: short files for the end, where they fill both workers.
LONGEST_FIRST = ("test_beats_random.py", "test_experiments.py", "test_theory_checks.py",
                 "test_theory_checks_regret.py", "test_theory_checks_more.py",
                 "test_theory_checks_memory.py", "test_pde_benchmarks.py", "test_failures.py", "test_gp_bo.py",
                 "test_neural_linear.py", "test_neural_ucb.py", "test_pinn_bo.py",
                 "test_neural_greedy.py", "test_sto_bnts.py", "test_neural_cbo.py",
                 "test_go_ucb.py", "test_cli.py", "test_records.py", "test_validation.py",
                 "test_defaults.py", "test_neural_bo.py", "test_tasks.py", "test_coco.py",
                 "test_lapack_threads.py")


def pytest_runtest_setup(item):
    """Tests not marked ``slow`` are dominated by compilation: they compile with XLA's
    optimisations mostly off (``jax_disable_most_optimizations``), which cut ``test_gp_bo.py`` plus
    ``test_loop.py`` from 72 s to 59 s. Tests marked ``slow`` run long programs (the statistical
    runs), which that setting makes about twice as slow (STO-BNTS on Branin: 6.2 s -> 12.8 s of run
    time), so they keep the optimisations, unless also marked ``compile_bound``: the theory checks'
    smoke runs, many small programs, whose wall time the setting cut from 180 s to 140 s summed
    over the six checks (``sto_posterior`` 40 s -> 22 s; ``gd_ensemble`` 13.8 s -> 14.6 s, the one
    slower). Set here, before the item's fixtures, so module-scoped fixtures compile under their
    first user's setting."""
    optimise = (item.get_closest_marker("slow") is not None
                and item.get_closest_marker("compile_bound") is None)
    jax.config.update("jax_disable_most_optimizations", not optimise)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: others keep order
