"""A study run across time-limited windows: the cells that fit each window, in order of priority.

``run(spec, out, time_budget, scale="full")`` (the command line: ``ntkbo campaign SPEC
--time-budget S --out DIR``) takes a study spec (``ntkbo.experiments.spec``) and a budget of
seconds, orders the cells by priority (:func:`ordered`), and runs, one after the other, each
pending cell whose time estimate (:func:`estimate`) fits the seconds left; a cell that does not fit
is deferred and a later, cheaper one may still run. Each finished cell is written as the study
runner writes it (``runner.run_cell``, ``store.write_cell``, ``summary.write_summary``), so
``DIR`` is an ordinary study folder that ``ntkbo report`` reads.

**Across windows.** A call continues where the last one stopped: a cell is done when ``DIR``
holds its cell file or an entry of ``DIR/summary.npz`` with the same ``digest``. The compact record
to bring back from a borrowed machine and commit is ``DIR/summary.npz`` (per seed the best-so-far
curve, keys and wall time: ``ntkbo.experiments.summary``), ``DIR/spec.json`` and
``DIR/campaign.json`` (this module's ledger: each window's budget, what ran, what was deferred
and why, every cell's estimate and measured seconds); the cell files (every evaluated point) may
be left behind (``keep_cells=False`` deletes each once the summary holds it). Copy those three
files into a fresh ``DIR`` and the next call runs the rest. A cell's values depend only on its
definition and keys, so cells run in separate windows equal those of one uninterrupted run
(bit for bit on the same device kind and compile flags; ``runner`` module docstring).

**Priority** (:func:`ordered`): the labels of ``priority`` first (default: the spec's
``reference`` algorithm and its random-search rows: NeuralBO's Table 2 rows for NeuralBO and
random search), their cells by dimension, then problem, then label, so that paired cells of one
setting run together; then every other algorithm in the spec's order, each by dimension and
problem. A cell whose estimate exceeds the whole ``time_budget`` (which no window would ever fit)
runs first in a window, alone, when it is the first pending cell and nothing has run yet in it;
after it the window's other cells are deferred if no time is left.

**Estimates** (:func:`estimate`): a cell's seconds (compile included) from the measured cells of
the same algorithm, as seconds per seed-evaluation of the measured cell with the nearest
dimension, times the cell's seeds and budget, times ``d / d_measured`` when the cell's dimension
is larger (a step's cost grows at most linearly in ``d`` for the networks' first layer and the
GP's lengthscales; an upper bound until a cell at that dimension is measured). An algorithm with
no measured cell yet gets ``priors[label]`` (default ``prior_s``) seconds, and then the first of
its cells runs whenever that prior fits.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
import time
from typing import Callable, Mapping, Sequence

from ntkbo import files
from ntkbo.experiments import runner, store, summary
from ntkbo.experiments.spec import Cell, Spec, load

#: The ledger's file name in the study folder.
LEDGER = "campaign.json"
#: The clock ``run`` reads when it is given none (seconds, monotonic).
CLOCK = time.monotonic
#: Seconds assumed for a cell of an algorithm with no measured cell (``run``'s ``prior_s``).
PRIOR_S = 120.0


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def default_priority(spec: Spec) -> list[str]:
    """The spec's ``reference`` label (if any) and its random-search algorithms' labels."""
    first = [spec.reference] if spec.reference else []
    return first + [a.id for a in spec.algorithms
                    if a.name == "random_search" and a.id not in first]


def ordered(spec: Spec, cells: Sequence[Cell], priority: Sequence[str] | None = None) -> list:
    """``cells`` in campaign order (module docstring): ``priority``'s labels' cells by (dim,
    problem, label), then the rest by (algorithm, dim, problem) in the spec's order."""
    priority = default_priority(spec) if priority is None else list(priority)
    labels = [a.id for a in spec.algorithms]
    unknown = sorted(set(priority) - set(labels))
    if unknown:
        raise ValueError(f"priority: unknown algorithm label(s) {', '.join(unknown)}; the spec's "
                         f"labels: {', '.join(labels)}")
    problems = [p.id for p in spec.problems]

    def key(c: Cell):
        a, p = labels.index(c.algorithm.id), problems.index(c.problem.id)
        if c.algorithm.id in priority:
            return (0, c.dim, p, priority.index(c.algorithm.id))
        return (1, a, c.dim, p)

    return sorted(cells, key=key)


