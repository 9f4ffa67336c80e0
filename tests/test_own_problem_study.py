"""Studies of the user's own problems: a numpy simulator (``numpy_problem``) and a JAX function
with its bounds, named in a Python ``Spec`` as objects and in a TOML spec as ``module:attribute``,
run, interrupted and resumed, refused when changed, and reported like registered problems.

Two module-scoped studies share the compiled work: ``python_study`` (objects in a Python spec,
interrupted after its first cell by ``KeyboardInterrupt``, then resumed) and ``cli_study``
(``ntkbo bench`` on a TOML spec naming the same functions in a module written to disk, run
without interruption). Both are random search and the NTK-GP on the two problems, 2 seeds of 6
evaluations. The resumed study must equal the uninterrupted one bit for bit: same functions, same
keys, same compiled programs (both in this process, float64, the conftest's compile flags).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from typing import Any, cast

import jax
import numpy as np
import pytest
import scipy.stats

import ntkbo
from ntkbo import cli
from ntkbo import experiments as E
from ntkbo.experiments import report, store
from ntkbo.experiments.spec import AlgorithmSpec, ProblemSpec, Spec, code_hash

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The user's module: the Python study executes it, the CLI study imports it from disk.
SOURCE = '''
import jax.numpy as jnp
import numpy as np
import ntkbo


def simulate(x):
    x = np.asarray(x)
    return float(np.sum((x - 0.3) ** 2) + 0.1 * np.sin(8.0 * (x[0] - 0.3)) ** 2)


sim = ntkbo.benchmarks.numpy_problem(simulate, bounds=[[0.0, 0.0], [1.0, 1.0]], name="sim",
                                     optimum=0.0)


def valley(x):
    return jnp.sum(jnp.cos(3.0 * x) + 0.5 * x ** 2)
'''
MODULE = "own_problems_for_test"  # the module name the CLI study imports
VALLEY_BOUNDS = [[-2.0, -2.0], [2.0, 2.0]]
ALGORITHMS = (AlgorithmSpec("random_search"), AlgorithmSpec("ntk_gp"))
CELL_IDS = ["ntk_gp__sim__d2", "ntk_gp__valley__d2", "random_search__sim__d2",
            "random_search__valley__d2"]
ARRAYS = ("x", "y", "f", "c", "c_obs", "feasible", "metric", "keys", "seeds")  # not wall_time
TOML = f'''
name = "own"
budget = 6
n_init = 4
seeds = 2

[[algorithms]]
name = "random_search"

[[algorithms]]
name = "ntk_gp"

[[problems]]
name = "{MODULE}:sim"
label = "sim"

[[problems]]
name = "{MODULE}:valley"
label = "valley"
bounds = {VALLEY_BOUNDS}
'''


def _module(source: str = SOURCE, name: str = "own_python"):
    mod = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), mod.__dict__)
    return mod


def python_spec(mod, **valley) -> Spec:
    return Spec(name="own", budget=6, n_init=4, seeds=2, algorithms=ALGORITHMS,
                problems=(mod.sim, ProblemSpec("valley", problem=mod.valley,
                                               bounds=VALLEY_BOUNDS, **valley)))


def _starts(out) -> list[str]:
    return [e["cell_id"] for e in store.read_log(str(out)) if e["event"] == "start"]


def _cells(out) -> dict:
    return {store.read_cell(p).meta["cell_id"]: store.read_cell(p)
            for p in store.list_cells(str(out))}


@pytest.fixture(scope="module")
def python_study(tmp_path_factory):
    """The Python spec run into a folder, stopped by ``KeyboardInterrupt`` (a progress callback,
    as Ctrl-C) after its first cell, then run again; returns (folder, cell files after the stop,
    the module)."""
    out = tmp_path_factory.mktemp("python") / "study"
    mod = _module()
    spec = python_spec(mod)

    def stop(cell, path):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        E.run(spec, str(out), devices=jax.devices()[:1], progress=stop)
    after_stop = sorted(os.listdir(out / "cells"))
    E.run(spec, str(out), devices=jax.devices()[:1])
    return out, after_stop, mod


@pytest.fixture(scope="module")
def cli_study(tmp_path_factory):
    """``ntkbo bench own.toml --out study`` from another working directory (the module is found
    next to the spec); returns the folder holding the module, the spec and ``study``."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / f"{MODULE}.py").write_text(SOURCE)
    (folder / "own.toml").write_text(TOML)
    path = list(sys.path)
    try:
        assert cli.main(["--no-cache", "bench", str(folder / "own.toml"), "--out",
                         str(folder / "study"), "--quiet"]) == 0
    finally:  # the module is a fresh import for every test that needs it
        sys.path[:] = path
        sys.modules.pop(MODULE, None)
    return folder


