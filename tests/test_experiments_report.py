"""ntkbo.experiments.stats against published values and scipy, and ``ntkbo report`` on synthetic
cell files.

The distributions are scipy's (``ntkbo.experiments.stats`` wraps them): they are checked against
published tables (Student's t, Miller's exact Kolmogorov critical values, Benjamini and Hochberg's
example); the tests are compared with scipy's on random inputs, which checks what the module adds
(argument order, tails, degenerate samples). Each test names the mutation of the code it catches.
"""

import json
import math

import numpy as np
import pytest
import scipy.special
import scipy.stats

from ntkbo.experiments import stats


def _samples(rng, n_pairs=40):
    """Pairs of samples with unequal sizes (3..15) and sds (0.1..10), shifted means."""
    for _ in range(n_pairs):
        na, nb = rng.integers(3, 16, size=2)
        a = rng.normal(rng.normal(), rng.uniform(0.1, 10), size=na)
        b = rng.normal(rng.normal(), rng.uniform(0.1, 10), size=nb)
        yield a, b


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_welch_equals_scipy(alternative):
    """Catches: pooled variance (equal_var=True: another t and df = na+nb-2), a two-sided p where a
    one-sided one is asked (x2), the wrong tail (1-p), the samples swapped.

    Tolerance: the same scipy call (1e-12 relative for t and df); 1e-10 relative (or 1e-15
    absolute near 0/1) for the p-value, the margin the former own t distribution needed."""
    rng = np.random.default_rng(14)
    for a, b in _samples(rng):
        ours = stats.welch(a, b, alternative)
        ref = scipy.stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
        np.testing.assert_allclose(ours.statistic, ref.statistic, rtol=1e-12)
        np.testing.assert_allclose(ours.df, ref.df, rtol=1e-12)
        np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-10, atol=1e-15)


def test_welch_small_p_keeps_relative_accuracy():
    """Welch's p-value in the far tail is scipy's, and ``t_sf`` at its statistic and df gives it
    too. Catches (checked): ``t_sf`` computed as ``1 - cdf`` (a p-value of 1e-9 then keeps 7
    digits; 1e-20 would become 0)."""
    a = np.array([10.0, 10.1, 9.9, 10.05, 9.95, 10.02])
    b = np.array([0.0, 0.1, -0.1, 0.05, -0.05])
    ours = stats.welch(a, b, "greater")
    ref = scipy.stats.ttest_ind(a, b, equal_var=False, alternative="greater")
    assert 0 < ref.pvalue < 1e-8
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-9)  # relative, as above
    np.testing.assert_allclose(stats.t_sf(ours.statistic, ours.df), ref.pvalue, rtol=1e-9)


def test_welch_against_is_table2_direction():
    """NeuralBO's Table 2: p = P(baseline's mean > reference's mean), small when the reference is
    lower. Catches: the reference and the baseline swapped (p -> 1 - p)."""
    rng = np.random.default_rng(3)
    ref, worse = rng.normal(0, 1, 10), rng.normal(3, 1, 10)
    res = stats.welch_against({"ref": ref, "worse": worse}, "ref")
    assert set(res) == {"worse"}
    expect = scipy.stats.ttest_ind(worse, ref, equal_var=False, alternative="greater").pvalue
    np.testing.assert_allclose(res["worse"].pvalue, expect, rtol=1e-10)
    assert res["worse"].pvalue < 0.01
    with pytest.raises(ValueError, match="reference 'nope'"):
        stats.welch_against({"ref": ref}, "nope")


