"""Every algorithm with its defaults on the development suite, on keys no tuning saw.

The reporting protocol: ``ntkbo.benchmarks.suite("dev")`` (14 problems, d = 2 to 20, optima moved
off the box centre), each algorithm with its factory defaults, 16 seeds from
``ntkbo.benchmarks.suites.REPORTING_KEYS`` (``PRNGKey(100000 + i)``), which no tuning may use,
``2 d`` initial points (the same design for every algorithm: the seeds are paired), and random
search as the reference. It runs on the experiments machinery (``ntkbo.experiments``): one cell
file per (algorithm, problem), resumable, ``ntkbo report DIR`` for curves and Table-2 tests.

For each algorithm the table gives

- **mean normalised regret**: per problem and seed, ``r = (min_t f(x_t) - f*) / (m - f*)`` where
  ``m`` is the median of ``f`` over 4096 scrambled-Sobol points of the box (fixed seed): 0 is the
  optimum, 1 as good as a typical point of the box; averaged over seeds, then over problems;
- **average rank** over problems of the mean best value (1 = best; ties averaged);
- **beats random**: on how many problems its mean best value is below random search's with a
  one-sided Welch test significant after Benjamini-Hochberg over all (algorithm, problem) pairs
  at level 0.05; **worse**: the converse test.

The commands (``--only`` runs a part, ``--report-only`` tables the stored cells,
``--paired A:B`` adds a paired test): ``benchmarks/README.md``. Tuning (the only place a default
may be chosen): the same protocol on ``TUNING_KEYS`` (``--keys tuning``, ``PRNGKey(0 + i)``) with
named variants, each ``--variant LABEL=NAME`` or ``LABEL=NAME:JSON-OPTIONS``.

Scales: ``full`` 100 evaluations per run; ``cpu`` 60; ``smoke`` 8 evaluations of which 4 initial,
3 seeds (the tests). The ``algorithms`` are every registered name that runs on a plain problem (no
constraints, no PDE), aliases (``ALIASES``: ``gp`` is ``gp_ei``, ...) once.

Low-budget panel (``--panel low_budget``): where users start. The dev suite's problems with
``d <= 6``, one run of budget 40 per seed read at budgets 20, 30 and 40 (its best-so-far curve),
the library's default initial design (``n_init`` unset: ``ntkbo.loop.default_n_init``), 16 keys
``PRNGKey(200000 + i)`` (``PANEL_KEYS``: no tuning and no other table used them). At each budget
an algorithm passes a problem when its mean best value is below random search's, one-sided Welch,
BH over all (algorithm, problem) pairs of that budget at 0.05; the table lists every failure.

Constrained algorithms (``--suite dev_constrained``): the same protocol on
``suite("dev_constrained")`` (Neural-CBO's four synthetic problems, moved off the centre) with the
algorithms that model black-box constraints (Neural-CBO, constrained EI) and random search. The value is the
Neural-CBO thesis's metric, the best ``[f - f*]^+ + sum_k [c_k]^+`` over the run (0: a feasible
optimum), normalised by its median over the box's Sobol points as above.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import numpy as np

import ntkbo
from ntkbo.benchmarks import suites
from ntkbo.experiments import report as R
from ntkbo.experiments import spec as S
from ntkbo.experiments import stats
from ntkbo.experiments import summary as study_summary
from ntkbo.parts import set_option

#: Algorithms that need a problem the dev suite does not have (constraints, a PDE).
NEEDS_MORE = ("gp_cei", "ntk_gp_cei", "neural_cbo", "pinn_bo", "pinn_ntk_gp")
#: The suites the protocol runs on, and the spec name of each.
SUITES = {"dev": "defaults", "dev_constrained": "defaults_constrained"}
REFERENCE = "random_search"
ALPHA = 0.05
# The protocol's 16 keys at every scale but smoke (the built-in cpu preset would cap them at 10).
SCALES = {"cpu": S.Scale(budget=60, seeds=16), "smoke": S.Scale(budget=8, seeds=3, n_init=4)}


#: Registered names that are another name with its defaults (the same factory, the same resolved
#: options): they run once, under the canonical name. ``tests/test_defaults.py`` checks that each
#: pair resolves to the same options and that every other registered name is in ``ALGORITHMS``.
ALIASES = {"gp": "gp_ei", "ntk_gp": "ntk_gp_ucb", "neural_linear": "dngo",
           "neural_greedy": "simple_smb"}


def default_algorithms(suite: str = "dev") -> list[str]:
    """The registered names that run on a plain problem (no constraints, no PDE), aliases
    (``ALIASES``) replaced by their canonical name, sorted; for ``"dev_constrained"``,
    the names that model constraints (``ntkbo.algorithms.models_constraints`` with their default
    options: Neural-CBO, constrained EI) and random search."""
    _check_suite(suite)
    if suite == "dev_constrained":
        return sorted({n for n in ntkbo.algorithms.names() if ntkbo.algorithms.models_constraints(
            n, **ntkbo.algorithms.resolved_options(n))} | {REFERENCE})
    return sorted({ALIASES.get(n, n) for n in ntkbo.algorithms.names() if n not in NEEDS_MORE})


def _check_suite(suite: str) -> None:
    if suite not in SUITES:
        raise ValueError(f"suite must be one of {sorted(SUITES)}, got {suite!r}")


#: The key ranges of ``ntkbo.benchmarks.suites``: tune on one, report on the other.
KEY_RANGES = {"reporting": suites.REPORTING_KEYS, "tuning": suites.TUNING_KEYS}
#: The low-budget panel's keys: fresh, disjoint from both ranges above.
PANEL_KEYS = range(200000, 201000)
#: The low-budget panel: the dev members with d <= PANEL_MAX_DIM, read at PANEL_BUDGETS.
PANEL_MAX_DIM = 6
PANEL_BUDGETS = (20, 30, 40)
#: The panel's diagnostic of a stalled model (``ntkbo.experiments.summary``, which stores it per
#: seed, so that the panel needs no raw ``x``): a step "revisits" when its point lies within
#: ``REVISIT`` of the box's width, in every coordinate, of an earlier evaluation.
REVISIT = study_summary.REVISIT
revisit_share = study_summary.revisit_share
#: Why a default fails the panel, as measured (docs/decisions.md, the entries on the panel's
#: failures): the report prints the entry of every algorithm that fails a problem at the largest
#: budget, and "not diagnosed" for one without an entry.
PANEL_CAUSES = {
    "dngo": "the Bayesian last layer is as sure far from the data as near it: the evidence puts the "
            "noise precision at its clip in 69% of the steps on Branin, the posterior std at the "
            "proposals is 0.003-0.007 of the data's, and 6 of 16 seeds stall on the edge x2 = 15 "
            "where the network's mean extrapolates downhill; a fixed noise does not cure it",
    "neural_lin_ts": "as dngo: the noise precision at its clip in 78% of the steps on Branin, "
                     "draws with a spread of 0.003-0.007 of the data's std, 6 of 16 seeds on "
                     "the edge x2 = 15",
    "neural_ucb": "the network's mean extrapolates to the box's faces and the bonus at nu = 0.3 "
                  "(the tuning keys' choice for d <= 6) does not pull the search back: 46% "
                  "(Branin) and 34% (Six-Hump Camel) of its steps lie on a face, and 11 of 16 "
                  "seeds end Branin above regret 1",
    "neural_ts": "no stall (0.00-0.11 of its steps revisit; at nu = 1 for d <= 6): its means are "
                 "below random search's on all four problems, but 16 keys show the gain on "
                 "Rosenbrock-4 alone",
    "go_ucb": "its means are below random search's on all four problems (with Phase-II refits), "
              "not significantly on the 2-D ones, where Phase II still refines near earlier "
              "points (0.53-0.66 of its steps revisit)",
    "go_ucb_joint": "as go_ucb (the paper's joint ascent in Step 5)",
    "gp_mean": "no exploration term: the posterior mean refines its incumbent (0.53-0.77 of the "
               "steps revisit on the 2-D and 4-D problems); a baseline, not a default to start from",
    "gp_pi": "probability of improvement with xi = 0 refines its incumbent like the mean "
             "(0.52-0.67 of the steps revisit); a baseline",
    "ntk_gp_mean": "no exploration term and a fixed kernel: 0.73-0.96 of the steps revisit; a "
                   "baseline",
    "ntk_gp_pi": "as ntk_gp_mean: 0.67-0.89 of the steps revisit; a baseline",
}


def dev_spec(algorithms=None, members=None, name: str | None = None, keys: str = "reporting",
             seeds: int = 16, suite: str = "dev") -> S.Spec:
    """The protocol as a ``Spec``: ``algorithms`` (registered names or ``S.AlgorithmSpec`` variants;
    default ``default_algorithms(suite)``) on the members ``members`` of ``suite`` (default all;
    run as ``"<suite>/<member>"``) with ``2 d`` initial points and ``seeds`` keys from
    ``KEY_RANGES[keys]`` (16 reporting keys: the protocol); ``name`` defaults to
    ``SUITES[suite]``."""
    _check_suite(suite)
    algorithms = default_algorithms(suite) if algorithms is None else list(algorithms)
    if keys not in KEY_RANGES:
        raise ValueError(f"keys must be one of {sorted(KEY_RANGES)}, got {keys!r}")
    dev = suites.suite(suite)
    members = list(dev) if members is None else list(members)
    problems = tuple(S.ProblemSpec(name=f"{suite}/{m}", label=m, n_init=2 * dev[m].dim)
                     for m in members)
    algos = tuple(a if isinstance(a, S.AlgorithmSpec) else S.AlgorithmSpec(name=a)
                  for a in algorithms)
    scales = {k: dataclasses.replace(v, seeds=min(v.seeds, seeds)) for k, v in SCALES.items()}
    return S.Spec(name=name or SUITES[suite], algorithms=algos, problems=problems, budget=100,
                  seeds=seeds,
                  seed_offset=KEY_RANGES[keys].start, reference=REFERENCE, scales=scales)


def panel_spec(algorithms=None, seeds: int = 16, name: str = "low_budget",
               keys: str = "panel") -> S.Spec:
    """The low-budget panel as a ``Spec`` (module docstring): ``algorithms`` (default
    ``default_algorithms()``) on the dev members with ``d <= PANEL_MAX_DIM``, budget
    ``max(PANEL_BUDGETS)``, ``seeds`` keys from ``PANEL_KEYS`` (``keys="panel"``) or
    ``KEY_RANGES[keys]``; its one scale, ``"panel"``; the library's default initial design."""
    algorithms = default_algorithms() if algorithms is None else list(algorithms)
    if keys != "panel" and keys not in KEY_RANGES:
        raise ValueError(f"keys must be 'panel' or one of {sorted(KEY_RANGES)}, got {keys!r}")
    dev = suites.suite("dev")
    problems = tuple(S.ProblemSpec(name=f"dev/{m}", label=m)
                     for m, p in dev.items() if p.dim <= PANEL_MAX_DIM)
    algos = tuple(a if isinstance(a, S.AlgorithmSpec) else S.AlgorithmSpec(name=a)
                  for a in algorithms)
    budget = max(PANEL_BUDGETS)
    return S.Spec(name=name, algorithms=algos, problems=problems, budget=budget, seeds=seeds,
                  seed_offset=(PANEL_KEYS if keys == "panel" else KEY_RANGES[keys]).start,
                  reference=REFERENCE, scales={"panel": S.Scale(budget=budget, seeds=seeds)})


