"""Exported programs (``ntkbo.programs``): runs through a store are bit-identical to plain ``jit``
runs, a second store loads instead of tracing, keys change with everything the program depends on,
and what cannot be exported still runs."""

import json
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import cli, loop, programs

FINGERPRINT = "random_search on branin"


def _run(store):
    """A short random-search run through ``minimize_chunks``: an initial-design program and a
    chunk program, each with the loop's real state pytrees (the buffers' ``ntkbo.data.Data``)."""
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    *_, last = loop.minimize_chunks(ntkbo.algorithms.random_search(), ntkbo.benchmarks.get("branin"),
                                    11, keys, n_init=3, chunk=4, min_capacity=16, programs=store)
    return last


def test_runs_through_a_store_are_bit_identical_and_a_second_store_loads(tmp_path):
    """Catches a store that never reads its folder (mutation: ``_load`` returning ``None``: the
    second store exports again) and a loaded program that computes something else than ``jit``
    (exact equality: the loaded module is the module ``jit`` would compile)."""
    plain = _run(None)
    first = programs.ProgramStore(str(tmp_path), FINGERPRINT)
    exported = _run(first)
    assert (first.exported, first.loaded, first.fallbacks) == (2, 0, 0)
    jax.clear_caches()
    second = programs.ProgramStore(str(tmp_path), FINGERPRINT)
    loaded = _run(second)
    assert (second.exported, second.loaded) == (0, 2)
    for name in ("x", "y", "f"):
        np.testing.assert_array_equal(getattr(exported, name), getattr(plain, name))
        np.testing.assert_array_equal(getattr(loaded, name), getattr(plain, name))
    assert len(os.listdir(tmp_path)) == 4  # a module and a result tree per program


def test_key_changes_with_what_the_program_depends_on(tmp_path, monkeypatch):
    """The same fingerprint, name and argument types give the same key in a new store; changing
    any of them, or the library's source, gives another. Mutations caught: the source digest
    dropped from ``environment``; the arguments' shapes or dtypes dropped from ``key``."""
    x = jnp.ones((3, 2), jnp.float32)
    key = programs.ProgramStore(str(tmp_path), "a").key("p", (x, 1))
    assert programs.ProgramStore(str(tmp_path), "a").key("p", (x, 1)) == key
    others = [programs.ProgramStore(str(tmp_path), "b").key("p", (x, 1)),
              programs.ProgramStore(str(tmp_path), "a").key("q", (x, 1)),
              programs.ProgramStore(str(tmp_path), "a").key("p", (jnp.ones((4, 2)), 1)),
              programs.ProgramStore(str(tmp_path), "a").key("p", (x.astype(jnp.int32), 1)),
              programs.ProgramStore(str(tmp_path), "a").key("p", ((x,), 1))]
    monkeypatch.setattr(programs, "source_digest", lambda: "edited source")
    others.append(programs.ProgramStore(str(tmp_path), "a").key("p", (x, 1)))
    assert len({key, *others}) == len(others) + 1


def test_programs_with_the_same_arguments_are_told_apart_by_name(tmp_path):
    """Two programs with the same argument types (a loop's chunks of different static lengths)
    are different entries (mutation: the name dropped from ``key``: the second call would run
    the first program)."""
    store = programs.ProgramStore(str(tmp_path), "scales")
    x = jnp.arange(4.0)
    np.testing.assert_array_equal(store("double", lambda a: 2.0 * a, x), 2.0 * x)
    np.testing.assert_array_equal(store("triple", lambda a: 3.0 * a, x), 3.0 * x)


def test_source_digest_covers_every_module():
    """The digest reads every ``.py`` file of the package (mutation: a walk that stops at the top
    folder would miss ``ntkbo/algorithms``): recomputed by hand from the same files."""
    import hashlib

    root = os.path.dirname(ntkbo.__file__)
    paths = sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root)
                   if "__pycache__" not in d for n in names if n.endswith(".py"))
    assert "algorithms/gp_bo.py" in paths
    digest = hashlib.sha256()
    for p in paths:
        digest.update(p.encode() + b"\0" + open(os.path.join(root, p), "rb").read() + b"\0")
    assert programs.source_digest() == digest.hexdigest()


def test_a_program_that_cannot_be_exported_runs_as_jit(tmp_path):
    """A host callback has no serialisable form: the store warns once, writes nothing and returns
    what the function returns (mutation: re-raising the export error)."""
    def fn(x):
        y = jax.pure_callback(lambda a: np.asarray(a) * 2.0, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y + 1.0

    store = programs.ProgramStore(str(tmp_path), "callback")
    x = jnp.arange(3.0)
    with pytest.warns(UserWarning, match="not exportable"):
        out = store("cb", fn, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second call: no second warning
        again = store("cb", fn, x)
    np.testing.assert_array_equal(out, 2.0 * x + 1.0)
    np.testing.assert_array_equal(again, out)
    assert store.fallbacks == 1 and not os.listdir(tmp_path)


def test_a_damaged_entry_is_exported_again(tmp_path):
    """A truncated module file (a crash mid-write elsewhere, a foreign file) is reported and
    replaced, not trusted (mutation: ``_load`` letting the deserialisation error through)."""
    def fn(x):
        return jnp.sin(x) * 3.0

    x = jnp.linspace(0.0, 1.0, 5)
    store = programs.ProgramStore(str(tmp_path), "sin")
    store("s", fn, x)
    module = os.path.join(tmp_path, store.key("s", (x,)) + ".stablehlo")
    with open(module, "wb") as fh:
        fh.write(b"not a module")
    fresh = programs.ProgramStore(str(tmp_path), "sin")
    with pytest.warns(UserWarning, match="unreadable entry"):
        out = fresh("s", fn, x)
    np.testing.assert_array_equal(out, fn(x))
    assert (fresh.loaded, fresh.exported) == (0, 1)
    assert programs.ProgramStore(str(tmp_path), "sin")._load(store.key("s", (x,))) is not None


def test_a_second_cli_run_loads_its_programs(tmp_path, monkeypatch):
    """``ntkbo run`` with the cache on keeps its programs under the cache folder's ``programs``,
    and a second identical command loads them (no new entry, the same runs). Mutation caught:
    ``main`` not passing the folder to ``run``."""
    monkeypatch.setenv("NTKBO_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["run", "--algo", "random_search", "--problem", "branin", "--budget", "9",
            "--seeds", "2", "--n-init", "3", "--no-plot"]
    assert cli.main(argv + ["--out", str(tmp_path / "a")]) == 0
    folder = tmp_path / "cache" / "programs"
    entries = {p: os.path.getmtime(folder / p) for p in os.listdir(folder)}
    assert len(entries) == 4
    jax.clear_caches()
    assert cli.main(argv + ["--out", str(tmp_path / "b")]) == 0
    assert {p: os.path.getmtime(folder / p) for p in os.listdir(folder)} == entries
    runs = [json.loads((tmp_path / d / "results.json").read_text())["runs"] for d in "ab"]
    assert runs[0] == runs[1]
