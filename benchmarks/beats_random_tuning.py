"""CI's beats-random cells on the tuning keys: a check a candidate default passes before it may
replace one.

``tests/test_beats_random.py`` runs the GP baselines' defaults on Branin (budget 40, 5 initial
points) and Hartmann-6 (60, 10) with 8 keys from the reporting range, against random search,
one-sided Welch at 0.05 (``tests/beats_random.py``). A default chosen on the dev suite's mean
alone can fail there: the isotropic GP did on Branin (2026-11-25), where one seed in 8 stalls and
a 14-problem mean barely sees it. This script runs the same protocol on the tuning keys
``PRNGKey(0..7)`` (``ntkbo.benchmarks.suites.TUNING_KEYS``), so a tuning rule can require it
without touching reporting keys::

    python benchmarks/beats_random_tuning.py 'auto=gp_ei:{"fit": {"ard": "auto"}}' gp_ei

In float64, as the tests run. Each argument is ``LABEL=NAME:JSON`` (as ``benchmarks/defaults.py
--variant``) or ``NAME``. Prints,
per variant and problem, the mean best value, random search's, the Welch p and whether it passes.
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import numpy as np
import scipy.stats

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "tests"))

import ntkbo  # noqa: E402
import beats_random as BR  # noqa: E402  (tests/ is not a package)
from defaults import parse_variant  # noqa: E402
from ntkbo.benchmarks.suites import TUNING_KEYS  # noqa: E402


def check(variants, start: int = TUNING_KEYS.start) -> list[dict]:
    """Rows ``{label, problem, mean, random, p, passes}`` for each variant (``AlgorithmSpec``) on
    each of ``BR.PROBLEMS``, with keys ``PRNGKey(start + i)``."""
    keys = BR.protocol_keys(start)
    rows = []
    for problem in BR.PROBLEMS:
        rand = BR.best_values(ntkbo.algorithms.random_search(), problem, keys)
        for v in variants:
            best = BR.best_values(ntkbo.algorithms.get(v.name, **dict(v.options)), problem, keys)
            p = scipy.stats.ttest_ind(best, rand, equal_var=False, alternative="less").pvalue
            rows.append(dict(label=v.id, problem=problem, mean=float(np.mean(best)),
                             random=float(np.mean(rand)), p=float(p),
                             passes=bool(best.mean() < rand.mean() and p < BR.LEVEL)))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="+", help="LABEL=NAME[:JSON options] or NAME")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # as CI's tests run (tests/conftest.py)
    try:
        variants = [parse_variant(v) for v in args.variants]
    except ValueError as err:
        parser.error(str(err))
    print(f"keys PRNGKey({TUNING_KEYS.start} + i), i < {BR.SEEDS}; one-sided Welch at {BR.LEVEL}")
    print("| variant | problem | mean best | random search | p | passes |")
    print("|---|---|---|---|---|---|")
    for r in check(variants):
        print(f"| {r['label']} | {r['problem']} | {r['mean']:.4g} | {r['random']:.4g} | "
              f"{r['p']:.2g} | {'yes' if r['passes'] else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
