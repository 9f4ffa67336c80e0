"""A declarative experiment: algorithms x problems x dimensions x seeds, at a named scale.

A ``Spec`` is a frozen dataclass, built in Python or read from TOML (``Spec.from_toml``, whose
docstring shows every key of the file).

Scales (``SCALES``, the ``Scale`` class) shrink a spec without editing it: ``full`` runs it as
written, ``cpu`` and ``smoke`` cap the budget, the seed count and the listed dimensions.

Seeds (the paired design): seed ``i`` (``0 <= i < count``) of every cell runs with key
``jax.random.PRNGKey(offset + i)``, the same for every algorithm and problem, so algorithms on a
problem share their initial designs (``ntkbo.loop.initial_design``) and noise draws and can be
compared seed by seed. A capped seed count keeps the first seeds.

Problems are registered ones (``ntkbo.benchmarks.get``) or the user's own (``ProblemSpec``'s
docstring): ``Problem`` objects, JAX functions with their bounds, factories, or
``module:attribute`` names; a user's problem enters its cells' definitions by its
``fingerprint`` (its box, noise, optimum and a hash of its code, ``code_hash``, or a given
``version``), so a study resumes only on the same problem.

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
    ``dims=None``: the problem's own (fixed) dimension.

    A problem of the user's own (``is_user``) instead of a registered one:

    - ``problem``: a Python object (Python specs only): a ``Problem`` (``ntkbo.benchmarks.Problem``,
      ``ntkbo.benchmarks.numpy_problem(...)``, or any object with ``fn`` and ``bounds``), a JAX
      function of one point ``x (d,) -> ()`` with ``bounds``, or a factory (below);
    - ``name = "module:attribute"``: the same, imported (``import module``; the spec file's folder
      and the working directory are searched after ``sys.path``). The label defaults to the name
      with ``:`` replaced by ``.``.

    An object without ``bounds`` that ``bounds`` does not complete is a factory: it is called as
    ``factory(**options)``, with ``dim=`` each of ``dims`` when ``dims`` is given, and returns a
    problem. ``noise_std > 0`` replaces the problem's own noise level (0 keeps it). ``version``:
    a string that stands for the function's code in the problem's fingerprint (``fingerprint``),
    for a change of the code that does not change its values.
    """

    name: str
    dims: tuple[int, ...] | None = None
    noise_std: float = 0.0
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    label: str | None = None
    budget: int | None = None  # None: the spec's
    n_init: int | None = None  # None: the spec's
    problem: Any = dataclasses.field(default=None, compare=False)  # a user's object
    bounds: Any = None  # (2, d), for a user's JAX function of one point
    version: str | None = None  # stands for the user function's code in the fingerprint
    # the folder of the TOML file the entry was read from (where ``module`` may also be found)
    root: str | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.label is None and isinstance(self.name, str) and ":" in self.name:
            object.__setattr__(self, "label", self.name.replace(":", "."))
        super().__post_init__()
        if self.bounds is not None:  # hashable and comparable: nested tuples
            b = self.bounds.tolist() if hasattr(self.bounds, "tolist") else self.bounds
            if isinstance(b, (list, tuple)):
                object.__setattr__(self, "bounds", tuple(
                    tuple(r) if isinstance(r, (list, tuple)) else r for r in b))

    @property
    def is_user(self) -> bool:
        """Whether this is a user's problem (an object, or a ``module:attribute`` name)."""
        return is_user(self)


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
    fingerprint: Mapping[str, Any] | None = None  # a user's problem's (``fingerprint``)

    def definition(self) -> dict:
        """The JSON-able definition the ``digest`` is taken of."""
        return _definition(self.algorithm, self.problem, self.dim, self.budget, self.n_init,
                           self.seeds, self.seed_offset, self.dtype, self.options,
                           self.design_sampler, self.fingerprint)

    def build(self):
        """``(algo, problem)``: the ``ntkbo.Algorithm`` and ``ntkbo.benchmarks.Problem`` of the cell."""
        from ntkbo import algorithms

        # a user's problem without dims is built as resolve built it: its factory without dim
        own = is_user(self.problem) and self.problem.dims is None
        problem = _problem(self.problem, None if own else self.dim)
        algo = algorithms.for_problem(self.algorithm.name, problem,
                                       **dict(self.algorithm.options))
        return algo, problem