def panel_table(out: str) -> dict:
    """The panel's numbers from the cells in ``out``: for each budget of ``PANEL_BUDGETS``, per
    algorithm and problem the mean normalised regret after that many evaluations, the
    BH-adjusted p-value of "below random search" (one family per budget) and whether it passed;
    ``failures``: ``(budget, algorithm, problem, reason)`` for every pair that did not pass;
    ``revisits``: per algorithm and problem the mean over seeds of ``revisit_share`` at the full
    budget (why a model fails: its steps stay where it has already been)."""
    spec, cells = R.load(out)
    revisits: dict = {}
    designs: dict = {}
    for e in study_summary.collect(out):  # the cell files' and the summary's per-seed shares
        designs[e.meta["problem"]["label"]] = int(e.meta.get("n_init") or 0)
        revisits.setdefault(e.meta["algorithm"]["label"], {})[e.meta["problem"]["label"]] = \
            float(np.mean(e.revisit))
    by_problem: dict = {}
    for c in cells:
        by_problem.setdefault(c.problem, {})[c.algorithm] = c
    algos = R._ordered(sorted({c.algorithm for c in cells}), [REFERENCE])
    scale = {p: normaliser(ntkbo.benchmarks.get(f"dev/{p}")) for p in by_problem}
    budgets = {}
    failures = []
    for b in PANEL_BUDGETS:
        finals = {p: {a: c.curve[:, b - 1][np.isfinite(c.curve[:, b - 1])] for a, c in cs.items()}
                  for p, cs in by_problem.items() if REFERENCE in cs}
        tests = {(p, a): (p_adj, ok) for p, a, _, p_adj, ok in
                 stats.table2_rows(finals, REFERENCE, q=ALPHA, alternative="less")}
        rows = {}
        for a in algos:
            rows[a] = {}
            for p, cs in by_problem.items():
                if a not in cs:
                    continue
                v = np.asarray(cs[a].curve[:, b - 1], float) / scale[p]
                mean = float(np.nanmean(np.where(np.isfinite(v), v, np.nan)))
                p_adj, ok = tests.get((p, a), (None, False))
                rows[a][p] = {"regret": mean, "p_bh": p_adj, "passed": bool(ok)}
                if a != REFERENCE and (p, a) in tests and not ok:
                    ref = float(np.nanmean(np.asarray(cs[REFERENCE].curve[:, b - 1], float)
                                           / scale[p])) if REFERENCE in cs else float("nan")
                    why = (f"mean {mean:.3g} not below random search's {ref:.3g}" if mean >= ref
                           else f"mean {mean:.3g} below random search's {ref:.3g}, "
                                f"not significant (BH p = {p_adj:.2g})")
                    failures.append((b, a, p, why))
        budgets[b] = rows
    return {"budgets": budgets, "failures": failures, "revisits": revisits, "algorithms": algos,
            "n_init": designs, "default_design": not any(
                p.get("n_init") for p in (spec or {}).get("problems", [])),
            "problems": list(by_problem), "seeds": int(next(iter(cells)).curve.shape[0]),
            "seed_offset": int(((spec or {}).get("seeds") or {}).get("offset",
                                                                      PANEL_KEYS.start))}


