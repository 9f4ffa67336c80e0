"""A clean stop: Ctrl-C (SIGINT) or SIGTERM on ``ntkbo bench`` / ``run`` ends with one line saying
what was kept and the command that resumes it, exit status 130 (143), nothing finished lost."""

import os
import shlex
import signal
import subprocess
import sys
import time

import jax
import pytest

from ntkbo import cli, files, loop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Six cheap cells (random search, 6 evaluations, 2 seeds): after the first cell file appears the
#: others still take seconds (each compiles its own programs), so the signal lands mid-study.
SPEC = ('name = "stop"\nbudget = 6\nseeds = 2\nreference = "random_search"\n'
        '[[algorithms]]\nname = "random_search"\n'
        + "".join(f'[[problems]]\nname = "{p}"\n' + ("dims = [2]\n" if any_dim else "")
                  for p, any_dim in (("branin", False), ("ackley", True), ("levy", True),
                                 ("rosenbrock", True), ("hartmann6", False),
                                 ("hartmann3", False))))


def _cells(out) -> dict:
    """Finished cell files (not ``atomic_write``'s hidden temporaries) -> their bytes."""
    folder = os.path.join(out, "cells")
    if not os.path.isdir(folder):
        return {}
    return {n: open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))
            if n.endswith(".npz") and not n.startswith(".")}


def test_ctrl_c_on_bench_keeps_the_cells_says_how_to_resume_and_resumes(tmp_path):
    """A real ``ntkbo bench`` process sent SIGINT once its first cell file exists: exit status
    130, at most 3 lines of output (the bar's line, ended, and the one line), the kept cells
    intact, and the printed command, run again, resumes: the kept cells are not re-run (same
    bytes) and the rest are written. Mutation caught (checked): ``main`` without its
    ``except KeyboardInterrupt`` (the status is then -2, the output a 30-line traceback)."""
    spec = tmp_path / "stop.toml"
    spec.write_text(SPEC)
    out = str(tmp_path / "study")
    argv = ["--no-cache", "bench", str(spec), "--out", out]
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "ntkbo.cli", *argv], cwd=str(tmp_path),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 300
        while not _cells(out) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        if proc.poll() is not None:
            raise AssertionError("the study ended before it could be interrupted: "
                                 + proc.communicate()[0].decode()[-2000:])
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = output.decode()
    assert proc.returncode == 130, text
    # A progress bar rewrites its line in place ('\r'); lines are what '\n' ends.
    lines = text.rstrip("\n").split("\n")
    assert len(lines) <= 3, text
    last = lines[-1]
    assert last.startswith("ntkbo bench: interrupted; ") and "Traceback" not in text
    kept = _cells(out)
    assert 1 <= len(kept) < 6
    assert f"{len(kept)} finished cell" in last and os.path.join(out, "cells") in last
    command = last.split("resume with: ", 1)[1]
    words = shlex.split(command)
    assert words[0] == "ntkbo" and words[1:] == argv
    assert not os.path.exists(os.path.join(out, files.LOCK_NAME))  # the lock was released
    # The printed command resumes: the kept cells are read, not re-run.
    try:
        assert cli.main(words[1:] + ["--quiet"]) == 0
    finally:
        jax.config.update("jax_enable_x64", True)  # the session's dtype (conftest)
    after = _cells(out)
    assert len(after) == 6 and all(after[n] == b for n, b in kept.items())


@pytest.fixture
def stop_after_first_chunk(monkeypatch):
    """``loop.minimize_chunks`` that yields its first chunk, then raises what ``stop`` does."""
    real = loop.minimize_chunks
    how = {}

    def chunks(*args, **kwargs):
        gen = real(*args, **kwargs)
        yield next(gen)
        how["stop"]()

    monkeypatch.setattr(loop, "minimize_chunks", chunks)
    return how


def _interrupt():
    raise KeyboardInterrupt


def _terminate():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # the handler raises in this frame as soon as the signal is delivered
    raise AssertionError("SIGTERM was not turned into an exception")


@pytest.mark.parametrize("stop, status, word", [(_interrupt, 130, "interrupted"),
                                                (_terminate, 143, "terminated (SIGTERM)")])
def test_a_stopped_run_leaves_the_previous_results_and_says_so(tmp_path, capsys,
                                                               stop_after_first_chunk, stop,
                                                               status, word):
    """``ntkbo run`` stopped mid-run (Ctrl-C, or SIGTERM sent to the process): the previous
    ``results.json`` is left byte for byte, the lock released, no temporary file, one line on
    stderr naming the file and the command to run again, status 130 (143 for SIGTERM), and
    SIGTERM's handler restored. Mutations caught (checked): no ``except KeyboardInterrupt`` in
    ``main`` (the exception escapes); no SIGTERM handler (the test process is killed)."""
    stop_after_first_chunk["stop"] = stop
    out = tmp_path / "run"
    out.mkdir()
    previous = b'{"a previous run": true}'
    (out / "results.json").write_bytes(previous)
    handler = signal.getsignal(signal.SIGTERM)
    argv = ["--no-cache", "run", "--algo", "random_search", "--problem", "branin", "--budget", "14",
            "--seeds", "3", "--n-init", "4", "--chunk", "4", "--out", str(out)]
    assert cli.main(argv) == status
    captured = capsys.readouterr()
    lines = captured.err.strip().split("\n")  # the progress bar's line, ended, then one line
    assert len(lines) == 2 and lines[1].startswith(f"ntkbo run: {word}; ")
    assert f"{out / 'results.json'} from the previous run left as it was" in lines[1]
    assert lines[1].endswith("run again: ntkbo " + shlex.join(argv))
    assert (out / "results.json").read_bytes() == previous
    assert sorted(os.listdir(out)) == ["results.json"]  # no lock, no temporary file
    assert signal.getsignal(signal.SIGTERM) is handler