def test_an_interrupted_study_resumes_to_the_uninterrupted_one(python_study, cli_study):
    """The interrupted study kept its first cell; resumed, it started each cell exactly once and
    its cells equal, bit for bit, the CLI study's, which ran uninterrupted from the TOML spec: a
    ``module:attribute`` name and the object it names are the same problem. Their definitions
    differ only in where the problem came from. Mutation caught: the runner re-running finished
    cells (its ``os.path.exists`` check dropped): the first cell starts twice."""
    out, after_stop, _ = python_study
    assert after_stop == [f"{CELL_IDS[0]}.npz"]
    assert sorted(_starts(out)) == CELL_IDS  # each once: the first before the stop
    resumed, uninterrupted = _cells(out), _cells(cli_study / "study")
    assert sorted(resumed) == sorted(uninterrupted) == CELL_IDS
    for cid in CELL_IDS:
        for k in ARRAYS:
            a, b = getattr(resumed[cid], k), getattr(uninterrupted[cid], k)
            assert a.dtype == b.dtype and a.shape == b.shape, (cid, k)
            assert a.tobytes() == b.tobytes(), f"{cid}.{k} differs"
        da, db = resumed[cid].meta["definition"], uninterrupted[cid].meta["definition"]
        fa, fb = da["problem"].pop("fingerprint"), db["problem"].pop("fingerprint")
        assert (fa.pop("source"), fb.pop("source")) == (
            "python object", f"{MODULE}:{cid.split('__')[1]}")
        assert fa == fb  # same bounds, noise, optimum and code
        assert da["problem"].pop("name") in ("sim", "valley")
        assert db["problem"].pop("name") == f"{MODULE}:{cid.split('__')[1]}"
        assert da == db
    assert uninterrupted["ntk_gp__sim__d2"].meta["problem"]["optimum"] == 0.0


