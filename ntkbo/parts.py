"""The parts an algorithm is assembled from: its network, the network's training, the acquisition
search and a kernel model's hyper-parameter fit, each a small typed value shared by every factory
that needs it.

    neural_bo(network=Network(width=64), training=Training(num_steps=100), nu=0.5)
    neural_bo(network={"width": 64}, training={"num_steps": 100}, nu=0.5)   # the same

A part lists only what it changes: a field left out keeps the algorithm's default (the factory's
docstring lists them), so ``Network(width=64)`` is "this algorithm's network, 64 wide". A
mapping of field names is the same as the part (experiment specs and the command line use it:
``network.width = 64`` in TOML, ``--set network.width=64``). An algorithm's ``config`` records
every field of every part it takes, defaults filled in.

A field means the same thing in every algorithm that reads it; each factory reads the fields
that exist in its method and refuses the others with a ``ValueError`` naming them (NeuralBO's
network has no ``parameterization``: it is always the NTK one).

Each algorithm module keeps its implementation with plain keyword options and a :class:`Layout`
(which part field stands for which plain option); its public factory, marked with
:func:`composed`, takes the parts and flattens them. The registry (``ntkbo.algorithms``) keeps the
plain options as the records' form that experiment cells hash.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard, TypeVar, Union, cast

import optax

from ntkbo.validation import check_option, option_kinds


class _Unset:
    """The value of a part's field that was not given: the algorithm's default applies."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "UNSET"

    def __reduce__(self):
        return (_Unset, ())


#: A part's field left to the algorithm's default.
UNSET: Any = _Unset()


@dataclasses.dataclass(frozen=True)
class Part:
    """A group of options; fields left ``UNSET`` take the algorithm's defaults."""

    def given(self) -> dict[str, Any]:
        """The fields that were set: ``{name: value}``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not UNSET}

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.given().items())
        return f"{type(self).__name__}({inner})"

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def merged(cls, base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of ``over`` on top of ``base`` (:func:`merge`)."""
        return {**base, **over}

    @classmethod
    def resolved(cls, given: Mapping[str, Any], fields, where: str) -> dict[str, Any]:
        """``given`` (fields a caller set) as the factory that reads ``fields`` takes them:
        ``ValueError`` naming ``where`` for fields that contradict each other."""
        return dict(given)


@dataclasses.dataclass(frozen=True, repr=False)
class Network(Part):
    """A fully-connected network: ``depth`` hidden layers of ``width`` units. The kernels take it
    too: ``ntkbo.kernels.network_mlp(network)`` is ``ntkbo.kernels.mlp`` with these fields.

    Attributes:
      width: hidden width ``m``.
      depth: number of hidden layers ``L - 1`` (a one-hidden-layer network has ``depth=1``).
      activation: hidden activation (``ntkbo.kernels.ACTIVATIONS``).
      W_std: weight scales (one, or one per Dense layer, readout last); the algorithm's docstring
        lists the named rules it accepts (``"paper"``).
      b_std: bias scales; ``None`` for a network without biases.
      parameterization: ``"ntk"`` (``W_std / sqrt(fan_in)`` in the forward pass, parameters
        ``N(0, 1)``) or ``"standard"`` (the scale in the initialisation).
      input_scale: a factor on the inputs before the first layer (GO-UCB's network).
    """

    width: Any = UNSET
    depth: Any = UNSET
    activation: Any = UNSET
    W_std: Any = UNSET
    b_std: Any = UNSET
    parameterization: Any = UNSET
    input_scale: Any = UNSET