def _definition(alg, prob, dim, budget, n_init, seeds, offset, dtype, options,
                design_sampler=None, fingerprint=None) -> dict:
    """The cell's definition; a design sampler other than the default scrambled Sobol enters it
    (``"design_sampler"``), the default does not, so cells stored before presets carried one
    keep their hashes. A user's problem enters with its ``fingerprint`` (``problem.fingerprint``)
    and its effective noise level; a registered problem's entry is unchanged."""
    out = {
        "algorithm": {"label": alg.id, "name": alg.name, "options": dict(options)},
        "problem": {"label": prob.id, "name": prob.name, "dim": dim, "noise_std": prob.noise_std,
                    "options": jsonable(dict(prob.options))},
        "budget": budget, "n_init": n_init, "seeds": seeds, "seed_offset": offset, "dtype": dtype,
    }
    if fingerprint is not None:
        out["problem"]["fingerprint"] = dict(fingerprint)
        out["problem"]["noise_std"] = fingerprint["noise_std"]
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

    if is_user(p):
        return user_problem(p, dim)
    return _problem_cached(p.name, dim, p.noise_std, json.dumps(jsonable(dict(p.options)),
                                                                sort_keys=True),
                           bool(jax.config.read("jax_enable_x64")))


# ---------------------------------------------------------------------------------------------
# problems of the user's own: objects, JAX functions with bounds, ``module:attribute`` names


def is_user(p: ProblemSpec) -> bool:
    """Whether ``p`` names a user's problem: an object (``p.problem``) or a ``module:attribute``
    name (no registered problem has a ``:`` in its name)."""
    return p.problem is not None or (isinstance(p.name, str) and ":" in p.name)


def _source(p: ProblemSpec) -> str:
    """Where a user's problem comes from, in words: its ``module:attribute`` or ``python object``."""
    return p.name if p.problem is None else "python object"


