"""Optimisers: each factory returns an ``ntkbo.Algorithm(init, suggest, update)``.

``get(name, **options)`` builds one by name (the command line uses it); ``names()`` lists them. Names
with an acquisition suffix (``gp_ucb``, ``ntk_gp_ts``, ...) fix the ``acquisition`` argument.

Records (``ntkbo.base``): every factory reached through this package, by ``get`` or as an
attribute (``ntkbo.algorithms.neural_bo(width=64)``), returns an ``Algorithm`` carrying its
``name`` and resolved ``config`` (``resolved_options``: every option, defaults included). The
factories are wrapped here, once, by :func:`recorded`; the functions in the algorithm modules
(``ntkbo.algorithms.gp_bo.gp``, ...) stay unwrapped and build algorithms without a record.
``same_algorithm`` tells whether two records describe the same algorithm (``gp_ucb`` is
``gp(acquisition="ucb")``).

Infos: every ``suggest`` and ``update`` returns a typed ``info`` (``ntkbo.base``), a NamedTuple
with documented fields, exported here: ``NeuralBOSuggestInfo`` / ``NeuralBOUpdateInfo``,
``GPSuggestInfo`` / ``GPThompsonInfo`` (``gp``, ``ntk_gp``), ``ConstrainedEIInfo`` (``*_cei``),
``NeuralUCBSuggestInfo``, ``NeuralTSSuggestInfo``, ``NeuralLinearSuggestInfo`` (EI) /
``NeuralLinearThompsonInfo`` (TS), ``GreedySuggestInfo`` (the Neural Greedy family),
``StoBntsSuggestInfo``, ``GOUCBSuggestInfo`` / ``GOUCBUpdateInfo``, ``NeuralCBOSuggestInfo``,
``PinnBOSuggestInfo``, ``PinnGPSuggestInfo``; ``ntkbo.nets.TrainInfo`` for the updates that
retrain networks, ``NoInfo`` where nothing is reported. One name, one meaning: ``acq_value`` is
the maximised acquisition at the chosen points (every algorithm minimises; each docstring says
how the acquisition's sign maps onto that), ``mean``/``std`` the surrogate's prediction there
(standardised units), ``bonus`` an exploration bonus, ``train_loss``/``train_ok`` a training's
start and end loss and its success flag, ``duplicates_replaced`` the points that were observed
points and were replaced (``ntkbo.optimize``).

Presets: an algorithm module may define ``PRESETS`` (name -> options), e.g.
``ntkbo.algorithms.neural_bo.PRESETS["paper"]``, or, when the names it serves have different
settings, ``PRESETS_BY_NAME`` (registry name -> presets; :func:`presets`). ``get(name, preset=P,
**options)`` (and the factory attributes, ``neural_bo(preset="paper", width=100)``) builds the
factory with the preset's options, the ``options`` given overriding them. The record holds the
resolved options, not the preset's name, so ``neural_bo(preset="paper")`` and
``neural_bo(**PRESETS["paper"])`` are the same algorithm, and an experiment cell's ``digest`` follows
the options a preset stands for.
"""

from __future__ import annotations

import copy
import functools
import inspect
import sys
from collections.abc import Callable, Mapping

import jax

