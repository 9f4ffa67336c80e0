"""Rank the variants of one algorithm in a low-budget panel study by mean normalised regret.

The rule behind a default chosen on the tuning keys (docs/decisions.md): for each group of
variants (the labels that start with the group's prefix), rank its members in every (problem,
budget) cell of the panel by mean normalised regret (1 best, ties share the mean rank) and print
the per-cell table and each member's mean rank::

    python benchmarks/variant_ranks.py benchmarks/results/explore-tuning \\
        neural_ucb_nu neural_ts_nu go_ucb_refit > benchmarks/results/explore-tuning/ranks.md
"""
from __future__ import annotations

import sys

import numpy as np
from scipy.stats import rankdata

import defaults as D  # run as a script: benchmarks/ is sys.path[0]


def ranks(table: dict, members: list[str]) -> tuple[list[str], dict[str, float]]:
    """The Markdown rows (problem, budget, each member's mean regret) and each member's mean
    rank over the panel's cells."""
    lines, got = [], {m: [] for m in members}
    for p in table["problems"]:
        for b in D.PANEL_BUDGETS:
            v = [table["budgets"][b][m][p]["regret"] for m in members]
            for m, r in zip(members, rankdata(v)):
                got[m].append(float(r))
            lines.append(f"| {p} | {b} | " + " | ".join(f"{x:.3g}" for x in v) + " |")
    return lines, {m: float(np.mean(r)) for m, r in got.items()}


def main(argv: list[str]) -> None:
    folder, prefixes = argv[0], argv[1:]
    table = D.panel_table(folder)
    labels = sorted({a for b in table["budgets"].values() for a in b})
    for prefix in prefixes:
        members = [a for a in labels if a.startswith(prefix)]
        lines, mean_rank = ranks(table, members)
        print(f"### {prefix}\n")
        print("| problem | budget | " + " | ".join(members) + " |")
        print("|---|---|" + "---|" * len(members))
        print("\n".join(lines))
        print()
        for m in members:
            print(f"- {m}: mean rank {mean_rank[m]:.3f} over {len(lines)} cells")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
