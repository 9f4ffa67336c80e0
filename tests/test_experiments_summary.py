"""``ntkbo.experiments.summary``: the per-seed summary a study keeps instead of its raw cells.

The summary is checked against the cell files it came from, read directly (``np.load``), and a
report written from the summary alone against the report written from the cells of a study run
here. Each test names the mutation it catches.
"""

import json
import os
import shutil

import jax
import numpy as np
import pytest

import ntkbo
from ntkbo import cli
from ntkbo.experiments import report, store, summary
from ntkbo.experiments.spec import AlgorithmSpec, ProblemSpec, Spec


def _cell(out, rng, cell_id, *, optimum, k, dtype=np.float32, seeds=4, budget=9, dim=2):
    """A float32 cell file as the runner writes one: the metric is the best regret (plus
    violation) so far where the optimum is known, NaN where it is not; x on a coarse grid so
    that some steps revisit earlier points."""
    f = rng.normal(1.0, 1.0, (seeds, budget)).astype(dtype)
    c = rng.normal(0.2, 1.0, (seeds, budget, k)).astype(dtype)
    metric = (np.full((seeds, budget), np.nan, dtype) if optimum is None else
              np.minimum.accumulate(np.maximum(f - optimum, 0) + np.maximum(c, 0).sum(-1),
                                    axis=1).astype(dtype))
    x = (rng.integers(0, 3, (seeds, budget, dim)) / 2 * 4 - 2).astype(dtype)  # box [-2, 2]
    arrays = dict(x=x, y=f, f=f, c=c, c_obs=c, feasible=np.all(c <= 0, -1), metric=metric,
                  keys=rng.integers(0, 2**32, (seeds, 2), dtype=np.uint32),
                  seeds=np.arange(seeds), wall_time=rng.uniform(1, 2, seeds))
    meta = {"algorithm": {"label": cell_id.split("__")[0], "name": "random_search"},
            "problem": {"label": cell_id.split("__")[1], "name": "p", "dim": dim,
                        "optimum": optimum, "bounds": [[-2] * dim, [2] * dim]},
            "n_init": 3, "budget": budget, "dtype": "float32"}
    store.write_cell(str(out), cell_id, arrays, meta)


KINDS = {"a__known__d2": (0.0, 0), "a__unknown__d2": (None, 0),
         "a__constrained__d2": (0.0, 2), "a__constrained_unknown__d2": (None, 2)}


def test_summary_round_trip_equals_the_cells(tmp_path):
    """Each entry read back equals its cell file, read with ``np.load`` and reduced here: the
    curve is the metric where the optimum is known, else the running minimum of f plus the
    violation ``sum_k [c_k]^+``; float32 kept where exact (the metric and the best f, whose
    running minimum picks stored values), float64 where the violation was added; the revisit
    share by a double loop. Mutations caught (checked): the curve stored as ``f`` (no running
    minimum); the violation left out; every curve cast to float32 (the sums round)."""
    rng = np.random.default_rng(3)
    for cid, (optimum, k) in KINDS.items():
        _cell(tmp_path, rng, cid, optimum=optimum, k=k)
    assert summary.write_summary(str(tmp_path)) == str(tmp_path / "summary.npz")
    entries = {e.cell_id: e for e in summary.read_summary(str(tmp_path))}
    assert sorted(entries) == sorted(KINDS)
    for cid, (optimum, k) in KINDS.items():
        with np.load(tmp_path / "cells" / f"{cid}.npz") as z:
            raw = {n: z[n] for n in z.files}
        e = entries[cid]
        f64 = raw["f"].astype(float) + np.maximum(raw["c"].astype(float), 0).sum(-1)
        want = raw["metric"] if optimum is not None else np.minimum.accumulate(f64, axis=1)
        np.testing.assert_array_equal(e.curve.astype(float), want.astype(float))  # exact
        assert e.curve.dtype == (np.float64 if optimum is None and k else np.float32), cid
        for name in ("keys", "seeds", "wall_time"):
            np.testing.assert_array_equal(getattr(e, name), raw[name])
        assert e.meta == json.loads(str(raw["meta"]))
        np.testing.assert_array_equal(e.feasible, raw["feasible"].any(1) if k else None)
        for s, run in enumerate(raw["x"].astype(float)):
            u = (run + 2) / 4
            hits = [any(np.abs(u[i] - u[j]).max() <= 0.01 for j in range(i))
                    for i in range(3, len(u))]
            assert e.revisit[s] == np.mean(hits)
        # the report's cell from the entry equals the report's cell from the file
        a, b = report.from_entry(str(tmp_path), e), report.reduce_cell(
            store.read_cell(str(tmp_path / "cells" / f"{cid}.npz")))
        np.testing.assert_array_equal(a.curve, b.curve)
        assert (a.kind, a.dim, a.algorithm, a.problem) == (b.kind, b.dim, b.algorithm, b.problem)
    # the bytes depend only on the entries: rewriting an unchanged study changes nothing
    before = (tmp_path / "summary.npz").read_bytes()
    summary.write_summary(str(tmp_path))
    assert (tmp_path / "summary.npz").read_bytes() == before


