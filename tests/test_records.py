"""Reproducible records: an ``Algorithm`` carries its name and resolved config;
save files and ``results.json`` record them; ``ask_tell.load`` refuses a different algorithm,
option or box naming what differs; ``ntkbo run --config FILE.toml``; ``ntkbo run --seed-index``
reproduces one seed of a vmapped run bit for bit."""

import functools
import importlib
import inspect
import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

import ntkbo
from ntkbo import ask_tell, cli
from ntkbo import algorithms as A
from ntkbo.parts import merge

BRANIN = ntkbo.benchmarks.get("branin")


def _module_factory(name):
    """The function of plain options behind the registry's ``name`` (``ntkbo.parts.composed``'s
    ``plain``, with a partial's bound keywords)."""
    f = A._FACTORIES[name].__wrapped__
    if isinstance(f, functools.partial):
        return functools.partial(getattr(f.func, "plain", f.func), *f.args, **f.keywords)
    return getattr(f, "plain", f)


# ---- the Algorithm's record ----------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in A.names() if not A.uses_pde(n)])
def test_every_registered_algorithm_records_its_name_and_every_default(name):
    """``get(name)`` carries ``name`` and a config equal to the factory's defaults, read here with
    ``inspect.signature`` of the function of plain options (a partial's bound keywords included),
    and for a ``**optimizer_kwargs`` the defaults as ``gp_bo`` resolves them, grouped into the
    parts by the factory's layout. Catches a record that drops keyword-only options, a partial's
    fixed option or the optimiser's options."""
    algo = A.get(name, **({"n_constraints": 1} if A.models_constraints(name) else {}))
    # the plain function's defaults (ntkbo.parts.composed), the parts' fields under their names
    params = inspect.signature(A._plain(_module_factory(name))).parameters
    expected = {k: p.default for k, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        gp_bo = importlib.import_module("ntkbo.algorithms.gp_bo")
        # gp and ntk_gp have different acquisition-search defaults: catches one recording the other's
        factory = _module_factory(name)
        expected.update(gp_bo.GP_OPTIMIZER_DEFAULTS if getattr(factory, "func", factory) is gp_bo.gp
                        else gp_bo.OPTIMIZER_DEFAULTS)
    if A.models_constraints(name):
        expected["n_constraints"] = 1
    expected = A.layout(A._FACTORIES[name]).split(expected)
    assert algo.name == name
    assert dict(algo.config) == expected
    assert algo.config.reproducible and json.loads(json.dumps(algo.config.to_json())) == expected
    hash(algo)  # a static argument of jax.jit: must stay hashable


def test_a_factory_called_directly_records_positional_and_keyword_options():
    """``ntkbo.algorithms.neural_bo(network={"width": 64}, lam=0.1)`` (a factory attribute, not
    ``get``) records ``network.width=64``, ``lam=0.1`` and the other defaults; equals ``get``'s
    record."""
    algo = A.neural_bo(network=dict(width=64), lam=0.1)
    raw = importlib.import_module("ntkbo.algorithms.neural_bo")._neural_bo
    defaults = {k: p.default for k, p in inspect.signature(raw).parameters.items()}
    assert algo.name == "neural_bo"
    assert dict(algo.config) == A.layout(A.neural_bo).split({**defaults, "width": 64, "lam": 0.1})
    assert algo.config == A.get("neural_bo", network=dict(width=64), lam=0.1).config


def test_non_json_options_are_described_stably_and_mark_the_config():
    """A callable option is recorded as ``<callable module.qualname>`` (no memory address, so the
    text is the same in every process), a ``functools.partial`` by its function and arguments;
    either makes ``reproducible`` False and is listed in ``non_reproducible``."""
    algo = A.neural_bo(nu=jnp.sin, network=dict(width=8))
    rec = algo.config.to_json()
    assert rec["nu"] == f"<callable {jnp.sin.__module__}.{jnp.sin.__qualname__}>"
    assert not algo.config.reproducible and algo.config.non_reproducible == ["nu"]
    part = functools.partial(jnp.clip, a_min=0.0)
    rec2 = A.neural_bo(nu=part, network=dict(width=8)).config.to_json()["nu"]
    assert rec2["partial"].startswith("<callable ") and rec2["keywords"] == {"a_min": 0.0}
    assert "0x" not in json.dumps(rec) + json.dumps(rec2)
    assert algo.config != A.neural_bo(nu=jnp.cos, network=dict(width=8)).config


def test_same_algorithm_under_two_names():
    """``gp_ucb`` is ``gp(acquisition="ucb")``: same config, no difference reported; ``gp_ei``
    differs in ``acquisition``, named with both values."""
    assert A.record_differences("gp_ucb", A.get("gp_ucb").config.to_json(),
                                A.gp(acquisition="ucb")) == []
    assert A.record_differences("gp_ei", A.get("gp_ei").config.to_json(),
                                A.gp(acquisition="ucb")) == [
        "option acquisition: saved 'ei', given 'ucb'"]


def test_gp_records_the_optimizer_options_in_effect():
    """``gp``'s acquisition optimiser's options (its ``search`` part) are recorded with their
    defaults, and they are the values in effect: the algorithm rebuilt from its
    record (``get(name, **config)``, every option
    now given explicitly) traces to the same program (``jax.make_jaxpr`` of an update and a
    suggest: the same operations on the same shapes, so bit-identical suggestions, without paying
    two compilations) as the one built with the defaults.

    Mutations caught (checked by hand): the record leaving the optimiser's options out (keys
    missing); a recorded default that is not the one in effect (``num_candidates`` recorded as 512:
    the rebuilt algorithm searches another candidate set and suggests another point)."""
    algo = A.get("gp_ucb", fit=dict(enabled=False), search=dict(num_restarts=1, num_steps=2))
    config = algo.config
    assert {"num_candidates", "num_restarts", "num_steps", "num_ts_candidates",
            "jitter"} <= set(config["search"]) and "n_constraints" in config
    assert config["search"]["num_restarts"] == 1 and config["search"]["num_steps"] == 2
    rebuilt = A.get(algo.name, **config)
    assert rebuilt.config == config
    x = np.array([[-2.0, 3.0], [4.0, 11.0], [8.0, 1.0]])
    y = BRANIN.fn_batch(x)

    def suggest(a):
        state, _ = a.update(a.init(jax.random.PRNGKey(0), BRANIN.bounds, 4), x, y)
        return a.suggest(jax.random.PRNGKey(1), state)[0]

    program = str(jax.make_jaxpr(suggest, static_argnums=0)(algo))
    assert str(jax.make_jaxpr(suggest, static_argnums=0)(rebuilt)) == program
    # the comparison can see an optimiser option: another num_candidates is another program
    assert str(jax.make_jaxpr(suggest, static_argnums=0)(
        A.get(algo.name, **merge(config, {"search": {"num_candidates": 512}})))) != program


# ---- save files ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_ucb(tmp_path_factory):
    """A study of ``ntk_gp(acquisition="ucb")`` saved before any tell (no compilation)."""
    path = tmp_path_factory.mktemp("save") / "s.msgpack"
    algo = A.ntk_gp(acquisition="ucb")
    ask_tell.save(path, ask_tell.start(algo, BRANIN.bounds, jax.random.PRNGKey(0), n_init=2))
    return path


def test_save_records_the_algorithm_and_load_refuses_another(saved_ucb):
    """A save from ``ntk_gp(acquisition="ucb")`` once loaded into ``ntk_gp(acquisition="ei")``
    without a word. Now each differing field is named with both values, together with bounds."""
    payload = ask_tell.read_payload(saved_ucb)  # the record inside the checked envelope
    assert payload["format"] == ask_tell.FORMAT_VERSION == 5
    rec = json.loads(payload["algorithm"])
    assert rec["name"] == "ntk_gp" and rec["config"]["acquisition"] == "ucb" and rec["reproducible"]
    assert payload["dtype"] == "float64" and "jax" in json.loads(payload["provenance"])["versions"]
    with pytest.raises(ValueError, match="option acquisition: saved 'ucb', given 'ei'"):
        ask_tell.load(saved_ucb, A.ntk_gp(acquisition="ei"), BRANIN.bounds)
    with pytest.raises(ValueError, match="algorithm: saved 'ntk_gp', given 'gp'"):
        ask_tell.load(saved_ucb, A.gp(acquisition="ucb"), BRANIN.bounds)
    hand_made = A.ntk_gp(acquisition="ucb")._replace(name=None, config=None)
    with pytest.raises(ValueError, match="given None .*records no name"):
        ask_tell.load(saved_ucb, hand_made, BRANIN.bounds)
    # num_candidates is a field of ntk_gp's search: recorded with its default too
    default = A.ntk_gp().config["search"]["num_candidates"]
    with pytest.raises(ValueError, match=rf"option search.num_candidates: saved {default!r}, "
                                         r"given 64; "
                                         r"bounds .* differ"):
        ask_tell.load(saved_ucb, A.ntk_gp(acquisition="ucb", search=dict(num_candidates=64)),
                      np.asarray(BRANIN.bounds) + 1.0)
    same = ask_tell.load(saved_ucb, A.get("ntk_gp_ucb"), BRANIN.bounds)  # the same algorithm
    assert same.algorithm["name"] == "ntk_gp_ucb"


def test_a_previous_format_file_is_refused_naming_what_changed(tmp_path):
    """A file of format 3 (the options by their flat names), 2 (no algorithm record, dtype and
    provenance) or 1 (nor the float64 record and the bounds) is refused with a ``ValueError``
    naming its format and what it lacks; a format-5 file loads without a warning and the resumed
    study asks exactly what the saved one asks (state and key restored); a format-4 file (the
    same record without the checksum's envelope) loads the same study with a warning that it
    could not be checked. A file holding something other than a dict is refused too. Mutations
    caught (checked): format 3 accepted again (its records would then be compared option by
    option: a refusal listing every option, not the format); formats 1 and 2 accepted again; the
    dict test of ``read_payload`` removed (an ``AttributeError`` instead)."""
    algo = A.random_search()
    study = ask_tell.start(algo, BRANIN.bounds, jax.random.PRNGKey(1), n_init=2)
    for _ in range(3):
        x, study = ask_tell.ask(algo, study)
        study = ask_tell.tell(algo, study, x, np.asarray(BRANIN.fn_batch(jnp.asarray(x))))
    ask_tell.save(tmp_path / "new.msgpack", study)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # format 5: no warning
        new = ask_tell.load(tmp_path / "new.msgpack", algo, BRANIN.bounds)
    np.testing.assert_array_equal(ask_tell.ask(algo, new)[0], ask_tell.ask(algo, study)[0])
    np.testing.assert_array_equal(new.told_y, study.told_y)
    payload = ask_tell.read_payload(tmp_path / "new.msgpack")
    payload["format"] = 4  # as ntkbo wrote it from 2026-11-28: the record, no envelope
    (tmp_path / "four.msgpack").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.warns(UserWarning, match="format 4, saved before study files carried a checksum"):
        four = ask_tell.load(tmp_path / "four.msgpack", algo, BRANIN.bounds)
    np.testing.assert_array_equal(ask_tell.ask(algo, four)[0], ask_tell.ask(algo, study)[0])
    payload["format"] = 3
    (tmp_path / "flat.msgpack").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(ValueError, match=r"format 3, which records the algorithm's options by "
                                         r"their flat names .* this ntkbo reads formats 4 and 5 "
                                         r"only"):
        ask_tell.load(tmp_path / "flat.msgpack", algo, BRANIN.bounds)
    for k in ("algorithm", "dtype", "provenance"):
        del payload[k]
    payload["format"] = 2
    (tmp_path / "old.msgpack").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(ValueError, match=r"format 2, which records no algorithm \(its name and "
                                         r"options cannot be checked against 'random_search'\); "
                                         r"this ntkbo reads formats 4 and 5 only"):
        ask_tell.load(tmp_path / "old.msgpack", algo, BRANIN.bounds)
    for k in ("told_x", "told_y", "bounds"):
        del payload[k]
    payload["format"] = 1
    (tmp_path / "older.msgpack").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(ValueError, match="format 1, .* nor the float64 record and the bounds"):
        ask_tell.load(tmp_path / "older.msgpack", algo, BRANIN.bounds)
    payload["format"] = 99
    (tmp_path / "future.msgpack").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(ValueError, match="format 99"):
        ask_tell.load(tmp_path / "future.msgpack", algo, BRANIN.bounds)
    (tmp_path / "array.msgpack").write_bytes(serialization.msgpack_serialize(np.zeros(3)))
    with pytest.raises(ValueError, match="not an ntkbo study file .it holds a ndarray, not a dict"):
        ask_tell.load(tmp_path / "array.msgpack", algo, BRANIN.bounds)


# ---- the command line ----------------------------------------------------------------------------


def test_a_state_saved_by_another_version_is_rebuilt_from_the_record(tmp_path):
    """A save of ``ntk_gp`` made before its state kept a Cholesky factor (simulated by
    deleting ``factor`` from the saved state) loads with a warning, the model rebuilt by telling
    the float64 record again: nothing observed is lost and the factor is the one of the record.
    Mutations caught: the record not told again (empty buffer), the saved key or asked count
    dropped (the resumed study would ask the design again)."""
    algo = A.ntk_gp(acquisition="ucb")
    study = ask_tell.start(algo, BRANIN.bounds, jax.random.PRNGKey(2), n_init=3)
    for _ in range(3):  # the design: no suggest to compile
        x, study = ask_tell.ask(algo, study)
        study = ask_tell.tell(algo, study, x, np.asarray(BRANIN.fn_batch(jnp.asarray(x))))
    ask_tell.save(tmp_path / "new.msgpack", study)
    payload = ask_tell.read_payload(tmp_path / "new.msgpack")
    del payload["study"]["state"]["factor"]
    ask_tell._write_payload(tmp_path / "old.msgpack", payload)
    with pytest.warns(UserWarning, match=r"rebuilt by telling the saved record again \(3 "):
        old = ask_tell.load(tmp_path / "old.msgpack", algo, BRANIN.bounds)
    np.testing.assert_array_equal(old.told_x, study.told_x)
    np.testing.assert_array_equal(old.told_y, study.told_y)
    np.testing.assert_array_equal(old.key, study.key)
    assert int(old.asked) == int(study.asked) == 3
    assert int(old.state.data.count) == 3
    # Three rows told at once instead of one by one: the same factor up to float64 rounding.
    np.testing.assert_allclose(old.state.factor.chol, study.state.factor.chol, atol=1e-12)


def test_run_config_file_with_flag_overrides_and_unknown_keys(tmp_path, capsys):
    """``--config`` supplies every setting; a flag given on the command line overrides it
    (``--budget 7`` over the file's 6), ``--set`` overrides one option; the record keeps the
    file's settings. An unknown key or a wrongly typed value exits 2 naming the key."""
    cfg = tmp_path / "run.toml"
    cfg.write_text('algo = "random_search"\nproblem = "branin"\nbudget = 6\nseeds = 2\n'
                   'n_init = 3\nplot = false\n[options]\nq = 1\n')
    out = tmp_path / "out"
    assert cli.main(["--no-cache", "run", "--config", str(cfg), "--budget", "7", "--out",
                     str(out)]) == 0
    rec = json.loads((out / "results.json").read_text())
    assert rec["budget"] == 7 and rec["seeds"] == 2 and rec["n_init"] == 3
    assert rec["algorithm"] == "random_search" and rec["resolved_options"] == {"q": 1}
    assert rec["config_file"]["settings"]["budget"] == 6 and not (out / "best_so_far.png").exists()
    assert rec["schema"] == cli.RESULTS_SCHEMA and rec["config_reproducible"]
    assert len(rec["runs"][0]["y"]) == 7 and rec["min_capacity"] == cli.RUN_MIN_CAPACITY
    bad = tmp_path / "bad.toml"
    bad.write_text('algo = "random_search"\nproblem = "branin"\nbugdet = 6\n')
    assert cli.main(["run", "--config", str(bad), "--out", ""]) == 2
    assert "unknown key 'bugdet'" in capsys.readouterr().err
    bad.write_text('algo = "random_search"\nproblem = "branin"\nseeds = "4"\n')
    assert cli.main(["run", "--config", str(bad), "--out", ""]) == 2
    assert "seeds must be int" in capsys.readouterr().err
    assert cli.main(["run", "--problem", "branin", "--out", ""]) == 2
    assert "--algo is required" in capsys.readouterr().err


def test_seed_index_reproduces_a_vmapped_seed_exactly(tmp_path):
    """Two seeds of NTK-GP-UCB vmapped in one block (``--block 2``); ``--seed-index 1`` re-runs
    seed 1 alone and its points and observations equal the stored ones bit for bit (``==`` on
    the JSON floats: no tolerance, the claim is bit-identity). The same key run by
    ``ntkbo.minimize`` (another program) is not required to match (module docstring of cli)."""
    args = ["--no-cache", "run", "--algo", "ntk_gp_ucb", "--problem", "branin", "--budget", "5",
            "--n-init", "3", "--seeds", "2", "--block", "2", "--chunk", "2", "--no-plot",
            "--set", "search={'num_candidates': 16, 'num_restarts': 1}"]
    assert cli.main(args + ["--out", str(tmp_path / "all")]) == 0
    assert cli.main(args + ["--out", str(tmp_path / "one"), "--seed-index", "1"]) == 0
    full = json.loads((tmp_path / "all" / "results.json").read_text())
    one = json.loads((tmp_path / "one" / "results.json").read_text())
    assert one["seed_index"] == 1 and one["runs"][0]["seed_index"] == 1 and len(one["runs"]) == 1
    assert one["runs"][0]["x"] == full["runs"][1]["x"]
    assert one["runs"][0]["y"] == full["runs"][1]["y"]
    assert cli.main(args + ["--out", "", "--seed-index", "2"]) == 2


# ---- what experiment cells hash ------------------------------------------------------------------


def test_experiment_cells_hash_every_option(monkeypatch):
    """``resolved_options``, which experiment cells hash, lists every option with its value,
    the acquisition search's included (``gp``'s longer one, ``ntk_gp``'s own); a GP cell stored
    in format 1 under the former defaults, which it did not list, reads as those (``num_restarts
    = 4``, ``ntkbo.experiments.migrations``) and differs from a current one in ``num_restarts``;
    a default changed changes that factory's digests only.

    Mutations caught (checked): ``resolved_options`` leaving out an option at its default (the
    former rule: GP cells run with 4, 30 and with 10, 100 shared one digest when the search was
    a ``**kwargs`` option), ``num_restarts`` dropped from ``migrations.V1_ABSENT``'s ``gp`` entry
    (the former cell then reads without it)."""
    from ntkbo.experiments import migrations, runner
    from ntkbo.experiments.spec import Spec, digest

    gp_ei, ntk_gp_ei = A.resolved_options("gp_ei"), A.resolved_options("ntk_gp_ei")
    assert (gp_ei["num_restarts"], gp_ei["num_steps"], gp_ei["num_candidates"]) == (10, 100, 1024)
    assert (ntk_gp_ei["num_restarts"], ntk_gp_ei["num_steps"]) == (4, 30)
    assert gp_ei["jitter"] is None and ntk_gp_ei["posterior_inverse"] is None
    spec = Spec.from_dict({"name": "t", "budget": 6, "n_init": 4, "seeds": 2,
                           "algorithms": [{"name": "gp_ei"}, {"name": "ntk_gp_ei"}],
                           "problems": [{"name": "branin"}]})
    gp_cell, ntk_cell = sorted(spec.resolve("full"), key=lambda c: c.cell_id)
    former = gp_cell.definition()
    for k in ("num_restarts", "num_steps", "num_candidates", "avoid_observed"):
        del former["algorithm"]["options"][k]  # as a cell run before 2026-11-24 stored it
    read = migrations.migrate_definition(former, 1)
    assert read["algorithm"]["options"]["num_restarts"] == 4
    assert digest(read) != gp_cell.digest
    assert runner._first_difference(read, gp_cell.definition()) == "algorithm.options.num_restarts"
    # A default changed changes the digest; ntk_gp's cell keeps its own.
    # (the signature's default of gp's plain function, which GP_OPTIMIZER_DEFAULTS sets)
    monkeypatch.setitem(importlib.import_module("ntkbo.algorithms.gp_bo")._gp.__kwdefaults__,
                        "num_steps", 50)
    gp_again, ntk_again = sorted(spec.resolve("full"), key=lambda c: c.cell_id)
    assert gp_again.digest != gp_cell.digest and ntk_again.digest == ntk_cell.digest