def render_panel(t: dict) -> str:
    """``panel_table``'s numbers as markdown: per budget, mean normalised regret per problem
    (BH-adjusted p of "below random search" in brackets; a failing pair in bold), then the
    failures with their reasons."""
    design = ", ".join(f"{p} {n}" for p, n in t["n_init"].items())
    design = (f"the default initial design ({design} points)" if t["default_design"]
              else f"initial designs of {design} points")
    lines = [f"Low-budget panel: {len(t['problems'])} dev problems with d <= {PANEL_MAX_DIM}, "
             f"{design}, {t['seeds']} keys (PRNGKey({t['seed_offset']} + i)). "
             f"Passed: mean best value below random search's, one-sided Welch, BH over all "
             f"pairs of a budget at {ALPHA}.", ""]
    for b, rows in t["budgets"].items():
        lines += [f"### Budget {b}", "",
                  "| algorithm | " + " | ".join(t["problems"]) + " | passed |",
                  "|---|" + "---|" * (len(t["problems"]) + 1)]
        for a in t["algorithms"]:
            cells, passed = [], 0
            for p in t["problems"]:
                r = rows[a].get(p)
                if r is None:
                    cells.append("")
                    continue
                v = f"{r['regret']:.3g}"
                if r["p_bh"] is not None:
                    v += f" ({r['p_bh']:.2g})"
                    v = v if r["passed"] else f"**{v}**"
                    passed += r["passed"]
                cells.append(v)
            ran = sum(p in rows[a] for p in t["problems"])
            lines.append(f"| {a} | " + " | ".join(cells) + " | "
                         + ("-" if a == REFERENCE else f"{passed}/{ran}") + " |")
        lines.append("")
    last = PANEL_BUDGETS[-1]
    failing = {}
    for b, a, p, _ in t["failures"]:
        if b == last:
            failing.setdefault(a, []).append(p)
    lines += [f"### Why the failing rows fail (budget {last})", ""]
    lines += [f"- {a} ({', '.join(ps)}): {PANEL_CAUSES.get(a, 'not diagnosed')}."
              for a, ps in failing.items()] or ["- none fails"]
    lines += ["", "### Failures", ""]
    lines += [f"- budget {b}, {a} on {p}: {why}" for b, a, p, why in t["failures"]] or ["- none"]
    lines += ["", "### Where the evaluations went", "",
              f"Share of the evaluations after the initial design within {REVISIT:g} of the box's "
              "width (every coordinate) of an earlier one, at the full budget, mean over seeds. "
              "With a low regret a high share is refinement near the optimum; with a regret "
              "above random search's it means the model's proposals stall where it has already "
              "been.", "",
              "| algorithm | " + " | ".join(t["problems"]) + " |",
              "|---|" + "---|" * len(t["problems"])]
    for a in t["algorithms"]:
        shares = t["revisits"].get(a, {})
        lines.append(f"| {a} | " + " | ".join(
            "" if p not in shares else f"{shares[p]:.2f}" for p in t["problems"]) + " |")
    return "\n".join(lines) + "\n"