def import_attribute(path: str, root: str | None = None, field: str = "problem"):
    """The object ``module:attribute`` names (``attribute`` may be dotted). ``module`` is imported
    from ``sys.path``; if it is not found there, from ``root`` (a spec file's folder) and then the
    working directory (whichever holds ``module``'s file or package is appended to ``sys.path``,
    as running a script from there would). ``ValueError`` naming ``field`` otherwise."""
    import importlib
    import os
    import sys

    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"spec field {field!r}: {path!r} must be 'module:attribute'")
    top = module_name.split(".")[0]
    try:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name != top:
                raise
            here = [d for d in (root, os.getcwd()) if d]
            found = [d for d in here if os.path.exists(os.path.join(d, top + ".py"))
                     or os.path.isdir(os.path.join(d, top))]
            if not found:
                raise ValueError(
                    f"spec field {field!r}: no module {module_name!r} on sys.path, nor in "
                    f"{' or '.join(repr(os.path.abspath(d)) for d in dict.fromkeys(here))}; "
                    "put its folder on PYTHONPATH or run from that folder") from None
            if os.path.abspath(found[0]) not in map(os.path.abspath, sys.path):
                sys.path.append(os.path.abspath(found[0]))
            importlib.invalidate_caches()
            module = importlib.import_module(module_name)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 (the user's module failed to import: say so, named)
        raise ValueError(f"spec field {field!r}: importing {module_name!r} failed: "
                         f"{type(err).__name__}: {err}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"spec field {field!r}: module {module_name!r} has no attribute "
                             f"{attr!r}")
        obj = getattr(obj, part)
    return obj


#: Resolved user problems: (id of the object, dim, noise, options, bounds, x64) -> (object,
#: problem). The object is kept so that its id is not reused while the entry lives.
_USER: dict = {}


def user_problem(p: ProblemSpec, dim: int | None = None, field: str = "problem"):
    """The ``ntkbo.benchmarks.Problem`` of a user's problem entry at ``dim`` (``None``: its own),
    its bounds in the default float dtype, its ``noise_std`` replaced when ``p.noise_std > 0``
    (``ProblemSpec`` docstring). ``ValueError`` naming ``field`` for anything that is not a
    problem, a JAX function with bounds, or a factory of one."""
    import jax

    obj = p.problem if p.problem is not None else import_attribute(p.name, p.root, field)
    options = dict(p.options)
    x64 = bool(jax.config.read("jax_enable_x64"))
    key = (id(obj), dim, float(p.noise_std), json.dumps(jsonable(options), sort_keys=True),
           p.bounds, x64, p.id)
    hit = _USER.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    problem = _as_problem(obj, p, dim, options, field)
    if len(_USER) >= 256:
        _USER.pop(next(iter(_USER)))
    _USER[key] = (obj, problem)
    return problem


def _as_problem(obj: Any, p: ProblemSpec, dim, options: dict, field: str):
    """``user_problem``'s conversion (no cache)."""
    import jax.numpy as jnp

    from ntkbo.benchmarks import Problem
    from ntkbo.validation import check_bounds, check_problem

    where = f"spec field {field!r} ({p.id!r}, {_source(p)})"
    made = False
    if not _problem_like(obj) and p.bounds is None and callable(obj):  # a factory
        kwargs = dict(options) if dim is None else dict(options, dim=dim)
        try:
            obj = obj(**kwargs)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"{where}: {getattr(obj, '__name__', type(obj).__name__)} has no bounds, so it "
                f"was called as a factory of a problem, with {kwargs}, which failed "
                f"({type(err).__name__}: {err}); a JAX function of one point needs its bounds: "
                "ProblemSpec(label, problem=fn, bounds=...), or bounds = [[...], [...]] in "
                "TOML") from None
        made = True
    elif options:
        raise ValueError(f"{where}: options {sorted(options)} are given, but only a registered "
                         "problem or a factory (a function returning a problem) takes options")
    if _problem_like(obj):
        if p.bounds is not None:
            raise ValueError(f"{where}: bounds are given, but the problem has its own")
        try:
            check_problem(obj, field)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if not isinstance(obj, Problem):  # any object with the drivers' Problem attributes
            obj = Problem(name=str(getattr(obj, "name", p.id)), fn=obj.fn, bounds=obj.bounds,
                          optimum=getattr(obj, "optimum", None),
                          noise_std=getattr(obj, "noise_std", 0.0),
                          constraints=getattr(obj, "constraints", None),
                          constraint_noise_std=getattr(obj, "constraint_noise_std", 0.0))
    elif callable(obj) and p.bounds is not None and not made:  # a JAX function of one point
        obj = Problem(name=p.id, fn=cast(Any, obj),
                      bounds=check_bounds(p.bounds, f"{field}.bounds"))
    else:
        raise ValueError(
            f"{where}: {type(obj).__name__} is not a problem: give an ntkbo.benchmarks.Problem "
            "(Problem(name=..., fn=..., bounds=...) or numpy_problem(fn, bounds)), a JAX "
            "function of one point with bounds, or a function returning a problem")
    try:
        bounds = check_bounds(obj.bounds, f"{field}.bounds")
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    obj = obj.replace(bounds=jnp.asarray(bounds, jnp.result_type(float)))
    if p.noise_std > 0:
        obj = obj.replace(noise_std=p.noise_std)
    if dim is not None and obj.dim != dim:
        raise ValueError(f"{where}: dims lists {dim}, but the problem has dimension {obj.dim}"
                         + ("" if made else " (a problem object has one dimension: leave out "
                            "dims, or give a factory taking dim)"))
    return obj


def _problem_like(obj) -> bool:
    return callable(getattr(obj, "fn", None)) and getattr(obj, "bounds", None) is not None


#: Modules whose functions are identified by name in a fingerprint, not by their code: a new
#: version of a library (or of ntkbo's own wrappers, such as ``numpy_problem``'s) does not make
#: a user's problem another problem. What such a function closes over is still followed (the
#: wrapped user function).
_LIBRARIES = ("ntkbo", "jax", "jaxlib", "numpy", "scipy", "flax", "optax", "builtins",
              "functools", "math")


