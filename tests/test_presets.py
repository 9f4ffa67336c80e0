"""Presets (issue 15 item 5): ``get(name, preset=P, **options)`` is the algorithm ``get(name,
**{**presets(name)[P], **options})`` for every registered name and each of its presets; the given
options win; a name without presets, or an unknown preset, is refused naming ``preset``; a module
whose names have different settings keys them per registry name (``PRESETS_BY_NAME``) and a preset
never changes the argument a named partial fixes (``gp_ucb``'s acquisition).

Only factory builds (no ``init``, no compilation): the whole file takes about a second. The
reference each test compares with is built independently: the expanded call, with the preset's
options spelled out by the test, not through ``preset=``."""

import functools
import importlib

import pytest

import ntkbo
from ntkbo import algorithms as A

# The modules (``ntkbo.algorithms.neural_ucb`` the attribute is the recorded factory).
go_ucb, gp_bo, neural_bo, neural_linear, neural_ucb, pinn_bo = (
    importlib.import_module(f"ntkbo.algorithms.{m}")
    for m in ("go_ucb", "gp_bo", "neural_bo", "neural_linear", "neural_ucb", "pinn_bo"))

#: A problem with a PDE, for the names that need one (PINN-BO); the others need nothing here.
PDE_PROBLEM = ntkbo.benchmarks.get("dropwave_pde")

PAIRS = [(n, p) for n in A.names() for p in A.presets(n)]
NO_PRESETS = [n for n in A.names() if not A.presets(n)]


def _needs(name):
    """What ``get(name, ...)`` needs from a problem (PINN-BO's ``pde``), else nothing."""
    return A.problem_options(name, PDE_PROBLEM) if A.uses_pde(name) else {}


def _bound_keywords(name):
    """The keywords a named partial fixes (``gp_ucb``: ``acquisition="ucb"``), ``{}`` otherwise."""
    f = A._FACTORIES[name].__wrapped__
    return dict(f.keywords) if isinstance(f, functools.partial) else {}


def _override(name, options):
    """``(key, value)``: an option of the preset ``options`` and a value of it the factory takes
    that differs from the preset's: the factory's default where the preset changes it, else one
    more than an integer option's value (widths, steps: any positive integer is valid)."""
    defaults = A.resolved_options(name, **_needs(name))
    for key, value in options.items():
        if key in defaults and defaults[key] != value:
            return key, defaults[key]
    for key, value in options.items():
        if isinstance(value, int) and not isinstance(value, bool):
            return key, value + 1
    raise AssertionError(f"{name}: no option of {options} to override")


def test_the_presets_cover_the_papers_algorithms():
    """The names this issue gives paper settings to have a ``"paper"`` preset (a guard that the
    parametrised tests below see them: an empty ``PAIRS`` would pass them vacuously).
    Mutation caught: ``presets`` back to the module's ``PRESETS`` only (``PRESETS_BY_NAME``
    ignored): ``neural_ucb``, ``dngo``, ``pinn_bo``, ``gp_ei`` lose their presets."""
    for name in ("go_ucb", "neural_greedy", "simple_smb", "posterior_smb", "neural_ucb",
                 "neural_ts", "dngo", "neural_lin_ts", "pinn_bo", "pinn_ntk_gp", "gp_ei",
                 "gp_ucb", "gp_ts", "gp_pi", "neural_bo"):
        assert "paper" in A.presets(name), name