from ntkbo.algorithms.go_ucb import go_ucb
from ntkbo.algorithms.gp_bo import ACQUISITIONS, gp, ntk_gp
from ntkbo.algorithms.neural_bo import neural_bo
from ntkbo.algorithms.pinn_bo import pinn_bo, pinn_ntk_gp
from ntkbo.algorithms.neural_cbo import neural_cbo
from ntkbo.algorithms.neural_greedy import neural_greedy
from ntkbo.algorithms.neural_linear import neural_linear
from ntkbo.algorithms.neural_ucb import neural_ts, neural_ucb
from ntkbo.algorithms.random_search import random_search
from ntkbo.algorithms.sto_bnts import sto_bnts, sto_bnts_linear
from ntkbo import optimize
from ntkbo.base import Algorithm, Config, NoInfo, StagedUpdate, describe
from ntkbo import data as D
from ntkbo.objective import is_noisy
from ntkbo.parts import PARTS, Layout, check_types, merge, option_types
from ntkbo.validation import check_update, parse_option_text
# The typed ``info`` of each algorithm's ``suggest`` and ``update`` (``ntkbo.base``).
from ntkbo.algorithms.constrained_ei import ConstrainedEIInfo
from ntkbo.algorithms.go_ucb import GOUCBSuggestInfo, GOUCBUpdateInfo
from ntkbo.algorithms.gp_bo import GPSuggestInfo, GPThompsonInfo
from ntkbo.algorithms.neural_bo import NeuralBOSuggestInfo, NeuralBOUpdateInfo
from ntkbo.algorithms.neural_cbo import NeuralCBOSuggestInfo
from ntkbo.algorithms.neural_greedy import GreedySuggestInfo
from ntkbo.algorithms.neural_linear import NeuralLinearSuggestInfo, NeuralLinearThompsonInfo
from ntkbo.algorithms.neural_ucb import NeuralTSSuggestInfo, NeuralUCBSuggestInfo
from ntkbo.algorithms.pinn_bo import PinnBOSuggestInfo, PinnGPSuggestInfo
from ntkbo.algorithms.sto_bnts import StoBntsSuggestInfo
from ntkbo.nets import TrainInfo

_FACTORIES = {
    "neural_bo": neural_bo,
    "pinn_bo": pinn_bo,
    "pinn_ntk_gp": pinn_ntk_gp,
    "neural_cbo": neural_cbo,
    "random_search": random_search,
    "go_ucb": go_ucb,
    "go_ucb_joint": functools.partial(go_ucb, optimistic="joint"),
    "gp": gp,
    "ntk_gp": ntk_gp,
    "sto_bnts": sto_bnts,
    "sto_bnts_linear": sto_bnts_linear,
    "neural_greedy": neural_greedy,
    "simple_smb": functools.partial(neural_greedy, smb="simple"),
    "posterior_smb": functools.partial(neural_greedy, smb="posterior"),
    "neural_ucb": neural_ucb,
    "neural_ts": neural_ts,
    "neural_linear": neural_linear,
    "dngo": functools.partial(neural_linear, acquisition="ei"),
    "neural_lin_ts": functools.partial(neural_linear, acquisition="ts"),
}
for _acq in ACQUISITIONS:
    _FACTORIES[f"gp_{_acq}"] = functools.partial(gp, acquisition=_acq)
    _FACTORIES[f"ntk_gp_{_acq}"] = functools.partial(ntk_gp, acquisition=_acq)

#: The registry name of each unwrapped factory function (the base of the partial names).
_BASE_NAMES = {f: n for n, f in _FACTORIES.items() if not isinstance(f, functools.partial)}

def _function_of(factory):
    """The factory function behind ``factory`` (itself, or the function of a partial)."""
    return getattr(factory, "func", factory)


def _plain(factory):
    """The function of plain keyword options behind ``factory`` (``ntkbo.parts.composed``), with a
    partial's arguments kept."""
    if isinstance(factory, functools.partial):
        return functools.partial(_plain(factory.func), *factory.args, **factory.keywords)
    return getattr(factory, "plain", factory)


def layout(factory) -> Layout:
    """Where the plain options of ``factory`` (a registry factory or a partial of one) sit among
    its parts (``ntkbo.parts.Layout``; an empty one for a factory without parts)."""
    return getattr(_function_of(getattr(factory, "__wrapped__", factory)), "layout", _NO_PARTS)


_NO_PARTS = Layout({})


