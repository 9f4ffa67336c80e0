"""``benchmarks/bit_identity.py``: a record compared with itself is identical, and a deliberate
change of one option is reported as a difference, for that case only.

Two cheap algorithms (random search and NTK-GP with mean acquisition), so the three records run in
fresh interpreters (the script turns float64 on, which must not leak into this session) in about
a minute on two loaded cores."""

import functools
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "bit_identity.py")
ALGOS = "random_search,ntk_gp_mean"


def _module():
    spec = importlib.util.spec_from_file_location("bit_identity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args):
    proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    d = tmp_path_factory.mktemp("bit_identity")
    paths = {k: str(d / f"{k}.npz") for k in ("a", "b", "mutated")}
    for k in ("a", "b"):
        rc, out = _run("record", "--out", paths[k], "--algos", ALGOS)
        assert rc == 0, out
    # the mutation: one option of one algorithm changed (NTK-GP's UCB beta, which its mean
    # acquisition does not read, would be a no-op; the noise lam changes every posterior number)
    rc, out = _run("record", "--out", paths["mutated"], "--algos", ALGOS,
                   "--set", "ntk_gp_mean.lam=0.02")
    assert rc == 0, out
    return paths


def test_a_rerun_is_identical(records):
    """The same code twice: every case identical, exit status 0 (a digest of something that is
    not deterministic, such as a timing or an address, would fail this)."""
    rc, out = _run("compare", records["a"], records["b"])
    assert rc == 0, out
    rows, _, _ = _module().compare(records["a"], records["b"])
    assert {(r["algorithm"], r["status"]) for r in rows} == {
        ("random_search", "identical"), ("ntk_gp_mean", "identical")}


def test_a_changed_option_is_reported(records):
    """One option changed in ``ntk_gp_mean``: that case differs (with a positive finite largest
    difference, the state's and the suggestions' leaves listed), ``random_search`` stays
    identical, and ``compare`` exits 1.
    Mutations caught: ``compare`` comparing only the leaf names (not their digests); the
    ``--set`` option ignored by ``run_case``."""
    rc, out = _run("compare", records["a"], records["mutated"])
    assert rc == 1, out
    assert "differs" in out
    rows = {r["algorithm"]: r for r in _module().compare(records["a"], records["mutated"])[0]}
    assert rows["random_search"]["status"] == "identical"
    changed = rows["ntk_gp_mean"]
    assert changed["status"] == "differs"
    assert 0 < changed["max_abs"] < float("inf")
    assert any(leaf.startswith("round0.x") for leaf in changed["leaves"])
    assert any(leaf.startswith("state") for leaf in changed["leaves"])


def _write_record(m, path, leaves):
    """A one-case record of ``leaves`` (leaf name -> array) at ``path``, as ``record`` writes."""
    arrays, entry = {}, {}
    for i, (leaf, a) in enumerate(leaves.items()):
        arrays[f"a{i}"] = a
        entry[leaf] = [f"a{i}", m.digest(a)]
    m._write(str(path), {"environment": {"commit": ""},
                         "cases": [{"algorithm": "x", "preset": None, "leaves": entry}]}, arrays)


def test_retyped_matches_renamed_stacked_and_wrapped_leaves(tmp_path):
    """``compare(..., retyped=True)`` on two hand-written records: a dict key become a field, two
    fields stacked into ``train_loss`` (``MOVES``), a scalar become ``(1,)``, a state leaf wrapped
    into a one-field NamedTuple, a leaf removed and one added: identical (re-typed), each listed.
    Mutation caught: one stacked value changed in the new record (the case then differs)."""
    m = _module()
    write = functools.partial(_write_record, m)

    base = {"round0.x": np.arange(4.0).reshape(2, 2), "round0.info['loss_start']": np.ones(2),
            "round0.info['loss']": np.zeros(2), "round0.info['mean']": np.float64(2.5),
            "state.u": np.eye(2), "state.oracle_loss": np.float64(np.nan)}
    new = {"round0.x": base["round0.x"], "round0.info.train_loss": np.stack([np.ones(2),
                                                                              np.zeros(2)], -1),
           "round0.info.mean": np.array([2.5]), "state.u.chol": np.eye(2),
           "round0.update_info.oracle_ran": np.bool_(False)}
    write(tmp_path / "b.npz", base)
    write(tmp_path / "n.npz", new)
    rows, _, _ = m.compare(str(tmp_path / "b.npz"), str(tmp_path / "n.npz"), retyped=True)
    assert rows[0]["status"] == "identical (re-typed)", rows
    assert set(rows[0]["leaves"]) == {
        "-state.oracle_loss", "+round0.update_info.oracle_ran", "~round0.info.loss_start",
        "~round0.info.loss", "~state.u"}
    assert m.compare(str(tmp_path / "b.npz"), str(tmp_path / "n.npz"))[0][0]["status"] == "differs"
    new["round0.info.train_loss"] = new["round0.info.train_loss"] + np.array([0.0, 1e-16 + 1.0])
    write(tmp_path / "n.npz", new)
    rows, _, _ = m.compare(str(tmp_path / "b.npz"), str(tmp_path / "n.npz"), retyped=True)
    assert rows[0]["status"] == "differs"


def test_retyped_matches_state_fields_moved_into_a_form(tmp_path):
    """``FIELD_MOVES``: NeuralUCB's ``state.g_obs`` and ``state.u_diag`` moved into ``state.u``
    are matched by their bits (``~``), a placeholder with no counterpart is listed (``-``).
    Mutation caught: one moved feature changed (the case then differs)."""
    m = _module()
    write = functools.partial(_write_record, m)

    base = {"state.g_obs.x": np.arange(6.0).reshape(3, 2), "state.g_obs.count": np.int32(2),
            "state.u_diag": np.zeros(0)}
    new = {"state.u.g_obs.x": base["state.g_obs.x"], "state.u.g_obs.count": np.int32(2)}
    write(tmp_path / "b.npz", base)
    write(tmp_path / "n.npz", new)
    rows, _, _ = m.compare(str(tmp_path / "b.npz"), str(tmp_path / "n.npz"), retyped=True)
    assert rows[0]["status"] == "identical (re-typed)", rows
    assert set(rows[0]["leaves"]) == {"~state.g_obs.x", "~state.g_obs.count", "-state.u_diag"}
    new["state.u.g_obs.x"] = new["state.u.g_obs.x"] + 1.0
    write(tmp_path / "n.npz", new)
    rows, _, _ = m.compare(str(tmp_path / "b.npz"), str(tmp_path / "n.npz"), retyped=True)
    assert rows[0]["status"] == "differs"