def test_a_fresh_process_resumes_the_cli_study_without_rerunning(cli_study):
    """The fingerprint is the same in another process (no addresses, no ``hash()``): ``ntkbo
    bench`` run again in a fresh process from the spec's folder accepts the stored cells and runs
    none. Mutation caught: a fingerprint that hashed ``repr`` of a function (its address) refuses
    the study here."""
    before = _starts(cli_study / "study")
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_ENABLE_X64="1", NTKBO_CACHE_DIR="off")
    proc = subprocess.run([sys.executable, "-m", "ntkbo.cli", "--no-cache", "bench", "own.toml",
                           "--out", "study", "--quiet"], cwd=cli_study, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _starts(cli_study / "study") == before


@pytest.mark.parametrize("change, named", [
    ("code", ["'valley'", "its code"]),
    ("bounds", ["'valley'", "its bounds changed from [[-2.0, -2.0], [2.0, 2.0]] to"]),
    ("noise", ["'sim'", "its noise_std changed from 0.0 to 0.1"]),
    ("dimension", ["'valley'", "its dimension changed from 2 to 3"]),
    ("version", ["'valley'", "its version changed from null to \"1\""]),
])
def test_a_changed_problem_is_refused_naming_it(python_study, change, named):
    """A spec whose user problem changed (an edited function, another box, another dimension,
    another noise level, a version where the code stood) is refused before anything runs, with a
    message naming the problem and what changed; the folder is left as it was. Mutations caught
    (checked): the fingerprint left out of the cells' definition (``spec._definition``): each
    case fails, the change accepted (the run returns) or, the noise, refused without naming the
    problem; the dimension's case also fails without ``runner._missing_cell``'s look for the
    same label (the message then names only a cell)."""
    out, _, mod = python_study
    if change == "code":
        spec = python_spec(_module(SOURCE.replace("0.5 * x ** 2", "0.6 * x ** 2")))
    elif change == "bounds":
        spec = Spec(name="own", budget=6, n_init=4, seeds=2, algorithms=ALGORITHMS,
                    problems=(mod.sim, ProblemSpec("valley", problem=mod.valley,
                                                   bounds=[[-2.0, -2.0], [2.0, 3.0]])))
    elif change == "dimension":  # other cell ids: the stored cells are not in the spec
        spec = Spec(name="own", budget=6, n_init=4, seeds=2, algorithms=ALGORITHMS,
                    problems=(mod.sim, ProblemSpec("valley", problem=mod.valley,
                                                   bounds=[[-2.0] * 3, [2.0] * 3])))
    elif change == "noise":
        spec = Spec(name="own", budget=6, n_init=4, seeds=2, algorithms=ALGORITHMS,
                    problems=(ProblemSpec("sim", problem=mod.sim, noise_std=0.1),
                              ProblemSpec("valley", problem=mod.valley, bounds=VALLEY_BOUNDS)))
    else:
        spec = python_spec(mod, version="1")
    before = {p: os.path.getmtime(p) for p in store.list_cells(str(out))}
    with pytest.raises(ValueError) as err:
        E.run(spec, str(out), devices=jax.devices()[:1])
    for text in named:
        assert text in str(err.value), str(err.value)
    assert {p: os.path.getmtime(p) for p in store.list_cells(str(out))} == before


def test_the_cli_refuses_an_edited_module(cli_study, tmp_path, capsys):
    """``ntkbo bench`` on the study after its module was edited stops with exit status 2 and one
    error naming the problem and its code. Mutation caught: as above (the fingerprint left out)."""
    copy = tmp_path / "copy"
    shutil.copytree(cli_study, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / f"{MODULE}.py").write_text(SOURCE.replace("(x - 0.3)", "(x - 0.35)"))
    path = list(sys.path)
    try:
        rc = cli.main(["--no-cache", "bench", str(copy / "own.toml"), "--out",
                       str(copy / "study"), "--quiet"])
    finally:
        sys.path[:] = path
        sys.modules.pop(MODULE, None)
    err = capsys.readouterr().err
    assert rc == 2
    assert "problem 'sim'" in err and "its code" in err and err.count("\n") == 1, err


def test_the_report_covers_the_user_problems(python_study, cli_study, capsys):
    """``write_report`` on the user problems: regret on ``sim`` (its optimum is known), the best
    value on ``valley``; final-value means equal to the cell files' own (the best noise-free
    value per seed, minus the optimum), Welch's p-values equal to scipy's on those values, and
    the figures and CSV/LaTeX tables written per problem; ``ntkbo report`` on the CLI study too.
    Tolerance 1e-12 relative: the same float64 values summed in another order."""
    out, _, _ = python_study
    rep = report.write_report(str(out))
    assert sorted(rep["problems"]) == ["sim", "valley"]
    assert rep["reference"] == "random_search"
    assert rep["problems"]["sim"]["kind"] == "regret" and rep["problems"]["valley"]["kind"] == "f"
    cells = _cells(out)
    for p, optimum in (("sim", 0.0), ("valley", 0.0)):
        finals = {a.id: np.min(cells[f"{a.id}__{p}__d2"].f, axis=1) - optimum for a in ALGORITHMS}
        for a, v in finals.items():
            np.testing.assert_allclose(rep["problems"][p]["algorithms"][a]["mean"], v.mean(),
                                       rtol=1e-12)
        welch = scipy.stats.ttest_ind(finals["ntk_gp"], finals["random_search"],
                                      equal_var=False, alternative="less")
        got = rep["problems"][p]["algorithms"]["ntk_gp"]["vs_reference"]["algorithm_lower"]["p"]
        # scipy's t distribution against ours: agreement to rounding
        np.testing.assert_allclose(got, welch.pvalue, rtol=1e-9)  # pyright: ignore
        assert all(os.path.isfile(out / f) for f in rep["figure_files"][p])
        for fmt in ("csv", "tex"):
            assert os.path.isfile(out / "tables" / f"final_{p}.{fmt}")
    text = open(rep["report"]).read()
    assert "### valley (d=2)" in text
    code = cells["ntk_gp__valley__d2"].meta["definition"]["problem"]["fingerprint"]["code"]
    assert rep["header"]["own_problems"]["valley"] == {"source": "python object", "code": code}
    assert f"`valley` from python object, code {code[:12]}" in text
    assert cli.main(["report", str(cli_study / "study"), "--no-plot"]) == 0
    assert "(2 problems, 2 algorithms" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# naming a problem (no run: resolving a spec traces nothing heavier than one eval_shape)


def test_module_attribute_names_in_toml_and_python(tmp_path, monkeypatch):
    """A ``module:attribute`` name is found on ``sys.path`` or next to the spec file, defaults its
    label to the name with ``.`` for ``:``, and a factory takes ``dim`` from ``dims`` (scaled by
    ``max_dim`` like a registered problem's); ``problems = [...]`` of names is a list of tables
    with only a name."""
    folder = tmp_path / "specs"
    folder.mkdir()
    name = "own_factory_for_test"
    (folder / f"{name}.py").write_text(SOURCE + '''

def make(dim, centre=0.3):
    return ntkbo.benchmarks.Problem(name="bowl", fn=lambda x: jnp.sum((x - centre) ** 2),
                                    bounds=jnp.array([[0.0] * dim, [1.0] * dim]), optimum=0.0)
''')
    (folder / "s.toml").write_text(f'''
name = "s"
budget = 8
problems = ["{name}:sim", "branin"]
[[algorithms]]
name = "random_search"
''')
    (folder / "f.toml").write_text(f'''
name = "f"
budget = 8
[[algorithms]]
name = "random_search"
[[problems]]
name = "{name}:make"
dims = [2, 3]
options = {{ centre = 0.4 }}
''')
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)  # not the spec's folder
    try:
        cells = Spec.from_toml(str(folder / "s.toml")).resolve()
        assert [c.cell_id for c in cells] == ["random_search__branin__d2",
                                              f"random_search__{name}.sim__d2"]
        assert cells[0].fingerprint is None and "fingerprint" not in cells[0].definition()
        fp = cells[1].fingerprint
        assert fp is not None and fp["source"] == f"{name}:sim"
        spec = Spec.from_toml(str(folder / "f.toml"))
        assert [c.dim for c in spec.resolve()] == [2, 3]
        assert [c.dim for c in spec.resolve("smoke")] == [2]  # max_dim 2
        algo, problem = spec.resolve()[1].build()
        assert problem.dim == 3 and float(problem.fn(jax.numpy.full(3, 0.4))) == 0.0
    finally:
        sys.modules.pop(name, None)