def test_distributions_give_the_published_values():
    """The distributions against published tables: Student's t two-sided 5% critical values
    ``t_{0.975, df}`` (12.7062, 2.5706, 2.2281, 2.0423 for df 1, 5, 10, 30; any t table, 4
    decimals: 5e-5), Miller's (1956, Table 1) exact two-sided critical values of the KS statistic
    (n = 5, 10, 20 at 5%: 0.56328, 0.40925, 0.29408; at 1%: 0.66853, 0.48893, 0.35241; 5
    decimals: the p-value at the rounded value is within 2e-4 of the level, the density times
    5e-6), Kolmogorov's limit's (1.3581, 1.6276: 5e-5); ``t_sf`` inverts ``t_ppf`` (1e-10,
    rounding). Catches (checked): ``kolmogorov_sf``
    with ``n`` and ``d`` swapped, the asymptotic law in place of the exact one (0.4 at n = 5),
    ``t_ppf`` of the upper tail (``ppf(1 - p)``: the sign flips)."""
    for df, crit in [(1, 12.7062), (5, 2.5706), (10, 2.2281), (30, 2.0423)]:
        assert abs(stats.t_ppf(0.975, df) - crit) < 5e-5
        assert stats.t_sf(stats.t_ppf(0.975, df), df) == pytest.approx(0.025, rel=1e-10)
    for level, crits in [(0.05, {5: 0.56328, 10: 0.40925, 20: 0.29408}),
                         (0.01, {5: 0.66853, 10: 0.48893, 20: 0.35241})]:
        for n, d in crits.items():
            assert abs(stats.kolmogorov_sf(n, d) - level) < 2e-4, (n, d)
    for level, x in [(0.05, 1.3581), (0.01, 1.6276)]:
        assert abs(stats.kolmogorov_asymp_sf(x) - level) < 5e-5
    assert abs(stats.kolmogorov_asymp_sf(math.sqrt(5) * 0.56328) - 0.05) > 1e-3  # not exact
    assert stats.normal_cdf(0.0) == 0.5 and abs(stats.normal_cdf(1.959964) - 0.975) < 1e-7
    assert stats.smirnov_sf(10, 0.0) == 1.0 and stats.smirnov_sf(10, 1.0) == 0.0
    assert abs(stats.betainc(1.0, 1.0, 0.3) - 0.3) < 1e-15  # I_x(1, 1) = x


def test_bh_reproduces_benjamini_hochberg_1995():
    """Benjamini and Hochberg's (1995, Section 4) example: of 15 p-values, the procedure at
    ``q = 0.05`` rejects the four smallest (``p_(4) = 0.0095 <= 4 q / 15``, ``p_(5) = 0.0201 >
    5 q / 15``); the adjusted ``p_(4)`` is ``0.0095 * 15 / 4``. Catches: Bonferroni (``m p``:
    three rejections), no step-up (the same four here, but see the next test)."""
    p = np.array([0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
                  0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0000])
    adj = stats.bh_adjust(p[::-1])[::-1]  # given in reverse: the input order is kept
    assert list(np.flatnonzero(adj <= 0.05)) == [0, 1, 2, 3]
    assert adj[3] == pytest.approx(0.0095 * 15 / 4, rel=1e-12)


def test_bh_equals_scipy():
    """Catches: results returned in sorted instead of input order, NaN entries counted in ``m``
    (the last check), and, by the raw ``m p_(i) / i`` checked not to be monotone here, a
    step-up left out. Same arithmetic as scipy: 1e-13 relative."""
    rng = np.random.default_rng(7)
    stepup_mattered = False
    for m in [1, 2, 5, 12, 72]:
        for _ in range(10):
            p = rng.uniform(size=m) ** 3
            p[rng.integers(m)] = p[0]  # a tie
            ref = scipy.stats.false_discovery_control(p, method="bh")
            np.testing.assert_allclose(stats.bh_adjust(p), ref, rtol=1e-13)
            ps = np.sort(p)
            raw = np.minimum(ps * m / np.arange(1, m + 1), 1)
            stepup_mattered |= not np.allclose(raw, np.sort(ref))
    assert stepup_mattered
    with_nan = np.array([0.01, np.nan, 0.04, 0.03])
    out = stats.bh_adjust(with_nan)
    assert np.isnan(out[1])  # NaN stays NaN and is not counted in m
    np.testing.assert_allclose(out[[0, 2, 3]],
                               scipy.stats.false_discovery_control(with_nan[[0, 2, 3]]), rtol=1e-13)


