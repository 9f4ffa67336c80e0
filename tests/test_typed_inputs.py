"""Typed options and checked observations: one rule on every path.

Options: a boolean option takes only ``True``/``False`` from Python, and from text (``--set``, TOML
files, study specs) the words ``true/false, yes/no, on/off, 1/0``, parsed; a numeric option never
takes a string. Observations: a non-finite point, a value that overflows the state's dtype, a
non-real value or a point of the wrong width is refused by ``update`` called eagerly, by
``ntkbo.ask_tell`` and by ``minimize``'s problems, with a ``ValueError`` naming the argument.

Cheap: the checks raise before anything is compiled, except the few runs that compare a result
(random search, a handful of evaluations).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import algorithms as A
from ntkbo import ask_tell, cache, cli, loop
from ntkbo.benchmarks import Problem, numpy_problem
from ntkbo.experiments.spec import Spec
from ntkbo.parts import option_types
from test_validation import build  # noqa: E402  (tests/ is on sys.path: nt_shim.py)

HEAT = ntkbo.benchmarks.get("heat_equation")
BOX = jnp.array([[0.0, 0.0], [1.0, 1.0]])
KEY = jax.random.PRNGKey(0)




def public(name, plain, value):
    """Plain option ``plain`` of ``name`` set to ``value`` as a caller writes it (in its part)."""
    part, _, field = A.layout(A._FACTORIES[name]).public_name(plain).rpartition(".")
    return ({part: {field: value}} if part else {plain: value}), (f"{part}.{field}" if part
                                                                  else plain)


def options_of_kind(kind):
    """``(name, plain option)`` for every registry name and plain option whose annotation allows
    ``kind`` (``"bool"``) or, with ``"numeric"``, a number but not a string."""
    out = []
    for name in A.names():
        kinds = option_types(A._plain(A._FACTORIES[name].__wrapped__))
        fixed = set(getattr(A._FACTORIES[name].__wrapped__, "keywords", {}))
        for k, ks in kinds.items():
            if k in fixed:
                continue
            if kind == "bool" and "bool" in ks:
                out.append((name, k))
            if kind == "numeric" and ks & {"int", "float"} and "str" not in ks:
                out.append((name, k))
    return out


BOOL_OPTIONS = options_of_kind("bool")
NUMERIC_OPTIONS = options_of_kind("numeric")


def test_the_tables_cover_the_options_the_issue_names():
    """The parametrisations below are not empty by accident: ``gp``'s ``fit`` and ``log_ei``
    and NeuralBO's ``warm_start`` are boolean options, ``lam`` and ``width`` numeric ones."""
    assert {("gp", "fit"), ("gp", "log_ei"), ("neural_bo", "warm_start")} <= set(BOOL_OPTIONS)
    assert {("neural_bo", "lam"), ("neural_bo", "width")} <= set(NUMERIC_OPTIONS)


@pytest.mark.parametrize("name, plain", BOOL_OPTIONS)
def test_boolean_options_refuse_words_numbers_and_none(name, plain):
    """Catches: a boolean option read for its truth (``"false"`` fitting; the mutation of
    ``check_option`` letting a string through where the annotation has no ``str``), and ``0`` or
    ``None`` standing for False."""
    kinds = option_types(A._plain(A._FACTORIES[name].__wrapped__))[plain]
    for bad in ("false", "no", 0, 1.0, None):
        if isinstance(bad, str) and "str" in kinds or bad is None and "none" in kinds:
            continue  # ard takes "auto" (its choice check refuses the rest); None is "by backend"
        given, shown = public(name, plain, bad)
        with pytest.raises(ValueError, match=rf"{shown} must be True(,| or) False"):
            build(name, **given)


@pytest.mark.parametrize("name, plain", NUMERIC_OPTIONS)
def test_numeric_options_refuse_strings(name, plain):
    """Catches: ``float("0.1")`` accepting the string ``"0.1"`` (the mutation of
    ``check_number`` without its string test, and of ``check_option``'s ``str`` kind)."""
    given, shown = public(name, plain, "1")
    with pytest.raises(ValueError, match=rf"{shown} must be"):
        build(name, **given)


