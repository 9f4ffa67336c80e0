"""Versioned migrations of stored records: what a record written by an older ntkbo means now.

A study's records (a cell file's ``meta``, ``spec.json``, ``summary.npz``'s entries;
``ntkbo.experiments.store``) carry ``format``, the version of the cell *definition* they hold (the
algorithm's options, the problem, the budget, ...: ``spec.Cell.definition()``, whose SHA-256 is
the cell's ``digest``). The readers of ``store`` and ``summary`` pass every record through
:func:`migrate_meta` / :func:`migrate_spec`, which apply the steps from the record's format up to
:data:`FORMAT` one at a time and recompute the ``digest`` of each migrated definition, so a
record written by an older ntkbo compares with a cell of the current code as the same cell or as
a different one, never by accident. A record of a newer format than this ntkbo reads is refused,
naming both versions. The algorithms know nothing of old records: each factory's options are
all listed in a current definition (``ntkbo.algorithms.resolved_options``).

Formats:

* 1 (records without ``format``): a definition left out an option at the value the cells stored
  before that option existed ran with, so those cells kept their ``digest`` (:data:`V1_ABSENT`).
* 2: every option of the factory is listed. Step 1 -> 2 fills the left-out options in.
"""

from __future__ import annotations

import copy
from typing import Any

#: The definition format this ntkbo writes (module docstring).
FORMAT = 2

_GUARD = dict(avoid_observed=True)
#: The acquisition-search options ``gp`` and ``ntk_gp`` took through ``**kwargs`` until
#: 2026-11-27, at the values a format-1 definition that does not list them ran with.
_KWARGS = dict(num_candidates=1024, num_restarts=4, num_steps=30, num_ts_candidates=1024,
               jitter=None, n_constraints=0, posterior_inverse=False)

#: Format 1: for each factory (its registry base name, ``ntkbo.algorithms.base_name``), the
#: options a definition left out and the value that meant. Frozen: what format-1 records mean.
#: ``gp``: the former ``**kwargs`` options (``_KWARGS``), ``ard`` (2026-11-25: every earlier cell
#: ran ARD) and ``fit_mean`` (2026-11-27: the zero mean); ``ntk_gp``: the same ``**kwargs``
#: options but ``posterior_inverse=None`` (by backend, 2026-11-27; both meant the triangular
#: solves on CPU, where every such cell ran); ``neural_bo``: the pathwise draws' options
#: (2026-11-26: every earlier cell ran the paper's independent draws, which read none of them);
#: every model-based factory: ``avoid_observed`` (2026-11-29: every earlier cell ran the duplicate
#: guard; a noisy problem's cell, whose ``"auto"`` resolves to False, listed it).
V1_ABSENT: dict[str, dict[str, Any]] = {
    "gp": dict(_KWARGS, ard=True, fit_mean="zero", **_GUARD),
    "ntk_gp": dict(_KWARGS, posterior_inverse=None, **_GUARD),
    "neural_bo": dict(thompson="independent", num_restarts=4, num_acq_steps=30,
                      acq_method="pgd", **_GUARD),
    **{name: dict(_GUARD) for name in (
        "go_ucb", "pinn_bo", "pinn_ntk_gp", "neural_cbo", "neural_greedy", "neural_linear",
        "neural_ts", "neural_ucb", "sto_bnts", "sto_bnts_linear")},
}


def _v1_to_v2(definition: dict) -> dict:
    """Format 1 -> 2: the options ``V1_ABSENT`` says a format-1 definition left out, filled in
    with the value they meant (an option listed keeps its value)."""
    from ntkbo.algorithms import base_name

    alg = definition.get("algorithm")
    if not isinstance(alg, dict) or not isinstance(alg.get("options"), dict):
        return definition
    absent = V1_ABSENT.get(base_name(str(alg.get("name"))), {})
    out = copy.deepcopy(definition)
    out["algorithm"]["options"] = {**absent, **alg["options"]}
    return out


#: ``STEPS[v]`` turns a definition of format ``v`` into one of format ``v + 1``.
STEPS = {1: _v1_to_v2}


class FormatError(ValueError):
    """A record of a format this ntkbo does not read (:func:`record_format`)."""


def record_format(record: dict, where: str) -> int:
    """The definition format of ``record`` (1 where it has no ``format``); ``ValueError`` naming
    ``where`` (a :class:`FormatError`) for one that is not a whole number >= 1 or is newer than
    :data:`FORMAT`."""
    version = record.get("format", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise FormatError(f"{where}: record format {version!r} is not a version number (a whole "
                         "number >= 1); the record is damaged")
    if version > FORMAT:
        raise FormatError(f"{where}: record format {version} was written by a newer ntkbo; this "
                         f"ntkbo reads formats 1 to {FORMAT}: upgrade ntkbo to read it")
    return version


def migrate_definition(definition: dict, version: int) -> dict:
    """``definition`` of format ``version`` in the current format (:data:`FORMAT`), one step at a
    time (``STEPS``)."""
    for v in range(version, FORMAT):
        definition = STEPS[v](definition)
    return definition


def _entry(entry: dict, version: int) -> dict:
    """A record holding ``definition`` and ``digest`` with both in the current format."""
    if version == FORMAT or not isinstance(entry.get("definition"), dict):
        return entry
    from ntkbo.experiments.spec import digest

    definition = migrate_definition(entry["definition"], version)
    return dict(entry, definition=definition, digest=digest(definition))


def migrate_meta(meta: dict, where: str) -> dict:
    """A cell's ``meta`` (a cell file's, or a ``summary.npz`` entry's) in the current format: its
    ``definition`` migrated and its ``digest`` that of the migrated definition, ``format`` set;
    ``ValueError`` naming ``where`` for a format this ntkbo does not read."""
    version = record_format(meta, where)
    return dict(_entry(meta, version), format=FORMAT)


def migrate_spec(record: dict, where: str) -> dict:
    """A study's ``spec.json`` record in the current format: each of its ``cells``' definition
    and ``digest`` migrated (``migrate_meta``), as ``runner.resolved_record`` makes it (``format``,
    which ``store.write_spec`` adds, taken out); ``ValueError`` naming ``where`` for a format
    this ntkbo does not read."""
    version = record_format(record, where)
    record = {k: v for k, v in record.items() if k != "format"}
    cells = record.get("cells")
    if isinstance(cells, dict):
        record["cells"] = {k: _entry(v, version) if isinstance(v, dict) else v
                           for k, v in cells.items()}
    return record