def _resolve(factory, name: str, args: tuple, options: dict) -> dict:
    """Every plain option of ``factory(*args, **options)`` (its parts flattened to the plain
    options they stand for, ``ntkbo.parts.Layout``): the plain function's signature defaults
    merged with the arguments. ``ValueError`` naming the option the factory does not take. A
    required option not given is left out."""
    public = inspect.signature(factory)
    unknown = sorted(set(options) - set(public.parameters))
    if unknown:
        raise ValueError(f"algorithm {name!r}: unexpected option {', '.join(map(repr, unknown))}"
                         f"{layout(factory).hint({k: None for k in unknown})}; it takes "
                         f"{', '.join(public.parameters)}")
    plain = _plain(getattr(factory, "__wrapped__", factory))
    options = layout(factory).flatten(options, f"algorithm {name!r}")
    check_types(plain, options, layout(factory), f"algorithm {name!r}")
    try:
        bound = inspect.signature(plain).bind_partial(*args, **options)
    except TypeError as err:
        raise ValueError(f"algorithm {name!r}: {err}; it takes {', '.join(public.parameters)}"
                         ) from None
    bound.apply_defaults()
    return dict(bound.arguments)


def presets(name: str) -> dict:
    """The presets (name -> options) of algorithm ``name``, from the module of the factory behind
    it: its ``PRESETS_BY_NAME[name]`` if it has that entry, else its ``PRESETS`` (which then holds
    for every name of the module); ``{}`` if none. ``PRESETS_BY_NAME`` (registry name -> presets)
    is for a module whose names have different settings in their papers (``neural_ucb`` /
    ``neural_ts``, two factories; ``dngo`` / ``neural_lin_ts``, two partials of one). A preset of
    a partial's name must leave the argument the partial fixes as it is (``tests/test_presets.py``
    checks it: ``gp_ucb(preset=...)`` stays UCB)."""
    f = _FACTORIES.get(name)
    f = getattr(f, "__wrapped__", f)
    f = getattr(f, "func", f)
    module = sys.modules.get(getattr(f, "__module__", ""), None)
    by_name = getattr(module, "PRESETS_BY_NAME", {})
    # a deep copy: a caller editing the result must not edit the module's presets
    return copy.deepcopy(dict(by_name[name] if name in by_name else getattr(module, "PRESETS", {})))


def design(name: str, preset=None) -> int | None:
    """The initial design's size (``n_init``) that preset ``preset`` of algorithm ``name`` carries:
    the size its source ran, from the module of the factory behind ``name`` (its
    ``N_INIT_BY_NAME[name]`` if it has that entry, else its ``N_INIT``), keyed by preset; ``None``
    without a preset or where the source gives none (the drivers' default then holds,
    ``ntkbo.loop.design_size``). The recorded factories put it on the ``Algorithm``
    (``Algorithm.n_init``); the study runner reads it from a spec's ``preset`` option. Its
    sampler: :func:`design_sampler`."""
    return _preset_table(name, "N_INIT").get(preset) if preset is not None else None


def design_sampler(name: str, preset=None) -> str | None:
    """The initial design's sampler (``ntkbo.loop.DESIGN_SAMPLERS``) that preset ``preset`` of
    algorithm ``name`` carries where its source names one, from the module's
    ``DESIGN_SAMPLER_BY_NAME[name]`` or ``DESIGN_SAMPLER`` as :func:`design` reads ``N_INIT``:
    STO-BNTS's ``"uniform"`` (Appendix F's random search), NeuralBO's ``"authors"`` ``"sobol"``;
    ``None`` elsewhere (no sampler named: NeuralBO's and PINN-BO's papers), where the drivers'
    scrambled Sobol holds. The recorded factories put it on the ``Algorithm``
    (``Algorithm.design_sampler``)."""
    return _preset_table(name, "DESIGN_SAMPLER").get(preset) if preset is not None else None


def _preset_table(name: str, table: str) -> dict:
    """The module table ``table`` (keyed by preset) of algorithm ``name``: its module's
    ``<table>_BY_NAME[name]`` if it has that entry, else its ``<table>``, else ``{}``."""
    f = _FACTORIES.get(name)
    f = getattr(f, "__wrapped__", f)
    f = getattr(f, "func", f)
    module = sys.modules.get(getattr(f, "__module__", ""), None)
    by_name = getattr(module, f"{table}_BY_NAME", {})
    return by_name[name] if name in by_name else getattr(module, table, {})


