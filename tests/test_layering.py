"""Layers point down only: the import graph of ``ntkbo``, read statically, and what importing
``ntkbo`` does to the process.

The graph: ``ast`` over every ``ntkbo/**/*.py``; each ``import`` / ``from ... import`` of an
``ntkbo`` module (relative ones resolved against the importing module's package) is an edge to
the most specific module it names (``from ntkbo import gp`` -> ``ntkbo.gp``;
``from ntkbo.gp import fit`` -> ``ntkbo.gp``). Importing ``a.b.c`` also runs the ``__init__`` of
package ``a.b``, so an edge to a module adds edges to its enclosing sub-packages, except the
importer's own enclosing packages (those run before the importer does, whatever it imports); so
``ntkbo`` itself, the public surface that imports everything, is a target only where a module
names it (``import ntkbo``). Each edge is *module-level* (runs on import, class bodies included)
or *function-level* (inside a ``def`` or ``lambda``: runs when called; a package's lazy
``__getattr__`` is one). The tests check both: a function-level import is a dependency all the
same, and a cycle hidden in a function is still a cycle (it was how every cycle here lived).
``if TYPE_CHECKING:`` blocks are left out (they never run).
"""

import ast
import functools
import importlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "ntkbo")


def _modules() -> dict[str, str]:
    """Dotted module name -> file, for every module of the package (``__init__`` as the package)."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The most specific module of the package that ``name`` names (None: not in ntkbo)."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in MODULES:
            return ".".join(parts)
        parts.pop()
    return None


def _is_type_checking(node) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
        or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(module: str, node, package: str) -> list[str]:
    """The modules an import statement ``node`` of ``module`` names."""
    if isinstance(node, ast.Import):
        return [t for a in node.names if (t := _resolve(a.name))]
    if node.level:  # relative: from the importing module's package, up level - 1 packages
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = []
    for a in node.names:
        full = f"{source}.{a.name}"
        t = full if full in MODULES else _resolve(source)
        if t:
            out.append(t)
    return out


def _imports(module: str, path: str) -> list[tuple[str, bool, int]]:
    """``(target, function_level, line)`` for each import edge of ``module`` (docstring above)."""
    tree = ast.parse(open(path).read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in _targets(module, child, package):
                    found.append((t, in_function, child.lineno))
            visit(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    out = []
    for target, in_function, line in found:
        parts = target.split(".")
        for i in range(2, len(parts)):  # the enclosing sub-packages the import runs
            package_i = ".".join(parts[:i])
            if package_i in MODULES and not (module + ".").startswith(package_i + "."):
                out.append((package_i, in_function, line))
        out.append((target, in_function, line))
    return [(t, f, line) for t, f, line in out if t != module]


@functools.lru_cache(maxsize=1)
def graph() -> dict[str, list[tuple[str, bool, int]]]:
    return {m: _imports(m, p) for m, p in MODULES.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(MODULES) + 100))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _edges(function_level: bool) -> dict[str, set[str]]:
    return {m: {t for t, f, _ in e if function_level or not f} for m, e in graph().items()}


def _explain(component, function_level) -> str:
    lines = []
    for m in component:
        for t, f, line in graph()[m]:
            if t in component and (function_level or not f):
                lines.append(f"{m}:{line} -> {t} ({'function' if f else 'module'}-level)")
    return "\n".join(sorted(set(lines)))


def test_the_graph_sees_the_package():
    """A guard for the tests below (an empty graph would pass them): the modules and a few edges
    known to exist, of both levels and through a relative-free ``from`` import."""
    g = graph()
    assert len(MODULES) > 50 and "ntkbo.algorithms.neural_bo" in MODULES
    assert ("ntkbo.gp", False) in {(t, f) for t, f, _ in g["ntkbo.algorithms.gp_bo"]}
    assert ("ntkbo.experiments", True) in {(t, f) for t, f, _ in g["ntkbo"]}  # the lazy one
    # an edge to a module runs its sub-package's __init__ too
    assert "ntkbo.kernels" in {t for t, _, _ in g["ntkbo.nets"]}


def test_no_import_cycle_among_module_level_imports():
    """Mutation caught (checked): ``from ntkbo import nets`` at the top of ``kernels/mlp.py``
    instead of ``kernels.network`` (``nets`` -> ``kernels`` -> ``kernels.mlp`` -> ``nets``)."""
    found = cycles(_edges(function_level=False))
    assert not found, "\n\n".join(_explain(c, False) for c in found)


def test_no_import_cycle_counting_function_level_imports():
    """The same with the imports inside functions: they ran when called, and every cycle of this
    package once hid there (the ask/tell saves reading the study runner's provenance helpers,
    the runner importing ``ntkbo`` while ``ntkbo`` imported the runner, ``benchmarks.registry``
    and ``benchmarks.suites`` calling each other, ``kernels.mlp`` importing ``nets``).
    Mutation caught (checked): ``import ntkbo`` back in ``experiments/spec.py``'s ``Cell.build``
    (``ntkbo`` -> ``ntkbo.experiments`` -> ``spec`` -> ``ntkbo``)."""
    found = cycles(_edges(function_level=True))
    assert not found, "\n\n".join(_explain(c, True) for c in found)


#: The layers, lowest first (the design's order: kernels -> gp -> acquisition/optimize ->
#: algorithms -> loop -> ask_tell/space -> experiments -> the ``ntkbo`` facade -> cli). A module
#: may import its own layer and those below, never one above. The problems (``benchmarks``)
#: need no model, and no model or driver needs them (the drivers take any ``Problem``:
#: ``ntkbo.objective``).
LAYERS = [
    ("ntkbo.base", "ntkbo.parts", "ntkbo.validation", "ntkbo.provenance", "ntkbo.lapack_threads",
     "ntkbo.linalg", "ntkbo.qmc", "ntkbo.pde", "ntkbo.objective", "ntkbo.search_space", "ntkbo.data",
     "ntkbo.cache", "ntkbo.compiling", "ntkbo.programs", "ntkbo.files"),
    ("ntkbo.kernels", "ntkbo.benchmarks"),
    ("ntkbo.nets",),
    ("ntkbo.gp",),
    ("ntkbo.feature_gp",),
    ("ntkbo.acquisition", "ntkbo.optimize"),
    ("ntkbo.algorithms",),
    ("ntkbo.loop",),
    ("ntkbo.ask_tell", "ntkbo.space"),
    ("ntkbo.experiments",),
    ("ntkbo",),
    ("ntkbo.cli",),
]


def _layer(module: str) -> int:
    """The layer of ``module``: that of its longest prefix listed in ``LAYERS``."""
    best = None
    for rank, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (
                    best is None or len(name) > len(best[1])):
                best = (rank, name)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def test_every_import_points_down():
    """Every edge, module- or function-level, goes to the importer's layer or below.
    Mutation caught (checked): ``ntkbo.ask_tell`` reading ``versions`` from
    ``ntkbo.experiments.runner`` again (layer 7 -> 8). (``ntkbo.loop`` importing the problems
    would point down, so the next test checks that by name.)"""
    up = [f"{m}:{line} -> {t}" for m, e in graph().items() for t, _, line in e
          if _layer(t) > _layer(m)]
    assert not up, "\n".join(sorted(up))


def test_the_drivers_import_no_problem_catalogue():
    """``ntkbo.loop`` takes any object with the ``Problem`` protocol (``ntkbo.objective``) and
    imports nothing of ``ntkbo.benchmarks``. Mutation caught (checked): ``violation`` imported
    from ``ntkbo.benchmarks.problem`` in ``loop.py``."""
    targets = {t for t, _, _ in graph()["ntkbo.loop"]}
    assert not {t for t in targets if t == "ntkbo.benchmarks" or t.startswith("ntkbo.benchmarks.")}


# ---- Algorithm modules do not import each other ---------------------------------------------------

def _algorithm_modules() -> set[str]:
    """The modules that define a registered algorithm's factory (``ntkbo.algorithms``' registry),
    read at run time so that a new algorithm is covered without editing this test."""
    A = importlib.import_module("ntkbo.algorithms")
    out = set()
    for name in A.names():
        f = A._FACTORIES[name]
        f = getattr(f, "__wrapped__", f)
        out.add(getattr(f, "func", f).__module__)
    return out


def _algorithm_cross_imports() -> set[tuple[str, str]]:
    algos = _algorithm_modules()
    return {(m, t) for m in algos for t, _, _ in graph()[m] if t in algos and t != m}


def test_no_algorithm_module_imports_another():
    """The design's rule: shared numerics live in their layer (networks and their training in
    ``ntkbo.nets``, factor algebra in ``ntkbo.gp`` / ``ntkbo.linalg``, candidates in
    ``ntkbo.optimize``, input maps in ``ntkbo.algorithms.observations``), and algorithm modules
    never import each other. Mutation caught (checked): ``from ntkbo.algorithms.sto_bnts import
    embed_inputs`` back in ``neural_ucb.py``."""
    assert not _algorithm_cross_imports()


# ---- No import-time side effects ------------------------------------------------------------------

# A fresh interpreter without the BLAS variables (which the test session sets, conftest.py): the
# thread count of scipy's OpenBLAS (the library behind jax's CPU LAPACK), read through
# threadpoolctl's ``threadpool_info`` (not through ntkbo's own functions), before and after
# importing ntkbo and every one of its modules, then after ``ntkbo.configure_blas_threads()``.
SCRIPT = r"""
import importlib, json, os, pkgutil, sys
import scipy, scipy.linalg.cython_lapack  # loads the library jax calls
import threadpoolctl

