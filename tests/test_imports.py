"""The import graph: the algorithms need PINN-BO's ``Pde`` type, which lives in the
neutral ``ntkbo.pde``, and the drivers need ``violation`` from ``ntkbo.benchmarks.problem``;
importing either must not load the problems, and the algorithms must not load the problems package
at all."""

import subprocess
import sys

import pytest

import ntkbo.benchmarks.pde
import ntkbo.benchmarks.problem
import ntkbo.pde


def test_importing_ntkbo_loads_the_problem_type_not_the_problems():
    """A fresh interpreter imports ``ntkbo`` and ``ntkbo.algorithms.pinn_bo``: of the benchmarks
    package only ``problem.py`` is loaded (not the registry, the functions, the PDEs, the suites
    or the host tasks); ``ntkbo.benchmarks.get`` then loads the registry on first use."""
    code = ("import sys, ntkbo, ntkbo.algorithms.pinn_bo\n"
            "print(sorted(m for m in sys.modules if m.startswith('ntkbo.benchmarks')))\n"
            "ntkbo.benchmarks.get('branin')\n"
            "print('ntkbo.benchmarks.registry' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.splitlines()
    assert out[0] == "['ntkbo.benchmarks', 'ntkbo.benchmarks.problem']"
    assert out[1] == "True"


def test_the_algorithms_do_not_import_the_problems_package():
    """``ntkbo/__init__.py`` imports ``ntkbo.benchmarks`` itself (the public surface), which would
    hide what the algorithms import; so a fresh interpreter registers a bare ``ntkbo`` package (its
    ``__init__`` not run) and imports ``ntkbo.algorithms`` (every algorithm, PINN-BO included)
    through it: no ``ntkbo.benchmarks`` module may be loaded, while ``ntkbo.pde`` is.

    Mutation caught: ``pinn_bo.py`` importing ``Pde`` from ``ntkbo.benchmarks.problem`` again (the
    list is then ``['ntkbo.benchmarks', 'ntkbo.benchmarks.problem']``)."""
    code = ("import importlib.util, sys, types\n"
            "spec = importlib.util.find_spec('ntkbo')\n"
            "pkg = types.ModuleType('ntkbo')\n"
            "pkg.__path__, pkg.__spec__ = list(spec.submodule_search_locations), spec\n"
            "sys.modules['ntkbo'] = pkg\n"
            "import ntkbo.algorithms, ntkbo.algorithms.pinn_bo\n"
            "print(sorted(m for m in sys.modules if m.startswith('ntkbo.benchmarks')))\n"
            "print('ntkbo.pde' in sys.modules, 'ntkbo.algorithms.neural_bo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.splitlines()
    assert out == ["[]", "True True"]


def test_pde_has_one_name():
    """``Pde`` is ``ntkbo.pde.Pde`` only: the former re-export from ``ntkbo.benchmarks.problem``
    is gone (importing it there fails), ``ntkbo.benchmarks.pde`` does not export it, and the
    problems' operators are instances of it, so ``isinstance`` checks (PINN-BO's ``check_pde``)
    agree. Mutation caught (checked): the module-level ``from ntkbo.pde import Pde`` back in
    ``problem.py``."""
    with pytest.raises(ImportError, match="cannot import name 'Pde'"):
        from ntkbo.benchmarks.problem import Pde  # noqa: F401
    assert "Pde" not in ntkbo.benchmarks.pde.__all__
    assert isinstance(ntkbo.benchmarks.get("dropwave_pde").pde, ntkbo.pde.Pde)