def code_hash(*objects) -> str:
    """SHA-256 (hex) of the code of ``objects`` (functions, problems' ``fn``): each function's
    bytecode, constants and names (not its line numbers, nor its own name or module: the same
    function moved or renamed is the same), its defaults, the values it closes over, and the
    functions and values of its own module that it reads as globals, followed recursively;
    ``functools.partial``, bound methods, ``jax.jit``-wrapped functions (``__wrapped__``),
    arrays (dtype, shape, bytes), containers and plain objects by their contents. A function of
    a library (``_LIBRARIES``) counts by its qualified name and what it closes over.

    The same code and values give the same hash in every process (no addresses, no ``hash()``).
    Bytecode differs between Python versions: a study to be resumed under another Python gives
    its problems a ``version``."""
    h = hashlib.sha256()
    seen: dict = {}  # id -> object, held so that no id is reused while hashing
    for obj in objects:
        _feed(h, obj, seen, 0)
    return h.hexdigest()


def _feed(h, v, seen: dict, depth: int) -> None:
    import types

    def tag(kind: str, data: str | bytes = b"") -> None:
        h.update(kind.encode() + b"\0" + (data.encode() if isinstance(data, str) else data)
                 + b"\0")

    if v is None or isinstance(v, (bool, int, float, complex, str, bytes, np.generic)):
        tag(type(v).__name__, repr(v))
        return
    if depth > 40:
        tag("deep", type(v).__qualname__)
        return
    if id(v) in seen:
        tag("again", type(v).__qualname__)
        return
    if isinstance(v, types.CodeType):
        tag("code", v.co_code)
        tag("names", repr((v.co_names, v.co_varnames, v.co_freevars, v.co_cellvars)))
        for c in v.co_consts:
            _feed(h, c, seen, depth + 1)
        return
    seen[id(v)] = v
    if isinstance(v, types.ModuleType):
        tag("module", v.__name__)
    elif isinstance(v, type):
        tag("type", f"{v.__module__}.{v.__qualname__}")
    elif isinstance(v, types.FunctionType):
        module = v.__module__ or ""
        if module.split(".")[0] in _LIBRARIES:  # a library's: its name stands for its code
            tag("function", f"{module}.{v.__qualname__}")
        else:  # the user's: its code, wherever it lives and whatever it is called
            tag("function")
            _feed(h, v.__code__, seen, depth + 1)
            _feed(h, v.__defaults__, seen, depth + 1)
            _feed(h, v.__kwdefaults__, seen, depth + 1)
            for name in sorted(_global_names(v.__code__)):
                if name in v.__globals__:
                    g = v.__globals__[name]
                    inner = getattr(g, "__wrapped__", g)  # a jitted helper: its function
                    own = isinstance(inner, types.FunctionType) and inner.__module__ == module
                    if own or not callable(g) and not isinstance(g, types.ModuleType):
                        tag("global", name)
                        _feed(h, g, seen, depth + 1)
        for cell in v.__closure__ or ():
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                tag("empty")
                continue
            _feed(h, content, seen, depth + 1)
    elif isinstance(v, functools.partial):
        tag("partial")
        for a in (v.func, v.args, v.keywords):
            _feed(h, a, seen, depth + 1)
    elif isinstance(v, types.MethodType):
        tag("method")
        _feed(h, v.__func__, seen, depth + 1)
        _feed(h, v.__self__, seen, depth + 1)
    elif hasattr(v, "shape") and hasattr(v, "dtype") and not callable(v):
        import jax
        import jax.numpy as jnp

        if jnp.issubdtype(v.dtype, jax.dtypes.prng_key):  # a typed key: its key data
            v = jax.random.key_data(v)
        a = np.asarray(v)
        tag("array", f"{a.dtype.str}{a.shape}")
        tag("bytes", np.ascontiguousarray(a).tobytes())
    elif isinstance(v, (list, tuple)):
        tag(type(v).__qualname__, str(len(v)))
        for a in v:
            _feed(h, a, seen, depth + 1)
    elif isinstance(v, (set, frozenset)):
        tag("set", str(len(v)))
        for a in sorted(v, key=repr):
            _feed(h, a, seen, depth + 1)
    elif isinstance(v, Mapping):
        tag("mapping", str(len(v)))
        for k in sorted(v, key=repr):
            _feed(h, k, seen, depth + 1)
            _feed(h, v[k], seen, depth + 1)
    elif hasattr(v, "__wrapped__"):  # jax.jit(f), functools.wraps
        tag("wrapped", type(v).__qualname__)
        _feed(h, v.__wrapped__, seen, depth + 1)
    elif dataclasses.is_dataclass(v):
        tag("dataclass", f"{type(v).__module__}.{type(v).__qualname__}")
        for f in dataclasses.fields(v):
            tag("field", f.name)
            _feed(h, getattr(v, f.name), seen, depth + 1)
    elif hasattr(v, "__dict__"):
        tag("object", f"{type(v).__module__}.{type(v).__qualname__}")
        _feed(h, dict(vars(v)), seen, depth + 1)
    else:
        tag("repr", re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v)))