def test_ks_normal_equals_scipy_kstest_on_standardised_data():
    """Table 1's test: kstest((x - mean) / sd(ddof=1), 'norm') with scipy's default (exact).
    Samples: normal, skewed (exponential) and heavy-tailed, n = 3..60, so small p-values and every
    branch occur. Catches: sd with ddof=0, the sample not standardised, the asymptotic p-value.
    Tolerance: the same scipy call on the same standardised values (1e-12; p 1e-10 absolute,
    the margin the former own Kolmogorov law needed)."""
    rng = np.random.default_rng(11)
    smallest = 1.0
    for n in [3, 4, 5, 7, 10, 16, 30, 60]:
        for draw in (rng.normal, rng.exponential, lambda size: rng.standard_t(1.5, size=size)):
            x = draw(size=n) * 3.0 + 1.0
            z = (x - x.mean()) / x.std(ddof=1)
            ref = scipy.stats.kstest(z, "norm")
            ours = stats.ks_normal(x)
            np.testing.assert_allclose(ours.statistic, ref.statistic, rtol=1e-12)
            assert abs(ours.pvalue - ref.pvalue) < 1e-10, (n, ours, ref)
            asy = scipy.stats.kstest(z, "norm", method="asymp").pvalue
            assert abs(stats.ks_normal(x, method="asymp").pvalue - asy) < 1e-12
            smallest = min(smallest, ref.pvalue)
    assert smallest < 0.05  # the skewed samples exercised the lower tail
    assert math.isnan(stats.ks_normal([1.0, 1.0, 1.0]).pvalue)  # zero sd: no test


def test_describe_interval_and_ranks_equal_scipy():
    """Catches: sd with ddof=0, a normal (1.96) instead of a t quantile, ranks of ties not averaged
    (ordinal ranks), ranking descending, and NaN cells counted in the average."""
    rng = np.random.default_rng(5)
    curves = rng.normal(size=(6, 30)).cumsum(1)
    mean, lo, hi = stats.t_interval(curves)
    ref_lo, ref_hi = scipy.stats.t.interval(0.95, 5, loc=curves.mean(0),
                                            scale=scipy.stats.sem(curves, axis=0))
    np.testing.assert_allclose(lo, ref_lo, rtol=1e-10)
    np.testing.assert_allclose(hi, ref_hi, rtol=1e-10)
    d = stats.describe(curves[:, -1])
    np.testing.assert_allclose([d["mean"], d["sd"], d["median"]],
                               [curves[:, -1].mean(), curves[:, -1].std(ddof=1),
                                np.median(curves[:, -1])], rtol=1e-14)
    for _ in range(20):
        v = rng.integers(0, 5, size=9).astype(float)  # many ties
        np.testing.assert_array_equal(stats.rankdata(v), scipy.stats.rankdata(v))
    table = rng.integers(0, 4, size=(7, 5)).astype(float)
    table[2, 1] = np.nan
    expect = []
    for j in range(5):
        r = [scipy.stats.rankdata(row[np.isfinite(row)])[np.flatnonzero(np.isfinite(row)) == j]
             for row in table]
        expect.append(np.mean(np.concatenate(r)))
    np.testing.assert_allclose(stats.average_ranks(table), expect, rtol=1e-14)


def test_table2_rows_correct_over_the_whole_family():
    """BH runs over every (problem, baseline) test at once: NeuralBO's Table 2 is one
    family per direction (``ntkbo.experiments.report.DIRECTIONS``).
    Catches: BH applied per problem instead."""
    rng = np.random.default_rng(2)
    fam = {f"p{i}": {"ref": rng.normal(0, 1, 8), "a": rng.normal(0.8, 1, 8),
                     "b": rng.normal(0.3, 2, 8)} for i in range(4)}
    rows = stats.table2_rows(fam, "ref")
    raw = [scipy.stats.ttest_ind(fam[p][lab], fam[p]["ref"], equal_var=False,
                                 alternative="greater").pvalue for p, lab, *_ in rows]
    np.testing.assert_allclose([r[3] for r in rows],
                               scipy.stats.false_discovery_control(raw), rtol=1e-10)
    assert [r[4] for r in rows] == [r[3] <= 0.05 for r in rows]


# ----------------------------------------------------------------------------------------------
# The report, on synthetic cell files written with the runner's store (no optimisation is run)

from ntkbo.experiments import report as report_mod  # noqa: E402
from ntkbo.experiments import store  # noqa: E402


