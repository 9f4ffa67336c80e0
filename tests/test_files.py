"""Nothing lost, nothing silently wrong on disk: ``ntkbo.files`` and the writers that use it.

- Atomic writes (``files.atomic_write``): the permissions of a normal file, concurrent saves to
  one path, a write that fails between writing and renaming, and a writer killed with SIGKILL in
  that window for ``ntkbo run``'s ``results.json``, a study save and a cell file: the previous
  file stays, byte for byte.
- Checksums: every flipped bit and every truncation of a study save is refused naming the file; a
  save or cell whose contents were altered with its checksum left as it was is refused (what the
  checksum alone catches); truncated cells, a damaged ``spec.json`` and summary are refused by
  ``bench`` and ``report`` naming the file.
- The folder lock (``files.lock_folder``): a second taker is refused naming the holder's process
  and host, a lock left by a killed holder is taken over, and two ``ntkbo bench`` processes on one
  folder: one runs, the other stops and writes nothing; a ``jax.distributed`` group stops as one.

Subprocesses hold locks or are killed mid-write; the ones that only hold a lock load
``ntkbo/files.py`` alone (no JAX), so they start in well under a second.
"""

from __future__ import annotations

import io
import re
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import tomllib
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbo import algorithms as A
from ntkbo import ask_tell, benchmarks, files
from ntkbo.cli import main
from ntkbo.experiments import store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRANIN = benchmarks.get("branin")


def _env(**extra):
    env = dict(os.environ, JAX_ENABLE_X64="1", OPENBLAS_NUM_THREADS="1", NTKBO_CACHE_DIR="off",
               JAX_DISABLE_MOST_OPTIMIZATIONS="1", PYTHONPATH=ROOT, **extra)
    env.pop("XLA_FLAGS", None)
    return env


def _python(script: str, *args):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                            cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(path: str, proc, timeout: float = 300.0) -> None:
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the subprocess ended ({proc.returncode}) before {path} "
                                 f"appeared:\n{out}\n{err[-4000:]}")
        assert time.time() < deadline, f"{path} did not appear in {timeout} s"
        time.sleep(0.02)


def _study(n_told: int):
    """A random-search study told ``n_told`` Branin values (no compilation)."""
    algo = A.random_search()
    study = ask_tell.start(algo, BRANIN.bounds, jax.random.PRNGKey(3), n_init=n_told)
    for _ in range(n_told):
        x, study = ask_tell.ask(algo, study)
        study = ask_tell.tell(algo, study, x, np.asarray(BRANIN.fn_batch(jnp.asarray(x))))
    return algo, study


def _arrays(s=2, b=3, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(s, b, d)), "y": rng.normal(size=(s, b)),
            "f": rng.normal(size=(s, b)), "c": np.zeros((s, b, 0)), "c_obs": np.zeros((s, b, 0)),
            "feasible": np.ones((s, b), bool), "metric": rng.normal(size=(s, b)),
            "keys": np.zeros((s, 2), np.uint32), "seeds": np.arange(s),
            "wall_time": np.full(s, 0.5)}


# ---------------------------------------------------------------------------------------------
# atomic writes


def test_atomic_write_gives_a_normal_files_permissions_and_leaves_no_temporary(tmp_path):
    """The file gets ``0o666 & ~umask`` (0o644 under umask 022, 0o600 under 077), not
    ``mkstemp``'s 0o600 whatever the umask. Mutation caught (checked): the ``fchmod`` removed
    (0o600 under umask 022)."""
    path = tmp_path / "a.json"
    old = os.umask(0o022)
    try:
        files.atomic_write(path, b"one")
        assert os.stat(path).st_mode & 0o777 == 0o644
        os.umask(0o077)
        files.atomic_write(path, lambda fh: fh.write(b"two"))
        assert os.stat(path).st_mode & 0o777 == 0o600
    finally:
        os.umask(old)
    assert path.read_bytes() == b"two" and os.listdir(tmp_path) == ["a.json"]