def parse_variant(text: str) -> S.AlgorithmSpec:
    """``"LABEL=NAME:JSON"`` (or ``"LABEL=NAME"``, or ``"NAME"``) as an ``AlgorithmSpec`` (a
    part's field as a nested object or a dotted key, ``{"network.width": 64}``);
    ``ValueError`` naming ``--variant`` for an unknown name or options that are not a JSON
    object."""
    label, _, rest = text.partition("=") if "=" in text else (None, "", text)
    name, _, options = rest.partition(":")
    if name not in ntkbo.algorithms.names():
        raise ValueError(f"--variant {text!r}: unknown algorithm {name!r}")
    given = json.loads(options) if options else {}
    if not isinstance(given, dict):
        raise ValueError(f"--variant {text!r}: options must be a JSON object, got {options!r}")
    opts: dict = {}
    try:
        for k, v in given.items():  # a dotted key ("network.width") sets a part's field
            set_option(opts, k, v)
        ntkbo.algorithms.resolved_options(name, **opts)  # an option the factory does not take
    except ValueError as err:
        raise ValueError(f"--variant {text!r}: {err}") from None
    return S.AlgorithmSpec(name=name, options=opts, label=label)


def _sobol(problem, n: int) -> np.ndarray:
    """``n`` scrambled-Sobol points of the box (``scipy.stats.qmc``, seed 0), ``(n, d)``."""
    from scipy.stats import qmc

    lo, hi = np.asarray(problem.bounds[0], float), np.asarray(problem.bounds[1], float)
    return lo + (hi - lo) * qmc.Sobol(problem.dim, scramble=True, seed=0).random(n)