def test_what_is_not_a_problem_is_refused_naming_the_field():
    """Each wrong entry names its field and what to write instead."""
    mod = _module()

    def spec(*problems):
        return Spec(name="bad", budget=6, algorithms=(AlgorithmSpec("random_search"),),
                    problems=problems)

    cases = [
        (lambda: spec("no_such_module_xyz:thing").resolve(), "no module 'no_such_module_xyz'"),
        (lambda: spec("os:no_such_attribute").resolve(), "has no attribute"),
        (lambda: spec("os:sep").resolve(), "str is not a problem"),
        (lambda: spec(ProblemSpec("v", problem=mod.valley)).resolve(), "needs its bounds"),
        (lambda: spec(ProblemSpec("s", problem=mod.simulate, bounds=[[0, 0], [1, 1]])).resolve(),
         "numpy_problem"),
        (lambda: spec(ProblemSpec("s", problem=mod.sim, options={"a": 1})).resolve(),
         "only a registered problem or a factory"),
        (lambda: spec(ProblemSpec("s", problem=mod.sim, dims=(3,))).resolve(),
         "dims lists 3, but the problem has dimension 2"),
        (lambda: spec(ProblemSpec("branin", bounds=[[0, 0], [1, 1]])), "not a registered"),
        (lambda: spec(mod.valley), "a JAX function needs its bounds"),
        (lambda: Spec.from_dict(spec(mod.sim).to_dict()), "records a Python object"),
    ]
    for make, text in cases:
        with pytest.raises(ValueError, match="problems\\[0\\]") as err:
            make()
        assert text in str(err.value), (text, str(err.value))


