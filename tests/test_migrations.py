"""Versioned migrations of stored records (``ntkbo.experiments.migrations``): records written by
the format-1 code read as the same cells as the current code resolves, through every reader of
``ntkbo.experiments.store``; a newer format is refused naming it.

The format-1 records are ``tests/data/records_v1.json``: eight cells of the committed ``status``
study (``benchmarks/results/status``: their ``spec.json`` entries, one cell's ``summary.npz``
meta, and the spec reduced to those cells), as the code before formats wrote them. Cheap: the
spec is resolved, nothing runs.
"""

import json
import os
from typing import Any

import numpy as np
import pytest

from ntkbo.experiments import migrations, store
from ntkbo.experiments.spec import Spec, digest

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "records_v1.json")) as _fh:
    V1 = json.load(_fh)


@pytest.fixture(scope="module")
def current():
    """The cells the current code resolves for the stored spec, by id."""
    cells = Spec.from_dict(V1["spec"]).resolve(V1["scale"])
    return {c.cell_id: c for c in cells}


def test_format_1_records_are_as_the_old_code_wrote_them(current):
    """The fixture's premise: each stored digest is the SHA-256 of its stored definition, the
    records carry no format, and they leave options out (so the current cells, which list every
    option, have other digests: the migration has work to do)."""
    assert set(V1["cells"]) == set(current)
    for cid, rec in V1["cells"].items():
        assert digest(rec["definition"]) == rec["digest"]
        assert rec["digest"] != current[cid].digest
        assert "avoid_observed" not in rec["definition"]["algorithm"]["options"]
    assert "format" not in V1["cell_meta"]


def test_format_1_records_read_as_the_current_cells(current, tmp_path):
    """``spec.json``, a cell file and ``summary.npz`` written in format 1 read, through
    ``store.read_spec``, ``store.read_meta`` / ``read_cell`` and ``summary.read_summary``, to the
    definitions and digests of the current cells (so a stored study resumes and is reported
    as before). Catches (checked): ``V1_ABSENT`` emptied, or one entry of it dropped (that
    factory's digests differ); the digest not recomputed after the migration (mutation: ``_entry``
    keeping the stored ``digest``)."""
    from ntkbo.experiments import summary

    out = str(tmp_path)
    record = dict(V1["spec"], scale=V1["scale"], scale_caps=V1["scale_caps"], cells=V1["cells"])
    with open(os.path.join(out, store.SPEC), "w") as fh:
        json.dump(record, fh)
    read = store.read_spec(out)
    assert read is not None and "format" not in read and read["scale"] == V1["scale"]
    for cid, cell in current.items():
        assert read["cells"][cid]["definition"] == cell.definition(), cid
        assert read["cells"][cid]["digest"] == cell.digest, cid
    # a cell file and a summary of the format-1 code: the meta without "format"
    meta = V1["cell_meta"]
    cell = current[meta["cell_id"]]
    arrays: dict[str, Any] = dict(x=np.zeros((1, 1, 2)), y=np.zeros((1, 1)), f=np.zeros((1, 1)),
                  c=np.zeros((1, 1, 0)), c_obs=np.zeros((1, 1, 0)),
                  feasible=np.ones((1, 1), bool), metric=np.zeros((1, 1)),
                  keys=np.zeros((1, 2), np.uint32), seeds=np.zeros(1, np.int64),
                  wall_time=np.ones(1))
    os.makedirs(store.cells_dir(out))
    np.savez(store.cell_path(out, cell.cell_id), **arrays, meta=np.asarray(json.dumps(meta)))
    for got in (store.read_meta(store.cell_path(out, cell.cell_id)),
                store.read_cell(store.cell_path(out, cell.cell_id)).meta):
        assert got["digest"] == cell.digest and got["definition"] == cell.definition()
        assert got["format"] == migrations.FORMAT
    entry = dict(cell_id=cell.cell_id, kind="metric", meta=meta)
    members: dict[str, Any] = {f"0.{k}": np.zeros(1) for k in summary._ARRAYS}
    members["index"] = np.asarray(json.dumps({"schema": summary.SCHEMA, "cells": [entry]}))
    np.savez(summary.summary_path(out), **members)
    (got,) = summary.read_summary(out)
    assert got.meta["digest"] == cell.digest and got.meta["definition"] == cell.definition()


def test_current_records_round_trip_unchanged(current, tmp_path):
    """A record written now (format ``FORMAT``) reads back as written: ``write_spec`` /
    ``read_spec`` change nothing but the stored ``format``. Catches (checked): ``write_spec``
    not stamping the format (mutation: dropping its ``format=``: the file has none, and would be
    read as format 1), ``read_spec`` handing the ``format`` on (mutation: ``migrate_spec``
    keeping it: ``Spec.from_dict`` of the record then refuses an unknown field)."""
    out = str(tmp_path)
    cells = {c.cell_id: {"digest": c.digest, "definition": c.definition()}
             for c in current.values()}
    record = dict(V1["spec"], scale=V1["scale"], scale_caps=V1["scale_caps"], cells=cells)
    store.write_spec(out, record)
    with open(os.path.join(out, store.SPEC)) as fh:
        assert json.load(fh)["format"] == migrations.FORMAT
    assert store.read_spec(out) == json.loads(json.dumps(record))


@pytest.mark.parametrize("version", [migrations.FORMAT + 1, 0, "2"])
def test_a_format_this_ntkbo_does_not_read_is_refused_naming_it(version, tmp_path):
    """A record of a newer format (or a damaged one) is refused with the file and the version in
    the message, by every reader. Catches (checked): ``record_format`` without its upper bound
    (a newer record is then read as a current one)."""
    out = str(tmp_path)
    record = dict(V1["spec"], scale=V1["scale"], scale_caps=V1["scale_caps"], cells={},
                  format=version)
    with open(os.path.join(out, store.SPEC), "w") as fh:
        json.dump(record, fh)
    with pytest.raises(ValueError, match=rf"spec.json: record format {version!r}"):
        store.read_spec(out)
    if version == migrations.FORMAT + 1:
        with pytest.raises(ValueError, match=rf"format {version} was written by a newer ntkbo; "
                                             rf"this ntkbo reads formats 1 to {migrations.FORMAT}"):
            migrations.migrate_meta(dict(V1["cell_meta"], format=version), "cell.npz")