def box_median(problem, n: int = 4096) -> float:
    """Median of ``f`` over ``n`` scrambled-Sobol points of the box (``scipy.stats.qmc``, seed 0)."""
    return float(np.median(np.asarray(problem.fn_batch(_sobol(problem, n)))))


def normaliser(problem, n: int = 4096) -> float:
    """The value a typical point of the box scores, which normalised regret divides by:
    ``box_median(problem) - f*``; for a constrained problem the median over the same points of
    the per-point metric ``[f - f*]^+ + sum_k [c_k]^+`` (``loop.regret_plus_violation``)."""
    if problem.constraints is None:
        return box_median(problem, n) - float(problem.optimum)
    import jax

    x = _sobol(problem, n)
    f = problem.fn_batch(x)
    c = jax.vmap(problem.constraints)(jax.numpy.asarray(x, f.dtype))
    return float(np.median(np.asarray(ntkbo.loop.regret_plus_violation(f, c, problem.optimum))))


def table(out: str) -> dict:
    """The protocol's numbers from the cells stored in ``out`` (module docstring): per algorithm
    ``mean_normalised_regret``, ``average_rank``, ``beats``, ``worse``, ``problems`` (run),
    ``not_finite`` (seeds whose final value is not finite); per problem the normalised regrets
    and BH-adjusted p-values. Ranks are among the algorithms that ran every problem (``ranked``),
    over all problems; an algorithm that has not has none."""
    spec, cells = R.load(out)
    by_problem: dict = {}
    for c in cells:
        by_problem.setdefault(c.problem, {})[c.algorithm] = c
    algos = R._ordered(sorted({c.algorithm for c in cells}), [REFERENCE])
    first = next(iter(cells))
    suite = _suite_of(first)
    scale = {p: normaliser(ntkbo.benchmarks.get(f"{suite}/{p}")) for p in by_problem}
    norm = {p: {a: np.asarray(c.curve[:, -1], float) / scale[p] for a, c in cs.items()}
            for p, cs in by_problem.items()}
    # Welch tests of every algorithm against random search on the final best values, both
    # directions, each direction one BH family over all (algorithm, problem) pairs
    finals = {p: {a: c.curve[:, -1][np.isfinite(c.curve[:, -1])] for a, c in cs.items()}
              for p, cs in by_problem.items() if REFERENCE in cs}
    tests = {}
    for alternative in ("less", "greater"):
        for p, a, res, p_adj, rejected in stats.table2_rows(finals, REFERENCE, q=ALPHA,
                                                            alternative=alternative):
            tests.setdefault((p, a), {})[alternative] = (res.pvalue, p_adj, rejected)
    # Ranks among the algorithms that ran every problem, over all problems (an algorithm still
    # running would otherwise shrink the problems everyone is ranked on); the others get none.
    ranked = [a for a in algos if all(a in cs for cs in by_problem.values())]
    common = list(by_problem) if ranked else []
    means = np.array([[np.nanmean(np.where(np.isfinite(norm[p][a]), norm[p][a], np.nan))
                       for a in ranked] for p in common]) if common else np.zeros((0, 0))
    ranks = dict(zip(ranked, stats.average_ranks(means))) if common else {}
    rows = {}
    for a in algos:
        ran = [p for p in by_problem if a in by_problem[p]]
        per_problem = {p: float(np.nanmean(norm[p][a])) for p in ran}
        rows[a] = {
            "mean_normalised_regret": float(np.mean(list(per_problem.values()))) if ran else None,
            "average_rank": float(ranks[a]) if a in ranks else None,
            "beats": sum(bool(tests.get((p, a), {}).get("less", (0, 0, False))[2]) for p in ran),
            "worse": sum(bool(tests.get((p, a), {}).get("greater", (0, 0, False))[2])
                         for p in ran),
            "problems": len(ran),
            "not_finite": int(sum((~np.isfinite(norm[p][a])).sum() for p in ran)),
            "per_problem": per_problem,
            "p_bh": {p: tests[(p, a)]["less"][1] for p in ran if (p, a) in tests},
        }
    offset = ((spec or {}).get("seeds") or {}).get("offset", suites.REPORTING_KEYS.start)
    return {"rows": rows, "seed_offset": int(offset), "algorithms": algos, "ranked": ranked,
            "problems": list(by_problem), "common": common,
            "budget": int(first.curve.shape[1]), "seeds": int(first.curve.shape[0]),
            "scale": (spec or {}).get("scale"), "normaliser": scale, "suite": suite,
            "value": first.kind}


