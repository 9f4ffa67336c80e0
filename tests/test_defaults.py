"""benchmarks/defaults.py, the reporting protocol: its algorithm list covers the registry, and its
table's numbers equal independent computations from the cells of studies run here (whether the
committed tables are current is ``benchmarks/check_results.py``'s question, not a test's)."""

import dataclasses
import shutil

import jax
import numpy as np
import pytest
import scipy.stats

import ntkbo
from ntkbo.benchmarks import suites
from ntkbo import experiments as E
from ntkbo.experiments import store

from benchmarks import defaults as D


def test_algorithm_list_covers_the_registry():
    # Catches a newly registered algorithm missing from the protocol, and an alias that is not
    # one (it would hide a distinct algorithm): each alias resolves to its canonical name's options.
    names = set(ntkbo.algorithms.names())
    algos = set(D.default_algorithms())
    assert names - set(D.NEEDS_MORE) == algos | set(D.ALIASES)
    assert not algos & set(D.ALIASES)
    for alias, canonical in D.ALIASES.items():
        assert (ntkbo.algorithms.resolved_options(alias)
                == ntkbo.algorithms.resolved_options(canonical)), alias
    # the PDE ones cannot run on the suite (the constrained ones are the studies of
    # benchmarks/specs/status_constrained.toml and neuralcbo_synthetic.toml)
    for name in ("pinn_bo", "pinn_ntk_gp"):
        with pytest.raises(ValueError, match="needs a problem with a PDE"):
            ntkbo.algorithms.problem_options(name, ntkbo.benchmarks.get("branin"))


def test_an_option_added_after_cells_were_stored_reads_as_it_ran():
    """The code side of a stored table staying resumable (``benchmarks/check_results.py`` checks
    the committed folders): an option a factory gained after cells were stored is absent from
    their format-1 definitions, which read (``ntkbo.experiments.migrations``) with the value
    those cells ran with (``gp``'s ``ard=True``), so the current cell at that value has their
    digest and a cell that ran otherwise does not. Mutation caught (checked): ``ard`` dropped
    from ``migrations.V1_ABSENT``'s ``gp`` entry."""
    from ntkbo.experiments import migrations

    spec = D.dev_spec(["random_search", E.spec.AlgorithmSpec("gp_ei", {"fit": {"ard": True}}),
                       E.spec.AlgorithmSpec("gp_ei", {"fit": {"ard": False}},
                                            label="gp_ei_no_ard")],
                      members=["branin2"])
    cells = {c.algorithm.id: c for c in spec.resolve("cpu")}
    options = {k: c.definition()["algorithm"]["options"] for k, c in cells.items()}
    assert options["gp_ei"]["ard"] is True and options["gp_ei_no_ard"]["ard"] is False

    def stored(cell):  # the format-1 definition of the cell: without ``ard``
        definition = cell.definition()
        del definition["algorithm"]["options"]["ard"]
        return migrations.migrate_definition(definition, 1)

    assert E.spec.digest(stored(cells["gp_ei"])) == cells["gp_ei"].digest
    assert E.spec.digest(stored(cells["gp_ei_no_ard"])) != cells["gp_ei_no_ard"].digest
    # ntk_gp's posterior_inverse (formerly a **kwargs option): absent, it reads as None (the
    # solves on CPU, as every stored cell ran), the default.
    assert ntkbo.algorithms.resolved_options("ntk_gp_ei")["posterior_inverse"] is None
    assert migrations.V1_ABSENT["ntk_gp"]["posterior_inverse"] is None


def test_spec_uses_reporting_keys_and_2d_initial_points():
    spec = D.dev_spec()
    assert spec.seeds == 16 and spec.seed_offset in suites.REPORTING_KEYS
    assert spec.seed_offset + spec.seeds <= suites.REPORTING_KEYS.stop
    assert not set(range(spec.seed_offset, spec.seed_offset + 16)) & set(suites.TUNING_KEYS)
    dev = suites.suite("dev")
    assert [p.label for p in spec.problems] == list(dev)
    assert all(p.n_init == 2 * dev[p.label].dim for p in spec.problems)
    # the cpu scale shrinks the budget, never the 16 keys (the built-in cpu preset caps seeds at
    # 10: a first cpu run used 10 keys before this was set)
    cells = D.dev_spec(["random_search"]).resolve("cpu")
    assert {c.seeds for c in cells} == {16} and {c.budget for c in cells} == {60}