def _write_cell(out, rng, algo, problem, *, dim=2, seeds=6, budget=12, optimum=0.0, k=0,
                shift=0.0, cell_id=None):
    """A cell file as the runner writes it: f >= optimum, metric = best regret (+ violation)."""
    f = (optimum or 0.0) + shift + rng.gamma(2.0, 1.0, size=(seeds, budget)) * rng.uniform(0.5, 2, (seeds, 1))
    c = rng.normal(0.3, 1.0, size=(seeds, budget, k))
    feasible = np.all(c <= 0, axis=-1)
    if optimum is None:
        metric = np.full((seeds, budget), np.nan)
    else:
        metric = np.minimum.accumulate(np.maximum(f - optimum, 0)
                                       + np.maximum(c, 0).sum(-1), axis=1)
    arrays = dict(x=rng.uniform(size=(seeds, budget, dim)), y=f + 0.1, f=f, c=c, c_obs=c,
                  feasible=feasible, metric=metric,
                  keys=rng.integers(0, 2**32, size=(seeds, 2), dtype=np.uint32),
                  seeds=np.arange(seeds), wall_time=np.full(seeds, 1.5))
    meta = {"algorithm": {"label": algo, "name": algo, "options": {}},
            "problem": {"label": problem, "name": problem, "dim": dim, "noise_std": 0.0,
                        "optimum": optimum, "bounds": [[0] * dim, [1] * dim], "options": {}},
            "budget": budget, "n_init": 3, "q": 1, "dtype": "float32",
            "versions": {"ntkbo": "0.1.0", "jax": "x"}, "device_kind": "cpu", "n_devices": 4,
            "n_processes": 1, "command": "ntkbo bench spec.toml --out DIR", "git_revision": "abc",
            "started": "2026-11-23T20:00:00Z", "finished": "2026-11-23T20:01:00Z"}
    store.write_cell(str(out), cell_id or f"{algo}-{problem}", arrays, meta)
    return arrays


def _study(out):
    rng = np.random.default_rng(21)
    cells = {}
    for p, k in (("branin", 0), ("gardner", 1), ("hartmann6", 0)):
        for a, shift in (("neural_bo", 0.0), ("gp_ei", 0.7), ("random_search", 2.0)):
            cells[(p, a)] = _write_cell(out, rng, a, p, k=k, shift=shift)
    store.write_spec(str(out), {"name": "toy", "scale": "smoke", "reference": "neural_bo"})
    return cells


def test_report_numbers_equal_scipy_on_stored_cells(tmp_path):
    """Every number of report.json recomputed from the cell arrays with scipy: final-value table,
    Welch p (baseline 'greater' than reference), BH over the whole table, KS p, average ranks,
    feasible fraction. Catches: the reference's direction swapped, BH per problem, the wrong
    column (f instead of metric), the KS on unstandardised data, ranks from medians.
    Tolerances: 1e-9 relative (our distributions vs scipy's, see the tests above)."""
    cells = _study(tmp_path)
    rep = report_mod.write_report(str(tmp_path))
    assert rep["reference"] == "neural_bo" and rep["reference_source"] == "spec.json"
    raw, keys = {}, []
    for p in ("branin", "gardner", "hartmann6"):
        e = rep["problems"][p]
        assert e["kind"] == ("regret+violation" if p == "gardner" else "regret")
        ref_final = cells[(p, "neural_bo")]["metric"][:, -1]
        for a in ("neural_bo", "gp_ei", "random_search"):
            fin = cells[(p, a)]["metric"][:, -1]
            d = e["algorithms"][a]
            np.testing.assert_allclose([d["mean"], d["sd"], d["median"], d["mean_log10"]],
                                       [fin.mean(), fin.std(ddof=1), np.median(fin),
                                        np.log10(fin).mean()], rtol=1e-12)
            z = (fin - fin.mean()) / fin.std(ddof=1)
            assert abs(d["ks"]["pvalue"] - scipy.stats.kstest(z, "norm").pvalue) < 1e-10
            if p == "gardner":
                np.testing.assert_allclose(d["feasible_fraction"],
                                           cells[(p, a)]["feasible"].any(1).mean())
            if a == "neural_bo":
                assert d["vs_reference"] is None
                continue
            for direction, alt in (("reference_lower", "greater"), ("algorithm_lower", "less")):
                w = scipy.stats.ttest_ind(fin, ref_final, equal_var=False, alternative=alt)
                np.testing.assert_allclose(d["vs_reference"][direction]["p"], w.pvalue, rtol=1e-9)
                raw.setdefault(direction, []).append(w.pvalue)
            keys.append((p, a))
    for direction in ("reference_lower", "algorithm_lower"):  # one BH family per direction
        bh = scipy.stats.false_discovery_control(raw[direction])
        for (p, a), q in zip(keys, bh):
            got = rep["problems"][p]["algorithms"][a]["vs_reference"][direction]
            np.testing.assert_allclose(got["p_bh"], q, rtol=1e-9)
            assert got["rejected"] == (q <= 0.05)
    means = np.array([[cells[(p, a)]["metric"][:, -1].mean()
                       for a in ("neural_bo", "gp_ei", "random_search")]
                      for p in ("branin", "gardner", "hartmann6")])
    expect = np.mean([scipy.stats.rankdata(r) for r in means], axis=0)
    np.testing.assert_allclose([rep["average_ranks"][a] for a in ("neural_bo", "gp_ei",
                                                                  "random_search")], expect)
    # the markdown: header from the cells' meta, Table 2's (p, T/F) cells, one figure per problem
    md = (tmp_path / "report.md").read_text()
    assert "`ntkbo bench spec.toml --out DIR`" in md and "scale `smoke`" in md and "cpu x 4" in md
    w = [rep["problems"]["branin"]["algorithms"][a]["vs_reference"]["reference_lower"]
         for a in rep["algorithms"][1:]]  # Table 2's row, the paper's direction
    assert ("| branin | 2 | " + " | ".join(f"({v['p']:.3g}, {'T' if v['rejected'] else 'F'})"
                                           for v in w) + " |") in md
    for p in ("branin", "gardner", "hartmann6"):
        assert (tmp_path / f"curves_{p}.png").stat().st_size > 5000
        assert f"![{p}](curves_{p}.png)" in md
    assert json.loads((tmp_path / "report.json").read_text())["reference"] == "neural_bo"


