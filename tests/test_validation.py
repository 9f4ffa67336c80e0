"""One validation layer (``ntkbo.validation``): ``init``, ``update``, the factories, ask/tell and the
command line refuse bad input with a ``ValueError`` that names the argument, before anything runs.

Cheap: almost nothing here compiles (the checks raise before any jitted code is traced); the few
float32 checks of ask/tell compile random search's ``update`` only.
"""

from __future__ import annotations

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import algorithms as A
from ntkbo import ask_tell, cli
from ntkbo import data as D
from ntkbo.parts import set_option
from ntkbo.validation import check_bounds, check_told

BRANIN = ntkbo.benchmarks.get("branin")
HEAT = ntkbo.benchmarks.get("heat_equation")


def build(name, **options):
    """``A.get(name)`` with what the factory needs from a problem (a PDE, a constraint count)."""
    if A.uses_pde(name):
        options.setdefault("pde", HEAT.pde)
    if A.models_constraints(name, **options):
        options.setdefault("n_constraints", 1)
    return A.get(name, **options)


# ---- init: the box ----------------------------------------------------------------------------

BAD_BOUNDS = [
    ([[1.0, 0.0], [0.0, 1.0]], "strictly below"),  # dimension 0 inverted
    ([[0.0, 1.0], [1.0, 1.0]], "strictly below"),  # dimension 1 degenerate (zero width)
    ([[0.0, np.nan], [1.0, 1.0]], "finite"),
    ([[0.0, 0.0], [np.inf, 1.0]], "finite"),
    ([[0.0, 0.0, 0.0]], r"shape \(2, d\)"),
    (np.zeros((2, 0)), r"d >= 1"),
]


@pytest.mark.parametrize("name", A.names())
def test_init_rejects_bad_bounds_for_every_algorithm(name):
    """Catches: an ``init`` that takes inverted or degenerate bounds (the run then divides by a zero
    or negative width in ``to_unit``)."""
    algo = build(name)
    for bounds, match in BAD_BOUNDS:
        with pytest.raises(ValueError, match=match):
            algo.init(jax.random.PRNGKey(0), jnp.asarray(bounds), 16)


def test_minimize_rejects_bad_problem_bounds_before_compiling():
    """The drivers use the same check (``ntkbo.loop.validate``). Catches: NaN or infinite bounds
    reaching the compiled run (they were accepted: only lower < upper was tested)."""
    for bounds, match in BAD_BOUNDS[:4]:
        problem = BRANIN.replace(bounds=jnp.asarray(bounds))
        with pytest.raises(ValueError, match="problem.bounds.*" + match):
            ntkbo.minimize(A.random_search(), problem, 5, jax.random.PRNGKey(0))


def test_check_bounds_compares_in_the_dtype_and_accepts_tracers():
    """A box that rounds to zero width in float32 is degenerate there; under ``jit`` only the shape
    can be checked. Catches: a float64 comparison of bounds stored in float32."""
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match="strictly below"):
            check_bounds(np.array([[1.0, 0.0], [1.0 + 1e-9, 1.0]]))
    check_bounds(np.array([[1.0, 0.0], [1.0 + 1e-9, 1.0]]))  # float64: a genuine box
    out = jax.jit(check_bounds)(jnp.array([[0.0], [1.0]]))
    np.testing.assert_array_equal(out, [[0.0], [1.0]])


# ---- update: shapes and capacity ---------------------------------------------------------------

#: One algorithm of each module (the check is ``ntkbo.data.append``'s, which every one calls).
ONE_PER_MODULE = ["random_search", "gp", "ntk_gp", "neural_bo", "neural_ucb", "neural_linear",
                  "neural_greedy", "sto_bnts", "go_ucb", "pinn_ntk_gp"]


@pytest.mark.parametrize("name", ONE_PER_MODULE)
def test_update_rejects_y_of_the_wrong_length(name):
    """Catches: ``update`` writing ``q`` points with fewer or more values (silently misaligned
    rows). NaN y is *not* an error (a failed evaluation, tests/test_failures.py). The state is
    ``init``'s shapes (``jax.eval_shape``): the check reads the buffer's width and dtype, and
    the update, unchecked, would refuse the rows in ``ntkbo.data.append`` before any value is
    read; nothing is compiled (PINN-NTK-GP's concrete ``init`` compiles its residual factor)."""
    algo = build(name)
    state = jax.eval_shape(lambda k: algo.init(k, BRANIN.bounds, 16), jax.random.PRNGKey(0))
    x = np.asarray(BRANIN.bounds).mean(0)[None].repeat(3, 0)
    for y in (np.zeros(2), np.zeros(4)):
        with pytest.raises(ValueError, match="y must"):
            algo.update(state, x, y)


