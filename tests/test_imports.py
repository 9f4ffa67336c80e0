"""The import graph (issue 19 item 7): the algorithms need PINN-BO's ``Pde`` type and the drivers
``violation``, both in ``ntkbo.benchmarks.problem``; importing them must not load the problems."""

import subprocess
import sys


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