@pytest.mark.parametrize("name, preset", PAIRS)
def test_a_preset_builds_and_is_its_expanded_options(name, preset):
    """``get(name, preset=P)`` builds, records ``name`` and the same resolved options as the call
    with ``presets(name)[P]`` written out, every option of the preset in effect, no ``preset``
    entry; ``resolved_options`` (the experiment cells' digests) agrees.
    Mutations caught: a preset key misspelt (``num_acq_step``: the factory raises ``TypeError``);
    a value the factory refuses (``u="dense"``: ``ValueError``); the preset dropped in
    ``recorded``'s ``build`` (the record is the defaults'); a preset for a partial's name written
    through the partial's own keyword (next test)."""
    need = _needs(name)
    options = A.presets(name)[preset]
    algo = A.get(name, preset=preset, **need)
    expanded = A.get(name, **options, **need)
    assert algo.name == name
    assert algo.config == expanded.config
    assert "preset" not in algo.config.to_json()
    resolved = A.resolved_options(name, preset=preset, **need)
    assert resolved == A.resolved_options(name, **options, **need)
    for key, value in options.items():
        # resolved_options leaves out an option at the value every cell stored before the option
        # existed ran with (gp's ard=True, which the gp_* paper preset sets; neural_bo's
        # independent draws, which its presets set): the only absences
        assert resolved[key] == value if key in resolved else (key, value) in {
            ("ard", True), ("thompson", "independent")}, key
        assert algo.config[key] == value, key


@pytest.mark.parametrize("name, preset", PAIRS)
def test_a_preset_keeps_what_a_named_partial_fixes(name, preset):
    """A preset shared by a factory's named partials (``gp_ei``/``gp_ucb``, ``simple_smb``/
    ``posterior_smb``, ``go_ucb``/``go_ucb_joint``) leaves the argument each name fixes as the name
    says: ``gp_ucb(preset="paper")`` is still UCB.
    Mutation caught: ``acquisition="ei"`` added to ``gp_bo``'s ``_PAPER_GP`` (``gp_ucb``,
    ``gp_ts``, ``gp_pi`` silently become EI); ``smb="simple"`` in ``neural_greedy``'s preset."""
    config = A.get(name, preset=preset, **_needs(name)).config
    for key, value in _bound_keywords(name).items():
        assert config[key] == value, (key, config[key], value)


@pytest.mark.parametrize("name, preset", PAIRS)
def test_an_option_given_with_a_preset_wins(name, preset):
    """An option given with the preset overrides the preset's value of it, the preset's other
    options stay, and ``resolved_options`` agrees. The override (``_override``) is the factory's
    own default of an option the preset changes, else one more unit of an integer option of the
    preset (a preset may equal today's defaults: ``neural_bo``'s ``"paper"``).
    Mutation caught: the merge order flipped in ``with_preset`` (``{**options, **preset}``: the
    preset's value survives the override)."""
    need = _needs(name)
    options = A.presets(name)[preset]
    key, value = _override(name, options)
    override = {key: value}
    algo = A.get(name, preset=preset, **override, **need)
    expected = A.get(name, **{**options, **override}, **need)
    assert algo.config == expected.config
    assert algo.config[key] == value != options[key]
    for other, value in options.items():
        if other != key:
            assert algo.config[other] == value, other
    assert (A.resolved_options(name, preset=preset, **override, **need)
            == A.resolved_options(name, **{**options, **override}, **need))


@pytest.mark.parametrize("name", NO_PRESETS)
def test_a_name_without_presets_refuses_one(name):
    """``preset=`` on a name without presets is an error naming ``preset`` (not silently the
    defaults), from ``get``, the factory attribute and ``resolved_options`` alike.
    Mutation caught: ``with_preset`` returning the options when the preset is unknown."""
    need = _needs(name)
    with pytest.raises(ValueError, match="preset"):
        A.get(name, preset="paper", **need)
    with pytest.raises(ValueError, match="preset"):
        A.resolved_options(name, preset="paper", **need)


def test_an_unknown_preset_is_refused_naming_the_choices():
    """A preset the name does not have is refused, naming ``preset`` and the ones it has; a
    ``PRESETS_BY_NAME`` entry of one name is not another's (``neural_ts`` has no ``"paper"`` of
    ``neural_ucb``'s kind: its presets are its own).
    Mutation caught: ``with_preset`` ignoring an unknown preset."""
    with pytest.raises(ValueError, match=r"preset.*'paper'.*'sto_bnts'"):
        A.get("neural_ucb", preset="greedy")
    with pytest.raises(ValueError, match="preset"):
        A.neural_ts(preset="authors")