def with_preset(name: str, preset, options: dict) -> dict:
    """``options`` on top of preset ``preset`` of algorithm ``name`` (``options`` alone when
    ``preset`` is None); ``ValueError`` naming ``preset`` and the choices."""
    if preset is None:
        return dict(options)
    choices = presets(name)
    if preset not in choices:
        have = f"one of {sorted(choices)}" if choices else "None (it has no presets)"
        raise ValueError(f"algorithm {name!r}: preset must be {have}, got {preset!r}")
    return merge(choices[preset], options)


def defaults(name: str, preset=None) -> dict:
    """Every option of algorithm ``name`` with the value it takes when not given (the preset's,
    with ``preset``): each part as a dict of all its fields, in the factory's order. A required
    option (PINN-BO's ``pde``, which the problem supplies) is left out. ``ValueError`` naming
    ``name`` or ``preset`` for one the registry does not have."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(names())}")
    factory = _FACTORIES[name].__wrapped__
    return layout(factory).split(_resolve(factory, name, (), with_preset(name, preset, {})))


def preset_differences(name: str, preset: str) -> dict:
    """Where algorithm ``name``'s defaults differ from its preset ``preset``: option ->
    ``(default, preset value)``, each as ``ntkbo.base.describe`` writes it (so functions and
    arrays compare by what they are), in the factory's option order; an option of a part is named
    ``"part.field"``. ``ValueError`` naming
    ``preset`` for one ``name`` does not have."""
    with_preset(name, preset, {})  # the error for an unknown preset
    factory = _FACTORIES[name]
    inner = getattr(factory, "__wrapped__", factory)
    default, chosen = (_resolve(inner, name, (), with_preset(name, p, {})) for p in (None, preset))
    out = {}
    for k in chosen:
        a, b = describe(default.get(k))[0], describe(chosen[k])[0]
        if a != b:
            out[layout(factory).public_name(k)] = (a, b)
    return out


def recorded(name: str, factory):
    """``factory`` wrapped so that the ``Algorithm`` it returns carries ``name`` and its resolved
    ``Config`` (``ntkbo.base``), its ``**kwargs`` options with their defaults included; same
    signature and docstring (``inspect.signature`` follows ``__wrapped__``)."""

    @functools.wraps(factory)
    def build(*args, preset=None, **options):
        if args:  # positional options by name, so that they override the preset's as keywords do
            try:
                named = inspect.signature(factory).bind_partial(*args).arguments
            except TypeError as err:
                raise TypeError(f"{name}: {err}") from None
            clash = sorted(set(named) & set(options))
            if clash:
                raise TypeError(f"{name}: got multiple values for {clash}")
            options, args = {**named, **options}, ()
        options = with_preset(name, preset, options)
        algo = factory(*args, **options)  # its own errors first (it validates its options)
        config = layout(factory).split(_resolve(factory, name, args, options))
        return algo._replace(name=name, config=Config(config), n_init=design(name, preset),
                             design_sampler=design_sampler(name, preset),
                             update=checked_update(algo.update, algo.n_constraints))

    if isinstance(factory, functools.partial):
        build.__name__ = build.__qualname__ = name
    return build


_FACTORIES = {n: recorded(n, f) for n, f in _FACTORIES.items()}
# The attributes users call (``ntkbo.algorithms.neural_bo(...)``) are the recorded factories.
(go_ucb, gp, ntk_gp, neural_bo, pinn_bo, pinn_ntk_gp, neural_cbo, neural_greedy, neural_linear,
 neural_ts, neural_ucb, random_search, sto_bnts, sto_bnts_linear) = (
    _FACTORIES[n] for n in ("go_ucb", "gp", "ntk_gp", "neural_bo", "pinn_bo", "pinn_ntk_gp",
                            "neural_cbo", "neural_greedy", "neural_linear", "neural_ts",
                            "neural_ucb", "random_search", "sto_bnts", "sto_bnts_linear"))


#: Names whose factory models black-box constraints (takes ``n_constraints``; ``ntkbo.base``).
CONSTRAINED = ("neural_cbo", "gp_cei", "ntk_gp_cei")


def models_constraints(name: str, **options) -> bool:
    """Whether ``get(name, **options)`` models black-box constraints (needs ``n_constraints``):
    ``neural_cbo`` and constrained EI (``gp_cei``, ``ntk_gp_cei``, ``acquisition="cei"``)."""
    return name in CONSTRAINED or options.get("acquisition") == "cei"


#: Names whose factory takes the problem's PDE (``pde=problem.pde``; PINN-BO, ``ntkbo.benchmarks.pde``).
PHYSICS_INFORMED = ("pinn_bo", "pinn_ntk_gp")


def uses_pde(name: str) -> bool:
    """Whether ``get(name, ...)`` needs ``pde=problem.pde`` (the command line passes it)."""
    return name in PHYSICS_INFORMED


def problem_options(name: str, problem, **options) -> dict:
    """``options`` plus what ``get(name, ...)`` needs from ``problem``: ``pde=problem.pde`` for
    PINN-BO (``uses_pde``) and ``n_constraints=problem.n_constraints`` for an algorithm that models
    constraints (``models_constraints``), unless given. ``ValueError`` if PINN-BO gets a problem
    without a PDE. Shared by ``ntkbo run`` and ``ntkbo.experiments`` so both build the same thing."""
    options = dict(options)
    if uses_pde(name) and "pde" not in options:
        if getattr(problem, "pde", None) is None:
            raise ValueError(f"algorithm {name!r} needs a problem with a PDE (e.g. heat_equation, "
                             f"dropwave_pde, euler_beam); {problem.name!r} has none")
        options["pde"] = problem.pde
    k = int(getattr(problem, "n_constraints", 0) or 0)
    if k and models_constraints(name, **options):
        options.setdefault("n_constraints", k)
    if _guard_option(name, options) == "auto":
        on = optimize.avoid_observed_for("auto", is_noisy(problem))
        options = merge(options, {"search": {"avoid_observed": on}})
    return options


def _guard_option(name: str, options: dict):
    """The ``search.avoid_observed`` of ``get(name, **options)`` (given, its preset's, or the
    default); None for an algorithm without a duplicate guard, or an unknown name (``get``
    then refuses it with the registry's message)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        return None
    rest = {k: v for k, v in options.items() if k != "preset"}
    value = _resolve(factory, name, (), with_preset(name, options.get("preset"), rest)).get(
        "avoid_observed")
    return value if isinstance(value, str) else None


def for_problem(name: str, problem, **options) -> Algorithm:
    """``get(name, **problem_options(name, problem, **options))``: the algorithm ``name`` set up
    for ``problem`` (its PDE, its number of constraints, its duplicate guard: ``"auto"``
    resolved, ``ntkbo.optimize.avoid_observed_for``)."""
    return get(name, **problem_options(name, problem, **options))


def resolve_guard(algo: Algorithm, problem) -> Algorithm:
    """``algo`` as it runs on ``problem``: a recorded algorithm whose ``search.avoid_observed``
    is ``"auto"`` is rebuilt (``get(algo.name, **algo.config)``, its preset's design kept) with
    the guard ``ntkbo.optimize.avoid_observed_for`` gives for ``problem`` (off where it is
    noisy, ``ntkbo.objective.is_noisy``) when that differs from what the factory does with
    ``"auto"`` (on); ``algo`` itself otherwise, and for an algorithm without a record (the
    unwrapped module functions, whose ``"auto"`` stays on). ``ntkbo.minimize`` calls it; a
    rebuilt algorithm is cached, so repeated runs reuse their compiled programs."""
    config = getattr(algo, "config", None)
    if config is None or getattr(algo, "name", None) not in _FACTORIES:
        return algo
    search = config.get("search")
    value = search.get("avoid_observed") if isinstance(search, dict) else None
    if not (isinstance(value, str) and value == "auto"):
        return algo
    on = optimize.avoid_observed_for(value, is_noisy(problem))
    if on == optimize.avoid_observed_for(value, noisy=False):
        return algo
    return _with_guard(algo, on)


@functools.lru_cache(maxsize=64)
def _with_guard(algo: Algorithm, on: bool) -> Algorithm:
    """``algo`` rebuilt from its record with ``search.avoid_observed = on``."""
    assert algo.config is not None and algo.name is not None
    config = dict(algo.config)
    config["search"] = {**config["search"], "avoid_observed": on}
    return get(algo.name, **config)._replace(n_init=algo.n_init,
                                             design_sampler=algo.design_sampler)


def resolved_options(name: str, preset=None, **options) -> dict:
    """Every plain option of ``get(name, preset=preset, **options)`` (the parts' fields under
    their plain names): the factory's signature defaults merged with the preset's options and
    ``options``. A required option not given (PINN-BO's ``pde``, which the problem supplies) is
    left out. ``ValueError`` naming the option if the factory does not take it. Experiment cells
    hash these options (``ntkbo.experiments.spec``; records of older cells are migrated by
    ``ntkbo.experiments.migrations``); the ``Algorithm``'s ``config`` holds them in parts."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(names())}")
    return _resolve(_FACTORIES[name], name, (), with_preset(name, preset, options))


def base_name(name: str) -> str:
    """The registry name of the factory function behind ``name``: ``"gp"`` for ``gp_ucb``,
    ``"neural_linear"`` for ``dngo``, ``name`` itself for a plain factory (and for a name the
    registry does not know)."""
    f = _FACTORIES.get(name)
    inner = getattr(f, "__wrapped__", None)
    if isinstance(inner, functools.partial):
        return _BASE_NAMES.get(inner.func, name)
    return name


def record_differences(saved_name, saved_config: dict | None, algo: Algorithm) -> list[str]:
    """What differs between a recorded algorithm (``saved_name`` and its ``Config.to_json()``) and
    ``algo``, one line per field, naming both values (empty if they are the same algorithm).
    Names are compared through ``base_name`` with the configs, so a save from ``gp_ucb`` matches
    ``gp(acquisition="ucb")``."""
    given_name = getattr(algo, "name", None)
    config = getattr(algo, "config", None)
    given = None if config is None else config.to_json()
    if saved_name is None and given_name is None:
        return []
    if saved_name is None or given_name is None or base_name(saved_name) != base_name(given_name):
        why = "" if given_name is not None else (
            " (an Algorithm assembled by hand or by an unwrapped factory records no name; build it "
            "with ntkbo.algorithms)")
        return [f"algorithm: saved {saved_name!r}, given {given_name!r}{why}"]
    out = []
    saved_config, given = saved_config or {}, given or {}
    saved, now = _dotted(saved_config), _dotted(given)
    absent = "<not recorded>"
    for k in list(saved) + [k for k in now if k not in saved]:
        a, b = saved.get(k, absent), now.get(k, absent)
        if a != b:
            out.append(f"option {k}: saved {a!r}, given {b!r}")
    return out


def _dotted(config: dict) -> dict:
    """A recorded config with each part's fields as ``"part.field"`` entries."""
    out = {}
    for k, v in config.items():
        if k in PARTS and isinstance(v, dict):
            out.update({f"{k}.{f}": x for f, x in v.items()})
        else:
            out[k] = v
    return out


def checked_update(update, n_constraints: int = 0):
    """``update`` after ``ntkbo.validation.check_update`` of its arguments against the state's
    observation buffer (its dimension and dtype): shapes and dtypes always (they are static, so
    checked once when traced), values where they are concrete (an eager call), so a NaN point or
    a value that overflows the state's dtype is refused, never stored. Every algorithm the
    registry builds has its ``update`` checked so; an update already checked is returned as it
    is. A ``StagedUpdate`` stays one, its ``append`` stage checked (the rows it is given)."""
    if getattr(update, "checked", False):
        return update
    if isinstance(update, StagedUpdate):
        return StagedUpdate(checked_update(update.append, n_constraints), update.refit)

    @functools.wraps(update)
    def checked(state, x, y):
        buffers = [n for n in jax.tree_util.tree_leaves(state, is_leaf=_is_data)
                   if isinstance(n, D.Data)]
        if buffers:
            check_update(x, y, dim=buffers[0].dim, dtype=buffers[0].x.dtype,
                         n_constraints=n_constraints)
        return update(state, x, y)

    checked.checked = True  # type: ignore[attr-defined]
    return checked


def _is_data(node) -> bool:
    return isinstance(node, D.Data)


def from_text(name: str, options: Mapping) -> dict:
    """``options`` of algorithm ``name`` as written in text (``ntkbo run --set``, a TOML file's
    options, a study spec): the value of each boolean option, top-level or a part's field,
    parsed from the words a user writes (``ntkbo.validation.parse_option_text``: ``true`` /
    ``false``, ``yes`` / ``no``, ``on`` / ``off``, ``1`` / ``0``); anything else as it is, for
    the factory's type rule (``ntkbo.parts.check_types``) to accept or refuse naming it. An
    unknown name is returned unchanged (``get`` names it)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        return dict(options)
    inner = getattr(factory, "__wrapped__", factory)
    kinds = option_types(_plain(inner))
    lay = layout(inner)
    out = {}
    for k, v in options.items():
        fields = lay.parts.get(k)
        if fields is not None and isinstance(v, Mapping):
            out[k] = {f: parse_option_text(f"{k}.{f}", x, kinds.get(fields.get(f, ""), frozenset()))
                      for f, x in v.items()}
        else:
            out[k] = parse_option_text(k, v, kinds.get(lay.renames.get(k, k), frozenset()))
    return out


def names() -> list[str]:
    """The names ``get`` accepts."""
    return sorted(_FACTORIES)


def factory(name: str) -> Callable:
    """The function behind registered algorithm ``name``, unwrapped from the registry's
    recording (``gp`` itself, or the ``functools.partial`` of it that ``gp_ucb`` is);
    ``ValueError`` naming ``name`` if it is not registered."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(names())}")
    f = _FACTORIES[name]
    return getattr(f, "__wrapped__", f)


