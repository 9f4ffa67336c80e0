"""The command line: results.json equals ntkbo.minimize for the same keys; summary statistics; errors."""

import inspect
import json
import os

import jax
import numpy as np
import pytest

import ntkbo
from ntkbo import cli, loop


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
    # Provenance: what a reader needs to rebuild the run.
    assert rec["schema"] == cli.RESULTS_SCHEMA and rec["n_init"] == 4 and rec["q"] == 1
    assert rec["dtype"] == "float64" and rec["versions"]["jax"] == jax.__version__
    assert rec["command"].startswith("ntkbo run --algo random_search")
    assert {"device_kind", "git_revision"} <= set(rec)
    assert rec["resolved_options"] == {
        k: p.default for k, p in inspect.signature(ntkbo.algorithms.random_search).parameters.items()}
    printed = capsys.readouterr().out
    assert cli.BAR_STATISTIC in printed and "known optimum" in printed


def test_bad_names_exit_with_a_clear_error(capsys):
    assert cli.main(["run", "--algo", "nope", "--problem", "branin", "--out", ""]) == 2
    assert "unknown algorithm 'nope'" in capsys.readouterr().err
    assert cli.main(["run", "--algo", "gp", "--problem", "nowhere", "--out", ""]) == 2
    assert "problem" in capsys.readouterr().err
    assert cli.main(["run", "--algo", "gp", "--problem", "branin", "--budget", "2",
                     "--n-init", "5", "--out", ""]) == 2
    assert "n_init" in capsys.readouterr().err


def test_min_capacity_is_checked_and_recorded(tmp_path, capsys):
    """``--min-capacity`` must be a power of two (``ntkbo.data.next_capacity`` rounds capacities
    up to one; another value would silently mean a different one); the value run is in
    ``results.json``, since bit-identical reruns need it. The command line's default is the
    drivers' (``ntkbo.loop.MIN_CAPACITY``, written out in ``cli`` to start without JAX).
    Mutations caught: the check dropped; the record missing the field; the two defaults apart."""
    assert cli.main(["run", "--algo", "random_search", "--problem", "branin", "--min-capacity",
                     "48", "--out", ""]) == 2
    assert "--min-capacity must be a power of two" in capsys.readouterr().err
    out = tmp_path / "o"
    assert cli.main(["--no-cache", "run", "--algo", "random_search", "--problem", "branin",
                     "--budget", "6", "--seeds", "1", "--min-capacity", "8", "--out", str(out),
                     "--no-plot"]) == 0
    assert json.loads((out / "results.json").read_text())["min_capacity"] == 8
    assert cli.RUN_MIN_CAPACITY == loop.MIN_CAPACITY