def test_gp_fit_false_string_is_refused_and_false_is_false():
    """The issue's case: ``gp(fit={"enabled": "false"})`` fitted. Now an error naming the option;
    ``False`` records ``False``. Catches the mutation of ``composed`` without ``check_types``."""
    with pytest.raises(ValueError, match="fit.enabled must be True or False, got 'false'"):
        A.gp(fit={"enabled": "false"})
    with pytest.raises(ValueError, match="fit.enabled must be True or False"):
        ntkbo.algorithms.gp_bo.gp(fit={"enabled": "no"})  # the unrecorded module factory too
    assert A.gp(fit={"enabled": False}).config["fit"]["enabled"] is False
    # resolved_options (what a study hashes) applies the same rule
    with pytest.raises(ValueError, match="algorithm 'gp_ei': fit.enabled must be True or False"):
        A.resolved_options("gp_ei", fit={"enabled": "false"})


@pytest.mark.parametrize("word, value", [
    ("true", True), ("True", True), ("YES", True), ("on", True), ("1", True), (1, True),
    ("false", False), ("No", False), ("off", False), ("0", False), (0, False)])
def test_text_spellings_of_a_boolean_are_parsed(word, value):
    """Catches: the words read for their truth (``bool("false") is True``) or a word missing."""
    got = A.from_text("gp_ei", {"fit": {"enabled": word}, "search": {"log_ei": word}})
    assert got == {"fit": {"enabled": value}, "search": {"log_ei": value}}


def test_text_typo_is_an_error_naming_the_option():
    """``"flase"`` stays a string for the type rule, which names the option."""
    options = A.from_text("gp_ei", {"fit": {"enabled": "flase"}})
    with pytest.raises(ValueError, match="fit.enabled must be True or False, got 'flase'"):
        A.get("gp_ei", **options)
    # a string option is left alone; ard's "auto" is a choice, not a boolean word
    assert A.from_text("gp", {"fit": {"ard": "auto"}, "kernel": "matern52"}) == {
        "fit": {"ard": "auto"}, "kernel": "matern52"}


def _capture_run(monkeypatch):
    """Replaces the run by a function that keeps the algorithm it was given and stops."""
    seen = {}

    class Stop(Exception):
        pass

    def capture(algo, *args, **kwargs):
        seen["algo"] = algo
        raise Stop

    monkeypatch.setattr(ntkbo.loop, "minimize_chunks", capture)
    return seen, Stop


def test_command_line_set_false_builds_an_unfitted_gp(monkeypatch, capsys):
    """The issue's ``ntkbo run --set fit.enabled=false`` fitted; now the algorithm the run gets
    has ``fit.enabled`` False, and ``flase`` stops before running with the option named."""
    seen, stop = _capture_run(monkeypatch)
    with pytest.raises(stop):
        cli.main(["run", "--algo", "gp_ei", "--problem", "branin", "--out", "",
                  "--set", "fit.enabled=false", "search.log_ei=off"])
    assert seen["algo"].config["fit"]["enabled"] is False
    assert seen["algo"].config["search"]["log_ei"] is False
    code = cli.main(["run", "--algo", "gp_ei", "--problem", "branin", "--out", "",
                     "--set", "fit.enabled=flase"])
    assert code != 0 and "fit.enabled must be True or False" in capsys.readouterr().err


def _spec(options):
    return Spec.from_dict({"name": "t", "budget": 6, "seeds": 1, "n_init": 3,
                           "algorithms": [{"name": "gp_ei", "options": options}],
                           "problems": [{"name": "branin"}]})


def test_spec_words_are_parsed_and_a_typo_names_the_field():
    """A TOML spec's ``fit.enabled = "false"`` fitted; now its cell records False (the same
    digest as ``false``), and ``"flase"`` is refused naming the spec field and the option."""
    words = _spec({"fit": {"enabled": "false"}}).resolve()
    boolean = _spec({"fit": {"enabled": False}}).resolve()
    assert words[0].options["fit"] is False  # a cell's options are the plain ones
    assert words[0].digest == boolean[0].digest
    assert words[0].algorithm.options["fit"]["enabled"] is False  # what build() uses
    with pytest.raises(ValueError, match=r"algorithms\[0\].*fit.enabled must be True or False"):
        _spec({"fit": {"enabled": "flase"}}).resolve()


