"""The command line: results.json equals ntkbo.minimize for the same keys; summary statistics; errors."""

import json

import jax
import numpy as np

import ntkbo
from ntkbo import cli


def test_run_writes_results_that_match_minimize(tmp_path, capsys):
    out = tmp_path / "run"
    rc = cli.main(["run", "--algo", "random_search", "--problem", "branin", "--budget", "14",
                   "--seeds", "3", "--n-init", "4", "--chunk", "4", "--out", str(out)])
    assert rc == 0
    rec = json.loads((out / "results.json").read_text())
    assert (out / "best_so_far.png").stat().st_size > 1000
    keys = jax.random.split(jax.random.PRNGKey(0), 3)  # --seed 0, as the CLI derives them
    problem = ntkbo.benchmarks.get("branin")
    algo = ntkbo.algorithms.random_search()
    f = []
    for i, run in enumerate(rec["runs"]):
        ref = ntkbo.minimize(algo, problem, 14, keys[i], n_init=4)
        np.testing.assert_allclose(run["x"], ref.x, rtol=1e-6)
        f.append(run["f"])
    best = np.minimum.accumulate(np.asarray(f), axis=1)
    np.testing.assert_allclose(rec["summary"]["best_so_far_mean"], best.mean(0), rtol=1e-12)
    np.testing.assert_allclose(rec["summary"]["best_so_far_se"], best.std(0, ddof=1) / np.sqrt(3),
                               rtol=1e-12)
    assert rec["optimum"] == float(problem.optimum) and rec["budget"] == 14
    printed = capsys.readouterr().out
    assert "best value found" in printed and "known optimum" in printed


def test_bad_names_exit_with_a_clear_error(capsys):
    assert cli.main(["run", "--algo", "nope", "--problem", "branin", "--out", ""]) == 2
    assert "unknown algorithm 'nope'" in capsys.readouterr().err
    assert cli.main(["run", "--algo", "gp", "--problem", "nowhere", "--out", ""]) == 2
    assert "problem" in capsys.readouterr().err
    assert cli.main(["run", "--algo", "gp", "--problem", "branin", "--budget", "2",
                     "--n-init", "5", "--out", ""]) == 2
    assert "n_init" in capsys.readouterr().err


def test_list(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "neural_bo" in out and "hartmann6" in out
