"""The notice a long first call prints while it compiles (``ntkbo.compiling``)."""

import time

import jax
import jax.numpy as jnp

from ntkbo import compiling


def _fresh_program():
    """A function JAX has never traced in this process (a new closure each call)."""
    offset = time.perf_counter()
    return jax.jit(lambda x: jnp.sum(jnp.sin(x + offset)))


def test_a_call_that_compiles_and_runs_long_says_so(capsys, monkeypatch):
    """Mutation caught: the timer's line never written (a silent minute-long first call)."""
    monkeypatch.delenv("NTKBO_QUIET", raising=False)
    monkeypatch.setattr(compiling, "_quiet", False)  # an in-process ``ntkbo run`` silenced it
    with compiling.notice("the test's program", after=0.05):
        _fresh_program()(jnp.ones(3)).block_until_ready()
        time.sleep(0.3)
    err = capsys.readouterr().err
    assert "ntkbo: compiling the test's program" in err
    assert "ntkbo: compiled and ran the test's program in" in err


def test_a_call_that_builds_nothing_says_nothing(capsys, monkeypatch):
    """Running a compiled program for long is not compiling (mutation caught: the line printed
    whenever the call is slow, traced or not); nor is a quick call; nor a quiet process."""
    monkeypatch.delenv("NTKBO_QUIET", raising=False)
    monkeypatch.setattr(compiling, "_quiet", False)
    fn = _fresh_program()
    fn(jnp.ones(3)).block_until_ready()  # compiled here, before the notices
    with compiling.notice("a compiled program", after=0.05):
        fn(jnp.ones(3)).block_until_ready()
        time.sleep(0.3)
    with compiling.notice("a quick program", after=5.0):
        _fresh_program()(jnp.ones(3)).block_until_ready()
    monkeypatch.setenv("NTKBO_QUIET", "1")
    with compiling.notice("a quiet program", after=0.05):
        _fresh_program()(jnp.ones(3)).block_until_ready()
        time.sleep(0.3)
    assert capsys.readouterr().err == ""
