"""``examples/*.py`` run as a user runs them (``python examples/NAME.py``, a fresh process), at
the tiny budget ``NTKBO_EXAMPLE_SMALL=1`` selects, so that an example cannot rot: every file in
``examples/`` must have a test here (``test_every_example_is_run``). The process inherits the
suite's ``JAX_ENABLE_X64=1`` (conftest), so its numbers can be recomputed here in float64.

Each test checks what the example prints against something it does not compute itself: the
quickstart's random-search line against ``ntkbo.minimize`` with the same keys, and its optimum
against Hartmann-6's published minimum; the ask/tell study's saved observations against the
Branin function evaluated here, and its resumed second run against the first run's record.
"""

import os
import pathlib
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

import ntkbo
from ntkbo import ask_tell

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TESTED = {"quickstart.py", "ask_tell.py"}


def run_example(name: str, cwd) -> str:
    """Runs ``examples/<name>`` in ``cwd`` at the small scale; its stdout (the test fails with
    its stderr if it exits non-zero). Compilation dominates, so the process compiles with XLA's
    optimisations mostly off, as the suite's other compile-bound tests do (conftest), and keeps
    JAX's persistent compilation cache in ``cwd``, so that a second run of the same example
    (ask/tell's resume) loads its programs."""
    env = {**os.environ, "NTKBO_EXAMPLE_SMALL": "1", "JAX_ENABLE_X64": "1",
           "JAX_DISABLE_MOST_OPTIMIZATIONS": "1",
           "JAX_COMPILATION_CACHE_DIR": str(pathlib.Path(cwd) / "jax_cache"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"examples/{name} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


def test_every_example_is_run():
    """A new example without a test here fails (mutation: an added ``examples/x.py``)."""
    assert {p.name for p in EXAMPLES.glob("*.py")} == TESTED


def test_quickstart(tmp_path):
    """The four algorithms print a mean best and its standard error over the seeds. Random
    search's line equals the minimum of ``ntkbo.minimize``'s values for the example's keys and
    small budget (12 evaluations, 6 initial, 2 seeds), recomputed here; every algorithm's best is
    at or above Hartmann-6's global minimum, -3.32237 (Surjanovic and Bingham's library).
    Mutation caught (checked): ``f.max`` for ``f.min`` (random's line printed -0.010 +- 0.005
    against the recomputed -0.824 +- 0.517). The former ``std / 2`` for ``std / sqrt(seeds)``
    would print a standard error of 0.366 there, which the same comparison rejects."""
    out = run_example("quickstart.py", tmp_path)
    rows = {m[0]: (m[1], m[2]) for m in re.findall(
        r"^\s*(\w+): best f = (-?[\d.]+ \+- [\d.]+) \(optimum (-?[\d.]+)\)", out, re.M)}
    assert set(rows) == {"neural_bo", "ntk_gp_ucb", "gp_ei", "random"}, out
    for name, (stat, optimum) in rows.items():
        assert float(optimum) == pytest.approx(-3.32237, abs=1e-3), name
        assert float(stat.split(" +- ")[0]) >= -3.32237 - 1e-3, name
    problem = ntkbo.benchmarks.get("hartmann6")
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    best = np.array([float(ntkbo.minimize(ntkbo.algorithms.random_search(), problem, 12, k,
                                          n_init=6).f.min()) for k in keys])
    assert rows["random"][0] == f"{best.mean():.3f} +- {best.std(ddof=1) / np.sqrt(2):.3f}"


def branin(x):
    """Branin written out here (Dixon and Szegő's form), not the example's simulator."""
    x1, x2 = x[..., 0], x[..., 1]
    return ((x2 - 5.1 * x1**2 / (4 * np.pi**2) + 5 * x1 / np.pi - 6) ** 2
            + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10)


def test_ask_tell_runs_twice_and_resumes(tmp_path):
    """First run: 6 results told in the order the workers finish (one a failed trial), 3 trials
    still running, the study saved. The saved observations are Branin's values at the saved
    points, and the printed best is their minimum. Second run: it resumes the saved study (says
    how many it had), evaluates the 3 running trials again, and ends with 10 complete, 2 failed
    and 3 pending trials. Mutation caught (checked): telling the simulator's value at the point
    with its coordinates swapped (the observations no longer equal Branin at their points)."""
    first = run_example("ask_tell.py", tmp_path)
    algo = ntkbo.algorithms.gp(acquisition="ei")
    bounds = np.array([[-5.0, 0.0], [10.0, 15.0]])
    study = ask_tell.load(str(tmp_path / "branin_study.msgpack"), algo, bounds)
    x, y = (np.asarray(a) for a in ask_tell.observations(study))
    ok = np.isfinite(y)
    assert ok.sum() == 5 and (~ok).sum() == 1
    np.testing.assert_allclose(y[ok], branin(x[ok]), rtol=1e-10)
    assert "{'complete': 5, 'failed': 1, 'pending': 3}" in first, first
    best = re.search(r"best observation (-?[\d.]+)", first)
    assert float(best.group(1)) == pytest.approx(y[ok].min(), abs=1e-4)
    pending = sorted(t.id for t in ask_tell.pending(study))
    second = run_example("ask_tell.py", tmp_path)
    assert second.startswith(f"resumed: {len(y)} told, running trials {pending} are evaluated")
    assert "{'complete': 10, 'failed': 2, 'pending': 3}" in second, second