# ---- observations: update, ask/tell ---------------------------------------------------------


@pytest.mark.parametrize("name", A.names())
def test_update_refuses_bad_points_and_values_for_every_algorithm(name):
    """Catches: a NaN point stored as a valid row (the GP then falls back to its empty-state
    suggestion), ``1e39`` becoming a failed evaluation in float32, NeuralBO's raw reshape
    ``TypeError`` for a point of the wrong width, and complex or bool values cast silently. The
    mutation: ``recorded`` without ``checked_update``."""
    with jax.enable_x64(False):  # float32: the state's dtype where 1e39 overflows
        _update_cases(name)


def _update_cases(name):
    algo = build(name)
    state = algo.init(KEY, BOX, 16)
    assert ask_tell._buffer(state).x.dtype == jnp.float32
    k = algo.n_constraints

    def y(v):
        return jnp.full((1, 1 + k) if k else (1,), v)

    cases = [
        (jnp.array([[np.nan, 0.5]]), y(1.0), r"x rows \[0\] hold NaN or inf"),
        (jnp.array([[0.2, np.inf]]), y(1.0), r"x rows \[0\] hold NaN or inf"),
        (jnp.array([[0.2, 0.5, 0.1]]), y(1.0), r"x must have shape \(q, 2\)"),
        (jnp.array([[0.2, 0.5]]), np.full(np.shape(y(1.0)), 1e39), "overflows the state's dtype"),
        (jnp.array([[0.2, 0.5]]), y(1.0) + 1j, "y must hold real numbers .* complex"),
        (jnp.array([[0.2, 0.5]]), y(1.0) > 0, "y must hold real numbers .* bools"),
    ]
    for x, v, match in cases:
        with pytest.raises(ValueError, match=match):
            algo.update(state, x, v)
    # a NaN y is a failed evaluation, stored (not refused)
    new, _ = algo.update(state, jnp.array([[0.2, 0.5]]), y(np.nan))
    counts = [int(b.count) for b in ask_tell._buffers(new)]
    assert counts and all(c == 1 for c in counts)


def test_update_and_tell_refuse_the_same_overflow():
    """The same rule on both paths: ``1e39`` in float32 is refused by ``update`` and by ``tell``
    with the same message, and the study keeps what it held."""
    algo = A.random_search()
    with jax.enable_x64(False):
        state = algo.init(KEY, BOX, 16)
        with pytest.raises(ValueError, match=r"y at \[\[0\]\] \(\[1e\+39\]\) overflows") as a:
            algo.update(state, jnp.array([[0.2, 0.5]]), np.array([1e39]))
        study = ask_tell.start(algo, BOX, KEY)
        study = ask_tell.tell(algo, study, [[0.1, 0.1]], [1.0])
        with pytest.raises(ValueError) as b:
            ask_tell.tell(algo, study, [[0.2, 0.5]], [1e39])
    assert str(a.value).split(":")[0] == str(b.value).split(":")[0]
    assert ask_tell.observations(study)[1].tolist() == [1.0]


@pytest.mark.parametrize("trial", [6.0, True, "6", np.float64(0.0), np.bool_(False)])
def test_tell_refuses_a_trial_id_that_is_not_an_int(trial):
    """Catches: ``tell(algo, study, 6.0, y)`` read as a point (``x must have shape (q, 2), got
    ()``) and ``True`` taken for trial 1. Nothing is recorded."""
    algo = A.random_search()
    study = ask_tell.start(algo, BOX, KEY, n_init=2)
    _, _, study = ask_tell.ask_trial(algo, study)
    _, _, study = ask_tell.ask_trial(algo, study)
    with pytest.raises(ValueError, match="trial must be a trial id .* got"):
        ask_tell.tell(algo, study, trial, 1.0)
    assert len(ask_tell.pending(study)) == 2 and ask_tell.observations(study)[0].shape[0] == 0