@pytest.fixture(scope="module")
def smoke_study(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("defaults"))
    # Two cheap algorithms (compilation dominates): random search one point per round, and
    # random search two points per round as "rs2", which draws other points from the same keys.
    # The table's arithmetic is what is tested here, not the algorithms.
    spec = D.dev_spec(["random_search"], members=["branin2", "six_hump_camel2"])
    spec = dataclasses.replace(spec, algorithms=spec.algorithms + (
        E.spec.AlgorithmSpec(name="random_search", label="rs2", options={"q": 2}),))
    ntkbo.experiments.run(spec, out, "smoke", devices=jax.devices()[:1], block=1)
    return out


def test_table_equals_independent_computations(smoke_study):
    t = D.table(smoke_study)
    cells = {(r.meta["algorithm"]["label"], r.meta["problem"]["label"]): r
             for r in map(store.read_cell, store.list_cells(smoke_study))}
    assert t["seeds"] == 3 and t["budget"] == 8
    rng = np.random.default_rng(7)
    for member in ("branin2", "six_hump_camel2"):
        problem = suites.suite("dev")[member]
        # the normaliser's median against plain Monte Carlo: 20,000 uniform points; the
        # median's standard error is ~1.25 sd(f)/sqrt(n) ~ 1% of sd(f), 5% covers it widely
        lo, hi = np.asarray(problem.bounds[0]), np.asarray(problem.bounds[1])
        fs = np.asarray(problem.fn_batch(lo + (hi - lo) * rng.random((20000, problem.dim))))
        mc = np.median(fs) - float(problem.optimum)
        assert abs(t["normaliser"][member] - mc) <= 0.05 * np.std(fs)
        finals = {}
        for a in ("random_search", "rs2"):
            f = np.asarray(cells[(a, member)].f, float)  # (S, B) noise-free values
            finals[a] = f.min(axis=1)
            regret = (finals[a] - float(problem.optimum)) / t["normaliser"][member]
            np.testing.assert_allclose(t["rows"][a]["per_problem"][member], regret.mean(),
                                       rtol=1e-12)  # the same arithmetic in another order
        # the p-value before BH against scipy (one-sided Welch, 'less')
        p = scipy.stats.ttest_ind(finals["rs2"], finals["random_search"],
                                  equal_var=False, alternative="less").pvalue
        assert t["rows"]["rs2"]["p_bh"][member] >= p - 1e-9  # BH never lowers a p-value
    # BH over the two problems: p_bh = min(1, min_{j >= i} p_(j) m / j) (Benjamini-Hochberg)
    raw = []
    for member in ("branin2", "six_hump_camel2"):
        f = {a: np.asarray(cells[(a, member)].f, float).min(axis=1)
             for a in ("random_search", "rs2")}
        raw.append(scipy.stats.ttest_ind(f["rs2"], f["random_search"], equal_var=False,
                                         alternative="less").pvalue)
    raw = np.array(raw)
    order = np.argsort(raw)
    adj = np.minimum.accumulate((raw[order] * 2 / np.arange(1, 3))[::-1])[::-1]
    expect = np.empty(2)
    expect[order] = np.minimum(adj, 1.0)
    got = [t["rows"]["rs2"]["p_bh"][m] for m in ("branin2", "six_hump_camel2")]
    np.testing.assert_allclose(got, expect, rtol=1e-6)  # stats' t law vs scipy's: ~1e-10
    # ranks: per problem by mean normalised regret, averaged
    assert t["ranked"] == t["algorithms"]  # both ran both problems
    per = np.array([[t["rows"][a]["per_problem"][m] for a in t["algorithms"]]
                    for m in t["common"]])
    ranks = scipy.stats.rankdata(per, axis=1).mean(axis=0)
    np.testing.assert_allclose([t["rows"][a]["average_rank"] for a in t["algorithms"]], ranks)
    text = D.render(t)
    assert "| random_search |" in text and "| rs2 |" in text
    # the header names the key range the cells ran on (reporting here)
    assert "reporting keys (PRNGKey(100000 + i))" in text
    assert t["seed_offset"] == suites.REPORTING_KEYS.start


def test_table_from_the_summary_equals_the_table_from_the_cells(smoke_study, tmp_path):
    """The committed folders keep ``summary.npz``, not their cells: the table from a copy holding
    only the summary (and spec.json) equals the table from the cells, number for number.
    Mutation caught (checked): ``report.load`` ignoring the summary (the copy is refused)."""
    copy = tmp_path / "summary_only"
    shutil.copytree(smoke_study, copy, ignore=shutil.ignore_patterns("cells"))
    cells_only = tmp_path / "cells_only"
    shutil.copytree(smoke_study, cells_only, ignore=shutil.ignore_patterns("summary.npz"))
    t = D.table(str(copy))
    assert t == D.table(str(cells_only)) and D.render(t) == D.render(D.table(str(cells_only)))