def _suite_of(cell) -> str:
    """The suite a cell's problem is from: its name is ``"<suite>_<label>"`` (``suites.suite``)."""
    name, label = cell.meta["problem"]["name"], cell.problem
    suite = name[:-len(label) - 1]
    if suite not in SUITES or name != f"{suite}_{label}":
        raise ValueError(f"cell {cell.path!r}: problem {name!r} is not a member of "
                         f"{sorted(SUITES)}")
    return suite


def paired(t: dict, a: str, b: str) -> dict:
    """``a`` against ``b`` over the problems both ran, paired by problem: their mean normalised
    regrets (``table``'s ``per_problem``), on how many problems ``a``'s is lower, and two-sided
    p-values of the Wilcoxon signed-rank test (exact for these few problems) and the paired t-test
    of the per-problem differences. Used to ask whether two algorithms differ at all on the suite
    (e.g. NeuralBO against the NTK-GP with the same Thompson-sampling rule), which ranks among 24
    algorithms do not say."""
    import scipy.stats

    rows = t["rows"]
    for name in (a, b):
        if name not in rows:
            raise ValueError(f"paired: {name!r} is not in the table ({sorted(rows)})")
    common = [p for p in t["problems"] if p in rows[a]["per_problem"] and p in rows[b]["per_problem"]]
    if len(common) < 2:
        raise ValueError(f"paired: {a!r} and {b!r} share {len(common)} problems, need >= 2")
    x = np.array([rows[a]["per_problem"][p] for p in common])
    y = np.array([rows[b]["per_problem"][p] for p in common])
    return {"a": a, "b": b, "problems": len(common), "mean_a": float(x.mean()),
            "mean_b": float(y.mean()), "a_lower": int((x < y).sum()),
            "wilcoxon_p": float(scipy.stats.wilcoxon(x, y).pvalue),
            "paired_t_p": float(scipy.stats.ttest_rel(x, y).pvalue)}