# scipy's own OpenBLAS (scipy/ or scipy.libs/ of the install), not numpy's
SCIPY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(scipy.__file__))), "scipy")

def threads():
    return sorted(i["num_threads"] for i in threadpoolctl.threadpool_info()
                  if i.get("internal_api") == "openblas" and i["filepath"].startswith(SCIPY))

before = threads()
import ntkbo
after_ntkbo = threads()
skip = ("ntkbo.benchmarks.tasks", "ntkbo.kernels.nt", "ntkbo.experiments.coco")  # optional deps
for m in pkgutil.walk_packages(ntkbo.__path__, "ntkbo."):
    if not m.name.startswith(skip):
        importlib.import_module(m.name)
after_all = threads()
ntkbo.configure_blas_threads()
print("@@" + json.dumps({"before": before, "after_ntkbo": after_ntkbo, "after_all": after_all,
                         "called": threads()}))
"""


def test_importing_ntkbo_changes_no_blas_threads():
    """Importing ``ntkbo`` (and every module of it) leaves the LAPACK threads as they were; the
    explicit ``configure_blas_threads()`` sets one. Mutation caught (checked): the former
    ``configure_from_environment()`` call at the top of ``ntkbo/gp.py`` (``after_ntkbo`` is
    then ``[1]``)."""
    pytest.importorskip("threadpoolctl")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS starts one thread on one core: a change would not show")
    env = {k: v for k, v in os.environ.items() if k not in (
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NTKBO_LAPACK_THREADS")}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")]
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][2:])
    if not out["before"]:
        pytest.skip("no OpenBLAS behind scipy's LAPACK here (MKL or Accelerate)")
    assert out["before"][0] > 1, out  # OpenBLAS's own default: one thread per core
    assert out["after_ntkbo"] == out["before"], out
    assert out["after_all"] == out["before"], out
    assert out["called"] == [1], out