def test_constrained_update_rejects_y_without_its_constraint_columns():
    algo = build("neural_cbo", network=dict(width=8))
    state = algo.init(jax.random.PRNGKey(0), BRANIN.bounds, 16)
    with pytest.raises(ValueError, match=r"y must have shape \(3, 2\)"):
        algo.update(state, np.zeros((3, 2)) + 1.0, np.zeros(3))
    with pytest.raises(ValueError, match=r"y must have shape \(3, 2\)"):
        check_told(jnp.zeros((3, 2)), jnp.zeros((3, 3)), 1)


def test_a_batch_that_does_not_fit_raises_outside_jit_and_is_flagged_inside():
    """Catches: a batch silently dropped by an eager ``update`` (count unchanged, no error). Inside
    ``jit`` a failure is a value: the buffer comes back unchanged and ``count`` does not move."""
    algo = A.random_search()
    state = algo.init(jax.random.PRNGKey(0), BRANIN.bounds, 4)
    x = np.tile(np.asarray(BRANIN.bounds).mean(0), (3, 1))
    state, _ = algo.update(state, x, np.arange(3.0))
    with pytest.raises(ValueError, match="3 of 4 observations: 2 more do not fit"):
        algo.update(state, x[:2], np.zeros(2))
    with pytest.raises(ValueError, match="more than the buffer's capacity 4"):
        algo.update(algo.init(jax.random.PRNGKey(0), BRANIN.bounds, 4), np.tile(x, (2, 1)),
                    np.zeros(6))
    kept = jax.jit(D.append)(state.data, x[:2], np.zeros(2))
    assert int(kept.count) == 3
    np.testing.assert_array_equal(kept.y, state.data.y)


# ---- factories: every numeric option -----------------------------------------------------------

def _numeric_options(name):
    """Every option of ``name`` whose default is a number, a part's fields as ``"part.field"``
    (``ntkbo.algorithms.defaults``: every option, those inside parts included)."""
    out = {}
    for k, v in A.defaults(name).items():
        items = ({f"{k}.{f}": x for f, x in v.items()} if k in ntkbo.parts.PARTS
                 and isinstance(v, dict) else {k: v})
        out.update({o: x for o, x in items.items()
                    if isinstance(x, (int, float)) and not isinstance(x, bool)})
    return out


@pytest.mark.parametrize("name", A.names())
def test_factories_reject_non_finite_and_out_of_range_numbers(name):
    """Every numeric option of every algorithm: NaN and inf for a float option, -1 and 1.5 for an
    int option, give a ``ValueError`` naming the option. Catches: ``beta = nan`` or ``lam = nan``
    accepted and a whole run made blind."""
    options = _numeric_options(name)
    assert options, name
    for option, default in options.items():
        if option == "n_constraints":
            continue  # chosen by the problem (test_constrained_problems.py)
        bad = (math.nan, math.inf) if isinstance(default, float) else (-1, 1.5)
        for value in bad:
            given: dict = {}
            set_option(given, option, value)
            with pytest.raises(ValueError, match=re.escape(option)):
                build(name, **given)


@pytest.mark.parametrize("name, option, value", [
    ("gp_ucb", "beta", -1.0), ("ntk_gp_ucb", "beta", -1.0), ("gp_ei", "xi", -0.1),
    ("ntk_gp", "lam", 0.0), ("neural_bo", "lam", -1.0), ("neural_ucb", "nu", -1.0),
    ("gp", "fit.learning_rate", 0.0), ("gp", "search.jitter", -1e-6),
])
def test_factories_reject_negative_scales(name, option, value):
    """``option`` is a plain option or a part's ``"part.field"``; the error names it as given."""
    given: dict = {}
    set_option(given, option, value)
    with pytest.raises(ValueError, match=rf"^{re.escape(option)}\b"):
        build(name, **given)


# ---- ask/tell ----------------------------------------------------------------------------------


