"""``benchmarks/bit_identity.py``: a record compared with itself is identical, and a deliberate
change of one option is reported as a difference, for that case only.

Two cheap algorithms (random search and NTK-GP with mean acquisition), so the three records run in
fresh interpreters (the script turns float64 on, which must not leak into this session) in about
a minute on two loaded cores."""

import importlib.util
import os
import subprocess
import sys

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
