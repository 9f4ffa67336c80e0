"""ntkbo.experiments.coco: the ECDF against closed forms, argument errors, and (with the ``coco``
extra) a tiny real cocoex run that cocopp reads and whose records match cocoex's own log.

Every comparison is exact unless stated: runtimes are integers, ECDF values are ratios of small
integers computed the same way (a count divided by the number of pairs), and cocoex evaluates the
same float64 input to the same float64 output.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from ntkbo import cli
from ntkbo.experiments import coco

#: cocopp warns that a data set has fewer than 15 instances and an unknown 'settings' attribute:
#: expected for these tiny runs.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:cocopp")


# ---------------------------------------------------------------------------------------------
# The target grid and the ECDF on synthetic data (no cocoex needed)


def test_target_grid_is_eleven_decades_from_1e2_to_1e_8():
    # Catches: a different count (e.g. COCO's 51 targets), range (1e1..1e-8) or spacing.
    t = coco.TARGETS
    assert t.shape == (11,)
    np.testing.assert_allclose(t[0], 1e2, rtol=1e-15)  # 10.0 ** 2 is exact in float64
    np.testing.assert_allclose(t[-1], 1e-8, rtol=1e-15)  # 10.0 ** -8: correctly rounded pow
    np.testing.assert_allclose(t[:-1] / t[1:], 10.0, rtol=1e-14)  # a few ulps of the division


def _closed_form_runtime(E: int, s: int, k: int, budget: int) -> float:
    """Run with ``f - f_opt = 10^(E - s (n - 1))`` at evaluation ``n``; target ``10^k`` is first
    reached when ``E - s (n - 1) <= k``, i.e. ``n = 1 + max(0, ceil((E - k) / s))``."""
    n = 1 + max(0, math.ceil((E - k) / s))
    return float(n) if n <= budget else math.inf


def test_runtimes_equal_the_closed_form_first_hitting_times():
    # Catches: '<' instead of '<=' (the gaps hit the targets exactly: both are 10.0 ** integer),
    # a 0-based runtime, an unreached target not reported as inf, a wrong target order.
    budget = 9
    runs = [(2, 1), (5, 2), (0, 3), (3, 1), (-9, 1), (4, 1)]  # (E, s)
    n = np.arange(1, budget + 1)
    gaps = np.stack([10.0 ** (E - s * (n - 1)) for E, s in runs])
    rt = coco.runtimes(gaps)
    ks = range(2, -9, -1)
    expected = np.array([[_closed_form_runtime(E, s, k, budget) for k in ks] for E, s in runs])
    np.testing.assert_array_equal(rt, expected)


def test_ecdf_of_one_decade_per_evaluation_is_min_n_11_over_11():
    # One run whose gap falls a decade per evaluation from 1e2: target 10^k is reached at
    # n = 3 - k, so ECDF(n) = min(n, 11) / 11 for n >= 0 (closed form).
    # Catches: an ECDF that counts runtime < n instead of <= n, or divides by the wrong count.
    budget = 20
    gaps = 10.0 ** (2.0 - np.arange(budget))[None, :]
    n = np.arange(0, budget + 1)
    np.testing.assert_array_equal(coco.ecdf(coco.runtimes(gaps), n), np.minimum(n, 11) / 11)


def test_ecdf_uses_the_best_so_far_and_averages_over_runs_and_targets():
    # Run A: odd evaluations n = 2j + 1 have gap 10^(2 - j), even ones a spike 1e5; target 10^k
    # is first reached at n = 5 - 2k, so A solves min(11, (n + 1) // 2) of its 11 pairs by n.
    # Run B never gets below 1e3 (no pair). Aggregated over both runs' 22 pairs:
    #   ECDF(n) = min(11, (n + 1) // 2) / 22   (closed form).
    # Catches: an ECDF of the current value instead of the best so far (it would drop at the
    # spikes), and an average per run instead of per (run, target) pair when runs differ.
    budget = 30
    n = np.arange(1, budget + 1)
    a = np.where(n % 2 == 1, 10.0 ** (2.0 - (n - 1) // 2), 1e5)
    b = np.full(budget, 1e3)
    got = coco.ecdf(coco.runtimes(np.stack([a, b])), n)
    np.testing.assert_array_equal(got, np.minimum(11, (n + 1) // 2) / 22)


def test_parse_ints_ranges_and_errors_name_the_flag():
    # Catches: a range parsed as its end points only, silent acceptance of bad syntax or values.
    assert coco.parse_ints("1-5,7", "--instances") == [1, 2, 3, 4, 5, 7]
    assert coco.parse_ints("10,2,3,2", "--dims", coco.BBOB_DIMS) == [2, 3, 10]
    assert coco._ranges([1, 2, 3, 5, 7, 8]) == "1-3,5,7-8"
    with pytest.raises(ValueError, match="--instances.*empty"):
        coco.parse_ints("3-1", "--instances")
    with pytest.raises(ValueError, match="--instances.*expected"):
        coco.parse_ints("1..15", "--instances")
    with pytest.raises(ValueError, match=r"--dims.*\[4\]"):
        coco.parse_ints("2,4", "--dims", coco.BBOB_DIMS)
    with pytest.raises(ValueError, match="--functions"):
        coco.parse_ints("0-3", "--functions", coco.BBOB_FUNCTIONS)


@pytest.mark.parametrize("argv, flag", [
    (["--algo", "no_such_algo"], "--algo"),
    (["--algo", "random_search", "--dims", "2,4"], "--dims"),
    (["--algo", "random_search", "--instances", "5-1"], "--instances"),
    (["--algo", "random_search", "--budget-multiplier", "0"], "--budget-multiplier"),
])
def test_cli_rejects_bad_arguments_naming_them(argv, flag, capsys, tmp_path):
    # Validation happens before cocoex is imported, so these run without the extra.
    # Catches: a traceback or a message that does not say which argument is wrong.
    code = cli.main(["coco", *argv, "--out", str(tmp_path / "o")])
    assert code == 2
    assert flag in capsys.readouterr().err


def test_core_import_does_not_import_cocoex_and_missing_extra_is_named(monkeypatch):
    # Catches: an eager `import cocoex` in ntkbo, ntkbo.cli or ntkbo.experiments.coco (the core
    # install must work without the extra), and an unhelpful ImportError when it is missing.
    code = ("import sys, ntkbo, ntkbo.cli, ntkbo.experiments.coco; "
            "print('cocoex' in sys.modules, 'cocopp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert out.stdout.split() == ["False", "False"]
    monkeypatch.setitem(sys.modules, "cocoex", None)  # `import cocoex` now raises ImportError
    with pytest.raises(ImportError, match=r"ntkbo\[coco\]"):
        coco.import_cocoex()


def _synthetic_record(folder, algorithm, gaps, dim):
    """A record as ``run`` writes it, for runs with the given ``f - f_opt`` (f_opt = 0)."""
    n, budget = gaps.shape
    meta = {"format": 1, "algorithm": algorithm, "options": {}, "seed": 0,
            "budget_multiplier": budget // dim, "dims": [dim], "functions": [1, 2],
            "instances": list(range(1, n // 2 + 1)), "cocoex_folder": "none", "complete": True,
            "problems": n}
    per_dim = {dim: {"function": [1 + i % 2 for i in range(n)],
                     "instance": [1 + i // 2 for i in range(n)],
                     "x": [np.zeros((budget, dim))] * n, "f": list(gaps), "fopt": [0.0] * n,
                     "wall": [0.0] * n, "key": [np.zeros(2, np.uint32)] * n}}
    os.makedirs(folder)
    coco._save_runs(str(folder), meta, per_dim)
    return str(folder)


def test_report_from_synthetic_records_without_matplotlib(tmp_path, monkeypatch):
    # Two algorithms, 2-D, budget 10: 'decade' gains a decade per evaluation from 1e2 on both
    # runs (target 10^k at n = 3 - k: 10 of 11 targets by n = 10), 'stuck' never gets below 1e3.
    # Closed form at the budget: 'decade' 20/22, 'stuck' 0. Without matplotlib the report still
    # writes the numbers (markdown, CSV) and says there is no plot.
    # Catches: a report that needs matplotlib or cocoex, mixes up the folders' labels, or whose
    # budget fraction or CSV is not the ECDF of the records.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    budget, dim = 10, 2
    decade = np.tile(10.0 ** (2.0 - np.arange(budget)), (2, 1))
    a = _synthetic_record(tmp_path / "a", "decade", decade, dim)
    b = _synthetic_record(tmp_path / "b", "stuck", np.full((2, budget), 1e3), dim)
    rep = coco.report([a, b])
    assert rep["png"] is None
    assert os.path.dirname(rep["markdown"]) == str(tmp_path)  # the folders' common parent
    text = open(rep["markdown"]).read()
    assert "matplotlib is not installed" in text
    row = f"| {dim} | {20 / 22:.3f} ({budget} evals, 22 pairs) | 0.000 ({budget} evals, 22 pairs) |"
    assert row in text
    rows = [line.split(",") for line in open(rep["csv"]).read().splitlines()[1:]]
    decade_rows = [r for r in rows if r[0] == "decade"]
    assert [float(r[4]) for r in decade_rows] == pytest.approx(
        [min(n, 11) / 11 for n in range(1, budget + 1)], rel=5e-6)  # "%.6g": <= 5e-6 relative
    assert all(float(r[4]) == 0.0 for r in rows if r[0] == "stuck")


# ---------------------------------------------------------------------------------------------
# A tiny real run (needs the coco extra)

FUNCTIONS = (1, 21)  # sphere and Gallagher's 101 peaks: one easy, one hard
DIM, MULT, SEED = 2, 5, 3
BUDGET = MULT * DIM
#: Random search (cheap) runs two instances, so that a run's f_opt must be its own instance's.
INSTANCES = {"random_search": (1, 2), "gp_ei": (1,)}
#: GP-EI with fixed hyper-parameters and a cheap acquisition optimiser: any model-based algorithm
#: exercises ask_tell's suggest/update path; this one cost the least CPU of those measured here
#: (about 6 s, mostly compilation; ntk_gp_ei 7-9 s, random search 1.3 s).
MODEL = ("gp_ei", {"fit": {"enabled": False}, "search": {"num_restarts": 1, "num_steps": 5}})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("cocoex", reason="the coco extra (pip install 'ntkbo[coco]') is not "
                                         "installed")
    root = tmp_path_factory.mktemp("coco")
    rs = str(root / "random_search")
    code = cli.main(["coco", "--algo", "random_search", "--dims", str(DIM), "--instances",
                     "1-2", "--functions", ",".join(map(str, FUNCTIONS)),
                     "--budget-multiplier", str(MULT), "--seed", str(SEED), "--out", rs])
    assert code == 0
    name, opts = MODEL
    model = str(root / name)
    coco.run(name, dims=[DIM], instances=INSTANCES[name], functions=FUNCTIONS,
             budget_multiplier=MULT, options=opts, seed=SEED, out=model, quiet=True)
    return {"random_search": rs, name: model, "root": str(root)}


def _folders(runs):
    return [(label, runs[label]) for label in ("random_search", MODEL[0])]


def test_cocopp_reads_the_folder_with_one_run_per_problem(runs):
    # Catches: the observer not attached (no data), a wrong budget, instances or dimensions, a
    # folder name shared by every algorithm (cocopp's plots could not tell them apart).
    pytest.importorskip("cocopp", reason="the coco extra (pip install 'ntkbo[coco]') is not "
                                         "installed")
    from cocopp import pproc

    for label, folder in _folders(runs):
        meta = coco.read_runs(folder)["meta"]
        # cocoex's folder is named after --out's last part: cocopp labels algorithms by it.
        assert meta["cocoex_folder"] == os.path.basename(folder)
        dsl = pproc.DataSetList(os.path.join(folder, meta["cocoex_folder"]))
        assert sorted(ds.funcId for ds in dsl) == sorted(FUNCTIONS)
        for ds in dsl:
            assert ds.algId == label
            assert ds.dim == DIM
            assert sorted(ds.instancenumbers) == list(INSTANCES[label])
            assert list(ds.maxevals) == [BUDGET] * len(INSTANCES[label])


def test_recorded_values_are_cocoex_values_and_runtimes_match_cocopp(runs):
    # Recorded f equals cocoex's (unobserved) problem at the recorded x, bit for bit (the same C
    # code on the same float64 input), and every runtime cocopp read from cocoex's log equals
    # ntkbo's runtime from its recorded f - f_opt at that target: this checks f_opt (read from
    # cocoex's header) and the evaluation count.
    # Catches: recording x before clipping, a wrong f_opt (e.g. another instance's), an
    # off-by-one in evaluations, points outside cocoex's box.
    import cocoex
    from cocopp import pproc

    suite = cocoex.Suite("bbob", "instances: 1-2", f"dimensions: {DIM}")
    for label, folder in _folders(runs):
        rec = coco.read_runs(folder)
        r = rec["dims"][DIM]
        assert r["x"].shape == (len(FUNCTIONS) * len(INSTANCES[label]), BUDGET, DIM)
        dsl = pproc.DataSetList(os.path.join(folder, rec["meta"]["cocoex_folder"]))
        for i, (fid, iid) in enumerate(zip(r["function"], r["instance"])):
            problem = suite.get_problem_by_function_dimension_instance(int(fid), DIM, int(iid))
            assert np.all(r["x"][i] >= problem.lower_bounds)
            assert np.all(r["x"][i] <= problem.upper_bounds)
            f = np.array([problem(x) for x in r["x"][i]])
            np.testing.assert_array_equal(r["f"][i], f)
            np.testing.assert_array_equal(r["gap"][i], f - r["fopt"][i])
            (ds,) = [ds for ds in dsl if ds.funcId == fid]
            column = 1 + list(ds.instancenumbers).index(iid)  # ds.evals: target, runtimes
            for row in ds.evals:
                ours = coco.runtimes(r["gap"][i][None], [row[0]])[0, 0]
                theirs = np.inf if np.isnan(row[column]) else row[column]
                assert ours == theirs, (label, fid, iid, row[0])


def test_keys_and_initial_design_are_as_documented(runs):
    # The first d + 1 points of a problem are ask_tell's Sobol design from the documented key
    # fold_in(fold_in(fold_in(PRNGKey(seed), f), d), i); both algorithms share them.
    # Catches: a key that depends on the problem's position in the suite, or a design other
    # than ask_tell's.
    import jax

    from ntkbo.loop import initial_design

    n_init = DIM + 1
    for _, folder in _folders(runs):
        r = coco.read_runs(folder)["dims"][DIM]
        for i, (fid, iid) in enumerate(zip(r["function"], r["instance"])):
            key = coco.problem_key(SEED, int(fid), DIM, int(iid))
            np.testing.assert_array_equal(r["key"][i], np.asarray(key))
            bounds = np.array([[-5.0] * DIM, [5.0] * DIM])
            design = initial_design(jax.random.split(key, 4)[0], bounds, n_init)
            # The same function on the same key and box: bit-identical (the clip to cocoex's
            # box is a no-op inside it).
            np.testing.assert_array_equal(r["x"][i][:n_init], np.asarray(design))


def test_report_fractions_equal_an_independent_count(runs):
    # Catches: a report whose budget fraction or curves are not the count of (function,
    # instance, target) triples with best f - f_opt <= target within n evaluations.
    out = os.path.join(runs["root"], "report")
    rep = coco.report([folder for _, folder in _folders(runs)], out)
    text = open(rep["markdown"]).read()
    for label in ("random_search", MODEL[0]):
        assert f"| {label} |" in text
        rec = coco.read_runs(runs[label])["dims"][DIM]
        solved_by = np.zeros(BUDGET + 1)
        for gap in rec["gap"]:
            for t in coco.TARGETS:
                n_hit = next((n for n in range(1, BUDGET + 1) if min(gap[:n]) <= t), None)
                if n_hit is not None:
                    solved_by[n_hit:] += 1
        pairs = len(rec["gap"]) * len(coco.TARGETS)
        x, frac = rep["curves"][label][DIM]
        np.testing.assert_array_equal(x, np.arange(1, BUDGET + 1) / DIM)
        np.testing.assert_array_equal(frac, solved_by[1:] / pairs)
        assert rep["at_budget"][label][DIM][0] == solved_by[-1] / pairs
        assert f"{solved_by[-1] / pairs:.3f} ({BUDGET} evals, {pairs} pairs)" in text
    assert os.path.exists(rep["csv"])
    if rep["png"] is not None:
        assert os.path.getsize(rep["png"]) > 0


def test_an_existing_run_folder_is_refused(runs):
    # Catches: a second run appending to (or cocoex renaming around) an existing record.
    with pytest.raises(ValueError, match="--out"):
        coco.run("random_search", dims=[DIM], instances=[1], functions=[1],
                 budget_multiplier=MULT, out=runs["random_search"], quiet=True)


def _stop_in_second_problem(monkeypatch):
    """``KeyboardInterrupt`` where the second problem's f_opt is read (``coco._fopt_from_dat``)."""
    read = coco._fopt_from_dat
    calls = []

    def stop_on_second(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return read(*args)

    monkeypatch.setattr(coco, "_fopt_from_dat", stop_on_second)


def test_a_stopped_run_keeps_its_finished_problems_marked_incomplete(runs, tmp_path, monkeypatch):
    # Saving after every problem (SAVE_EVERY_S = 0) and stopping the run in its second problem
    # (KeyboardInterrupt where f_opt is read) leaves the first problem's record, marked
    # incomplete, and the report says so.
    # Catches: a record written only at the end (a killed long run would lose everything), or a
    # partial record reported as complete.
    monkeypatch.setattr(coco, "SAVE_EVERY_S", 0.0)
    _stop_in_second_problem(monkeypatch)
    out = str(tmp_path / "stopped")
    with pytest.raises(KeyboardInterrupt):
        coco.run("random_search", dims=[DIM], instances=[1], functions=FUNCTIONS,
                 budget_multiplier=MULT, seed=SEED, out=out, quiet=True)
    rec = coco.read_runs(out)
    assert rec["meta"]["complete"] is False
    assert list(rec["dims"][DIM]["function"]) == [FUNCTIONS[0]]
    # The finished problem is the same run as in the complete record (same key, same points).
    full = coco.read_runs(runs["random_search"])["dims"][DIM]
    np.testing.assert_array_equal(rec["dims"][DIM]["x"][0], full["x"][0])
    text = open(coco.report([out])["markdown"]).read()
    assert f"1 of {len(FUNCTIONS)} (**incomplete**" in text


def test_ctrl_c_keeps_the_finished_problems_and_says_so(tmp_path, monkeypatch, capsys):
    # ``ntkbo coco`` stopped by Ctrl-C in its second problem (KeyboardInterrupt where f_opt is
    # read), long before the periodic save (SAVE_EVERY_S, a minute): exit status 130, one line on
    # stderr naming the file that kept the first problem and saying a new --out is needed, and the
    # file holds that problem, marked incomplete.
    # Catches (checked): ``coco._run`` without its ``except KeyboardInterrupt`` save (no file: the
    # finished problem is lost); ``cli.main`` without its ``except KeyboardInterrupt``.
    pytest.importorskip("cocoex", reason="the coco extra is not installed")
    assert coco.SAVE_EVERY_S >= 30  # the periodic save cannot be what keeps the problem
    _stop_in_second_problem(monkeypatch)
    out = str(tmp_path / "stopped")
    argv = ["--no-cache", "coco", "--algo", "random_search", "--dims", str(DIM), "--instances",
            "1", "--functions", ",".join(map(str, FUNCTIONS)), "--budget-multiplier", str(MULT),
            "--seed", str(SEED), "--out", out]
    try:
        assert cli.main(argv) == 130
    finally:
        import jax

        jax.config.update("jax_enable_x64", True)  # the session's dtype (conftest)
    last = capsys.readouterr().err.strip().split("\n")[-1]
    assert last.startswith("ntkbo coco: interrupted; 1 finished problem kept in "
                           f"{os.path.join(out, coco.RUNS_FILE)}")
    assert "with a new --out" in last and last.endswith(" ".join(argv))
    rec = coco.read_runs(out)
    assert rec["meta"]["complete"] is False
    assert list(rec["dims"][DIM]["function"]) == [FUNCTIONS[0]]