def test_load_checks_bounds_against_the_saved_study(tmp_path):
    """Catches: ``load(path, algo, bounds)`` ignoring ``bounds`` (a study resumed on another box)."""
    algo = A.random_search()
    study = ask_tell.start(algo, BRANIN.bounds, jax.random.PRNGKey(0), n_init=2)
    ask_tell.save(tmp_path / "s.msgpack", study)
    other = np.asarray(BRANIN.bounds).copy()
    other[1, 0] += 1.0
    with pytest.raises(ValueError, match="bounds .* differ from the saved study's bounds"):
        ask_tell.load(tmp_path / "s.msgpack", algo, other)
    same = ask_tell.load(tmp_path / "s.msgpack", algo, BRANIN.bounds)
    np.testing.assert_array_equal(same.design, study.design)


def test_tell_validates_in_the_storage_dtype_float32():
    """Three hostile inputs, in float32: ``1e39`` overflows float32 and is refused, not
    stored as inf; ``1e8 + 0.4`` and ``1e8 + 3`` (one float32 value) stay distinct in the record; a
    point ``1e-11`` inside an upper bound that float32 rounds down (0.7) is accepted and clipped.
    Catches each of the three defects."""
    with jax.enable_x64(False):
        algo = A.random_search()
        bounds = np.array([[0.0, 0.0], [0.7, 1.0]])
        study = ask_tell.start(algo, bounds, jax.random.PRNGKey(0), n_init=0)
        assert study.state.data.y.dtype == jnp.float32
        inside = np.array([[0.7 - 1e-11, 0.5]])
        assert np.float32(0.7) < inside[0, 0]  # beyond the float32 bound in float64
        study = ask_tell.tell(algo, study, inside, [1e8 + 0.4])
        study = ask_tell.tell(algo, study, [[0.1, 0.1]], [1e8 + 3.0])
        with pytest.raises(ValueError, match=r"y at \[\[0\]\] \(\[1e\+39\]\) overflows .*float32"):
            ask_tell.tell(algo, study, [[0.2, 0.2]], [1e39])
        xs, ys = ask_tell.observations(study)
        assert ys.dtype == np.float64 and ys[1] - ys[0] == pytest.approx(2.6)
        assert xs[0, 0] == 0.7 - 1e-11  # the record keeps what was told
        assert float(study.state.data.x[0, 0]) <= float(np.float32(0.7))  # the model: clipped
        assert int(study.state.data.count) == 2  # the refused tell recorded nothing


def test_start_and_tell_name_the_argument():
    algo = A.random_search()
    with pytest.raises(ValueError, match="n_init"):
        ask_tell.start(algo, BRANIN.bounds, jax.random.PRNGKey(0), n_init=-1)
    with pytest.raises(ValueError, match="bounds"):
        ask_tell.start(algo, [[1.0, 0.0], [0.0, 1.0]], jax.random.PRNGKey(0))


# ---- the command line --------------------------------------------------------------------------


def _no_run(monkeypatch):
    """Makes any attempt to start a run fail loudly: the checks must come first."""
    def boom(*args, **kwargs):
        raise AssertionError("the run started before the arguments were checked")
    monkeypatch.setattr(ntkbo.loop, "minimize_chunks", boom)


@pytest.mark.parametrize("argv, message", [
    (["--algo", "gp_ucb", "--set", "beta=-1"], "beta must be >= 0"),
    (["--algo", "neural_bo", "--set", "lam=nan"], "lam must be finite"),
    (["--algo", "random_search", "--seeds", "-1"], "--seeds must be an int >= 1"),
    (["--algo", "random_search", "--seeds", "0"], "--seeds must be an int >= 1"),
    (["--algo", "random_search", "--chunk", "0"], "--chunk must be an int >= 1"),
    (["--algo", "random_search", "--budget", "0"], "--budget must be an int >= 1"),
])
def test_run_exits_non_zero_with_the_message_before_running(argv, message, capsys, monkeypatch):
    """Catches: ``--set beta=-1`` exiting 0 after a blind run, ``--seeds -1`` an MLIR traceback,
    ``--seeds 0`` / ``--chunk 0`` reshape errors."""
    _no_run(monkeypatch)
    code = cli.main(["run", "--problem", "branin", "--out", ""] + argv)
    assert code != 0
    assert message in capsys.readouterr().err


def test_run_checks_out_is_writable_before_running(tmp_path, capsys, monkeypatch):
    """Catches: ``--out`` to an unwritable folder failing only after the whole run (which is lost).
    A folder below a regular file cannot be created, whoever runs the test (root included)."""
    _no_run(monkeypatch)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code = cli.main(["run", "--algo", "random_search", "--problem", "branin",
                     "--out", str(blocker / "results")])
    assert code != 0
    assert "--out: cannot write to the folder" in capsys.readouterr().err