def estimate(cell: Cell, measured: Mapping[str, dict], priors: Mapping[str, float],
             prior_s: float = PRIOR_S) -> float:
    """Estimated seconds of ``cell`` (module docstring). ``measured``: cell id -> ledger entry
    (``label``, ``dim``, ``seeds``, ``budget``, ``seconds``) of the cells already run."""
    same = [m for m in measured.values() if m["label"] == cell.algorithm.id and m["seconds"] > 0]
    if not same:
        return float(priors.get(cell.algorithm.id, prior_s))
    near = min(same, key=lambda m: (abs(m["dim"] - cell.dim), -m["dim"]))
    rate = near["seconds"] / (near["seeds"] * near["budget"])
    return rate * cell.seeds * cell.budget * max(1.0, cell.dim / near["dim"])


def read_ledger(out: str) -> dict:
    """``out/campaign.json`` (an empty ledger when there is none)."""
    path = os.path.join(out, LEDGER)
    if not os.path.exists(path):
        return {"schema": 1, "windows": [], "cells": {}}
    with open(path) as f:
        ledger = json.load(f)
    if not isinstance(ledger, dict) or ledger.get("schema") != 1:
        raise ValueError(f"{path}: not a campaign ledger of schema 1")
    return ledger


def _write_ledger(out: str, ledger: dict) -> None:
    text = json.dumps(ledger, indent=1, sort_keys=True)
    store.atomic_write(os.path.join(out, LEDGER), lambda fh: fh.write(text.encode()))


def done_cells(out: str, cells: Sequence[Cell]) -> set:
    """The ids of ``cells`` that ``out`` holds: a cell file, or a summary entry whose ``digest`` is
    the cell's."""
    digest = {c.cell_id: c.digest for c in cells}
    have = {e.cell_id for e in summary.read_summary(out)
            if e.meta.get("digest") == digest.get(e.cell_id)}
    for path in store.list_cells(out):
        cid = os.path.basename(path)[: -len(".npz")]
        if cid in digest:
            have.add(cid)
    return have