def test_tuning_keys_and_variants():
    """``--keys tuning`` moves the seeds into ``TUNING_KEYS`` (disjoint from the reporting ones) and
    ``--variant LABEL=NAME:JSON`` becomes a labelled ``AlgorithmSpec``; a misspelt algorithm or
    option is refused naming ``--variant``. Mutations caught: ``keys`` ignored (the offset stays
    in the reporting range); the label dropped (two variants of one algorithm would share cell
    ids); options not checked against the factory."""
    spec = D.dev_spec(["random_search"], keys="tuning", seeds=8)
    assert spec.seed_offset in suites.TUNING_KEYS and spec.seeds == 8
    assert {c.seeds for c in spec.resolve("cpu")} == {8}
    assert not set(range(spec.seed_offset, spec.seed_offset + 8)) & set(suites.REPORTING_KEYS)
    with pytest.raises(ValueError, match="keys"):
        D.dev_spec(keys="fresh")
    v = D.parse_variant('warm=neural_bo:{"training": {"warm_start": false}, "network.width": 64}')
    assert (v.label, v.name, dict(v.options)) == ("warm", "neural_bo",
                                                  {"training": {"warm_start": False},
                                                   "network": {"width": 64}})
    assert D.parse_variant("gp_ei").id == "gp_ei"
    for bad in ("x=no_such_algo", 'x=neural_bo:{"warmstart": true}', "x=neural_bo:[1]",
                'x=neural_bo:{"warm_start": true}'):
        with pytest.raises(ValueError, match="--variant"):
            D.parse_variant(bad)



def test_an_algorithm_still_running_is_not_ranked(smoke_study, tmp_path):
    """With one cell of ``rs2`` missing (an algorithm still running), the others are ranked over
    every problem and ``rs2`` gets no rank, though its per-problem values and tests stay.
    Mutation caught: ranking over the problems every algorithm ran (the former rule: one cell
    still running shrank everyone's ranks to the problems it had done)."""
    out = tmp_path / "partial"
    shutil.copytree(smoke_study, out)
    (out / "cells" / "rs2__six_hump_camel2__d2.npz").unlink()
    (out / "summary.npz").unlink()  # the runner's summary holds the finished cell too
    t = D.table(str(out))
    assert t["ranked"] == ["random_search"] and t["common"] == ["branin2", "six_hump_camel2"]
    assert t["rows"]["rs2"]["average_rank"] is None and t["rows"]["rs2"]["problems"] == 1
    assert t["rows"]["random_search"]["average_rank"] == 1.0
    assert "| rs2 | " in D.render(t) and "n/a" in D.render(t)


def test_paired_comparison_against_closed_forms():
    """``paired`` on a hand-made table: ``a`` lower than ``b`` on all 6 shared problems (a seventh
    only ``a`` ran is dropped). The exact two-sided Wilcoxon p of n same-signed differences is
    ``2 / 2^n`` (only the all-negative and all-positive sign patterns are as extreme), and with
    differences ``-d`` for d = 1..6 (times 0.01) the paired t statistic is ``mean / (sd /
    sqrt(n))`` on 5 degrees of freedom. Mutations caught: the pairing lost (problems compared in
    different orders), a problem only one algorithm ran kept, the count of lower problems
    inverted."""
    import scipy.stats

    problems = [f"p{i}" for i in range(7)]
    diffs = 0.01 * np.arange(1, 7)
    b = {p: 0.5 + 0.05 * i for i, p in enumerate(problems[:6])}
    a = {p: b[p] - d for p, d in zip(problems[:6], diffs)}
    a["p6"] = 0.0
    t = {"problems": problems, "rows": {"a": {"per_problem": a}, "b": {"per_problem": b}}}
    r = D.paired(t, "a", "b")
    assert (r["problems"], r["a_lower"]) == (6, 6)
    assert r["wilcoxon_p"] == pytest.approx(2 / 2**6, rel=1e-12)
    stat = diffs.mean() / (diffs.std(ddof=1) / np.sqrt(6))
    assert r["paired_t_p"] == pytest.approx(2 * scipy.stats.t.sf(stat, 5), rel=1e-9)
    assert r["mean_a"] == pytest.approx(np.mean([a[p] for p in problems[:6]]), rel=1e-12)
    assert D.paired(t, "b", "a")["a_lower"] == 0
    with pytest.raises(ValueError, match="'c'"):
        D.paired(t, "a", "c")


