"""ntkbo.experiments.campaign: priority order, estimates, and a campaign stopped by its time budget
and continued in a fresh folder from the compact record equals one uninterrupted run.

Every cell is random search (compiles in about a second); time is a fake clock that advances 100 s
per cell run (``runner.run_cell`` wrapped), so which cells fit a budget does not depend on the
machine's load.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import numpy as np
import pytest

from ntkbo.experiments import campaign, runner, summary

SPEC = {
    "name": "tiny_campaign", "budget": 5, "n_init": 3, "seeds": {"count": 3, "offset": 2},
    "reference": "Ref",
    "algorithms": [{"label": "Random", "name": "random_search"},
                   {"label": "Ref", "name": "random_search"}],
    "problems": [{"name": "branin"}, {"name": "ackley", "dims": [2, 3]}],
}
ORDER = ["Ref__branin__d2", "Ref__ackley__d2", "Ref__ackley__d3",
         "Random__branin__d2", "Random__ackley__d2", "Random__ackley__d3"]
CELL_SECONDS = 100.0


@pytest.fixture
def fake_time(monkeypatch):
    """A clock that stands still except while a cell runs, which takes ``CELL_SECONDS``."""
    now = [0.0]
    real = runner.run_cell

    def run_cell(*args, **kwargs):
        now[0] += CELL_SECONDS
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_cell", run_cell)
    return lambda: now[0]


def test_order_puts_the_reference_and_random_rows_first_paired_by_setting():
    """The priority labels' cells first, by (dim, problem, priority), so paired cells of one
    setting run together; then the rest by algorithm. Default priority: the reference (Ref) and
    the random-search labels. Mutations caught: priority ignored (spec order would put Random
    first); dims ignored in the order (Ref's ackley d3 would not come last of Ref's)."""
    spec = campaign.load(SPEC)
    assert campaign.default_priority(spec) == ["Ref", "Random"]
    paired = [c.cell_id for c in campaign.ordered(spec, spec.resolve("full"))]
    assert paired == ["Ref__branin__d2", "Random__branin__d2", "Ref__ackley__d2",
                      "Random__ackley__d2", "Ref__ackley__d3", "Random__ackley__d3"]
    only_ref = [c.cell_id for c in campaign.ordered(spec, spec.resolve("full"), ["Ref"])]
    assert only_ref == ORDER
    with pytest.raises(ValueError, match="unknown algorithm label"):
        campaign.ordered(spec, spec.resolve("full"), ["Nope"])


def test_estimate_from_the_nearest_measured_dimension():
    """Prior until a cell of the label is measured; then seconds per seed-evaluation of the
    nearest measured dimension, times seeds x budget, times d / d_measured above it. Mutations
    caught: the dimension factor dropped (d = 6 would be 10 s, not 20 s); scaling down below the
    measured dimension (d = 1 would be 5 s, not 10 s); the prior used after a measurement."""
    spec = campaign.load({**SPEC, "problems": [{"name": "ackley", "dims": [1, 3, 6]}]})
    cells = {c.cell_id: c for c in spec.resolve("full")}
    measured = {"x": {"label": "Ref", "dim": 3, "seeds": 3, "budget": 5, "seconds": 10.0}}
    assert campaign.estimate(cells["Random__ackley__d3"], measured, {"Random": 7.0}) == 7.0
    assert campaign.estimate(cells["Random__ackley__d3"], measured, {}) == campaign.PRIOR_S
    assert campaign.estimate(cells["Ref__ackley__d3"], measured, {"Ref": 7.0}) == 10.0
    assert campaign.estimate(cells["Ref__ackley__d6"], measured, {}) == pytest.approx(20.0)
    assert campaign.estimate(cells["Ref__ackley__d1"], measured, {}) == pytest.approx(10.0)


def test_stopped_campaign_continues_from_the_compact_record(tmp_path, fake_time):
    """A 250 s window runs the two cells that fit (Ref's d = 2 cells at the 100 s prior, then the
    measured 100 s), defers the rest; a fresh folder holding only spec.json, summary.npz and
    campaign.json continues with the four left; the union equals one uninterrupted run bit for
    bit. Mutations caught: done cells read from the cell files only (the second window would run
    all six again); the estimate ignoring the time already spent (the first window would run a
    third cell); cells run in spec order (Random's would run first)."""
    kw: dict[str, Any] = dict(priority=["Ref"], priors={"Ref": 100.0, "Random": 100.0},
                              clock=fake_time, log=lambda line: None)
    whole = str(tmp_path / "whole")
    w = campaign.run(SPEC, whole, 1e9, **kw)
    assert w["ran"] == ORDER and w["left"] == [] and not w["deferred"]

    first = str(tmp_path / "first")
    w1 = campaign.run(SPEC, first, 250.0, keep_cells=False, **kw)
    assert w1["ran"] == ORDER[:2]
    assert w1["left"] == ORDER[2:] and set(w1["deferred"]) == set(ORDER[2:])
    assert "estimate 150 s" in w1["deferred"]["Ref__ackley__d3"]  # d = 3 from the d = 2 cell
    assert not os.listdir(os.path.join(first, "cells"))  # dropped: the summary holds them

    second = str(tmp_path / "second")  # a fresh machine: only the compact record carried over
    os.makedirs(second)
    for name in ("spec.json", summary.SUMMARY, campaign.LEDGER):
        shutil.copy(os.path.join(first, name), second)
    w2 = campaign.run(SPEC, second, 1e9, **kw)
    assert w2["ran"] == ORDER[2:] and w2["left"] == []
    ledger = json.load(open(os.path.join(second, campaign.LEDGER)))
    assert [win["ran"] for win in ledger["windows"]] == [ORDER[:2], ORDER[2:]]
    assert sorted(ledger["cells"]) == sorted(ORDER)

    a = {e.cell_id: e for e in summary.read_summary(whole)}
    b = {e.cell_id: e for e in summary.read_summary(second)}
    assert sorted(a) == sorted(b) == sorted(ORDER)
    for cid in ORDER:
        for field in ("curve", "keys", "seeds", "revisit"):
            x, y = getattr(a[cid], field), getattr(b[cid], field)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (cid, field)
        assert a[cid].meta["digest"] == b[cid].meta["digest"]
    # a third call has nothing left to do
    w3 = campaign.run(SPEC, second, 1e9, **kw)
    assert w3["ran"] == [] and w3["left"] == []


def test_a_cell_above_any_budget_runs_alone(tmp_path, fake_time):
    """A cell estimated above the whole budget runs first in a window, alone; then no time is
    left and the rest wait. Mutation caught: such a cell deferred like the others (it would never
    run: every window would defer it)."""
    kw: dict[str, Any] = dict(priority=["Ref"], priors={"Ref": 100.0, "Random": 100.0},
                              clock=fake_time, log=lambda line: None)
    out = str(tmp_path / "alone")
    w = campaign.run(SPEC, out, 50.0, **kw)
    assert w["ran"] == ORDER[:1] and w["alone"] == ORDER[0] and w["left"] == ORDER[1:]
    w = campaign.run(SPEC, out, 50.0, **kw)
    assert w["ran"] == ORDER[1:2]


def test_cli_campaign(tmp_path, fake_time, capsys, monkeypatch):
    """``ntkbo campaign SPEC --time-budget S --out DIR`` runs what fits and says what is left;
    a bad --prior is an error (exit 2). Mutation caught: the subcommand not wired (argparse
    exits with 2 on an unknown command before any cell runs, and nothing is written)."""
    from ntkbo import cli

    monkeypatch.setattr(campaign, "CLOCK", fake_time)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(
        'name = "tiny_campaign"\nbudget = 5\nn_init = 3\nseeds = { count = 3, offset = 2 }\n'
        'reference = "Ref"\n[[algorithms]]\nlabel = "Random"\nname = "random_search"\n'
        '[[algorithms]]\nlabel = "Ref"\nname = "random_search"\n'
        '[[problems]]\nname = "branin"\n[[problems]]\nname = "ackley"\ndims = [2, 3]\n')
    out = str(tmp_path / "study")
    argv = ["--no-cache", "campaign", str(spec_path), "--time-budget", "150", "--out", out,
            "--priority", "Ref", "--prior", "Ref=100", "Random=100", "--dtype", "float64"]
    assert cli.main(argv) == 0
    assert "1 cells run" in capsys.readouterr().out
    ledger = json.load(open(os.path.join(out, campaign.LEDGER)))
    assert ledger["windows"][0]["ran"] == ["Ref__branin__d2"]
    assert cli.main(argv[:-4] + ["--prior", "Ref"]) == 2
    # a prior that is no time (NaN, negative) is refused naming --prior, before any cell runs
    # (mutation caught: ``float(value)`` taken as it is)
    for bad in ("Ref=nan", "Ref=-5"):
        assert cli.main(argv[:-4] + ["--prior", bad]) == 2
        assert "--prior" in capsys.readouterr().err
    entries = summary.read_summary(out)
    assert [e.cell_id for e in entries] == ["Ref__branin__d2"]
    assert np.isfinite(entries[0].curve).all()