@pytest.mark.parametrize("trial", [6.0, True, "6"])
def test_space_tell_refuses_a_trial_id_that_is_not_an_int(trial):
    """``ntkbo.space.tell``'s id form: a float, a bool or a string names ``trial`` (it was taken
    for the space form and refused for its argument count). Nothing is recorded."""
    from ntkbo import space as S

    sp = S.Space([S.Float("lr", 1e-5, 0.1, log=True)])
    algo = A.random_search()
    study = S.start(algo, sp, KEY, n_init=1)
    _, _, study = S.ask_trial(algo, study)
    with pytest.raises(ValueError, match="trial must be a trial id .* got"):
        S.tell(algo, study, trial, 1.0)
    assert len(ask_tell.pending(study)) == 1


def test_tell_refuses_bool_and_complex_values():
    algo = A.random_search()
    study = ask_tell.start(algo, BOX, KEY, n_init=1)
    tid, _, study = ask_tell.ask_trial(algo, study)
    for bad, what in ((True, "bools"), (1 + 2j, "complex")):
        with pytest.raises(ValueError, match=f"y must hold real numbers .*{what}"):
            ask_tell.tell(algo, study, tid, bad)


# ---- minimize: the problem and the arguments --------------------------------------------------


def _quadratic(x):
    return jnp.sum((x - 0.3) ** 2)


PROBLEM = Problem(name="quadratic", fn=_quadratic, bounds=BOX)


@pytest.mark.parametrize("problem, match", [
    (_quadratic, "problem must be an ntkbo.benchmarks.Problem .* got function"),
    ("branin", "problem must be an ntkbo.benchmarks.Problem .* got str 'branin'"),
    (Problem(name="l", fn=_quadratic, bounds=[[0.0, 0.0], [1.0, 1.0]]),  # type: ignore[arg-type]
     r"problem.bounds must be an array of shape \(2, d\) .* got a list"),
    (PROBLEM.replace(noise_std=float("nan")), "problem.noise_std must be finite and >= 0"),
    (PROBLEM.replace(noise_std=-0.1), "problem.noise_std must be finite and >= 0"),
    (PROBLEM.replace(noise_std="0.1"), "problem.noise_std must be a number"),
    (Problem(name="b", fn=lambda x: x[0] > 0.5, bounds=BOX), "must return a real number .* bool"),
    (Problem(name="c", fn=lambda x: x[0] + 1j, bounds=BOX), "must return a real number .* complex"),
])
def test_minimize_refuses_a_bad_problem(problem, match):
    """Catches: ``AttributeError: ... has no attribute 'bounds'`` for a function or a string,
    ``'list' object has no attribute 'dtype'``, a NaN noise level failing every evaluation
    silently, and a dtype error from inside JAX for a bool or complex objective."""
    for driver in (ntkbo.minimize, ntkbo.maximize):
        with pytest.raises(ValueError, match=match):
            driver(A.random_search(), problem, 5, KEY)


@pytest.mark.parametrize("kwargs, match", [
    ({"budget": "10"}, "budget must be a Python int, got str '10'"),
    ({"budget": 5.0}, "budget must be a Python int, got float"),
    ({"min_capacity": "x"}, "min_capacity must be an int >= 1, got 'x'"),
    ({"n_init": True}, "n_init must be a Python int, got bool"),
])
def test_minimize_refuses_bad_argument_types(kwargs, match):
    """Catches: ``'<' not supported`` for ``budget="10"`` and ``invalid literal for int()`` for
    ``min_capacity="x"``."""
    args = {"budget": 5, **kwargs}
    budget = args.pop("budget")
    with pytest.raises(ValueError, match=match):
        ntkbo.minimize(A.random_search(), PROBLEM, budget, KEY, **args)