def test_summary_keeps_the_entries_of_cells_without_a_file(tmp_path, capsys):
    """The raw cells gone, ``ntkbo summary`` keeps every entry (a folder whose cells are not
    committed); a cell file present replaces its entry. Mutations caught (checked): ``collect``
    ignoring the existing summary (the folder's entries vanish); the summary's entry kept over
    a newer cell file."""
    rng = np.random.default_rng(4)
    for cid, (optimum, k) in KINDS.items():
        _cell(tmp_path, rng, cid, optimum=optimum, k=k)
    assert cli.main(["summary", str(tmp_path)]) == 0
    assert "summary.npz (4 cells" in capsys.readouterr().out
    shutil.rmtree(tmp_path / "cells")
    _cell(tmp_path, np.random.default_rng(5), "a__known__d2", optimum=0.0, k=0)  # re-run
    with np.load(tmp_path / "cells" / "a__known__d2.npz") as z:
        new = z["metric"]
    assert cli.main(["summary", str(tmp_path)]) == 0
    entries = {e.cell_id: e for e in summary.read_summary(str(tmp_path))}
    assert sorted(entries) == sorted(KINDS)
    np.testing.assert_array_equal(entries["a__known__d2"].curve, new)
    assert cli.main(["summary", str(tmp_path / "nope")]) == 2
    assert "DIR" in capsys.readouterr().err
    os.makedirs(tmp_path / "empty")
    assert cli.main(["summary", str(tmp_path / "empty")]) == 2
    assert "no cell files" in capsys.readouterr().err


@pytest.fixture(scope="module")
def smoke_study(tmp_path_factory):
    """A study run here at smoke scale (random search, one and two points per round, on Branin
    and Hartmann-3), its summary written by the runner."""
    out = str(tmp_path_factory.mktemp("study"))
    spec = Spec(name="t", budget=10, seeds=3, reference="random_search",
                algorithms=(AlgorithmSpec("random_search"),
                            AlgorithmSpec("random_search", {"q": 2}, label="rs2")),
                problems=(ProblemSpec("branin"), ProblemSpec("hartmann3")))
    ntkbo.experiments.run(spec, out, "smoke", devices=jax.devices()[:1], block=1)
    return out


def _report_files(out):
    """report.md, report.json less its paths, and every table file of ``out``."""
    rep = json.loads(open(os.path.join(out, "report.json")).read())
    for key in ("report", "tables", "figures", "figure_files"):
        rep.pop(key)
    tables = {n: open(os.path.join(out, "tables", n)).read()
              for n in sorted(os.listdir(os.path.join(out, "tables")))}
    return open(os.path.join(out, "report.md")).read(), rep, tables


def test_report_from_the_summary_equals_the_report_from_the_cells(smoke_study, tmp_path):
    """The runner wrote ``summary.npz``; a copy holding only it and ``spec.json`` reports the same
    markdown, JSON numbers and tables as a copy holding only the cell files. Mutations caught
    (checked): ``runner.run`` not writing the summary; ``load`` ignoring the summary (no cells:
    the report is refused)."""
    assert os.path.exists(os.path.join(smoke_study, "summary.npz"))
    cells_only, summary_only = tmp_path / "cells_only", tmp_path / "summary_only"
    shutil.copytree(smoke_study, cells_only)
    os.remove(cells_only / "summary.npz")
    shutil.copytree(smoke_study, summary_only)
    shutil.rmtree(summary_only / "cells")
    assert report.load(str(cells_only))[1][0].path.endswith(".npz")  # read from the cell file
    assert "#" in report.load(str(summary_only))[1][0].path  # read from the summary
    for out in (cells_only, summary_only):
        report.write_report(str(out), plots=False)
    a, b = _report_files(str(cells_only)), _report_files(str(summary_only))
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]
