"""theory_checks: the papers' infinite-width and regret claims as runnable experiments.

Run ``python -m theory_checks [NAME ...|all] [--scale smoke|cpu|gpu] [--out DIR] [--seed N]``: each
selected check prints a table, writes ``DIR/<NAME>.json`` and ``DIR/<NAME>.png``, and the process
exits 1 when any selected claim fails its tolerance (README.md lists the claims and measurements).

**The interface of a check** (one module ``theory_checks/<NAME>.py``)::

    NAME: str            the check's name (= the module name)
    CLAIM: str           the claim, one line
    SOURCE: str          paper, theorem/equation
    SCALES: dict         {"smoke": {...}, "cpu": {...}, "gpu": {...}}: the settings of each scale
                         (smoke: the CI test's reduced run; cpu: <= 5 min on 2 cores; gpu: wider
                         networks, longer horizons), each with a "chunk" entry (None: derived
                         from the memory budget)
    DETECTS: dict        {scale: (fault, ...)}: the library faults (``theory_checks.faults``) the
                         check must FAIL on at that scale, each the smallest measured to fail
    run(key, settings) -> theory_checks.report.Report
    memory(settings) -> [theory_checks.memory.Stage]   the peak-memory estimate of each chunked
                         stage (items, chunk, bytes) from the settings' sizes; ``run`` maps each
                         stage with that stage's chunk (``theory_checks.memory``)

``run`` is pure in ``key`` (a ``jax.random`` key) and ``settings`` (a dict, usually
``dict(SCALES[scale])``). It calls the library (``ntkbo``) and compares with a reference it
computes independently (networks trained by hand, closed forms, Monte Carlo). **Faults** are
injected into the library only, by :func:`run_check` (``fault=``) or ``python -m theory_checks NAME
--fault FAULT``: ``theory_checks.faults.inject(fault)`` monkeypatches the ``ntkbo`` function the
check calls (a scaled NTK, a dropped regulariser, ...), so the check's code is the same with and
without it. ``settings["fault"]`` records the fault injected (``None``: the real library); checks
read it only to key their caches (``theory_checks.faults.touches``). The tolerances are module
constants or computed standard errors, stated with their reasons in each module's docstring.

A ``Report`` (``theory_checks.report``) holds the settings, ``rows`` (``Row``: quantity, measured
value, tolerance, pass flag, the theory's value) and ``curves`` (``Curve``: panel, label, x, y) for
the PNG; ``report.passed`` is True when every row passed. ``report.write`` writes the JSON and
PNG, ``report.table`` formats the rows; the command line (``theory_checks.__main__``) and the tests
use the same functions.

**Adding a check**: write ``theory_checks/<name>.py`` with the attributes above and append
``"<name>"`` to :data:`CHECKS` below (the one list the command line and the tests read).
"""

from __future__ import annotations

import importlib
import time

from theory_checks import faults, memory  # noqa: F401  (theory_checks.memory for the checks)

#: The checks, in the order ``all`` runs them. Append new checks here.
CHECKS: list[str] = [
    "ntk_convergence",
    "gd_ensemble",
    "sto_posterior",
    "neuralbo_identities",
    "regret_scaling",
    "pinn_information_gain",
    "nngp_convergence",
    "pinn_gp_sample",
    "neural_cbo_coverage",
]

SCALE_NAMES = ("smoke", "cpu", "gpu")


def get(name: str):
    """The module of check ``name`` (one of :data:`CHECKS`)."""
    if name not in CHECKS:
        raise ValueError(f"name: expected one of {', '.join(CHECKS)} (or 'all'), got {name!r}")
    return importlib.import_module(f"theory_checks.{name}")


def run_check(name: str, key, scale="cpu", fault: str | None = None, **overrides):
    """Runs check ``name`` at ``scale`` (a name in ``SCALES`` or a settings dict), settings entries
    replaced by ``overrides``, with the library ``fault`` injected (``theory_checks.faults``, e.g.
    ``"ntk_scale:1.02"``; ``None``: the real library); returns its ``Report`` with the wall-clock
    ``seconds`` and process ``cpu_seconds`` it took."""
    module = get(name)
    if isinstance(scale, str):
        if scale not in module.SCALES:
            raise ValueError(f"scale: expected one of {', '.join(module.SCALES)}, got {scale!r}")
        settings = dict(module.SCALES[scale])
    else:
        settings = dict(scale)
    unknown = set(overrides) - set(settings)
    if unknown:
        raise ValueError(f"overrides: unknown settings {sorted(unknown)} for check {name!r}")
    settings.update(overrides)
    if fault is not None:
        faults.parse(fault)  # raises ValueError for an unknown fault
    settings["fault"] = fault
    wall, cpu = time.time(), time.process_time()
    with faults.inject(fault):
        report = module.run(key, settings)
    report.seconds, report.cpu_seconds = time.time() - wall, time.process_time() - cpu
    return report