def test_an_integer_objective_runs_as_its_float():
    """An objective returning an int is run on its float value: the same points and values as
    the same objective returning the float (random search's points do not depend on values).
    Catches: the int reaching the noise draw (a dtype error) or being refused."""
    as_int = Problem(name="i", fn=lambda x: jnp.floor(10 * x[0]).astype(jnp.int32), bounds=BOX)
    as_float = Problem(name="f", fn=lambda x: jnp.floor(10 * x[0]), bounds=BOX)
    a = ntkbo.minimize(A.random_search(), as_int, 5, KEY)
    b = ntkbo.minimize(A.random_search(), as_float, 5, KEY)
    assert a.y.dtype == b.y.dtype and np.array_equal(a.y, b.y) and np.array_equal(a.x, b.x)


def test_numpy_objective_overflow_is_an_error_not_a_failed_evaluation():
    """A numpy objective's ``1e39`` in float32 became a failed evaluation (``best_y = inf``);
    now the run stops with the value, the point and the way out. Catches the mutation of the
    host callback without its overflow test."""
    with jax.enable_x64(False):
        problem = numpy_problem(lambda x: 1e39, np.array([[0.0, 0.0], [1.0, 1.0]]), name="huge")
        with pytest.raises(Exception, match="huge returned .*1e\\+39.* overflows float32"):
            ntkbo.minimize(A.random_search(), problem, 3, KEY).best_y.block_until_ready()


def test_numpy_objective_returning_a_bool_is_an_error():
    problem = numpy_problem(lambda x: bool(x[0] > 0.5), np.array([[0.0, 0.0], [1.0, 1.0]]),
                            name="flag")
    with pytest.raises(Exception, match="flag returned (True|False) .* returns a real number"):
        ntkbo.minimize(A.random_search(), problem, 3, KEY).best_y.block_until_ready()


# ---- released programs ------------------------------------------------------------------------


def test_minimize_keeps_a_bounded_number_of_programs(monkeypatch):
    """With room for two programs, a third problem releases the least recently used one (its
    jitted function's cache is emptied) and the kept ones still run without compiling again.
    Catches: ``Kept.get`` without its eviction (three kept), or evicting without
    ``clear_cache`` (the executables, and their memory mappings, stay)."""
    monkeypatch.setattr(cache, "KEEP_PROGRAMS", 2)
    monkeypatch.setattr(loop, "_RUNS", cache.Kept())
    problems = [PROBLEM.replace(fn=lambda x, s=s: jnp.sum((x - s) ** 2)) for s in (0.1, 0.2, 0.3)]
    algo = A.random_search()
    ntkbo.minimize(algo, problems[0], 3, KEY)
    first = next(iter(loop._RUNS._items.values()))
    assert first._cache_size() == 1
    for p in problems[1:]:
        ntkbo.minimize(algo, p, 3, KEY)
    assert len(loop._RUNS) == 2
    assert first._cache_size() == 0  # released
    kept = list(loop._RUNS._items.values())
    ntkbo.minimize(algo, problems[2], 3, KEY)
    assert list(loop._RUNS._items.values()) == kept and kept[-1]._cache_size() == 1


def test_ask_tell_keeps_a_bounded_number_of_algorithms(monkeypatch):
    """The jitted ``suggest``/``update`` of ``ntkbo.ask_tell`` are kept per algorithm, at most
    ``KEEP_PROGRAMS`` (was an ``lru_cache`` that dropped references without freeing the
    executables); the released pair's programs are emptied. Catches ``_PAIRS`` with a release
    that does not clear the jitted functions' caches."""
    monkeypatch.setattr(cache, "KEEP_PROGRAMS", 1)
    ask_tell._PAIRS.clear()
    first, second = A.random_search(), A.random_search(q=2)
    study = ask_tell.start(first, BOX, KEY, n_init=0)
    ask_tell.tell(first, study, [[0.1, 0.2]], [1.0])
    update = ask_tell._jitted(first)[1].jitted
    assert update._cache_size() == 1 and ask_tell._jitted(first)[1].jitted is update
    study = ask_tell.start(second, BOX, KEY, n_init=0)
    ask_tell.tell(second, study, [[0.1, 0.2]], [1.0])
    assert len(ask_tell._PAIRS) == 1 and update._cache_size() == 0