def test_a_write_failing_before_the_rename_leaves_the_previous_file(tmp_path, monkeypatch):
    """A failure after the bytes are written and before the rename (injected in ``fsync``, the
    step between them) leaves the previous file byte for byte and no temporary file. Mutation
    caught (checked): writing straight to the final name (the file then holds the new bytes)."""
    path = tmp_path / "results.json"
    files.atomic_write(path, b"previous results")

    def failing_fsync(fd):
        raise OSError("injected: the disk went away")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="injected"):
        files.atomic_write(path, b"new results, never complete")
    assert path.read_bytes() == b"previous results"
    assert os.listdir(tmp_path) == ["results.json"]


def test_concurrent_saves_to_one_path_never_fail(tmp_path):
    """Eight threads each save a study to one path 15 times: no save fails (a fixed temporary name
    ``<path>.tmp``, shared by every writer, made a writer's rename find its temporary file moved
    away: ``FileNotFoundError``, in 5 of 30 saves between two processes), and the file left is
    one of the saved studies, whole. Mutation caught (checked): the fixed ``<path>.tmp`` name in
    ``ask_tell.save``."""
    path = tmp_path / "study.msgpack"
    studies = [_study(n) for n in (1, 2, 3, 4)]
    errors = []

    def saver(i):
        try:
            for _ in range(15):
                ask_tell.save(path, studies[i % 4][1])
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=saver, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    loaded = ask_tell.load(path, studies[0][0], BRANIN.bounds)
    assert any(np.array_equal(loaded.told_y, s.told_y) for _, s in studies)
    assert sorted(os.listdir(tmp_path)) == ["study.msgpack"]


# The writer in the subprocess hangs in the ``fsync`` of the temporary file of TARGET (after every
# byte is written, before the rename) and says so through a marker file; the test then kills it.
KILL_MID_WRITE = """
import os, sys, time
target, marker, what, folder = sys.argv[1:5]
real_fsync = os.fsync

def fsync(fd):
    name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    if name.startswith("." + target + ".") and name.endswith(".ntkbo-tmp"):
        open(marker, "w").close()
        time.sleep(600)
    real_fsync(fd)

os.fsync = fsync
if what == "run":
    from ntkbo.cli import main
    main(["--no-cache", "run", "--algo", "random_search", "--problem", "branin", "--budget", "3",
          "--seeds", "1", "--out", folder, "--no-plot"])
elif what == "save":
    import jax, numpy as np
    from ntkbo import algorithms as A, ask_tell, benchmarks
    p = benchmarks.get("branin")
    algo = A.random_search()
    study = ask_tell.start(algo, p.bounds, jax.random.PRNGKey(3), n_init=5)
    for _ in range(5):
        x, study = ask_tell.ask(algo, study)
        study = ask_tell.tell(algo, study, x, np.asarray(p.fn_batch(x)))
    ask_tell.save(os.path.join(folder, target), study)
else:
    import numpy as np
    from ntkbo.experiments import store
    a = dict(np.load(os.path.join(folder, "arrays.npz")))
    store.write_cell(folder, "c1", a, {"second": True})
"""