def test_a_jax_function_with_bounds_is_the_problem_it_makes():
    """A JAX function with ``bounds`` and ``ntkbo.benchmarks.Problem(fn=..., bounds=...)`` of the
    same function, under the same label, are the same problem: the same cell and digest."""
    mod = _module()
    as_fn = ProblemSpec("valley", problem=mod.valley, bounds=VALLEY_BOUNDS)
    as_problem = ntkbo.benchmarks.Problem(name="valley", fn=mod.valley,
                                          bounds=jax.numpy.asarray(VALLEY_BOUNDS))
    a, b = (Spec(name="s", budget=6, algorithms=(AlgorithmSpec("random_search"),),
                 problems=(cast(Any, p),)).resolve()[0] for p in (as_fn, as_problem))
    assert a.cell_id == b.cell_id and a.digest == b.digest


def test_code_hash_follows_what_the_function_computes_with():
    """``code_hash`` is equal for the same source compiled twice (other objects, other lines) and
    differs when a constant, a closed-over value, a helper function of the module or a global
    value the function reads changes (a typed ``jax.random`` key among them). Mutations caught
    (checked): closures not followed (the closed-over value); globals not followed (the helper
    and the global value); a typed key read as an array (``np.asarray`` refuses it)."""
    base = '''
import jax.numpy as jnp
SCALE = 2.0

def helper(x):
    return jnp.sin(x)

def make(c):
    def f(x):
        return jnp.sum(helper(x) * SCALE + c)
    return f

f = make(1.0)
'''

    def h(source):
        return code_hash(_module(source).f)

    assert h(base) == h(base) == h("\n\n\n" + base)
    assert h(base) != h(base.replace("make(1.0)", "make(1.5)"))  # closed-over value
    assert h(base) != h(base.replace("jnp.sin(x)", "jnp.cos(x)"))  # helper of the module
    assert h(base) != h(base.replace("SCALE = 2.0", "SCALE = 3.0"))  # a global value
    assert h(base) != h(base.replace("* SCALE", "/ SCALE"))  # the function's own code
    keyed = base + "\nimport jax\nKEY = jax.random.key(0)\nf = make(KEY)\n"  # closes over the key
    assert h(keyed) == h(keyed) != h(keyed.replace("key(0)", "key(1)"))  # typed keys: their data


def test_run_takes_a_module_attribute_problem(tmp_path, monkeypatch):
    """``ntkbo run --problem module:attribute`` runs the user's numpy simulator, imported from the
    working directory as a spec's name is, and its record equals ``minimize`` on the same object.
    Mutation caught: ``cli._problem`` handing every name to ``ntkbo.benchmarks.get`` (the run
    then stops with an unknown-problem error)."""
    (tmp_path / "own_run_module.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "own_run_module", raising=False)
    out = tmp_path / "run"
    rc = cli.main(["run", "--algo", "random_search", "--problem", "own_run_module:sim",
                   "--budget", "6", "--seeds", "2", "--n-init", "4", "--out", str(out),
                   "--no-plot"])
    assert rc == 0
    import json

    rec = json.loads((out / "results.json").read_text())
    # the record names the problem by its own name; the command says where it came from
    assert rec["problem"] == "sim" and "--problem own_run_module:sim" in rec["command"]
    problem = sys.modules["own_run_module"].sim
    keys = jax.random.split(jax.random.PRNGKey(0), 2)  # --seed 0, as the CLI derives them
    for i, run in enumerate(rec["runs"]):
        ref = ntkbo.minimize(ntkbo.algorithms.random_search(), problem, 6, keys[i], n_init=4)
        # the same points, computed by the same program: equal to float64 rounding of JSON
        np.testing.assert_allclose(run["x"], ref.x, rtol=1e-12)
        np.testing.assert_allclose(run["f"], ref.f, rtol=1e-12)
