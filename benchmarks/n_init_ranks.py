"""The rule that chose ``ntkbo.loop.design_size`` (docs/decisions.md, 2026-11-27): the mean rank
of each candidate initial-design size over (algorithm, problem, budget) by mean normalised regret
on the tuning keys, from the studies under ``benchmarks/results/n-init-tuning/``::

    python benchmarks/n_init_ranks.py > benchmarks/results/n-init-tuning/ranks.md
"""
import os
import sys

import numpy as np
from scipy.stats import rankdata

import defaults as D  # run as a script: benchmarks/ is sys.path[0]

ROOT = "benchmarks/results/n-init-tuning"
RULES = sys.argv[1:] or ["d+1", "2d", "max(5,d+1)"]
ALGOS = ["gp_ei", "ntk_gp_ei", "neural_bo", "sto_bnts"]
tables = {r: D.panel_table(os.path.join(ROOT, r)) for r in RULES}
ranks = {r: [] for r in RULES}
lines = ["| algorithm | problem | budget | " + " | ".join(RULES) + " |",
         "|---|---|---|" + "---|" * len(RULES)]
for a in ALGOS + ["random_search"]:
    for p in tables[RULES[0]]["problems"]:
        for b in D.PANEL_BUDGETS:
            v = [tables[r]["budgets"][b][a][p]["regret"] for r in RULES]
            if a != "random_search":
                for r, k in zip(RULES, rankdata(v)):
                    ranks[r].append(k)
            lines.append(f"| {a} | {p} | {b} | " + " | ".join(f"{x:.3g}" for x in v) + " |")
print("\n".join(lines))
print()
for r in RULES:
    print(f"{r}: mean rank {np.mean(ranks[r]):.3f} over {len(ranks[r])} cells; "
          f"design sizes {tables[r]['n_init']}")