def test_constrained_protocol_runs_the_constrained_algorithms():
    """``suite="dev_constrained"``: the algorithms that model the constraints and random search, on
    the constrained members named ``dev_constrained/<member>``, 2 d initial points, reporting keys.
    "Models the constraints" is checked by behaviour: set up for a constrained member, each listed
    algorithm expects its ``K`` constraint values, and every other registered name (the PDE ones
    aside) expects none. Catches the plain list used on constrained problems, a constrained
    algorithm left out, and a misspelt suite accepted."""
    spec = D.dev_spec(suite="dev_constrained")
    problem = suites.suite("dev_constrained")["ackley5"]  # K = 2
    listed = {a.name for a in spec.algorithms}
    assert "random_search" in listed and "neural_cbo" in listed
    for name in ntkbo.algorithms.names():
        if ntkbo.algorithms.uses_pde(name):
            continue
        k = ntkbo.algorithms.for_problem(name, problem).n_constraints
        assert k == (problem.n_constraints if name in listed - {"random_search"} else 0), name
    assert spec.name == "defaults_constrained" and spec.seed_offset in suites.REPORTING_KEYS
    members = suites.suite("dev_constrained")
    assert [p.name for p in spec.problems] == [f"dev_constrained/{m}" for m in members]
    assert all(p.n_init == 2 * members[p.label].dim for p in spec.problems)
    with pytest.raises(ValueError, match="suite must be one of"):
        D.dev_spec(suite="constrained")


@pytest.fixture(scope="module")
def constrained_smoke(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("defaults_constrained"))
    spec = D.dev_spec(["random_search"], members=["branin2"], suite="dev_constrained")
    spec = dataclasses.replace(spec, algorithms=spec.algorithms + (
        E.spec.AlgorithmSpec(name="random_search", label="rs2", options={"q": 2}),))
    ntkbo.experiments.run(spec, out, "smoke", devices=jax.devices()[:1], block=1)
    return out


def test_constrained_table_equals_independent_computations(constrained_smoke):
    """The constrained table's value is the thesis metric normalised by its box median: recomputed
    here from each cell's stored noise-free ``f`` and constraint values ``c`` with the metric
    written out (``[f - f*]^+ + sum_k [c_k]^+``, running minimum) and a plain Monte Carlo median.
    Catches the normaliser taken from ``f`` alone (mutation: ``normaliser`` returning
    ``box_median - f*`` for a constrained problem: on Branin 53.2 against 57.1, outside the 5%
    band)."""
    t = D.table(constrained_smoke)
    assert t["suite"] == "dev_constrained" and t["value"] == "regret+violation"
    problem = suites.suite("dev_constrained")["branin2"]
    lo, hi = np.asarray(problem.bounds[0]), np.asarray(problem.bounds[1])
    x = lo + (hi - lo) * np.random.default_rng(8).random((20000, problem.dim))
    f_star = float(problem.optimum)
    per_point = (np.maximum(np.asarray(problem.fn_batch(x)) - f_star, 0)
                 + np.maximum(np.asarray(problem.constraints_batch(x)), 0).sum(axis=1))
    # the median of 20,000 draws: standard error ~1.25 sd / sqrt(n) ~ 1% of sd; 5% of the median
    # covers it (the metric's median here is ~0.5 sd)
    assert abs(t["normaliser"]["branin2"] - np.median(per_point)) <= 0.05 * np.median(per_point)
    for r in map(store.read_cell, store.list_cells(constrained_smoke)):
        f, c = np.asarray(r.f, float), np.asarray(r.c, float)  # (S, B), (S, B, K)
        metric = np.maximum(f - f_star, 0) + np.maximum(c, 0).sum(axis=-1)
        best = metric.min(axis=1)
        label = r.meta["algorithm"]["label"]
        # float32 cells against float64 here: 1e-6 relative
        np.testing.assert_allclose(t["rows"][label]["per_problem"]["branin2"],
                                   (best / t["normaliser"]["branin2"]).mean(), rtol=1e-6)
    assert "constrained dev suite" in D.render(t)


# ---- the low-budget panel ------------------------------------------------------------------


def test_panel_spec_is_the_users_starting_point():
    spec = D.panel_spec(["random_search"])
    dev = suites.suite("dev")
    assert [p.label for p in spec.problems] == [m for m, p in dev.items() if p.dim <= 6]
    assert all(p.n_init is None for p in spec.problems) and spec.n_init is None  # the default
    assert spec.budget == max(D.PANEL_BUDGETS) and spec.seed_offset == D.PANEL_KEYS.start
    for other in (suites.REPORTING_KEYS, suites.TUNING_KEYS):  # fresh keys
        assert not set(D.PANEL_KEYS) & set(other)
    cells = spec.resolve("panel")
    assert {c.n_init for c in cells} == {ntkbo.loop.default_n_init(
        ntkbo.benchmarks.get("dev/branin2"), spec.budget)}.union(
        {ntkbo.loop.default_n_init(ntkbo.benchmarks.get(f"dev/{p.label}"), spec.budget)
         for p in spec.problems})