@pytest.mark.parametrize("what", ["run", "save", "cell"])
def test_sigkill_mid_write_leaves_the_previous_file(what, tmp_path):
    """``kill -9`` of a writer after it wrote the new file's bytes and before the rename:
    ``ntkbo run``'s ``results.json``, a study save and a cell file each keep the previous file,
    byte for byte, and it still loads. (``ntkbo run`` once left a 0-byte or unparseable
    ``results.json`` that way.) Mutation caught (checked): ``results.json`` written in place with
    ``open``/``json.dump`` (the writer never reaches a temporary file's fsync: the run ends
    and the test fails; with an fsync of the final file, that file holds the new record)."""
    folder = tmp_path / "out"
    folder.mkdir()
    target = {"run": "results.json", "save": "study.msgpack", "cell": "c1.npz"}[what]
    if what == "run":
        path = folder / target
        path.write_text(json.dumps({"schema": 4, "previous": True, "runs": [[1.0] * 1000]}))
    elif what == "save":
        path = folder / target
        ask_tell.save(path, _study(2)[1])
    else:
        path = tmp_path / "out" / "cells" / target
        np.savez(folder / "arrays.npz", **_arrays(seed=1))
        store.write_cell(str(folder), "c1", _arrays(), {"second": False})
    before = path.read_bytes()
    marker = tmp_path / "writing"
    proc = _python(KILL_MID_WRITE, target, marker, what, folder)
    try:
        _wait_for(str(marker), proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    if what == "run":
        assert json.loads(path.read_text())["previous"] is True
    elif what == "save":
        loaded = ask_tell.load(path, A.random_search(), BRANIN.bounds)
        assert loaded.told_y.shape[0] == 2
    else:
        assert store.read_cell(str(path)).meta["second"] is False
        assert store.list_cells(str(folder)) == [str(path)]  # the temporary file is hidden


# ---------------------------------------------------------------------------------------------
# checksums and damaged files


def test_every_flipped_bit_or_truncation_of_a_study_save_is_refused_naming_the_file(tmp_path):
    """Every 7th bit of a save flipped, one at a time (all of its bytes are covered), and the save
    cut at 20 lengths: each load is refused with a ``ValueError`` naming the file (150 of 300
    flips used to load a changed study without a word; a truncated file raised msgpack's own
    errors). Garbage bytes and an empty file too."""
    algo, study = _study(3)
    good = tmp_path / "good.msgpack"
    ask_tell.save(good, study)
    raw = good.read_bytes()
    bad = tmp_path / "bad.msgpack"
    for bit in range(0, 8 * len(raw), 7):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        bad.write_bytes(bytes(flipped))
        with pytest.raises(ValueError, match=str(bad)):
            ask_tell.load(bad, algo, BRANIN.bounds)
    for n in np.linspace(0, len(raw) - 1, 20).astype(int):
        bad.write_bytes(raw[:n])
        with pytest.raises(ValueError, match=f"{bad}: .*damaged"):
            ask_tell.load(bad, algo, BRANIN.bounds)
    bad.write_bytes(b"\xc1garbage" * 10)
    with pytest.raises(ValueError, match=f"{bad}: .*damaged"):
        ask_tell.load(bad, algo, BRANIN.bounds)


def test_a_save_altered_behind_its_checksum_is_refused(tmp_path):
    """A save whose record was changed (a told value) and re-encoded whole, with the checksum it
    had: it decodes fine, so only the checksum refuses it, naming the file and saying the file is
    damaged. Mutation caught (checked): the checksum comparison in ``_read_payload`` removed (the
    altered study loads)."""
    from flax import serialization

    algo, study = _study(3)
    path = tmp_path / "s.msgpack"
    ask_tell.save(path, study)
    envelope = serialization.msgpack_restore(path.read_bytes())
    payload = serialization.msgpack_restore(bytes(envelope["payload"]))
    payload["told_y"] = payload["told_y"] + 1.0
    envelope["payload"] = serialization.msgpack_serialize(payload)
    path.write_bytes(serialization.msgpack_serialize(envelope))
    with pytest.raises(ValueError, match=f"{path}: the study file is damaged .the checksum"):
        ask_tell.load(path, algo, BRANIN.bounds)


def _rezip(path, change):
    """The ``.npz`` at ``path`` rewritten with ``change(members)`` applied (valid zip CRCs)."""
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    change(members)
    buf = io.BytesIO()
    np.savez(buf, **members)
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())


def test_a_cell_altered_or_truncated_is_refused_naming_the_file(tmp_path):
    """A cell whose ``f`` was changed and re-zipped with valid zip CRCs but the old checksum is
    refused by the checksum alone; the cell cut at 12 lengths is refused by ``read_cell`` and
    ``read_meta`` with a ``ValueError`` naming it (it used to be ``zipfile.BadZipFile``); a cell
    written before cells carried a checksum (no ``checksum`` member) is read as before.
    Mutations caught (checked): the checksum comparison in ``read_cell`` removed (the altered
    cell is read); a checksum required of every cell (the older cell is refused)."""
    out = str(tmp_path)
    path = store.write_cell(out, "c1", _arrays(), {"budget": 3})
    raw = open(path, "rb").read()
    assert store.read_cell(path).meta["budget"] == 3

    def alter(m):
        m["f"] = m["f"] + 1.0

    _rezip(path, alter)
    with pytest.raises(ValueError, match=f"{path}: the cell file is damaged: its checksum"):
        store.read_cell(path)
    for n in np.linspace(0, len(raw) - 1, 12).astype(int):
        with open(path, "wb") as fh:
            fh.write(raw[:n])
        for read in (store.read_cell, store.read_meta):
            with pytest.raises(ValueError, match=f"{path}: not a readable cell file .truncated"):
                read(path)
    with open(path, "wb") as fh:
        fh.write(raw)
    _rezip(path, lambda m: m.pop(store.CHECKSUM))
    np.testing.assert_array_equal(store.read_cell(path).f, _arrays()["f"])