def test_report_without_matplotlib_and_unknown_optimum(tmp_path, monkeypatch):
    """Without the plot extra the report is still written, without figures, and says so; a problem
    with no known optimum reports the best f so far; the converse direction asks Ha: mean(a) <
    mean(ref). Catches: an ImportError escaping, a figure link to a file that was not written, NaN
    metric used as the value, the two directions swapped (one p is 1 - the other)."""
    rng = np.random.default_rng(4)
    arrays = {a: _write_cell(tmp_path, rng, a, "mystery", optimum=None, shift=s)
              for a, s in (("a", 0.0), ("b", 1.0))}
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # import fails
    rep = report_mod.write_report(str(tmp_path), reference="b")
    md = (tmp_path / "report.md").read_text()
    assert "matplotlib is not installed" in md and "![" not in md
    assert not list(tmp_path.glob("curves_*")) and rep["figure_files"] == {}
    # the tables do not need matplotlib (catches: CSV/LaTeX written only along with the figures)
    assert (tmp_path / "tables" / "final_mystery.csv").exists()
    assert (tmp_path / "tables" / "table2_algorithm_lower.tex").exists()
    d = rep["problems"]["mystery"]["algorithms"]["a"]
    assert rep["problems"]["mystery"]["kind"] == "f"
    np.testing.assert_allclose(d["mean"], arrays["a"]["f"].min(1).mean(), rtol=1e-12)
    w = scipy.stats.ttest_ind(arrays["a"]["f"].min(1), arrays["b"]["f"].min(1), equal_var=False,
                              alternative="less")
    assert w.pvalue < 0.5  # 'a' was drawn lower: the two alternatives' p-values differ
    np.testing.assert_allclose(d["vs_reference"]["algorithm_lower"]["p"], w.pvalue, rtol=1e-9)
    np.testing.assert_allclose(d["vs_reference"]["reference_lower"]["p"], 1 - w.pvalue, rtol=1e-9)