@dataclasses.dataclass(frozen=True, repr=False)
class Training(Part):
    """How the network's parameters are fitted to the observations in each ``update``.

    An optax optimiser can stand for the named ones where the algorithm trains by gradient steps
    (``Training(optimizer=optax.adamw(1e-3, weight_decay=1e-4))``); it carries its own step size,
    so ``learning_rate`` is not given with it (a preset's is dropped). A record describes such an
    optimiser by its functions, not its hyper-parameters: a study (``ntkbo.experiments``), which
    names its cells by their options, takes only the named ones.

    Attributes:
      optimizer: ``"gd"``, ``"adam"``, ``"sgd"`` or ``"levenberg_marquardt"``, as the algorithm
        allows, or an ``optax.GradientTransformation``.
      learning_rate: the step size of a named optimizer (``None``: the algorithm's rule, e.g.
        GD's stable step).
      num_steps: optimiser steps per training.
      warm_start: start from the last round's parameters instead of the initial ones.
      keep_optimizer_state: carry the optimiser's state (Adam's moments) across rounds.
      reg_center: the penalty's centre: ``"init"`` (the initial parameters) or ``"zero"``.
      penalty: the penalty's coefficient (``None``: the algorithm's ``lam``).
      loss_reduction: ``"sum"`` or ``"mean"`` of the squared errors.
      tol: a stopping tolerance on the loss's decrease (``None``: run every step).
      weight_decay: an L2 penalty on the parameters.
      num_restarts: independent random initialisations, the best kept.
      refit_every: re-run the training every this many observations (``0``: once).
      refit_steps: steps of a refit (``None``: ``num_steps``).
    """

    optimizer: Any = UNSET
    learning_rate: Any = UNSET
    num_steps: Any = UNSET
    warm_start: Any = UNSET
    keep_optimizer_state: Any = UNSET
    reg_center: Any = UNSET
    penalty: Any = UNSET
    loss_reduction: Any = UNSET
    tol: Any = UNSET
    weight_decay: Any = UNSET
    num_restarts: Any = UNSET
    refit_every: Any = UNSET
    refit_steps: Any = UNSET

    @classmethod
    def merged(cls, base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
        """``over`` on ``base``; an optax optimiser in ``over`` drops ``base``'s learning rate
        (the step of the optimiser it replaces)."""
        if is_transformation(over.get("optimizer")) and "learning_rate" not in over:
            base = {k: v for k, v in base.items() if k != "learning_rate"}
        return {**base, **over}

    @classmethod
    def resolved(cls, given: Mapping[str, Any], fields, where: str) -> dict[str, Any]:
        """With an optax optimiser, ``learning_rate`` is ``None`` (the transformation has its own
        step); ``ValueError`` if the caller gave one too."""
        out = dict(given)
        if is_transformation(out.get("optimizer")):
            if out.get("learning_rate") is not None:
                raise ValueError(
                    f"{where}: training.learning_rate={out['learning_rate']!r} is the step of a "
                    "named optimizer; training.optimizer is an optax transformation, which "
                    "carries its own step: give one or the other")
            if "learning_rate" in fields:
                out["learning_rate"] = None
        return out


def is_transformation(value) -> TypeGuard[optax.GradientTransformation]:
    """Whether ``value`` is an optax optimiser (an ``optax.GradientTransformation``)."""
    return isinstance(value, optax.GradientTransformation)


@dataclasses.dataclass(frozen=True, repr=False)
class Search(Part):
    """How the acquisition is maximised over the box (``ntkbo.optimize``): a candidate set, the
    best candidates refined by ascent.

    Attributes:
      num_candidates: quasi-random candidates per suggest.
      num_restarts: best candidates refined by ascent.
      num_steps: ascent steps per refined candidate.
      method: the refinement: ``"pgd"``, ``"adam"``, ``"lbfgs"`` or ``"none"``.
      num_best: best observed points added to the candidates.
      num_perturbations: Gaussian perturbations of those points added to the candidates.
      perturb_scale: their standard deviation, a fraction of the box's width.
      sampler: the candidates' sequence (``"sobol"``, ``"kronecker"`` or ``"uniform"``).
      chunk_size: candidates evaluated per chunk (``None``: by memory).
      num_ts_candidates: the points of a Thompson draw (the GP models).
      log_ei: ascend the logarithm of expected improvement.
      posterior_inverse: keep the Gram factor's inverse for the ascent (``None``: by backend).
      jitter: the posterior's relative Cholesky jitter (``None``: ``ntkbo.gp.default_jitter``).
      joint_steps: GO-UCB's joint ascent over ``(x, w)``: its steps.
      joint_learning_rate: its step size.
      avoid_observed: the duplicate guard: a maximiser within ``ntkbo.optimize.MIN_DISTANCE`` of
        the box's width of an observed point is replaced by the best point that is not
        (``ntkbo.optimize``, stage 5); for deterministic objectives. ``"auto"`` (the default,
        ``ntkbo.optimize.AVOID_OBSERVED``): on for a noise-free problem, off for a noisy one
        (``ntkbo.optimize.avoid_observed_for``; ask/tell, which does not know the noise: on).
        ``False`` (every ``"paper"`` and ``"authors"`` preset): the acquisition's own maximiser,
        as the papers.
    """

    num_candidates: Any = UNSET
    num_restarts: Any = UNSET
    num_steps: Any = UNSET
    method: Any = UNSET
    num_best: Any = UNSET
    num_perturbations: Any = UNSET
    perturb_scale: Any = UNSET
    sampler: Any = UNSET
    chunk_size: Any = UNSET
    num_ts_candidates: Any = UNSET
    log_ei: Any = UNSET
    posterior_inverse: Any = UNSET
    jitter: Any = UNSET
    joint_steps: Any = UNSET
    joint_learning_rate: Any = UNSET
    avoid_observed: Any = UNSET


@dataclasses.dataclass(frozen=True, repr=False)
class Fit(Part):
    """A kernel model's hyper-parameter fit (``ntkbo.gp``): the maximum a posteriori
    lengthscales, signal and noise, refitted as observations arrive.

    Attributes:
      enabled: fit at all (``False``: the fixed hyper-parameters).
      method: ``"lbfgs"`` or ``"adam"``.
      num_steps: optimiser steps per fit.
      learning_rate: Adam's step size.
      refit_until: refit at every observation up to this count, then geometrically.
      refit_ratio: the geometric ratio beyond ``refit_until``.
      ard: a lengthscale per dimension (``True``), one shared (``False``) or the better of the
        two by BIC (``"auto"``; each evaluated at its MAP fit, not its maximum likelihood).
      mean: the outputs' prior mean: ``"zero"``, or ``"constant"``, fitted with the others
        (profiled out of the likelihood in closed form; BoTorch's ``ConstantMean``).
    """

    enabled: Any = UNSET
    method: Any = UNSET
    num_steps: Any = UNSET
    learning_rate: Any = UNSET
    refit_until: Any = UNSET
    refit_ratio: Any = UNSET
    ard: Any = UNSET
    mean: Any = UNSET


@dataclasses.dataclass(frozen=True, repr=False)
class Residuals(Part):
    """The PDE's residual points of a physics-informed model (PINN-BO).

    Attributes:
      num_points: ``N_r``, the residual points drawn in the box.
      noise_std: the standard deviation of the noise on the right-hand side ``g`` there.
      weight: the residual loss's weight in the training loss.
    """

    num_points: Any = UNSET
    noise_std: Any = UNSET
    weight: Any = UNSET


F = TypeVar("F", bound=Callable[..., Any])

#: What a factory's part argument takes: the part, a mapping of its fields, or None (the
#: algorithm's defaults).
PartOption = Union[Part, Mapping[str, Any], None]

#: The part classes by argument name.
PARTS: dict[str, type[Part]] = {"network": Network, "training": Training, "search": Search,
                                "fit": Fit, "residuals": Residuals}


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a factory's plain options go among its parts.

    ``parts`` maps a part's argument name (a key of ``PARTS``) to ``{field: plain option}``;
    ``custom`` maps a part's argument name to the plain option that takes a value that is not a
    part (GO-UCB's ``network=(init_fn, apply_fn)``, ``ntk_gp``'s kernel function); ``renames``
    maps a top-level option's public name to the plain one it stands for, where the plain name
    means something else elsewhere in the library (DNGO's ``beta`` is a noise precision, every
    other ``beta`` an exploration weight).
    """

    parts: Mapping[str, Mapping[str, str]]
    custom: Mapping[str, str] = dataclasses.field(default_factory=dict)
    renames: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def plain_names(self) -> set[str]:
        """Every plain option some part, custom value or renamed option stands for."""
        return ({o for fields in self.parts.values() for o in fields.values()}
                | set(self.custom.values()) | set(self.renames.values()))

    def public_name(self, plain: str) -> str:
        """The name a user gives for plain option ``plain``: ``"part.field"``, its renamed
        public name, or ``plain`` itself."""
        for name, fields in self.parts.items():
            for f, o in fields.items():
                if o == plain:
                    return f"{name}.{f}"
        for public, o in self.renames.items():
            if o == plain:
                return public
        return plain

    def public_message(self, message: str) -> str:
        """``message`` (a plain factory's validation error) with each plain option that a part
        stands for written as the caller gives it (``"search.num_steps"``) where it names the
        option: at the start of the message (``"num_acq_steps must be ..."``) or with a value
        (``"num_restarts=5 exceeds num_candidates=4"``); prose is left as it is."""
        names = sorted((o for o in self.plain_names() if self.public_name(o) != o),
                       key=len, reverse=True)
        if not names:
            return message
        alternatives = "|".join(map(re.escape, names))
        pattern = re.compile(rf"^({alternatives})(?!\w)|(?<![\w.])({alternatives})(?==)")
        return pattern.sub(lambda m: self.public_name(m.group(1) or m.group(2)), message)

    def hint(self, options: Mapping[str, Any]) -> str:
        """For the plain options in ``options`` that a part stands for, where they go now."""
        moved = [f"{k} is {self.public_name(k)}" for k in options
                 if k not in self.parts and self.public_name(k) != k]
        return f" ({'; '.join(moved)})" if moved else ""

    def fields(self, options: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
        """``{part: {field: value}}`` of the parts in ``options`` (a part, a mapping or None; a
        custom value is left out). ``ValueError`` naming the argument for a field this factory
        does not read or a value of the wrong type."""
        out: dict[str, dict[str, Any]] = {}
        for name, fields in self.parts.items():
            value = options.get(name)
            if value is None or name in self.custom and _is_custom(value):
                continue
            cls = PARTS[name]
            if isinstance(value, Part):
                if not isinstance(value, cls):
                    raise ValueError(f"{where}: {name} must be a {cls.__name__} or a mapping of its "
                                     f"fields, got a {type(value).__name__}")
                given = value.given()
            elif isinstance(value, Mapping):
                given = dict(value)
                unknown = sorted(set(given) - set(cls.field_names()))
                if unknown:
                    raise ValueError(f"{where}: {name} has no field {', '.join(map(repr, unknown))};"
                                     f" {cls.__name__}'s fields are {', '.join(cls.field_names())}")
            else:
                extra = (f", or the custom value of {self.custom[name]!r}"
                         if name in self.custom else "")
                raise ValueError(f"{where}: {name} must be a {cls.__name__} or a mapping of its "
                                 f"fields{extra}, got {value!r}")
            unread = sorted(set(given) - set(fields))
            if unread:
                raise ValueError(
                    f"{where}: {', '.join(f'{name}.{f}' for f in unread)} is not an option of this "
                    f"algorithm; its {name} takes {', '.join(fields) or 'no fields'}")
            out[name] = cls.resolved(given, fields, where)
        return out

    def flatten(self, options: Mapping[str, Any], where: str) -> dict[str, Any]:
        """``options`` with each part replaced by the plain options it stands for (fields not
        given are left out, so the factory's defaults apply)."""
        nested = self.fields(options, where)
        out = {self.renames.get(k, k): v for k, v in options.items() if k not in self.parts}
        for name, value in options.items():
            if name in self.custom and _is_custom(value):
                out[self.custom[name]] = value
        for name, given in nested.items():
            for field, value in given.items():
                out[self.parts[name][field]] = value
        return out

    def split(self, plain: Mapping[str, Any]) -> dict[str, Any]:
        """The inverse of ``flatten`` on a complete set of plain options: each part as a dict of
        all its fields (a custom value that is not ``None`` stands for its part instead), in the
        order of the plain options (a part where the first option it stands for was)."""
        owner = {o: name for name, fields in self.parts.items() for o in fields.values()}
        owner.update({o: name for name, o in self.custom.items()})
        public = {o: p for p, o in self.renames.items()}
        out: dict[str, Any] = {}
        for k, v in plain.items():
            name = owner.get(k)
            if name is None:
                out[public.get(k, k)] = v
            elif name not in out:
                custom = self.custom.get(name)
                if custom is not None and plain.get(custom) is not None:
                    out[name] = plain[custom]
                else:
                    out[name] = {f: plain[o] for f, o in self.parts[name].items() if o in plain}
        return out


@functools.lru_cache(maxsize=None)
def _kinds(plain: Callable) -> dict[str, frozenset[str]]:
    """Each option of the function ``plain`` with the kinds of value its annotation allows
    (``ntkbo.validation.option_kinds``; empty for an option without one)."""
    hints = typing.get_type_hints(plain)
    return {k: option_kinds(hints.get(k)) for k in inspect.signature(plain).parameters}


def option_types(plain: Callable) -> dict[str, frozenset[str]]:
    """The kinds of value each plain option of ``plain`` (a factory's implementation, or a
    ``functools.partial`` of one) takes, read from its annotations: the one source of the type
    rule (``ntkbo.validation.check_option``) for calls, ``--set`` and TOML files."""
    return _kinds(getattr(plain, "func", plain))


def check_types(plain: Callable, options: Mapping[str, Any], layout: Layout | None = None,
                where: str = "") -> None:
    """``ntkbo.validation.check_option`` on each of the plain ``options`` of ``plain``;
    ``ValueError`` naming the option as the caller writes it (``fit.enabled``) when ``layout``
    is given, else by its plain name."""
    kinds = option_types(plain)
    for k, v in options.items():
        try:
            name = k if layout is None else layout.public_name(k)
            check_option(name, v, kinds.get(k, frozenset()))
        except ValueError as err:
            raise ValueError(f"{where}: {err}" if where else str(err)) from None


def _is_custom(value) -> bool:
    return value is not None and not isinstance(value, (Part, Mapping))


def merge(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """``second``'s options over ``first``'s; a part given in both is merged field by field
    (``second``'s fields win), so ``preset`` options and a user's ``network={"width": 64}``
    combine into the preset's network at width 64."""
    out = dict(first)
    for k, v in second.items():
        a = out.get(k)
        base, over = _as_fields(a), _as_fields(v)
        if k in PARTS and base is not None and over is not None:
            out[k] = PARTS[k].merged(base, over)
        else:
            out[k] = v
    return out


def set_option(options: dict[str, Any], key: str, value) -> None:
    """Sets ``options[key] = value``, a dotted ``key`` (``"network.width"``) inside its part's
    mapping (the command line's and the experiment specs' spelling of a part's field)."""
    part, dot, field = key.partition(".")
    if not dot:
        options[key] = value
        return
    if part not in PARTS:
        raise ValueError(f"option {key!r}: {part!r} is not a part (the parts are "
                         f"{', '.join(PARTS)})")
    current = options.get(part)
    fields = _as_fields(current) if current is not None else {}
    if fields is None:
        raise ValueError(f"option {key!r}: {part} is already set to {current!r}")
    options[part] = {**fields, field: value}


def _as_fields(value) -> dict | None:
    if isinstance(value, Part):
        return value.given()
    if isinstance(value, Mapping):
        return dict(value)
    return None


def composed(plain: Callable, layout: Layout) -> Callable[[F], F]:
    """Marks ``public`` (a factory written with parts, whose body flattens them:
    ``return plain(**layout.flatten(locals(), name))``) as the public face of ``plain`` (its
    implementation with the flat options): ``plain`` and ``layout`` become its attributes, the
    registry's records read them, and the two signatures are checked against each other once, at
    import (each flat option reached through exactly one public name, the top-level defaults
    equal), so they cannot drift apart. Calls get the errors a caller can act on: an unknown
    option names where a flat name went (``width is network.width``) and a validation error
    names a part's field as the caller writes it (``search.num_steps must be ...``)."""

    def decorate(public: F) -> F:
        where = public.__name__
        pub, flat = inspect.signature(public), inspect.signature(plain)
        owner = {o: p for p, fields in layout.parts.items() for o in fields.values()}
        owner.update({o: p for p, o in layout.custom.items()})
        renamed = {o: name for name, o in layout.renames.items()}
        expected = []
        for p in flat.parameters.values():
            name = owner.get(p.name, renamed.get(p.name, p.name))
            if name not in expected:
                expected.append(name)
        if sorted(pub.parameters) != sorted(expected):
            raise TypeError(f"{where}: its options {sorted(pub.parameters)} do not stand for "
                            f"{plain.__name__}'s {sorted(expected)}")
        for p in flat.parameters.values():
            if p.name in owner:
                continue
            q = pub.parameters[renamed.get(p.name, p.name)]
            if q.default is not p.default and q.default != p.default:
                raise TypeError(f"{where}: the default of {q.name} is {q.default!r}, "
                                f"{plain.__name__}'s {p.default!r}")

        @functools.wraps(public)
        def factory(*args, **options):
            try:
                pub.bind(*args, **options)
            except TypeError as err:
                raise TypeError(f"{where}: {err}{layout.hint(options)}") from None
            try:
                # plain names: public_message below writes them as the caller does
                check_types(plain, layout.flatten(options, where))
                return public(*args, **options)
            except ValueError as err:  # name the option as the caller gave it
                raise ValueError(layout.public_message(str(err))) from None

        del factory.__wrapped__  # type: ignore[attr-defined]  # the registry reads plain, layout
        factory.__signature__ = pub  # type: ignore[attr-defined]
        factory.plain = plain  # type: ignore[attr-defined]
        factory.layout = layout  # type: ignore[attr-defined]
        return cast(F, factory)

    return decorate


__all__ = ["UNSET", "Fit", "Layout", "Network", "PARTS", "Part", "PartOption", "Residuals",
           "Search", "Training", "check_types", "composed", "is_transformation", "merge",
           "option_types", "set_option"]