def get(name: str, **options) -> Algorithm:
    """The algorithm ``name`` built with ``options`` (its factory's keyword arguments)."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(names())}")
    return _FACTORIES[name](**options)


__all__ = [
    "ConstrainedEIInfo", "GOUCBSuggestInfo", "GOUCBUpdateInfo", "GPSuggestInfo", "GPThompsonInfo",
    "GreedySuggestInfo", "NeuralBOSuggestInfo", "NeuralBOUpdateInfo", "NeuralCBOSuggestInfo",
    "NeuralLinearSuggestInfo", "NeuralLinearThompsonInfo", "NeuralTSSuggestInfo",
    "NeuralUCBSuggestInfo", "NoInfo", "PinnBOSuggestInfo", "PinnGPSuggestInfo",
    "StoBntsSuggestInfo", "TrainInfo",
    "base_name", "checked_update", "defaults", "design", "design_sampler", "factory",
    "for_problem",
    "from_text", "get", "go_ucb", "gp", "models_constraints", "names", "neural_bo",
    "neural_cbo", "neural_greedy", "neural_linear", "neural_ts", "neural_ucb", "ntk_gp", "pinn_bo",
    "pinn_ntk_gp", "preset_differences", "presets", "problem_options", "random_search",
    "record_differences", "recorded", "resolve_guard", "resolved_options", "sto_bnts",
    "sto_bnts_linear", "uses_pde", "with_preset",
]