def run(spec, out: str, time_budget: float, scale: str = "full", *,
        priority: Sequence[str] | None = None, priors: Mapping[str, float] | None = None,
        prior_s: float = PRIOR_S, keep_cells: bool = True, block: int | None | str = "auto",
        command: str | None = None, clock: Callable[[], float] | None = None,
        log: Callable[[str], None] | None = None) -> dict:
    """Runs the pending cells of ``spec`` at ``scale`` that fit ``time_budget`` seconds, in
    priority order (module docstring), into the study folder ``out``.

    Args:
      spec: a ``Spec``, a TOML path or a dict (``ntkbo.experiments.spec``).
      out: the study folder (created; a folder from an earlier window continues).
      time_budget: seconds this call may spend on cells (checked before each cell against its
        estimate; a cell already started is not interrupted).
      priority: algorithm labels to run first (default :func:`default_priority`).
      priors, prior_s: seconds assumed for a cell of an algorithm not yet measured, per label and
        by default.
      keep_cells: ``False`` deletes each cell file once ``out/summary.npz`` holds its entry (the
        compact record; module docstring).
      block: seeds vmapped at once per device (``runner.run_cell``).
      command: recorded in the cell metas and the ledger (default: ``sys.argv``).
      clock: seconds, monotonic (default :data:`CLOCK`; the tests pass a fake one).
      log: called with one line per decision (default: print to standard error).

    Returns the ledger's entry for this window: ``ran``, ``deferred`` (cell id -> reason),
    ``left`` (cells still pending after it), ``seconds``.
    """
    import jax

    from ntkbo import loop

    clock = clock or CLOCK
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    if not (isinstance(time_budget, (int, float)) and time_budget > 0):
        raise ValueError(f"time_budget must be a positive number of seconds, got {time_budget!r}")
    spec = load(spec)
    cells = spec.resolve(scale)
    queue = ordered(spec, cells, priority)
    priors = dict(priors or {})
    command = command if command is not None else " ".join(sys.argv)
    os.makedirs(out, exist_ok=True)
    start = clock()
    with files.lock_folder(out, command):
        files.remove_temporaries(out)
        files.remove_temporaries(store.cells_dir(out))
        runner.check_compatible(out, spec, scale, cells)
        store.write_spec(out, runner.resolved_record(spec, scale, cells))
        ledger = read_ledger(out)
        window = {"started": _now(), "time_budget_s": float(time_budget), "scale": scale,
                  "command": command, "device_kind": jax.devices()[0].device_kind,
                  "ran": [], "deferred": {}}
        ledger["windows"].append(window)
        done = done_cells(out, cells)
        mesh = runner.seed_mesh()
        extra = {"versions": runner.versions(), "command": command,
                 "git_revision": runner.git_revision()}
        for cell in queue:
            if cell.cell_id in done:
                continue
            est = estimate(cell, ledger["cells"], priors, prior_s)
            left = time_budget - (clock() - start)
            # A cell estimated above any window's budget would never run: it runs first in a
            # window, alone (the estimate is an upper bound; module docstring).
            alone = est > time_budget and not window["ran"] and left == time_budget
            if alone:
                log(f"campaign: {cell.cell_id}'s estimate {est:.0f} s exceeds the whole budget: "
                    "it runs alone in this window")
                window["alone"] = cell.cell_id
            elif est > left:
                window["deferred"][cell.cell_id] = (f"estimate {est:.0f} s > {left:.0f} s left")
                log(f"campaign: defer {cell.cell_id} (estimate {est:.0f} s, {left:.0f} s left)")
                continue
            log(f"campaign: run {cell.cell_id} (estimate {est:.0f} s, {left:.0f} s left)")
            store.append_log(out, "start", cell_id=cell.cell_id, process=0)
            started, t0 = _now(), clock()
            b = runner.cell_block(cell, mesh) if block == "auto" else block
            arrays = runner.run_cell(cell, mesh, b)
            algo, problem = cell.build()
            meta = runner.cell_meta(cell, problem, loop.batch_size(algo, problem), mesh,
                                    started, _now(), dict(extra, block=b))
            path = store.write_cell(out, cell, arrays, meta)
            seconds = clock() - t0
            store.append_log(out, "finish", cell_id=cell.cell_id, process=0,
                             wall_time=float(arrays["wall_time"].sum()))
            runner.release_programs(cell, mesh)
            summary.write_summary(out)
            if not keep_cells:
                os.remove(path)
            ledger["cells"][cell.cell_id] = {
                "label": cell.algorithm.id, "problem": cell.problem.id, "dim": cell.dim,
                "seeds": cell.seeds, "budget": cell.budget, "seconds": seconds,
                "estimate_s": est if math.isfinite(est) else None,
                "window": len(ledger["windows"]) - 1, "device_kind": window["device_kind"]}
            window["ran"].append(cell.cell_id)
            done.add(cell.cell_id)
            window["seconds"] = clock() - start
            _write_ledger(out, ledger)
        window["seconds"] = clock() - start
        window["finished"] = _now()
        window["left"] = [c.cell_id for c in queue if c.cell_id not in done]
        _write_ledger(out, ledger)
        summary.write_summary(out)
    log(f"campaign: {len(window['ran'])} cell(s) run, {len(window['left'])} left "
        f"({window['seconds']:.0f} s of {time_budget:.0f} s)")
    return window