def _global_names(code) -> set:
    """The names ``code`` and the code objects nested in it read (globals among them)."""
    import types

    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def fingerprint(problem, p: ProblemSpec) -> dict:
    """What identifies a user's problem in its cells' definitions (hence their ``digest``): its
    ``source`` (``module:attribute`` or ``python object``), ``name``, ``dim``, ``bounds``,
    effective ``noise_std``, ``optimum``, ``n_constraints`` and ``constraint_noise_std``, and
    ``code`` (``code_hash`` of ``fn`` and ``constraints``) or, when the entry gives one, its
    ``version`` instead. A study refuses to resume when any of them changed (the runner names
    the problem and the field)."""
    out = {
        "source": _source(p), "name": str(problem.name), "dim": int(problem.dim),
        "bounds": jsonable(np.asarray(problem.bounds)),
        "noise_std": jsonable(np.asarray(problem.noise_std).tolist()),
        "optimum": None if problem.optimum is None else jsonable(float(problem.optimum)),
        "n_constraints": int(problem.n_constraints),
        "constraint_noise_std": jsonable(np.asarray(problem.constraint_noise_std).tolist()),
    }
    if p.version is not None:
        out["version"] = str(p.version)
    else:
        out["code"] = code_hash(problem.fn, problem.constraints)
    return out


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
        object.__setattr__(self, "problems", tuple(
            _problem_entry(p, f"problems[{i}]") for i, p in enumerate(self.problems)))
        object.__setattr__(self, "scales", {  # Python callers may give tables as dicts
            k: Scale(**v) if isinstance(v, Mapping) else v for k, v in dict(self.scales).items()})
        if self.reference is None:
            rs = [a.id for a in self.algorithms if a.name == "random_search"]
            object.__setattr__(self, "reference", rs[0] if rs else None)
        self.validate()

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d: Mapping, root: str | None = None) -> "Spec":
        """From the TOML layout of the module docstring (a parsed dict). ``root``: the folder
        ``module:attribute`` problem names are also looked for in (``from_toml``: the file's)."""
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
        probs = tuple(_problem_entry(p, f"problems[{i}]", root=root)
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

            [[problems]]               # a problem of your own, imported (ProblemSpec docstring)
            name = "mysim:problem"     # module:attribute, a Problem (or numpy_problem) object;
                                       # the module is also looked for next to this file
            label = "mysim"            # optional, default: "mysim.problem"
            version = "2"              # optional: stands for the code in the fingerprint
            # bounds = [[0, 0], [1, 1]]  with a JAX function of one point instead of a Problem

        ``problems = ["branin", "mysim:problem"]`` is short for tables with only a name.

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
        import os

        return cls.from_dict(d, root=os.path.dirname(os.path.abspath(path)))

    def to_dict(self) -> dict:
        """The TOML layout as a JSON-able dict (``from_dict(to_dict())`` equals ``self`` unless
        a problem is a Python object, which is recorded as ``"object"``: its type)."""
        return {
            "name": self.name, "budget": self.budget, "n_init": self.n_init,
            "reference": self.reference,
            "seeds": {"count": self.seeds, "offset": self.seed_offset},
            "algorithms": [{"label": a.id, "name": a.name, "options": jsonable(dict(a.options))}
                           for a in self.algorithms],
            "problems": [_problem_dict(p) for p in self.problems],
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
            if p.version is not None and not isinstance(p.version, str):
                raise ValueError(f"spec field 'problems[{i}].version' must be a string, got "
                                 f"{p.version!r}")
            if p.bounds is not None and not is_user(p):
                raise ValueError(f"spec field 'problems[{i}]' ({p.id!r}): bounds are for a "
                                 "function of your own (a 'module:attribute' name or a problem "
                                 "object), not a registered problem (its own box: "
                                 "options = { bounds = ... })")
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
                fp = None
                if is_user(p):  # errors name the field themselves
                    problem = user_problem(p, dim, f"problems[{i}]")
                    try:  # a numpy function given as a JAX one: refused before anything runs
                        loop.check_traceable(problem)
                    except (ValueError, TypeError) as err:
                        raise ValueError(f"spec field 'problems[{i}]' ({p.id!r}): {err}"
                                         ) from None
                    fp = fingerprint(problem, p)
                else:
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
                                       options, sampler, fp)
                    cells.append(Cell(cell_id=f"{a.id}__{p.id}__d{d}", algorithm=a, problem=p,
                                      dim=d, budget=budget, n_init=n_init, seeds=seeds,
                                      seed_offset=self.seed_offset, dtype=dtype, options=options,
                                      digest=digest(defn), design_sampler=sampler,
                                      fingerprint=fp))
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


#: The keys of a ``[[problems]]`` table.
_PROBLEM_KEYS = {"label", "name", "dims", "noise_std", "options", "budget", "n_init", "bounds",
                 "version"}


def _problem_entry(d, field, root=None) -> ProblemSpec:
    """A ``ProblemSpec`` from a table (``_PROBLEM_KEYS``), a name (registered or
    ``module:attribute``), a ``ProblemSpec``, or a problem object (its label: its ``name``)."""
    if isinstance(d, ProblemSpec):
        return d
    if isinstance(d, str):
        return ProblemSpec(name=d, root=root)
    if isinstance(d, Mapping):
        if "object" in d:
            raise ValueError(f"spec field {field!r} records a Python object ({d['object']}), "
                             "which a file cannot name: give it as 'module:attribute'")
        p = _entry(ProblemSpec, d, field, _PROBLEM_KEYS)
        return dataclasses.replace(p, root=root) if root is not None else p
    if _problem_like(d):
        name = getattr(d, "name", None)
        if not isinstance(name, str) or not name:
            raise ValueError(f"spec field {field!r}: the problem object has no name; give it as "
                             "ProblemSpec(label, problem=...)")
        return ProblemSpec(name=name, problem=d)
    raise ValueError(f"spec field {field!r} must be a table, a problem name, a "
                     "'module:attribute' name or a problem object (ntkbo.benchmarks.Problem); a "
                     "JAX function needs its bounds: ProblemSpec(label, problem=fn, bounds=...)"
                     f", got {type(d).__name__}")


def _problem_dict(p: ProblemSpec) -> dict:
    """``p`` in the TOML layout (``Spec.to_dict``); the user's-problem keys only when set."""
    out = {"label": p.id, "name": p.name, "dims": None if p.dims is None else list(p.dims),
           "noise_std": p.noise_std, "options": jsonable(dict(p.options)),
           "budget": p.budget, "n_init": p.n_init}
    if p.bounds is not None:
        out["bounds"] = jsonable(p.bounds)
    if p.version is not None:
        out["version"] = p.version
    if p.problem is not None:
        out["object"] = f"{type(p.problem).__module__}.{type(p.problem).__qualname__}"
    return out


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