SPEC_TOML = """
name = "t"
budget = {budget}
n_init = 2
seeds = {{ count = 2 }}
[[algorithms]]
name = "random_search"
[[problems]]
name = "branin"
[[problems]]
name = "ackley"
dims = [2]
"""


def test_bench_and_report_name_a_damaged_cell_spec_json_or_summary(tmp_path, capsys):
    """``ntkbo bench`` and ``ntkbo report`` on a folder with a truncated cell, a ``spec.json``
    that is not JSON, or a truncated ``summary.npz``: exit 2 with an error naming the file and
    what to do, no traceback (they raised ``zipfile.BadZipFile`` and a bare JSON error).
    Mutation caught (checked): ``read_spec`` without its JSON error check (``bench`` raises the
    bare ``JSONDecodeError``)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(budget=4))
    out = tmp_path / "study"
    path = store.write_cell(str(out), "c1", _arrays(), {"budget": 3})
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)
    bench = ["--no-cache", "bench", str(spec), "--out", str(out), "--quiet"]
    for argv in (bench, ["report", str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{path}: not a readable cell file" in err and "run the study again" in err, err
    os.remove(path)
    (out / "spec.json").write_text('{"name": "t\x01"}')
    assert main(bench) == 2
    err = capsys.readouterr().err
    assert f"{out / 'spec.json'}: the study's spec record is not valid JSON" in err, err
    assert "delete it and run the same spec again" in err
    os.remove(out / "spec.json")
    (out / "summary.npz").write_bytes(b"PK\x03\x04 cut short")
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'summary.npz'}: not a readable study summary" in err, err


# ---------------------------------------------------------------------------------------------
# one writer per folder


# Holds the lock of argv[1] until killed; loads ntkbo/files.py alone (no JAX: starts at once).
HOLD = """
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("files", os.path.join("ntkbo", "files.py"))
files = importlib.util.module_from_spec(spec)
spec.loader.exec_module(files)
lock = files.lock_folder(sys.argv[1], "holder-command")
open(sys.argv[2], "w").close()
time.sleep(600)
"""


def test_the_lock_names_its_holder_and_a_killed_holders_lock_is_taken_over(tmp_path):
    """While a process holds the lock, taking it is refused with ``FolderLocked`` naming the lock
    file, the holder's pid, host and command; after that holder is killed with SIGKILL (its lock
    file left behind, a stale lock) the lock is taken with a warning naming the dead holder, and
    releasing it deletes the file. The same process taking it twice is refused too; an unlocked
    lock file recording another host is refused (that process cannot be checked). Mutations
    caught (checked): no ``flock`` (the second taker is not refused); any lock file taken as held
    (the stale lock is refused)."""
    folder, ready = tmp_path / "study", tmp_path / "ready"
    proc = _python(HOLD, folder, ready)
    try:
        _wait_for(str(ready), proc, timeout=60)
        with pytest.raises(files.FolderLocked) as caught:
            files.lock_folder(folder)
        msg = str(caught.value)
        assert (f"process {proc.pid} on host {socket.gethostname()} (command: holder-command)"
                in msg and str(folder / files.LOCK_NAME) in msg and "another output folder" in msg)
        assert caught.value.holder["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert (folder / files.LOCK_NAME).exists()  # the killed holder left its lock file
    with pytest.warns(UserWarning, match=f"stale lock of process {proc.pid} on host "):
        lock = files.lock_folder(folder, "taker")
    assert json.loads((folder / files.LOCK_NAME).read_text())["pid"] == os.getpid()
    with pytest.raises(files.FolderLocked, match=r"\(this process\) holds its lock"):
        files.lock_folder(folder)
    lock.release()
    assert not (folder / files.LOCK_NAME).exists()
    (folder / files.LOCK_NAME).write_text(json.dumps({"pid": 12345, "host": "elsewhere"}))
    with pytest.raises(files.FolderLocked, match="process 12345 on host elsewhere, another host"
                                                 ".* delete"):
        files.lock_folder(folder)


BENCH = "import sys; from ntkbo.cli import main; sys.exit(main(sys.argv[1:]))"


def test_two_bench_processes_on_one_folder_one_runs_the_other_stops(tmp_path, capsys):
    """``ntkbo bench`` with budget 4 runs in a subprocess; as soon as it holds the folder, a second
    ``bench`` of the same folder with budget 5 (here) exits 2 naming the first one's pid and host
    and writes nothing: ``spec.json`` and every cell hold budget 4 (two such runs once both
    "succeeded", with a budget-16 spec.json over budget-20 cells). Then a stale lock (a lock file
    of a process that has exited) does not stop a third run of the first spec, which finds every
    cell done, and deletes the temporary file the dead holder left. Mutations caught (checked):
    no lock in ``runner.run`` (the second bench runs); no ``remove_temporaries`` in ``runner.run``
    (the temporary file stays)."""
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text(SPEC_TOML.format(budget=4))
    second.write_text(SPEC_TOML.format(budget=5))
    out = tmp_path / "study"
    proc = _python(BENCH, "--no-cache", "bench", first, "--out", out, "--quiet")
    lock_file = out / files.LOCK_NAME
    deadline = time.time() + 300
    while not (lock_file.exists() and lock_file.read_text()):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.01)
    try:
        assert main(["--no-cache", "bench", str(second), "--out", str(out), "--quiet"]) == 2
    finally:
        stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    err = capsys.readouterr().err
    assert f"process {proc.pid} on host {socket.gethostname()}" in err, err
    assert "is in use" in err and "another output folder" in err
    assert json.loads((out / "spec.json").read_text())["budget"] == 4
    cells = [store.read_cell(p) for p in store.list_cells(str(out))]
    assert len(cells) == 2 and all(c.y.shape == (2, 4) for c in cells)
    assert not lock_file.exists()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    lock_file.write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    before = {p: os.stat(p).st_mtime_ns for p in store.list_cells(str(out))}
    left = out / "cells" / f".{os.path.basename(next(iter(before)))}.x1y2z3{files.TMP_SUFFIX}"
    left.write_bytes(b"the half-written cell of the killed holder")
    with pytest.warns(UserWarning, match=f"stale lock of process {int(dead.stdout)}"):
        assert main(["--no-cache", "bench", str(first), "--out", str(out), "--quiet"]) == 0
    assert {p: os.stat(p).st_mtime_ns for p in store.list_cells(str(out))} == before
    assert not lock_file.exists()
    assert not left.exists()  # the lock's new holder deleted the dead writer's temporary file


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_distributed_group_stops_as_one_when_the_folder_is_held(tmp_path):
    """Two ``bench`` processes under ``jax.distributed`` on a folder this process holds: process 0
    cannot take the lock and says who holds it; process 1, which takes no lock of its own, waits
    for process 0 and stops with the same holder named; neither writes ``spec.json`` or a cell.
    Mutation caught (checked): ``wait_started`` not waiting (process 1 runs its cells)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC_TOML.format(budget=4))
    out = tmp_path / "study"
    port = _free_port()
    with files.lock_folder(out, "the test"):
        procs = [_python(BENCH, "--no-cache", "bench", spec, "--out", out, "--quiet",
                         "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                         "--process-id", i) for i in range(2)]
        results = [p.communicate(timeout=300) for p in procs]
    holder = f"process {os.getpid()} on host {socket.gethostname()} (command: the test)"
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 2, err[-3000:]
        assert holder in err, err[-3000:]
    assert "process 0 of this group stopped before running any cell" in results[1][1]
    assert sorted(os.listdir(out)) == [], os.listdir(out)


@pytest.mark.parametrize("command", ["run", "coco", "runner"])
def test_run_coco_and_the_python_runner_stop_on_a_held_folder(command, tmp_path, capsys):
    """With the folder's lock held (here, by this process through another open file), ``ntkbo
    run``, ``ntkbo coco`` (exit 2) and ``ntkbo.experiments.run`` (``FolderLocked``) stop naming
    the holder before they compute or write anything: the folder holds only the lock file.
    Mutation caught (checked): ``cli.run`` without its lock (it runs and writes
    ``results.json``)."""
    from ntkbo import experiments

    out = tmp_path / "out"
    holder = f"process {os.getpid()} on host {socket.gethostname()} (command: holder)"
    with files.lock_folder(out, "holder"):
        if command == "runner":
            with pytest.raises(files.FolderLocked, match=re.escape(holder)):
                experiments.run(tomllib.loads(SPEC_TOML.format(budget=4)), str(out))
        else:
            argv = {"run": ["run", "--algo", "random_search", "--problem", "branin", "--budget",
                            "3", "--seeds", "1", "--no-plot"],
                    "coco": ["coco", "--algo", "random_search", "--dims", "2", "--functions",
                             "1", "--instances", "1", "--budget-multiplier", "1"]}[command]
            assert main(["--no-cache", *argv, "--out", str(out)]) == 2
            err = capsys.readouterr().err
            assert holder in err and "is in use" in err, err
        assert os.listdir(out) == [files.LOCK_NAME]


def test_a_folder_that_cannot_be_locked_is_named(tmp_path, monkeypatch):
    """A path that is a file, and a file system without ``flock`` (``ENOLCK``, injected): a
    ``ValueError`` naming the folder or lock file and the reason, which every command prints as
    its error. Mutation caught (checked): the ``flock`` error re-raised as it comes (an
    ``OSError`` with no path)."""
    import errno
    import fcntl

    (tmp_path / "a-file").write_text("")
    with pytest.raises(ValueError, match=f"{tmp_path / 'a-file'}: cannot create the folder"):
        files.lock_folder(tmp_path / "a-file")

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(ValueError, match=f"{tmp_path / 'd' / files.LOCK_NAME}: cannot lock the "
                                         r"folder .*No locks available.*does not support"):
        files.lock_folder(tmp_path / "d")


# ---------------------------------------------------------------------------------------------
# the files a study and a run write


def test_every_file_a_study_or_run_writes_follows_the_umask(tmp_path, capsys):
    """``ntkbo bench`` (cells, ``spec.json``, the log, ``summary.npz``), ``ntkbo report`` (report
    Markdown and JSON, tables, figures in every format) and ``ntkbo run`` (``results.json``, the
    plot), run under umask 022 and then 077: every file they leave has mode ``0o666 & ~umask``
    (readable by others under 022) and every folder ``0o777 & ~umask``. One tiny study (random
    search twice, 7 evaluations, 2 seeds) per umask; the second reuses the first's compiled programs.
    Mutation caught (checked): ``atomic_write`` without its ``fchmod`` (the cells, ``spec.json``
    and the report are then 0o600 under umask 022)."""
    import jax

    from ntkbo import cli

    spec = tmp_path / "tiny.toml"
    spec.write_text('name = "tiny"\nbudget = 7\nseeds = 2\nreference = "random_search"\n'
                    '[[algorithms]]\nname = "random_search"\n[[algorithms]]\nlabel = "random_q2"\n'
                    'name = "random_search"\n[algorithms.options]\nq = 2\n'
                    '[[problems]]\nname = "branin"\n')
    old = os.umask(0o022)
    try:
        for mask in (0o022, 0o077):
            os.umask(mask)
            root = tmp_path / f"umask{mask:03o}"
            study, run = str(root / "study"), str(root / "run")
            assert cli.main(["--no-cache", "bench", str(spec), "--out", study, "--quiet"]) == 0
            assert cli.main(["report", study]) == 0
            assert cli.main(["--no-cache", "run", "--algo", "random_search", "--problem",
                             "branin", "--budget", "6", "--seeds", "2", "--out", run]) == 0
            kinds, wrong = set(), []
            for folder, dirs, names in os.walk(root):
                for d in dirs:
                    if os.stat(os.path.join(folder, d)).st_mode & 0o777 != 0o777 & ~mask:
                        wrong.append(os.path.join(folder, d))
                for n in names:
                    path = os.path.join(folder, n)
                    kinds.add(os.path.splitext(n)[1])
                    if os.stat(path).st_mode & 0o777 != 0o666 & ~mask:
                        wrong.append(f"{path}: {os.stat(path).st_mode & 0o777:o}")
            assert not wrong, f"umask {mask:03o}: {wrong}"
            # every kind of file the three commands write was looked at
            assert {".npz", ".json", ".jsonl", ".md", ".png", ".pdf", ".csv", ".tex"} <= kinds
    finally:
        os.umask(old)
        jax.config.update("jax_enable_x64", True)  # the session's dtype (conftest)
    capsys.readouterr()