def test_version(capsys):
    """``ntkbo --version`` prints ``ntkbo <version>`` and exits 0. Mutation caught: the flag
    removed (argparse then exits 2, "the following arguments are required")."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"ntkbo {ntkbo.__version__}\n"


def test_list_names_each_algorithm_with_family_and_source(capsys):
    """``ntkbo list``: one line per algorithm of ``ntkbo.algorithms.names()`` with its family and
    source, then one line per problem with its dimension(s). Mutations caught: the former
    comma-joined listing (no line starts with a name); an algorithm missing from
    ``cli.ALGORITHMS`` (its family prints as "?"); a cited author who appears in no docstring of
    ``ntkbo.algorithms`` (an invented citation); a problem printed without its dimension."""
    import re
    import sys

    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {ln.split()[0]: ln for ln in lines if ln.startswith("  ")}
    docs = " ".join((sys.modules[f"ntkbo.algorithms.{m}"].__doc__ or "") + " ".join(
        inspect.getdoc(f) or "" for f in vars(sys.modules[f"ntkbo.algorithms.{m}"]).values()
        if inspect.isfunction(f)) for m in ("go_ucb", "gp_bo", "constrained_ei", "neural_bo",
                                              "neural_cbo", "neural_greedy", "neural_linear",
                                              "neural_ucb", "pinn_bo", "sto_bnts"))
    for name in ntkbo.algorithms.names():
        family, source = cli.ALGORITHMS[name]
        assert family in cli.FAMILIES and rows[name].split(None, 1)[1].startswith(family)
        assert rows[name].endswith(source)
        for author in re.findall(r"([A-Z][\w-]+)(?: et al\.| and [A-Z])", source):
            assert author in docs, (name, author)
    assert "NeuralBO, Phan-Trong et al. 2023" in rows["neural_bo"]
    assert rows["random_search"].split()[1] == "random" and "GP" in rows["gp_ei"].split()
    assert rows["branin"].split()[1:] == ["2"] and rows["hartmann6"].split()[1:] == ["6"]
    assert "any" in rows["ackley"] and rows["robot_push14"].split()[1:] == ["14"]
    assert set(ntkbo.benchmarks.names()) <= set(rows)


def test_list_options_prints_every_default_and_meaning(capsys):
    """``ntkbo list --options neural_bo`` prints one ``name = default  meaning`` line per option
    in the factory's order, a part as one ``part.field = default`` line per field it reads, read
    independently here from ``inspect.signature`` and the recorded config of ``neural_bo()``
    (catches a listing that drops keyword-only options or a part's fields); the meaning of a
    plain option is the first sentence of the docstring's ``Args:`` entry, of a field the part's
    ``Attributes:`` entry, plain text. Mutations caught: no meaning printed; the whole entry
    printed; backticks left in; a missing entry not marked; ``pinn_bo``'s required ``pde``
    crashing the listing (``get`` without a PDE raises TypeError); an unknown name not naming
    the flag."""
    assert cli.main(["list", "--options", "neural_bo"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    config = ntkbo.algorithms.neural_bo().config
    expected = []
    for k in inspect.signature(ntkbo.algorithms.neural_bo).parameters:
        if isinstance(config[k], dict):
            expected += [f"{k}.{f} = {v!r}" for f, v in config[k].items()]
        else:
            expected.append(f"{k} = {config[k]!r}")
    assert [ln.split("  ")[0].strip() for ln in lines] == expected
    rows = {ln.split()[0]: ln for ln in lines}
    assert rows["features"].endswith('"static" (paper: g(x; theta_0)) or "dynamic" '
                                     '(g(x; theta_t)).')
    assert rows["search.num_steps"].endswith(
        "ascent steps per refined candidate. [inert under these defaults: read only with "
        "thompson='pathwise']")  # the mark: tests/test_options_help.py
    # the part's own sentence, then what the factory's entry says of the default (None)
    assert ("the penalty's coefficient (None: the algorithm's lam). Here: None: lam, the paper's "
            in rows["training.penalty"])
    assert "`" not in "\n".join(lines)
    assert cli.main(["list", "--options", "pinn_bo"]) == 0
    assert capsys.readouterr().out.startswith("pde = (required)")
    assert cli.main(["list", "--options", "nope"]) == 2
    assert "--options" in capsys.readouterr().err


def test_help_is_plain_text_and_states_the_precision(capsys):
    """Every ``--help`` is plain text (no reST backticks from the docstrings it quotes), and
    ``run`` and ``bench`` each state their default precision, the same one, float64, in the
    description and in ``--dtype``'s help. Mutations caught: the help formatter dropped (the
    description is the module docstring's "The ``ntkbo`` command line"); a ``--dtype`` help
    without its default; ``run``'s default back to float32 (checked: fails here)."""
    helps = {}
    for command in ([], ["run"], ["demo"], ["list"], ["coco"], ["coco-report"], ["bench"],
                    ["report"]):
        with pytest.raises(SystemExit) as exc:
            cli.main([*command, "--help"])
        assert exc.value.code == 0
        helps[" ".join(command)] = " ".join(capsys.readouterr().out.split())
        assert "`" not in helps[" ".join(command)], command
    assert "The ntkbo command line" in helps[""]
    for command in ("run", "bench"):
        assert "Precision: float64 unless --dtype says otherwise" in helps[command], command
        assert "(default: float64, as every committed study ran;" in helps[command], command


def test_dtype_sets_the_precision_run_and_bench_state(monkeypatch, tmp_path, capsys):
    """``--dtype`` sets ``jax_enable_x64`` before anything runs: ``run`` and ``bench`` both set
    float64 unless given (bench's ``--float32`` its former spelling of float32). The update is
    recorded, not applied, so the session stays in float64; each command then stops at a bad
    name or spec (exit 2). Mutations caught: ``--dtype`` parsed but not applied; either
    default changed (``run`` leaving JAX's setting, its former default, fails: no update);
    ``--float32`` ignored; contradicting flags accepted."""
    calls = []
    real = jax.config.update
    monkeypatch.setattr(jax.config, "update", lambda name, value: calls.append(value) if name
                        == "jax_enable_x64" else real(name, value))
    spec = tmp_path / "empty.toml"
    spec.write_text("")
    bad_run = ["--no-cache", "run", "--algo", "nope", "--problem", "branin", "--out", ""]
    bench = ["--no-cache", "bench", str(spec), "--out", str(tmp_path / "o"), "--quiet"]
    for argv, want in [(bad_run, [True]), (bad_run + ["--dtype", "float32"], [False]),
                       (bad_run + ["--dtype", "float64"], [True]), (bench, [True]),
                       (bench + ["--dtype", "float32"], [False]), (bench + ["--float32"], [False])]:
        calls.clear()
        assert cli.main(argv) == 2
        assert calls == want, argv
    assert "missing required field 'name'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(bench + ["--float32", "--dtype", "float64"])
    assert "--float32 contradicts --dtype float64" in capsys.readouterr().err
    assert cli.main(["--no-cache", "bench", str(tmp_path / "none.toml"), "--out", "o"]) == 2
    assert "SPEC must be an experiment spec file" in capsys.readouterr().err


def test_one_default_dtype_resumes_a_study(tmp_path, capsys):
    """``run`` and ``bench`` share one default precision, and ``ntkbo bench SPEC --out FOLDER``
    with no ``--dtype`` resumes a study it ran: end to end on a study run here, the default
    resumes it (all cells done, none re-run), ``--dtype float32`` stops before running anything
    with an error naming the ``--dtype`` that resumes it, also when only the folder's
    summary.npz is left (the committed state; that the committed studies ran in the default is
    ``benchmarks/check_results.py``'s check). Mutations caught (checked): ``run``'s default
    unlike bench's; the dtype check dropped (the float32 run fails on the first cell's digest,
    with a message that blames the spec); the dtype read from cell files only (the
    summary-only folder gets the spec's message)."""
    import glob
    import shutil

    assert cli.DEFAULT_DTYPE["run"] == cli.DEFAULT_DTYPE["bench"]
    spec = tmp_path / "tiny.toml"
    spec.write_text('name = "tiny"\nbudget = 6\nseeds = 2\nreference = "random_search"\n'
                    '[[algorithms]]\nname = "random_search"\n[[problems]]\nname = "branin"\n')
    out = tmp_path / "tiny"
    bench = ["--no-cache", "bench", str(spec), "--out", str(out), "--scale", "smoke", "--quiet"]
    try:
        assert cli.main(bench) == 0
        before = {p: os.path.getmtime(p) for p in glob.glob(str(out / "cells" / "*.npz"))}
        assert len(before) == 1
        assert cli.main(bench + ["--dtype", "float32"]) == 2
        err = capsys.readouterr().err
        assert "ran in float64, this run in float32" in err and "pass --dtype float64" in err
        assert cli.main(bench) == 0
        assert {p: os.path.getmtime(p) for p in glob.glob(str(out / "cells" / "*.npz"))} == before
        shutil.rmtree(out / "cells")
        assert cli.main(bench + ["--dtype", "float32"]) == 2
        assert "pass --dtype float64" in capsys.readouterr().err
    finally:
        jax.config.update("jax_enable_x64", True)  # the session's dtype (conftest)


def test_progress_bar_shows_the_best_of_all_seeds(monkeypatch):
    """The bar's ``best over seeds=`` is the best noise-free value of every seed run so far: it
    never rises and ends at the run's best, which the printed summary repeats under the same
    label, beside the mean over seeds of each seed's best (a row of its own, labelled so).
    Mutations caught: the former mean over the current block's seeds of each seed's best (on CPU
    one seed per block: it restarts at every seed and ends at the last seed's best); the summary's
    former unlabelled mean printed as "best value found" (checked: the bar's row then shows the
    mean, 3 seeds' mean above their minimum). Reuses the first test's compiled programs (same
    algorithm, budget, chunk)."""
    import tqdm

    shown = []

    class Recording(tqdm.tqdm):
        def set_postfix(self, *args, **kw):
            shown.append(float(args[0][cli.BAR_STATISTIC]))
            return super().set_postfix(*args, **kw)

    monkeypatch.setattr(tqdm, "tqdm", Recording)
    rec = cli.run("random_search", "branin", None, 14, 3, 4, None, {}, {}, chunk=4, quiet=True,
                  block=1)
    assert len(shown) >= 9 and shown == sorted(shown, reverse=True)
    best = min(min(r["f"]) for r in rec["runs"])
    assert shown[-1] == float(f"{best:.4g}")
    assert best < min(rec["runs"][-1]["f"])  # the last seed is not the best: the case that shows
    assert rec["summary"]["final_best_min"] == best
    rows = dict(cli.summary_rows(rec))
    # printed with 6 significant digits: equal after the same rounding
    assert rows[f"{cli.BAR_STATISTIC} (as the progress bar)"] == f"{best:.6g}"
    mean = np.mean([min(r["f"]) for r in rec["runs"]])
    assert mean > best  # the two statistics differ here, so a swapped label shows
    assert rows["each seed's best, mean +- se over 3 seeds"].startswith(f"{mean:.6g} +- ")


def test_demo_compares_against_random_search(tmp_path, capsys):
    """`ntkbo demo` (tiny: 2 algorithms, 8 evaluations, 3 seeds) writes its cells, report.md and the
    overlaid plot, and prints the Welch verdict of report.json. The cells' values are recomputed here:
    catches a demo whose printed p is not the report's, seeds not paired (the algorithms must share
    their initial design), or a metric that is not the best regret so far."""
    import scipy.stats

    from ntkbo.experiments import store

    out = tmp_path / "demo"
    assert cli.main(["--no-cache", "demo", "--algos", "gp_ei,random_search", "--budget", "8",
                     "--seeds", "3", "--n-init", "4", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    cells = {store.read_cell(p).meta["algorithm"]["label"]: store.read_cell(p)
             for p in store.list_cells(str(out))}
    assert sorted(cells) == ["gp_ei", "random_search"] and rep["reference"] == "random_search"
    np.testing.assert_array_equal(cells["gp_ei"].x[:, :4], cells["random_search"].x[:, :4])
    optimum = float(ntkbo.benchmarks.get("branin").optimum)
    final = {a: c.metric[:, -1] for a, c in cells.items()}
    for c in cells.values():
        np.testing.assert_allclose(c.metric, np.minimum.accumulate(c.f - optimum, axis=1),
                                   rtol=1e-12)
    w = scipy.stats.ttest_ind(final["gp_ei"], final["random_search"], equal_var=False,
                              alternative="less")
    got = rep["problems"]["branin"]["algorithms"]["gp_ei"]["vs_reference"]["algorithm_lower"]
    np.testing.assert_allclose(got["p"], w.pvalue, rtol=1e-9)  # our t distribution vs scipy's
    printed = capsys.readouterr().out
    assert f"p = {got['p']:.2g} (adjusted {got['p_bh']:.2g})" in printed
    assert (out / "report.md").exists() and (out / "curves_branin.png").stat().st_size > 5000
    assert cli.main(["demo", "--algos", "gp_ei", "--out", ""]) == 2  # no reference to compare with
    assert "random_search" in capsys.readouterr().err
