"""A declarative experiment: algorithms x problems x dimensions x seeds, at a named scale.

A ``Spec`` is a frozen dataclass, built in Python or read from TOML (``Spec.from_toml``, whose
docstring shows every key of the file).

Scales (``SCALES``, the ``Scale`` class) shrink a spec without editing it: ``full`` runs it as
written, ``cpu`` and ``smoke`` cap the budget, the seed count and the listed dimensions.

Seeds (the paired design): seed ``i`` (``0 <= i < count``) of every cell runs with key
``jax.random.PRNGKey(offset + i)``, the same for every algorithm and problem, so algorithms on a
problem share their initial designs (``ntkbo.loop.initial_design``) and noise draws and can be
compared seed by seed. A capped seed count keeps the first seeds.

``Spec.resolve(scale) -> list[Cell]`` expands the grid into cells sorted by ``cell_id``
(``<algorithm label>__<problem label>__d<dim>``), each with a ``digest`` (SHA-256 of its fully
resolved definition, ``Cell.definition()``): two runs of one cell id with the same ``digest`` are
the same experiment.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import re
import tomllib
from types import SimpleNamespace
from typing import Any, Mapping, cast

import numpy as np

from ntkbo.parts import Part, merge

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclasses.dataclass(frozen=True)
class Scale:
    """Caps applied by ``Spec.resolve`` (``None``: no cap).

    Scales (``SCALES``) shrink a spec without editing it: ``full`` runs it as written, ``cpu`` and
    ``smoke`` cap the budget, the seed count and the listed dimensions (a dimension above
    ``max_dim`` becomes ``max_dim``; duplicates are dropped; fixed-dimension problems are left
    alone). A ``[scales.NAME]`` table replaces the fields it gives of the built-in preset ``NAME``
    (or defines a new scale). A scale's ``n_init`` replaces every problem's initial-design size, and
    its ``options`` tables (keyed by algorithm label) are merged into those algorithms' options: for
    settings that the full protocol uses and a CPU cannot afford (a width-5000 network), stated in
    the spec and recorded, resolved, in every cell. A scale's ``exclude`` lists algorithms or
    problems it does not run (a variant or a task whose evaluations do not fit the machine), so its
    report says by omission what the full study has.
    """

    budget: int | None = None
    seeds: int | None = None
    max_dim: int | None = None
    n_init: int | None = None
    options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    exclude: tuple[str, ...] = ()  # algorithm or problem labels not run at this scale

    def __post_init__(self):
        object.__setattr__(self, "exclude", tuple(self.exclude))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["options"] = {k: jsonable(dict(v)) for k, v in self.options.items()}
        d.pop("exclude")
        if self.exclude:  # omitted when empty: runs recorded before the field compare equal
            d["exclude"] = list(self.exclude)
        return d


#: The built-in presets; a spec's ``[scales.NAME]`` table overrides the fields it gives.
SCALES: dict[str, Scale] = {
    "smoke": Scale(budget=10, seeds=2, max_dim=2, n_init=2),  # n_init 2: 8 rounds, any q | 8
    "cpu": Scale(budget=100, seeds=10, max_dim=10),
    "full": Scale(),
}


class _Labelled:
    """``label`` defaults to ``name``; ``id`` is the label (cell ids and report columns use it)."""

    name: str  # the subclasses' fields (not fields of this mixin)
    label: Any

    def __post_init__(self):
        if self.label is None:
            object.__setattr__(self, "label", self.name)

    @property
    def id(self) -> str:
        return self.label


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec(_Labelled):
    """``ntkbo.algorithms.get(name, **options)`` under ``label``."""

    name: str
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    label: str | None = None


@dataclasses.dataclass(frozen=True)
class ProblemSpec(_Labelled):
    """``ntkbo.benchmarks.get(name, dim, noise_std, **options)`` for each of ``dims`` under ``label``;
    ``dims=None``: the problem's own (fixed) dimension."""

    name: str
    dims: tuple[int, ...] | None = None
    noise_std: float = 0.0
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    label: str | None = None
    budget: int | None = None  # None: the spec's
    n_init: int | None = None  # None: the spec's


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (algorithm, problem, dim) run over ``seeds`` seeds, fully resolved.

    ``options`` are the algorithm's resolved options (``ntkbo.algorithms.resolved_options``, with
    what ``problem_options`` adds for the problem) in JSON form (``jsonable``); ``build()`` returns the
    live ``(algorithm, problem)`` pair.
    """

    cell_id: str
    algorithm: AlgorithmSpec
    problem: ProblemSpec
    dim: int
    budget: int
    n_init: int
    seeds: int
    seed_offset: int
    dtype: str
    options: Mapping[str, Any]
    digest: str
    design_sampler: str | None = None  # the preset's (ntkbo.algorithms.design_sampler)

    def definition(self) -> dict:
        """The JSON-able definition the ``digest`` is taken of."""
        return _definition(self.algorithm, self.problem, self.dim, self.budget, self.n_init,
                           self.seeds, self.seed_offset, self.dtype, self.options,
                           self.design_sampler)

    def build(self):
        """``(algo, problem)``: the ``ntkbo.Algorithm`` and ``ntkbo.benchmarks.Problem`` of the cell."""
        from ntkbo import algorithms

        problem = _problem(self.problem, self.dim)
        algo = algorithms.for_problem(self.algorithm.name, problem,
                                       **dict(self.algorithm.options))
        return algo, problem


def _definition(alg, prob, dim, budget, n_init, seeds, offset, dtype, options,
                design_sampler=None) -> dict:
    """The cell's definition; a design sampler other than the default scrambled Sobol enters it
    (``"design_sampler"``), the default does not, so cells stored before presets carried one
    keep their hashes."""
    out = {
        "algorithm": {"label": alg.id, "name": alg.name, "options": dict(options)},
        "problem": {"label": prob.id, "name": prob.name, "dim": dim, "noise_std": prob.noise_std,
                    "options": jsonable(dict(prob.options))},
        "budget": budget, "n_init": n_init, "seeds": seeds, "seed_offset": offset, "dtype": dtype,
    }
    if design_sampler not in (None, "sobol"):
        out["design_sampler"] = design_sampler
    return out


def digest(definition: dict) -> str:
    """SHA-256 (hex) of ``definition`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _unstable(v, path: str = "") -> tuple[str, Any] | None:
    """``(dotted path, value)`` of the first value inside ``v`` (options, parts, sequences,
    partials) that ``jsonable`` cannot describe stably: a function defined inside another (a
    closure, whose qualified name does not tell two of them apart) or a lambda; ``None`` if
    there is none. An optax transformation is a tuple of closures."""
    if isinstance(v, Part):
        v = v.given()
    if isinstance(v, Mapping):
        items = [(f"{path}.{k}" if path else str(k), a) for k, a in v.items()]
    elif isinstance(v, functools.partial):
        items = [(path, a) for a in (v.func, *v.args, *v.keywords.values())]
    elif isinstance(v, (list, tuple)):
        items = [(path, a) for a in v]
    elif callable(v) and not isinstance(v, type):
        name = getattr(v, "__qualname__", "")
        return (path, v) if "<locals>" in name or "<lambda>" in name else None
    else:
        return None
    for p, a in items:
        found = _unstable(a, p)
        if found is not None:
            return (found[0], v) if isinstance(v, tuple) and hasattr(v, "_fields") else found
    return None


def jsonable(v):
    """``v`` as plain JSON: numbers, strings, lists, dicts; arrays as nested lists, NamedTuples as
    dicts, functions as ``module.qualname``, ``functools.partial`` as a dict, anything else as its
    ``repr`` with memory addresses removed (so the text is the same in every process)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, Part):  # a part as the mapping of the fields it sets
        return jsonable(v.given())
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"type": type(v).__name__,
                **{k: jsonable(getattr(v, k)) for k in cast(Any, v)._fields}}
    if isinstance(v, (list, tuple)):
        return [jsonable(a) for a in v]
    if isinstance(v, Mapping):
        return {str(k): jsonable(a) for k, a in v.items()}
    if isinstance(v, functools.partial):
        return {"partial": jsonable(v.func), "args": jsonable(v.args),
                "keywords": jsonable(v.keywords)}
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return jsonable(np.asarray(v).tolist())
    if callable(v) and hasattr(v, "__qualname__"):
        return f"{getattr(v, '__module__', '?')}.{v.__qualname__}"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v))


@functools.lru_cache(maxsize=256)
def _problem_cached(name, dim, noise_std, options_json, x64):
    from ntkbo import benchmarks

    return benchmarks.get(name, dim=dim, noise_std=noise_std, **json.loads(options_json))


def _problem(p: ProblemSpec, dim):
    import jax

    return _problem_cached(p.name, dim, p.noise_std, json.dumps(jsonable(dict(p.options)),
                                                                sort_keys=True),
                           bool(jax.config.read("jax_enable_x64")))


@dataclasses.dataclass(frozen=True)
class Spec:
    """A study: every algorithm on every problem at every listed dimension, ``seeds`` seeds each.

    Attributes:
      name: the study's name.
      algorithms: ``AlgorithmSpec`` entries (unique labels).
      problems: ``ProblemSpec`` entries (unique labels).
      budget: evaluations per run (initial design included), before scaling.
      seeds: the seed count; seed ``i`` uses ``PRNGKey(seed_offset + i)`` (module docstring).
      seed_offset: added to the seed index to make the key.
      n_init: the initial design's size; ``None``: ``ntkbo.loop.default_n_init`` per problem and
        algorithm (the design of an algorithm's ``preset`` option, ``ntkbo.algorithms.design``,
        else ``min(budget, max(2, d + 1))``).
      reference: the label the report tests against (default: the ``random_search`` algorithm's
        label, if any).
      scales: per-spec overrides of ``SCALES`` (name -> ``Scale``).
    """

    name: str
    algorithms: tuple[AlgorithmSpec, ...]
    problems: tuple[ProblemSpec, ...]
    budget: int
    seeds: int = 10
    seed_offset: int = 0
    n_init: int | None = None
    reference: str | None = None
    scales: Mapping[str, Scale] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "algorithms", tuple(self.algorithms))
        object.__setattr__(self, "problems", tuple(self.problems))
        object.__setattr__(self, "scales", {  # Python callers may give tables as dicts
            k: Scale(**v) if isinstance(v, Mapping) else v for k, v in dict(self.scales).items()})
        if self.reference is None:
            rs = [a.id for a in self.algorithms if a.name == "random_search"]
            object.__setattr__(self, "reference", rs[0] if rs else None)
        self.validate()

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d: Mapping) -> "Spec":
        """From the TOML layout of the module docstring (a parsed dict)."""
        d = dict(d)
        known = {"name", "algorithms", "problems", "budget", "seeds", "n_init", "reference",
                 "scales"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"spec: unknown field(s) {', '.join(unknown)}; "
                             f"expected {', '.join(sorted(known))}")
        for field in ("name", "algorithms", "problems", "budget"):
            if field not in d:
                raise ValueError(f"spec: missing required field {field!r}")
        seeds = d.get("seeds", 10)
        if isinstance(seeds, Mapping):
            extra = sorted(set(seeds) - {"count", "offset"})
            if extra or "count" not in seeds:
                raise ValueError(f"spec field 'seeds' must be an int or {{count, offset}}, "
                                 f"got {dict(seeds)!r}")
            count, offset = seeds["count"], seeds.get("offset", 0)
        else:
            count, offset = seeds, 0
        algs = tuple(_entry(AlgorithmSpec, a, f"algorithms[{i}]", {"label", "name", "options"})
                     for i, a in enumerate(_list(d["algorithms"], "algorithms")))
        probs = tuple(_entry(ProblemSpec, p, f"problems[{i}]",
                             {"label", "name", "dims", "noise_std", "options", "budget",
                              "n_init"})
                      for i, p in enumerate(_list(d["problems"], "problems")))
        scales = {}
        for name, s in dict(d.get("scales", {})).items():
            if not isinstance(s, Mapping) or set(s) - {"budget", "seeds", "max_dim", "n_init",
                                                       "options", "exclude"}:
                raise ValueError(f"spec field 'scales.{name}' must be a table with budget, seeds, "
                                 f"max_dim, n_init, options and/or exclude, got {s!r}")
            scales[name] = Scale(**s)
        return cls(name=d["name"], algorithms=algs, problems=probs, budget=d["budget"],
                   seeds=count, seed_offset=offset, n_init=d.get("n_init"),
                   reference=d.get("reference"), scales=scales)

    @classmethod
    def from_toml(cls, path: str) -> "Spec":
        """Reads a TOML spec file; every key (the optional ones marked)::

            name = "neuralbo_synthetic"
            budget = 2000              # evaluations per run, initial design included
            n_init = 20                # optional; default ntkbo.loop.default_n_init(problem, budget)
            reference = "random"       # optional; label the report tests against
                                       # (default: the algorithm named "random_search", if any)
            seeds = { count = 10, offset = 0 }   # or: seeds = 10

            [[algorithms]]
            label = "neural_bo"        # optional, default: name; unique; letters, digits, _ . -
            name = "neural_bo"         # ntkbo.algorithms.get(name, **options)
            options = { width = 500, depth = 1 }

            [[problems]]
            label = "ackley"           # optional, default: name
            name = "ackley"            # ntkbo.benchmarks.get(name, dim=..., noise_std=..., **options)
            dims = [10, 20, 50, 100]   # omit for a fixed-dimension problem (branin, hartmann6, ...)
            noise_std = 0.0            # default 0
            options = { noise = "relative" }     # any other keyword of ntkbo.benchmarks.get
            budget = 1000              # optional: this problem's budget (default: the spec's)
            n_init = 50                # optional: this problem's initial design (default: the spec's)

            [scales.cpu]               # optional: overrides the built-in preset of that name
            budget = 200               # cap on the budget
            seeds = 5                  # cap on the seed count
            max_dim = 10               # cap on every listed dimension
            n_init = 10                # optional: the initial design's size at this scale

            exclude = ["gp_ts"]        # optional: algorithm or problem labels not run at this scale

            [scales.cpu.options.neural_bo]   # optional: merged into that algorithm's options
            width = 100
        """
        with open(path, "rb") as fh:
            try:
                d = tomllib.load(fh)
            except tomllib.TOMLDecodeError as err:
                raise ValueError(f"{path}: not valid TOML: {err}") from None
        return cls.from_dict(d)

    def to_dict(self) -> dict:
        """The TOML layout as a JSON-able dict (``from_dict(to_dict())`` equals ``self``)."""
        return {
            "name": self.name, "budget": self.budget, "n_init": self.n_init,
            "reference": self.reference,
            "seeds": {"count": self.seeds, "offset": self.seed_offset},
            "algorithms": [{"label": a.id, "name": a.name, "options": jsonable(dict(a.options))}
                           for a in self.algorithms],
            "problems": [{"label": p.id, "name": p.name,
                          "dims": None if p.dims is None else list(p.dims),
                          "noise_std": p.noise_std, "options": jsonable(dict(p.options)),
                          "budget": p.budget, "n_init": p.n_init}
                         for p in self.problems],
            "scales": {k: s.to_dict() for k, s in self.scales.items()},
        }

    # -- validation ------------------------------------------------------------------------

    def validate(self) -> None:
        """Checks that need no JAX; ``ValueError`` naming the field. ``resolve`` checks the rest
        (names, options, dimensions, budgets) against the registries."""
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"spec field 'name' must be a non-empty string, got {self.name!r}")
        _int("budget", self.budget, 1)
        _int("seeds", self.seeds, 1)
        _int("seed_offset", self.seed_offset, 0)
        if self.n_init is not None:
            _int("n_init", self.n_init, 1)
            if self.n_init > self.budget:
                raise ValueError(f"spec field 'n_init' = {self.n_init} exceeds 'budget' = "
                                 f"{self.budget}")
        for kind, entries in (("algorithms", self.algorithms), ("problems", self.problems)):
            if not entries:
                raise ValueError(f"spec field {kind!r} is empty")
            seen = set()
            for i, e in enumerate(entries):
                if not isinstance(e.name, str):
                    raise ValueError(f"spec field '{kind}[{i}].name' must be a string")
                if not isinstance(e.id, str) or not _LABEL.match(e.id):
                    raise ValueError(f"spec field '{kind}[{i}].label' = {e.id!r} must match "
                                     f"{_LABEL.pattern}")
                if e.id in seen:
                    raise ValueError(f"spec field '{kind}[{i}].label': duplicate label {e.id!r}")
                seen.add(e.id)
                if not isinstance(e.options, Mapping):
                    raise ValueError(f"spec field '{kind}[{i}].options' must be a table")
        for i, p in enumerate(self.problems):
            if p.dims is not None:
                if not isinstance(p.dims, (list, tuple)) or not p.dims:
                    raise ValueError(f"spec field 'problems[{i}].dims' must be a non-empty list "
                                     f"of ints, got {p.dims!r}")
                for d in p.dims:
                    _int(f"problems[{i}].dims", d, 1)
                object.__setattr__(p, "dims", tuple(p.dims))
            if p.budget is not None:
                _int(f"problems[{i}].budget", p.budget, 1)
            if p.n_init is not None:
                _int(f"problems[{i}].n_init", p.n_init, 1)
            if not isinstance(p.noise_std, (int, float)) or p.noise_std < 0:
                raise ValueError(f"spec field 'problems[{i}].noise_std' must be a float >= 0, "
                                 f"got {p.noise_std!r}")
        labels = [a.id for a in self.algorithms]
        if self.reference is not None and self.reference not in labels:
            raise ValueError(f"spec field 'reference' = {self.reference!r} is not an algorithm "
                             f"label; labels: {', '.join(labels)}")
        for name, s in self.scales.items():
            for field in ("budget", "seeds", "max_dim", "n_init"):
                if getattr(s, field) is not None:
                    _int(f"scales.{name}.{field}", getattr(s, field), 1)
            problem_labels = [p.id for p in self.problems]
            for label in s.exclude:
                if label not in labels and label not in problem_labels:
                    raise ValueError(f"spec field 'scales.{name}.exclude': {label!r} is not an "
                                     f"algorithm or problem label; labels: "
                                     f"{', '.join(labels + problem_labels)}")
            for label, opts in s.options.items():
                if label not in labels:
                    raise ValueError(f"spec field 'scales.{name}.options.{label}': no algorithm "
                                     f"has that label; labels: {', '.join(labels)}")
                if not isinstance(opts, Mapping):
                    raise ValueError(f"spec field 'scales.{name}.options.{label}' must be a table")

    # -- expansion -------------------------------------------------------------------------

    def scale(self, name: str) -> Scale:
        """The ``Scale`` called ``name``: the built-in preset with this spec's overrides."""
        names = sorted(set(SCALES) | set(self.scales))
        if name not in names:
            raise ValueError(f"unknown scale {name!r}; choose one of: {', '.join(names)}")
        base = SCALES.get(name, Scale())
        over = self.scales.get(name)
        if over is None:
            return base
        return dataclasses.replace(base, **{k: v for k, v in over.to_dict().items()
                                            if v is not None})

    def resolve(self, scale: str = "full") -> list["Cell"]:
        """The cells of this spec at ``scale``, sorted by ``cell_id``.

        Builds each problem (``ntkbo.benchmarks.get``) and checks each algorithm's options against
        its factory; ``ValueError`` naming the field on an unknown name, a bad option, a dimension
        the problem does not have, or a (scaled) budget below ``n_init``.
        """
        import jax

        from ntkbo import algorithms, loop

        sc = self.scale(scale)
        seeds = min(self.seeds, sc.seeds or self.seeds)
        dtype = "float64" if jax.config.read("jax_enable_x64") else "float32"
        algorithm_names = set(algorithms.names())
        for i, a in enumerate(self.algorithms):
            if a.name not in algorithm_names:
                raise ValueError(f"spec field 'algorithms[{i}].name': unknown algorithm {a.name!r};"
                                 f" choose one of: {', '.join(sorted(algorithm_names))}")
        cells = []
        for i, p in enumerate(self.problems):
            if p.id in sc.exclude:
                continue
            dims = (None,) if p.dims is None else p.dims
            if sc.max_dim is not None and p.dims is not None:
                dims = tuple(dict.fromkeys(min(d, sc.max_dim) for d in p.dims))
            for dim in dims:
                try:
                    problem = _problem(p, dim)
                except (ValueError, TypeError) as err:
                    raise ValueError(f"spec field 'problems[{i}]' ({p.id!r}, dim {dim}): "
                                     f"{err}") from None
                full_budget = self.budget if p.budget is None else p.budget
                budget = min(full_budget, sc.budget or full_budget)
                given_n_init = next(
                    (v for v in (sc.n_init, p.n_init, self.n_init) if v is not None), None)
                for j, a in enumerate(self.algorithms):
                    if a.id in sc.exclude:
                        continue
                    if a.id in sc.options:  # this scale's options for that algorithm
                        a = dataclasses.replace(a, options=merge(a.options, sc.options[a.id]))
                    # TOML's words for a boolean option ("false", "no", ...) parsed, not truthy
                    a = dataclasses.replace(a, options=algorithms.from_text(a.name, a.options))
                    # unset: the design of the algorithm's preset (ntkbo.algorithms.design), else
                    # the library's default
                    preset = a.options.get("preset")
                    preset = preset if isinstance(preset, str) else None
                    n_init = given_n_init
                    if n_init is None:
                        n_init = loop.default_n_init(problem, budget, SimpleNamespace(
                            n_init=algorithms.design(a.name, preset)))
                    # the preset's design sampler, which Cell.build's algorithm carries
                    sampler = algorithms.design_sampler(a.name, preset)
                    if budget < n_init:
                        raise ValueError(f"spec field 'budget' = {budget} (scale {scale!r}) is "
                                         f"below n_init = {n_init} for problem {p.id!r}")
                    unstable = _unstable(a.options)
                    if unstable is not None:
                        path, value = unstable
                        raise ValueError(
                            f"spec field 'algorithms[{j}]' ({a.id!r}): option {path} is "
                            f"{jsonable(value)!r}, which has no stable description (a closure, a "
                            "lambda or an optax transformation is recorded by its code, not its "
                            "values); a study names each cell by a digest of its options and "
                            "could take one such value for another when it resumes: give a name "
                            "(training.optimizer = \"adam\" with training.learning_rate) or a "
                            "function defined at a module's top level")
                    try:
                        given = algorithms.problem_options(a.name, problem, **a.options)
                        # a dict's jsonable form is a dict
                        options = cast(dict, jsonable(algorithms.resolved_options(a.name, **given)))
                    except (ValueError, TypeError) as err:
                        raise ValueError(f"spec field 'algorithms[{j}]' ({a.id!r}) on problem "
                                         f"{p.id!r}: {err}") from None
                    q = options.get("q", 1) if isinstance(options, Mapping) else 1
                    if isinstance(q, int) and q > 1 and (budget - n_init) % q:
                        raise ValueError(
                            f"spec field 'algorithms[{j}]' ({a.id!r}) on problem {p.id!r}: "
                            f"budget - n_init = {budget} - {n_init} (scale {scale!r}) must be a "
                            f"multiple of q = {q} (every round evaluates q points)")
                    d = problem.dim
                    defn = _definition(a, p, d, budget, n_init, seeds, self.seed_offset, dtype,
                                       options, sampler)
                    cells.append(Cell(cell_id=f"{a.id}__{p.id}__d{d}", algorithm=a, problem=p,
                                      dim=d, budget=budget, n_init=n_init, seeds=seeds,
                                      seed_offset=self.seed_offset, dtype=dtype, options=options,
                                      digest=digest(defn), design_sampler=sampler))
        return sorted(cells, key=lambda c: c.cell_id)


def load(spec) -> Spec:
    """A ``Spec`` from a ``Spec`` (returned as is), a TOML path or a dict (TOML layout)."""
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, Mapping):
        return Spec.from_dict(spec)
    return Spec.from_toml(str(spec))


def _int(field, v, lo):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
        raise ValueError(f"spec field {field!r} must be an int >= {lo}, got {v!r}")


def _list(v, field):
    if not isinstance(v, (list, tuple)):
        raise ValueError(f"spec field {field!r} must be a list of tables, got {type(v).__name__}")
    return v


def _entry(cls, d, field, allowed):
    if isinstance(d, cls):
        return d
    if not isinstance(d, Mapping):
        raise ValueError(f"spec field {field!r} must be a table, got {d!r}")
    extra = sorted(set(d) - allowed)
    if extra:
        raise ValueError(f"spec field {field!r}: unknown key(s) {', '.join(extra)}; expected "
                         f"{', '.join(sorted(allowed))}")
    if "name" not in d:
        raise ValueError(f"spec field {field!r} needs a 'name'")
    d = dict(d)
    if cls is ProblemSpec and d.get("dims") is not None:
        dims = d["dims"]
        d["dims"] = tuple(dims) if isinstance(dims, (list, tuple)) else dims
    return cls(**d)