def test_presets_are_looked_up_by_registry_name_then_module():
    """``presets(name)``: the module's ``PRESETS_BY_NAME[name]`` (``neural_ucb`` and ``neural_ts``,
    one module, different settings; ``dngo`` and ``neural_lin_ts``, partials of one function),
    else the module's ``PRESETS`` (``neural_bo``, ``go_ucb_joint``); a name of a module with a
    by-name table that it does not list gets none (``gp``, ``ntk_gp``, ``neural_linear``).
    Mutations caught: the lookup keyed by the function's ``__name__`` instead of the registry
    name (``dngo`` would get ``neural_linear``'s entry, none); the by-name table of one name
    returned for another (``neural_ts`` would get NeuralUCB's Greedy-paper network)."""
    assert A.presets("neural_ucb") == neural_ucb.PRESETS_BY_NAME["neural_ucb"]
    assert A.presets("neural_ts") == neural_ucb.PRESETS_BY_NAME["neural_ts"]
    assert A.presets("neural_ucb")["paper"] != A.presets("neural_ts")["paper"]
    assert A.presets("dngo") == neural_linear.PRESETS_BY_NAME["dngo"]
    assert A.presets("neural_lin_ts") == neural_linear.PRESETS_BY_NAME["neural_lin_ts"]
    assert A.presets("pinn_bo") == pinn_bo.PRESETS_BY_NAME["pinn_bo"]
    assert A.presets("pinn_ntk_gp") == pinn_bo.PRESETS_BY_NAME["pinn_ntk_gp"]
    for name in ("gp_ei", "gp_ucb", "gp_ts", "gp_pi"):
        assert A.presets(name) == gp_bo.PRESETS_BY_NAME[name]
    assert A.presets("neural_bo") == neural_bo.PRESETS
    assert A.presets("go_ucb_joint") == A.presets("go_ucb") == go_ucb.PRESETS
    for name in ("gp", "gp_logei", "ntk_gp", "ntk_gp_ucb", "neural_linear", "random_search"):
        assert A.presets(name) == {}, name
    # The by-name table is keyed by registry names the registry knows (a misspelt key would be
    # dead: its name would silently get no presets).
    for module in (gp_bo, neural_linear, neural_ucb, pinn_bo):
        assert set(module.PRESETS_BY_NAME) <= set(A.names()), module.__name__


def test_preset_differences_are_where_the_records_differ():
    """``preset_differences(name, P)`` lists exactly the options whose recorded values (the
    ``Algorithm``'s ``config``, built by the factory) differ between the defaults and the preset,
    with both values, for every name and preset. Mutations caught: listing every option the preset
    sets (``neural_bo``'s ``"paper"`` sets 17, of which only ``nu`` and ``warm_start`` differ); the
    two values swapped; comparing ``resolved_options``, the hashed options, which leave out
    ``gp``'s ``ard=True`` (checked: the ``gp_*`` paper preset's ``ard``, ``"auto"`` -> ``True``,
    goes unlisted)."""
    for name in A.names():
        for preset in A.presets(name):
            need = _needs(name)
            default = A.get(name, **need).config.to_json()
            chosen = A.get(name, preset=preset, **need).config.to_json()
            expect = {k: (default[k], chosen[k]) for k in chosen if default.get(k) != chosen[k]}
            got = A.preset_differences(name, preset)
            # the problem's options (PINN-BO's pde) are not defaults: leave them out of both
            assert {k: v for k, v in got.items() if k not in need} == \
                {k: v for k, v in expect.items() if k not in need}, (name, preset)
    assert A.preset_differences("neural_bo", "paper") == {"nu": (0.3, 1.0),
                                                          "warm_start": (True, False)}
    # The papers' GP baselines are ARD squared-exponential GPs (gp_bo's _PAPER_GP comment): with
    # gp's default ard="auto" the preset must set ARD itself. Mutation caught (checked):
    # ard=True dropped from _PAPER_GP (the preset would then choose by BIC like the default).
    assert A.preset_differences("gp_ei", "paper") == {"refit_ratio": (1.1, 1.0),
                                                      "log_ei": (True, False),
                                                      "ard": ("auto", True)}