def render_paired(results: list[dict]) -> str:
    """``paired``'s results as a markdown table."""
    lines = ["Paired by problem (mean normalised regret per problem; two-sided tests):", "",
             "| a | b | problems | mean a | mean b | a lower on | Wilcoxon p | paired t p |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['a']} | {r['b']} | {r['problems']} | {r['mean_a']:.3f} | "
                     f"{r['mean_b']:.3f} | {r['a_lower']} | {r['wilcoxon_p']:.2g} | "
                     f"{r['paired_t_p']:.2g} |")
    return "\n".join(lines) + "\n"


def _keys_name(offset: int) -> str:
    return next((k for k, r in KEY_RANGES.items() if offset in r), "other")


def render(t: dict) -> str:
    """``table``'s numbers as markdown."""
    order = sorted(t["algorithms"], key=lambda a: (t["rows"][a]["average_rank"] is None,
                                                   t["rows"][a]["average_rank"] or 0.0,
                                                   t["rows"][a]["mean_normalised_regret"] or 0.0))
    suite = "the dev suite"
    if t.get("suite") == "dev_constrained":
        suite = ("the constrained dev suite (the value: the thesis metric, regret plus violation, "
                 "normalised like the regret)")
    lines = [
        f"Defaults on {suite}: {len(t['problems'])} problems, budget {t['budget']}, "
        f"{t['seeds']} {_keys_name(t['seed_offset'])} keys (PRNGKey({t['seed_offset']} + i)), "
        f"scale {t['scale']!r}. Ranks among the {len(t['ranked'])} algorithms that ran all "
        f"{len(t['common'])} problems (n/a: still running). Beats / worse: problems where the mean "
        f"best value is below / above random search's, one-sided Welch, BH over all pairs at "
        f"{ALPHA}.",
        "",
        "| algorithm | mean normalised regret | average rank | beats random | worse than random "
        "| problems | non-finite seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in order:
        r = t["rows"][a]
        nr = "n/a" if r["mean_normalised_regret"] is None else f"{r['mean_normalised_regret']:.3f}"
        rk = "n/a" if r["average_rank"] is None else f"{r['average_rank']:.2f}"
        ref = a == REFERENCE
        lines.append(f"| {a} | {nr} | {rk} | {'-' if ref else r['beats']} | "
                     f"{'-' if ref else r['worse']} | {r['problems']} | {r['not_finite']} |")
    lines += ["", "Normalised regret per problem (BH-adjusted p of 'below random search' in "
              "brackets):", "",
              "| problem | " + " | ".join(order) + " |", "|---|" + "---|" * len(order)]
    for p in t["problems"]:
        cells = []
        for a in order:
            r = t["rows"][a]
            if p not in r["per_problem"]:
                cells.append("")
                continue
            v = f"{r['per_problem'][p]:.3g}"
            if p in r["p_bh"]:
                v += f" ({r['p_bh'][p]:.2g})"
            cells.append(v)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="cpu", choices=["smoke", "cpu", "full"])
    parser.add_argument("--out", required=True, help="experiment folder")
    parser.add_argument("--only", default=None,
                        help="comma-separated algorithm names to run now (default: all)")
    parser.add_argument("--report-only", action="store_true",
                        help="write the table from the stored cells without running")
    parser.add_argument("--keys", default="reporting", choices=sorted(KEY_RANGES),
                        help="key range: reporting (the protocol) or tuning (choosing defaults)")
    parser.add_argument("--seeds", type=int, default=16, help="keys per cell (protocol: 16)")
    parser.add_argument("--suite", default="dev", choices=sorted(SUITES),
                        help="dev (the plain algorithms) or dev_constrained (those that model "
                             "constraints)")
    parser.add_argument("--members", default=None,
                        help="comma-separated suite members to run (default: all)")
    parser.add_argument("--variant", action="append", default=None,
                        help="LABEL=NAME[:JSON options], repeated: run these instead of every "
                             "algorithm's defaults (random search is always added)")
    parser.add_argument("--panel", default=None, choices=["low_budget"],
                        help="the low-budget panel (d <= 6, budgets 20/30/40, the default "
                             "initial design, PANEL_KEYS) instead of the protocol")
    parser.add_argument("--paired", action="append", default=None, metavar="A:B",
                        help="also compare A with B paired by problem (repeatable; written "
                             "under the table)")
    args = parser.parse_args(argv)
    if args.seeds < 2:
        parser.error(f"--seeds must be >= 2 (Welch tests), got {args.seeds}")
    algorithms = None
    if args.variant:
        try:
            algorithms = [parse_variant(v) for v in args.variant]
        except ValueError as err:
            parser.error(str(err))
        if not any(a.id == REFERENCE for a in algorithms):
            algorithms.append(S.AlgorithmSpec(name=REFERENCE))
    members = None
    if args.members:
        members = [m for m in args.members.split(",") if m]
        unknown = sorted(set(members) - set(suites.suite(args.suite)))
        if unknown:
            parser.error(f"--members: unknown {args.suite} members {unknown}; "
                         f"choose from {sorted(suites.suite(args.suite))}")
    if args.panel:
        keys = "panel" if args.keys == "reporting" else args.keys
        spec, scale = panel_spec(algorithms, seeds=args.seeds, keys=keys), "panel"
    else:
        spec, scale = dev_spec(algorithms, members=members, keys=args.keys, seeds=args.seeds,
                               suite=args.suite), args.scale
    if not args.report_only:
        only = None if args.only is None else [a for a in args.only.split(",") if a]
        ntkbo.experiments.run(spec, args.out, scale, progress=True, only=only,
                              command=" ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]))
    if args.panel:
        text = render_panel(panel_table(args.out))
    else:
        text = render(t := table(args.out))
    if args.paired and not args.panel:
        try:
            pairs = [tuple(item.split(":")) for item in args.paired]
            if any(len(pair) != 2 for pair in pairs):
                raise ValueError(f"--paired takes A:B, got {args.paired}")
            text += "\n" + render_paired([paired(t, a, b) for a, b in pairs])
        except ValueError as err:
            parser.error(str(err))
    with open(os.path.join(args.out, "panel.md" if args.panel else "defaults.md"), "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