def test_revisit_share_on_a_hand_made_run():
    # After a 2-point design: (0.5, 0.5) new, (0.505, 0.5) within 1% of it, (0.2, 0.2) new,
    # (1, 1) a repeat of a design point: 2 of 4. Mutations caught (checked): counting the design's
    # points too (2/6), comparing only with points after the design (1/4).
    x = [[0, 0], [1, 1], [0.5, 0.5], [0.505, 0.5], [0.2, 0.2], [1, 1]]
    assert D.revisit_share(np.asarray(x), [[0, 0], [1, 1]], 2) == 0.5


def test_panel_table_equals_independent_computations(tmp_path):
    # Random search and the NTK-GP (UCB, the cheapest model to compile) on two problems, 3 seeds.
    # The numbers are recomputed here from the cells' evaluations with scipy: the best-so-far
    # regret at each budget, one-sided Welch, Benjamini-Hochberg by hand. Mutations checked:
    # reading every budget at the last evaluation, or one BH family over all budgets, fail here.
    out = str(tmp_path / "panel")
    spec = D.panel_spec(["random_search", E.spec.AlgorithmSpec(name="ntk_gp_ucb", label="ucb")],
                        seeds=3)
    spec = dataclasses.replace(spec, problems=spec.problems[:2])
    ntkbo.experiments.run(spec, out, "panel", devices=jax.devices()[:1], block=1)
    t = D.panel_table(out)
    cells = {(r.meta["algorithm"]["label"], r.meta["problem"]["label"]): r
             for r in map(store.read_cell, store.list_cells(out))}
    for b in D.PANEL_BUDGETS:
        raw = {}
        for p in t["problems"]:
            scale = D.normaliser(ntkbo.benchmarks.get(f"dev/{p}"))
            curve = {a: np.minimum.accumulate(
                np.asarray(cells[(a, p)].f, float), axis=1)[:, b - 1] - float(
                ntkbo.benchmarks.get(f"dev/{p}").optimum) for a in ("random_search", "ucb")}
            np.testing.assert_allclose(t["budgets"][b]["ucb"][p]["regret"],
                                       curve["ucb"].mean() / scale, rtol=1e-9)
            raw[p] = scipy.stats.ttest_ind(curve["ucb"], curve["random_search"],
                                           equal_var=False, alternative="less").pvalue
        ps = np.array([raw[p] for p in t["problems"]])
        order = np.argsort(ps)
        adj = np.minimum.accumulate((ps[order] * len(ps) / np.arange(1, len(ps) + 1))[::-1])[::-1]
        want = np.empty(len(ps))
        want[order] = np.minimum(adj, 1.0)
        got = [t["budgets"][b]["ucb"][p]["p_bh"] for p in t["problems"]]
        np.testing.assert_allclose(got, want, rtol=1e-6)  # stats' t law vs scipy's
        for p, w in zip(t["problems"], want):
            failed = (b, "ucb", p) in {f[:3] for f in t["failures"]}
            assert failed == (not w <= D.ALPHA)  # every pair that did not pass is listed
    # revisits: recomputed by a plain double loop over each run's evaluations after the initial
    # design (the rule itself is checked on a hand-made run below).
    for (a, p), rec in cells.items():
        lo, hi = (np.asarray(v, float) for v in rec.meta["problem"]["bounds"])
        n0 = int(rec.meta["n_init"])
        shares = []
        for run in np.asarray(rec.x, float):
            u = (run - lo) / (hi - lo)
            hits = [any(np.max(np.abs(u[i] - u[j])) <= D.REVISIT for j in range(i))
                    for i in range(n0, len(u))]
            shares.append(np.mean(hits))
        np.testing.assert_allclose(t["revisits"][a][p], np.mean(shares), rtol=1e-12)
    # the panel from the summary alone (the committed folder's state) is the same, revisit
    # shares included: they were computed from x when the summary was written
    summary_only = tmp_path / "summary_only"
    shutil.copytree(out, summary_only, ignore=shutil.ignore_patterns("cells"))
    assert D.panel_table(str(summary_only)) == t
    text = D.render_panel(t)
    assert "### Budget 20" in text and "### Failures" in text
    assert "### Where the evaluations went" in text