def test_report_cli_and_errors(tmp_path, capsys):
    """`ntkbo report DIR --reference LABEL` writes report.md; an empty DIR and an unknown reference
    exit 2 with the argument named. Catches: a silent empty report, a KeyError traceback."""
    from ntkbo import cli

    assert cli.main(["report", str(tmp_path)]) == 2
    assert "DIR" in capsys.readouterr().err
    _study(tmp_path)
    assert cli.main(["report", str(tmp_path), "--reference", "nope"]) == 2
    err = capsys.readouterr().err
    assert "reference 'nope'" in err and "gp_ei" in err
    assert cli.main(["report", str(tmp_path), "--reference", "gp_ei", "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "report.md") in out
    md = (tmp_path / "report.md").read_text()
    assert "against gp_ei" in md and "reference: **gp_ei** (--reference)" in md


def test_report_keeps_each_dimension_a_problem(tmp_path):
    """One problem label at two dimensions (NeuralBO's Ackley at d = 10, 20, ...) gives two rows,
    named with their d. Catches: cells of different dimensions merged into one problem."""
    rng = np.random.default_rng(8)
    for dim in (2, 3):
        for a in ("neural_bo", "random_search"):
            _write_cell(tmp_path, rng, a, "ackley", dim=dim, cell_id=f"{a}__ackley__d{dim}")
    rep = report_mod.write_report(str(tmp_path), reference="neural_bo", plots=False)
    assert list(rep["problems"]) == ["ackley d=2", "ackley d=3"]
    assert [e["dim"] for e in rep["problems"].values()] == [2, 3]
    md = (tmp_path / "report.md").read_text()
    assert "| ackley d=2 | 2 |" in md and "| ackley d=3 | 3 |" in md


# ----------------------------------------------------------------------------------------------
# Publication output: the figures as PDF and SVG, the tables as CSV and LaTeX

import csv  # noqa: E402
import re  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

PROBLEMS = ("branin", "gardner", "hartmann6")


@pytest.fixture(scope="module")
def study_report(tmp_path_factory):
    """``_study``'s cells and the report written from them once: ``(folder, summary)``."""
    out = tmp_path_factory.mktemp("study")
    _study(out)
    return out, report_mod.write_report(str(out))


def _markdown_tables(md):
    """Every table of report.md with the CSV link that follows it: ``[(name, header, rows)]``, the
    cells split on ``|`` and stripped."""
    lines, out, i = md.split("\n"), [], 0
    while i < len(lines):
        if not lines[i].startswith("|"):
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].startswith("|"):
            block.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
            i += 1
        assert set("".join(block[1])) <= {"-"}  # the separator row
        link = re.search(r"\[CSV\]\(tables/([^)]+)\.csv\)", "\n".join(lines[i:i + 3]))
        out.append((link and link.group(1), block[0], block[2:]))
    return out


def test_report_figures_pdf_and_svg_beside_png(study_report):
    """Each problem's figure is saved as curves_<problem>.png, .pdf and .svg and linked from
    report.md. Catches: writing only PNG (no .pdf/.svg), PNG bytes saved under the .pdf or .svg
    name (no %PDF, not XML), another figure in the SVG (its title missing), matplotlib's default
    Type 3 fonts in the PDF (pdf.fonttype 42 dropped)."""
    out, rep = study_report
    md = (out / "report.md").read_text()
    for p in PROBLEMS:
        assert rep["figures"][p] == f"curves_{p}.png"
        assert rep["figure_files"][p] == [f"curves_{p}.{f}" for f in ("png", "pdf", "svg")]
        assert (out / f"curves_{p}.png").read_bytes().startswith(b"\x89PNG")
        pdf = (out / f"curves_{p}.pdf").read_bytes()
        assert pdf.startswith(b"%PDF") and b"/Type3" not in pdf
        svg = (out / f"curves_{p}.svg").read_text()
        assert ET.fromstring(svg.encode()).tag == "{http://www.w3.org/2000/svg}svg"
        assert f"{p} (d=2)" in svg  # the title (matplotlib writes each text as a comment)
        assert f"[PDF](curves_{p}.pdf) and [SVG](curves_{p}.svg)" in md


def _shown(x, digits=(3, 4)):
    """The texts report.md may show for the CSV value ``x`` (3 or 4 significant digits)."""
    return {f"{float(x):.{d}g}" for d in digits}


def test_report_tables_csv_equal_markdown(study_report):
    """Every markdown table of report.md has a CSV with one header row and the same rows; each
    number the markdown shows is its CSV value rounded, and the CSV values are report.json's at
    full precision. Catches: a table written only in markdown (final-value, Table 2 in either
    direction, Table 1, ranks), a dropped or reordered row, a column shifted, the CSV written from
    the markdown's rounded text (the exact comparison with report.json), Table 2's T/F flipped
    in the CSV."""
    out, rep = study_report
    md_tables = _markdown_tables((out / "report.md").read_text())
    names = [n for n, _, _ in md_tables]
    assert names == [f"final_{p}" for p in PROBLEMS] + [
        "table2_reference_lower", "table2_algorithm_lower", "table1_ks", "average_ranks"]
    assert sorted(f.name for f in (out / "tables").glob("*.csv")) == sorted(n + ".csv"
                                                                            for n in names)
    for name, header, rows in md_tables:
        with open(out / "tables" / f"{name}.csv", newline="") as fh:
            head, *body = list(csv.reader(fh))
        assert len(body) == len(rows), name
        for md_row, values in zip(rows, body):
            c = dict(zip(head, values, strict=True))
            for h, cell in zip(header, md_row, strict=True):
                if h in ("algorithm", "problem"):
                    assert c[h] == cell
                elif h == "seeds":
                    n, failed = re.fullmatch(r"(\d+)(?: \(\+(\d+) failed\))?", cell).groups()
                    assert (int(c["seeds"]), int(c["failed seeds"])) == (int(n), int(failed or 0))
                elif f"{h} p" in c:  # Table 2: (p, T/F) per algorithm
                    p, tf = re.fullmatch(r"\((\S+), ([TF])\)", cell).groups()
                    assert p in _shown(c[f"{h} p"], (3,))
                    assert c[f"{h} rejected"] == {"T": "True", "F": "False"}[tf]
                    assert (float(c[f"{h} p_bh"]) <= 0.05) == (tf == "T")
                elif cell == "—":
                    assert c[h] == ""
                else:
                    assert cell in _shown(c[h]), (name, h, cell, c[h])
        # full precision: the CSV's floats read back as report.json's
        if name.startswith("final_"):
            algos = rep["problems"][name[len("final_"):]]["algorithms"]
            for row in body:
                d = algos[row[0]]
                assert [float(v) for v in row[3:6]] == [d["mean"], d["sd"], d["median"]]
        if name == "table2_reference_lower":
            for row in body:
                for j, a in enumerate(rep["algorithms"][1:]):
                    w = rep["problems"][row[0]]["algorithms"][a]["vs_reference"]["reference_lower"]
                    assert [float(v) for v in row[2 + 3 * j:4 + 3 * j]] == [w["p"], w["p_bh"]]


def test_report_tables_latex_booktabs(study_report):
    """Every markdown table of report.md as a booktabs tabular: \\toprule, header, \\midrule, the
    markdown's rows (same count, same cells once unescaped), \\bottomrule; a column spec per
    column; underscores escaped. Catches: a table written only in markdown, a rule missing or
    doubled, a dropped row, labels such as neural_bo written unescaped."""
    out, _ = study_report
    md_tables = _markdown_tables((out / "report.md").read_text())
    assert len(list((out / "tables").glob("*.tex"))) == len(md_tables) == 7
    for name, header, rows in md_tables:
        tex = (out / "tables" / f"{name}.tex").read_text()
        body = [line for line in tex.splitlines() if not line.startswith("%")]
        assert re.search(r"(?<!\\)_", "\n".join(body)) is None, name  # no bare underscore
        assert "neural\\_bo" in tex
        spec = re.fullmatch(r"\\begin\{tabular\}\{([lr]+)\}", body[0]).group(1)
        assert len(spec) == len(header)
        assert [line for line in body if line.endswith("rule")] == [r"\toprule", r"\midrule",
                                                                    r"\bottomrule"]
        top, mid, bottom = (body.index(r) for r in (r"\toprule", r"\midrule", r"\bottomrule"))
        assert body[-1] == r"\end{tabular}"
        unescape = lambda line: [x.replace("\\_", "_").replace("---", "—")
                                 for x in line.removesuffix(r" \\").split(" & ")]
        assert [unescape(line) for line in body[top + 1:mid]] == [header]
        assert len(body[mid + 1:bottom]) == len(rows), name
        assert [unescape(line) for line in body[mid + 1:bottom]] == rows


def test_latex_escape_special_characters():
    """Catches: any of LaTeX's special characters left bare (% would comment out the rest of the
    row, & would add a column), the backslash escaped after the others (their backslashes
    doubled), the missing-value dash left as a Unicode character."""
    assert (report_mod.latex_escape(r"a_b 50% x&y $1 #2 {z} ~^ \ <> —")
            == r"a\_b 50\% x\&y \$1 \#2 \{z\} \textasciitilde{}\textasciicircum{} "
               r"\textbackslash{} \textless{}\textgreater{} ---")
