"""The ``ntkbo`` command line: run, demo, list, bench, report, summary, coco and coco-report.

``ntkbo run --algo neural_bo --problem ackley --dim 10 --budget 100 --seeds 4`` runs the seeds in
blocks (``--block``; ``jax.vmap`` within a block), in chunks so that a progress bar can show the
best value so far (``best over seeds=``: the best noise-free value of all the seeds run so far,
so it never rises; the printed summary shows it again, labelled the same, beside the mean over
seeds of each seed's best), then writes ``results.json`` (every evaluated point and value, per seed, plus
the summary and what rebuilds the run) and ``best_so_far.png`` (the best noise-free value against
evaluations, mean and standard error across seeds).

``ntkbo run --config run.toml`` reads the same settings from a TOML file (keys ``CONFIG_KEYS``:
``algo``, ``problem``, ``budget``, ... and an ``[options]`` table of algorithm options); flags
given on the command line override the file, ``--set`` overrides single options, and an unknown
key is an error naming it.

**Stopping.** ``Ctrl-C`` or ``SIGTERM`` on ``run``, ``demo``, ``bench`` or ``coco`` prints one
line, what was kept and the command that resumes or re-runs it, and exits 130 (143 for
``SIGTERM``); finished cells and a previous ``results.json`` stay whole (``main``).

**Precision.** ``run`` and ``bench`` both run in float64 unless ``--dtype float32`` says otherwise
(``DEFAULT_DTYPE``; each ``--help`` states it): every committed study of a shipped spec
(``benchmarks/specs``, run into ``benchmarks/results``) ran in float64, a cell's dtype is part of
its hash, so a study resumes only in the precision it started in, and ``run``'s records are
then comparable with the studies'. A ``bench`` into a folder whose cells ran in the other dtype
stops with an error naming the ``--dtype`` that resumes it. ``coco`` keeps float64 too
(``--float32``), for targets down to 1e-8.

**Reproducing one seed.** XLA compiles a vmapped program differently from the unbatched one (on
CPU: fused multiply-adds contracted in vectorised but not in scalar code, and other fusion and
vectorisation choices), so a seed run inside a block of ``b`` vmapped seeds and the same key run
alone differ in the last bits, and Bayesian optimisation amplifies that into different points
(up to 0.06 in ``y`` on Branin after ten evaluations, float32). Bit-identity needs the same
program: ``ntkbo run ... --seed-index I`` re-runs only the block holding seed ``I``, with the same
keys, block size and chunk, and reproduces its stored trajectory exactly. On CPU the default block
is one seed per call (``ntkbo.experiments.runner.default_block``; vmapped seeds gain nothing
there), so seed ``I`` is also ``loop.minimize_chunks(algo,
problem, budget, keys[I:I + 1], n_init=..., chunk=..., min_capacity=...)`` with ``keys =
jax.random.split(PRNGKey(seed), seeds)``.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import math
import os
import platform
import re
import sys
import time

import numpy as np

from ntkbo import files

#: The layout version of ``results.json`` (2: schema, resolved options, n_init, q, dtype, versions,
#: device, command and git revision added; 3: the algorithm's name and config from its
#: ``Algorithm`` record with ``config_reproducible``, ``block``, ``seed_index``, ``config_file``;
#: 4: ``min_capacity``).
RESULTS_SCHEMA = 4

#: The keys of a ``ntkbo run --config`` TOML file and their defaults (``None``: none or required).
CONFIG_KEYS = {"algo": None, "problem": None, "dim": None, "budget": 50, "seeds": 4, "seed": 0,
               "n_init": None, "noise_std": None, "chunk": 5, "block": None, "seed_index": None,
               "min_capacity": 128, "out": "runs/latest", "plot": True, "options": {}}

#: ``ntkbo run``'s smallest buffer capacity (``--min-capacity``): the drivers' own default,
#: ``ntkbo.loop.MIN_CAPACITY`` (written out here so that the command line starts without
#: importing JAX; ``tests/test_cli.py`` checks that the two agree).
RUN_MIN_CAPACITY = CONFIG_KEYS["min_capacity"]


def read_config(path: str) -> dict:
    """The settings of a ``ntkbo run --config`` TOML file: a dict with keys from ``CONFIG_KEYS``
    (``options`` a table of algorithm options). ``ValueError`` naming the file and the key for an
    unknown key, a value of the wrong type or a file that is not TOML."""
    import tomllib

    try:
        with open(path, "rb") as fh:
            cfg = tomllib.load(fh)
    except OSError as err:
        raise ValueError(f"--config: cannot read {path!r} ({err.strerror or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"--config: {path!r} is not valid TOML: {err}") from None
    unknown = [k for k in cfg if k not in CONFIG_KEYS]
    if unknown:
        raise ValueError(f"--config {path!r}: unknown key {unknown[0]!r}; the keys are "
                         f"{', '.join(CONFIG_KEYS)}")
    types = {"algo": str, "problem": str, "out": str, "plot": bool, "options": dict,
             "noise_std": (int, float)}
    for k, v in cfg.items():
        want = types.get(k, int)
        if isinstance(v, bool) and want is not bool or not isinstance(v, want):
            raise ValueError(f"--config {path!r}: {k} must be "
                             f"{getattr(want, '__name__', 'a number')}, got {v!r}")
    return cfg


def _parse_options(items: list[str]) -> dict:
    """``--set`` items ``key=value`` (values as Python literals, else strings; a dotted key
    ``network.width=64`` sets a field of a part, ``ntkbo.parts``)."""
    from ntkbo.parts import set_option

    out: dict = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            value = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            value = v
        try:
            set_option(out, k.strip(), value)
        except ValueError as err:
            raise SystemExit(f"--set {item}: {err}") from None
    return out


class _Fields(tuple):
    """A part's mapping of fields as sorted pairs: hashable, and told apart from a tuple value."""


def _frozen(value):
    return _Fields(sorted(value.items())) if isinstance(value, dict) else value


def _thawed(value):
    return dict(value) if isinstance(value, _Fields) else value


def _algorithm(name: str, options: dict):
    """``ntkbo.algorithms.get(name, **options)``, the same object for the same hashable options
    within a process, so that a second ``run`` (``--seed-index`` after a full run, in-process
    callers) reuses the compiled programs, which are cached per ``Algorithm``."""
    import ntkbo

    key = tuple(sorted((k, _frozen(v)) for k, v in options.items()))
    try:
        hash(key)
    except TypeError:  # an unhashable option (a list, an array): built afresh
        return ntkbo.algorithms.get(name, **options)
    return _cached_algorithm(name, key)


@functools.lru_cache(maxsize=16)
def _cached_algorithm(name: str, options: tuple):
    import ntkbo

    return ntkbo.algorithms.get(name, **{k: _thawed(v) for k, v in options})


#: ``ntkbo list``'s families of surrogate model.
FAMILIES = ("neural network", "NTK-GP", "GP", "linear-model", "random")

_ACQ = {"ei": "EI", "logei": "LogEI", "ucb": "UCB", "pi": "PI", "ts": "TS",
        "mean": "posterior mean", "cei": "constrained EI"}

#: ``ntkbo list``: registry name -> (family, the paper or source it implements), as the module
#: docstrings of ``ntkbo/algorithms/*.py`` (and, for GP-UCB, ``gp``'s docstring) cite them; a
#: baseline no paper defines is named as one. ``tests/test_cli.py`` checks that every name of
#: ``ntkbo.algorithms.names()`` has an entry.
ALGORITHMS = {
    "neural_bo": ("neural network", "NeuralBO, Phan-Trong et al. 2023 (Neurocomputing)"),
    "neural_cbo": ("neural network", "Neural-CBO, Phan-Trong's thesis ch. 4 (constrained BO)"),
    "pinn_bo": ("neural network", "PINN-BO, Phan-Trong et al. 2024 (ECML-PKDD)"),
    "pinn_ntk_gp": ("NTK-GP", "PINN-BO's exact-NTK counterpart, Phan-Trong et al. 2024"),
    "go_ucb": ("neural network", "GO-UCB, Liu and Wang 2023 (ICML)"),
    "go_ucb_joint": ("neural network",
                     "GO-UCB with the paper's joint optimistic step, Liu and Wang 2023"),
    "sto_bnts": ("neural network", "STO-BNTS, Dai et al. 2022 (NeurIPS)"),
    "sto_bnts_linear": ("linear-model", "STO-BNTS-Linear, Dai et al. 2022 (NeurIPS)"),
    "neural_greedy": ("neural network", "Neural Greedy (SimpleSMB), Paria et al., 'Be Greedy'"),
    "simple_smb": ("neural network", "Neural Greedy with SimpleSMB, Paria et al., 'Be Greedy'"),
    "posterior_smb": ("neural network",
                      "Neural Greedy with PosteriorSMB, Paria et al., 'Be Greedy'"),
    "neural_ucb": ("neural network", "NeuralUCB, Zhou et al. 2020 (ICML)"),
    "neural_ts": ("neural network", "NeuralTS, Zhang et al. 2021 (ICLR)"),
    "neural_linear": ("linear-model", "neural-linear BO: DNGO, Snoek et al. 2015, by default "
                      "(acquisition='ts': NeuralLinTS)"),
    "dngo": ("linear-model", "DNGO, Snoek et al. 2015 (ICML)"),
    "neural_lin_ts": ("linear-model", "NeuralLinTS, Riquelme et al. 2018"),
    "random_search": ("random", "random-search baseline"),
    "gp": ("GP", "GP-EI baseline (BoTorch-style MAP fit, Hvarfner et al. 2024 priors)"),
    "ntk_gp": ("NTK-GP", "infinite-width NTK-GP-UCB baseline"),
    **{f"gp_{a}": ("GP", f"GP-{label} baseline") for a, label in _ACQ.items()},
    **{f"ntk_gp_{a}": ("NTK-GP", f"NTK-GP-{label} baseline") for a, label in _ACQ.items()},
    "gp_ucb": ("GP", "GP-UCB, Srinivas et al. 2010"),
    "gp_logei": ("GP", "GP-LogEI, Ament et al. 2023"),
    "gp_cei": ("GP", "constrained EI, Gardner et al. 2014 (Neural-CBO's baseline)"),
    "ntk_gp_logei": ("NTK-GP", "NTK-GP-LogEI (LogEI: Ament et al. 2023)"),
    "ntk_gp_cei": ("NTK-GP", "constrained EI on NTK-GPs (cEI: Gardner et al. 2014)"),
    "gp_mean": ("GP", "GP posterior-mean (greedy) baseline"),
    "ntk_gp_mean": ("NTK-GP", "NTK-GP posterior-mean (greedy) baseline"),
}


def plain(text: str) -> str:
    """``text`` with reST markup removed, for a terminal: double and single backticks, roles such
    as ``:func:`` and bold ``**...**`` (``**kwargs`` kept)."""
    text = re.sub(r":[a-z]+:`([^`]*)`", r"\1", text)
    text = re.sub(r"``([^`]*)``", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return re.sub(r"\*\*([^*\s][^*]*[^*\s])\*\*", r"\1", text)


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (whitespace collapsed): up to the first full stop outside
    parentheses, brackets and backticks followed by a capital letter, a quote, a backtick or the
    end (so "e.g. the", "eqs. 4.9" and "ntkbo.gp" do not end it)."""
    text = " ".join(text.split())
    depth, ticks = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            ticks = not ticks
        elif ticks:
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "." and depth == 0:
            rest = text[i + 1:]
            if not rest or re.match(r"\s+[A-Z`\"']", rest):
                return text[:i + 1]
    return text


_ENTRY = re.compile(r"(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:\([^)]*\))?:(?:\s+(.*)|$)")
_SECTION = re.compile(r"(Returns|Raises|Yields|Examples?|Notes?|Attributes|See Also):")
_REFERENCE = re.compile(r"\bas (?::func:`(\w+)`|``(\w+)``)")


def _args_entries(doc: str) -> tuple[dict, str]:
    """The Google-style ``Args:`` entries of a docstring (``inspect.getdoc``'s, dedented): option
    name -> its text (continuation lines joined; ``a, b: text`` gives the text to both), and the
    text written on the ``Args:`` line itself (``Args: as ``gp`` ...``) with its indented
    continuation. The section runs to the next unindented ``Returns:``-style header; an
    unindented paragraph inside it (``gp``'s account of its defaults) ends the entry before it."""
    lines = doc.splitlines()
    start = next((i for i, ln in enumerate(lines) if re.match(r"(Args|Arguments):", ln)), None)
    if start is None:
        return {}, ""
    inline = [lines[start].split(":", 1)[1].strip()]
    entries, indent, current = {}, None, None
    for ln in lines[start + 1:]:
        if not ln.strip():
            continue
        lead = len(ln) - len(ln.lstrip())
        if lead == 0:
            if _SECTION.match(ln):
                break
            current = None
            continue
        m = _ENTRY.fullmatch(ln.strip())
        if m and (indent is None or lead == indent):
            indent, current = lead, [m.group(2) or ""]
            for name in re.split(r"\s*,\s*", m.group(1)):
                entries[name] = current
        elif current is not None and indent is not None and lead > indent:
            current.append(ln.strip())
        elif indent is None and inline[0]:
            inline.append(ln.strip())
    return {k: " ".join(v) for k, v in entries.items()}, " ".join(inline)


def _parenthesis_end(text: str) -> int:
    """The index just past the parenthesis that opens ``text`` (after spaces), balanced."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ")" and depth == 0:
            return i + 1
    return len(text)


def option_meanings(name: str) -> dict:
    """Option -> one-line meaning of algorithm ``name``, from its factory's docstring ``Args:``
    (the first sentence of each entry, markup removed). Also read: a ``**kwargs`` entry that
    lists ``a``, ``b`` (text), and a docstring that says its arguments are "as ``other``" (or
    "as :func:`other`", a function of the same module) for the options it does not name itself.
    An option found nowhere is absent (``ntkbo list --options`` prints "(undocumented)")."""
    import inspect

    import ntkbo.algorithms

    if name not in ntkbo.algorithms.names():
        return {}
    inner = ntkbo.algorithms.factory(name)
    fn = getattr(inner, "func", inner)  # the function behind a partial (gp_ucb: gp)
    out: dict = {}
    seen = set()
    while fn is not None and fn not in seen:
        seen.add(fn)
        doc = inspect.getdoc(fn) or ""
        entries, inline = _args_entries(doc)
        for key, text in entries.items():
            if key.startswith("*"):  # **kwargs: ``a``, ``b`` (meaning), ``c`` (meaning)
                listing = re.split(r";(?![^(]*\))", text)[0]  # up to "; defaults ..."
                for group in re.finditer(r"((?:``\w+``,?\s*)+)\(([^()]*)\)", listing):
                    for opt in re.findall(r"``(\w+)``", group.group(1)):
                        out.setdefault(opt, plain(group.group(2)) + f" (through {key})")
            else:
                out.setdefault(key, plain(first_sentence(text)))
        text = inline if _REFERENCE.search(inline) else doc
        ref = _REFERENCE.search(text)
        if ref is None:
            break
        # The options the referring sentence names after "as X (...)" are its own ("as ``gp``
        # (``log_ei`` included), plus ... ``lam``, ``signal``"), not the other function's.
        rest = text[ref.end():]
        rest = first_sentence(rest[_parenthesis_end(rest):] if rest.lstrip().startswith("(")
                              else rest)
        for opt in re.findall(r"``(\w+)``", rest):
            out.setdefault(opt, None)
        fn = getattr(sys.modules.get(fn.__module__), ref.group(1) or ref.group(2), None)
    return {k: v for k, v in out.items() if v}


def summarise(f: np.ndarray, optimum: float | None) -> dict:
    """Per-evaluation mean and standard error across seeds of the best noise-free value so far.

    ``f`` is ``(seeds, budget)``. The standard error is ``sd / sqrt(seeds)`` (0 for one seed).
    ``final_best_mean`` and ``final_best_se``: the mean and standard error over seeds of each
    seed's best value; ``final_best_min``: the best value of all the seeds together (the progress
    bar's ``best over seeds``).
    """
    from ntkbo.loop import best_so_far

    best = best_so_far(np.asarray(f))  # a failed evaluation (NaN) does not reset the curve
    s = best.shape[0]
    se = best.std(axis=0, ddof=1) / np.sqrt(s) if s > 1 else np.zeros(best.shape[1])
    out = {"best_so_far_mean": best.mean(0).tolist(), "best_so_far_se": se.tolist(),
           "final_best_mean": float(best[:, -1].mean()), "final_best_se": float(se[-1]),
           "final_best_min": float(np.fmin.reduce(best[:, -1]))}
    if optimum is not None:
        regret = best - optimum
        out["final_regret_mean"] = float(regret[:, -1].mean())
    return out


def plot(path: str, title: str, summary: dict, optimum: float | None) -> bool:
    """Writes the best-so-far curve with a standard-error band; False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    mean = np.asarray(summary["best_so_far_mean"])
    se = np.asarray(summary["best_so_far_se"])
    n = np.arange(1, mean.size + 1)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    if optimum is not None and np.all(mean - optimum > 0):
        lo = np.maximum(mean - se - optimum, (mean - optimum) * 1e-3)
        ax.plot(n, mean - optimum, lw=2)
        ax.fill_between(n, lo, mean + se - optimum, alpha=0.25)
        ax.set_yscale("log")
        ax.set_ylabel("simple regret: best f so far - f*")
    else:
        ax.plot(n, mean, lw=2)
        ax.fill_between(n, mean - se, mean + se, alpha=0.25)
        ax.set_ylabel("best f so far")
    ax.set_xlabel("evaluations")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        files.atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
    finally:
        plt.close(fig)
    return True


def run(algo_name: str, problem_name: str, dim: int | None, budget: int, seeds: int,
        n_init: int | None, out: str | None, options: dict, problem_options: dict,
        seed: int = 0, chunk: int = 5, quiet: bool = False, make_plot: bool = True,
        command: str | None = None, block: int | None = None, seed_index: int | None = None,
        config_file: dict | None = None, min_capacity: int = RUN_MIN_CAPACITY,
        programs_dir: str | None = None) -> dict:
    """Runs ``seeds`` seeds of an algorithm on a benchmark; returns the JSON-able record.

    The seeds' keys are ``jax.random.split(PRNGKey(seed), seeds)``; they run ``block`` at a time
    (vmapped; default one on CPU, elsewhere as many as the device's memory holds,
    ``ntkbo.experiments.runner.default_block``). With ``seed_index = I`` only the block holding
    seed ``I`` runs and the record holds seed ``I`` alone, bit-identical to its trajectory in the
    full run (module docstring). ``config_file``: the settings read by ``--config``, recorded.
    ``min_capacity``: the buffers' smallest capacity, a power of two (``RUN_MIN_CAPACITY``).
    ``programs_dir``: a folder for the run's exported programs (``ntkbo.programs``; ``main`` passes
    the cache folder's ``programs`` subfolder), used when every option of the algorithm is
    recorded exactly (``config_reproducible``: no option given as a Python object).

    Every argument is checked before anything is compiled or run (``ValueError`` naming the
    option): the counts, the algorithm's options (by its factory) and that ``out`` is writable."""
    from ntkbo.validation import check_int, check_writable_folder

    check_int("--seeds", seeds, 1)
    check_int("--chunk", chunk, 1)
    check_int("--budget", budget, 1)
    check_int("--min-capacity", min_capacity, 1)
    if min_capacity & (min_capacity - 1):
        raise ValueError(f"--min-capacity must be a power of two, got {min_capacity}")
    if n_init is not None:
        check_int("--n-init", n_init, 1)
    if block is not None:
        check_int("--block", block, 1)
    if seed_index is not None:
        check_int("--seed-index", seed_index, 0)
        if seed_index >= seeds:
            raise ValueError(f"--seed-index must be < --seeds={seeds}, got {seed_index}")
    if out:
        check_writable_folder("--out", out)
        # one writer per folder: a second run into ``out`` stops here, before anything runs
        with files.lock_folder(out, command or " ".join(sys.argv)):
            files.remove_temporaries(out)  # a killed writer's, whole or not: never renamed
            return _run(algo_name, problem_name, dim, budget, seeds, n_init, out, options,
                        problem_options, seed, chunk, quiet, make_plot, command, block,
                        seed_index, config_file, min_capacity, programs_dir)
    return _run(algo_name, problem_name, dim, budget, seeds, n_init, out, options,
                problem_options, seed, chunk, quiet, make_plot, command, block, seed_index,
                config_file, min_capacity, programs_dir)


def _problem(problem_name: str, dim: int | None, problem_options: dict):
    """The problem ``--problem`` names: a registered one (``ntkbo.benchmarks.get``), or a user's
    ``module:attribute`` (a ``Problem``, ``numpy_problem`` or a factory of one, imported as a
    study spec imports it: ``ntkbo.experiments.spec.user_problem``)."""
    import ntkbo
    from ntkbo.experiments.spec import ProblemSpec, user_problem

    if ":" not in problem_name:  # no registered problem has a ``:`` in its name
        return ntkbo.benchmarks.get(problem_name, dim=dim, **problem_options)
    return user_problem(ProblemSpec(problem_name, options=problem_options), dim, "--problem")


def _run(algo_name, problem_name, dim, budget, seeds, n_init, out, options, problem_options,
         seed, chunk, quiet, make_plot, command, block, seed_index, config_file, min_capacity,
         programs_dir) -> dict:
    """``run`` after its checks (and, with ``out``, under the folder's lock)."""
    import jax
    from tqdm import tqdm

    import ntkbo
    from ntkbo import loop

    problem = _problem(problem_name, dim, problem_options)
    # the words of a boolean option in --set or the TOML file ("false", "no") parsed
    options = ntkbo.algorithms.from_text(algo_name, options)
    # PINN-BO gets the problem's PDE, constrained algorithms its number of constraints (the same
    # function builds the algorithms of ``ntkbo bench``).
    built = ntkbo.algorithms.problem_options(algo_name, problem, **options)
    options = {k: v for k, v in built.items() if k != "pde" or "pde" in options}
    k = problem.n_constraints
    algo = _algorithm(algo_name, built)
    algo_config = algo.config
    if algo_config is None:  # ntkbo.algorithms records every algorithm it builds
        raise ValueError(f"algorithm {algo_name!r} carries no config record")
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds)
    if block is None:  # the study runner's rule: 1 on CPU, else as many as the memory holds
        from jax.sharding import Mesh

        from ntkbo.experiments import runner

        device = jax.devices()[0]
        block = 1 if device.platform == "cpu" else runner.default_block(
            Mesh([device], ("seeds",)), runner.run_bytes(algo, problem, budget, n_init))
        block = seeds if block is None else block
    block = min(block, seeds)
    starts = list(range(0, seeds, block))
    if seed_index is not None:
        starts = [seed_index - seed_index % block]
    t0 = time.time()
    n_run = sum(min(block, seeds - b) for b in starts)
    bar = tqdm(total=budget * n_run,
               desc=f"{algo_name} on {problem.name}-{problem.dim}d x{n_run}",
               unit="eval", disable=quiet, file=sys.stderr)
    inexact = [k for k in algo_config.non_reproducible if not (k == "pde" and "pde" in built
                                                                and "pde" not in options)]
    programs = None
    if programs_dir and not inexact:
        from ntkbo.programs import ProgramStore

        # What the traced programs close over besides their arguments: the algorithm's every
        # option and the problem as the registry builds it (the store adds the source and the
        # environment).
        programs = ProgramStore(programs_dir, json.dumps(
            {"algorithm": algo.name, "config": algo_config.to_json(), "problem": problem_name,
             "dim": dim, "problem_options": problem_options}, sort_keys=True, default=repr))
    parts, finished = [], 0
    best = np.nan  # the best noise-free value of every seed run so far: never rises
    for b in starts:
        last = None
        for progress in loop.minimize_chunks(algo, problem, budget, keys[b:b + block],
                                             n_init=n_init, chunk=chunk,
                                             min_capacity=min_capacity, programs=programs):
            bar.update(finished + progress.done * progress.f.shape[0] - bar.n)
            if progress.f.size:  # NaN, a failed evaluation, is skipped
                best = np.fmin(best, np.fmin.reduce(progress.f, axis=None))
            bar.set_postfix({BAR_STATISTIC: f"{best:.4g}"})
            last = progress
        if last is None:
            raise RuntimeError(f"loop.minimize_chunks yielded nothing for seeds {b}:{b + block}")
        finished += budget * last.f.shape[0]
        parts.append(last)
    bar.close()
    wall = time.time() - t0
    last = loop.Progress(budget, *(np.concatenate([getattr(p, f) for p in parts])
                                   for f in ("x", "y", "f", "c", "c_obs")))
    if seed_index is not None:  # the block ran with its companions; keep seed I
        i = seed_index % block
        last = loop.Progress(budget, *(a[i:i + 1] for a in last[1:]))
    ran = [seed_index] if seed_index is not None else list(range(seeds))
    optimum = None if problem.optimum is None else float(problem.optimum)
    from ntkbo.experiments.runner import git_revision, versions

    # Every factory option, defaults included (the Algorithm's own record): enough to rebuild
    # exactly what ran. The PDE is the problem's (rebuilt from the problem's name), so it does not
    # make the record irreproducible.
    config = algo_config.to_json()
    if "pde" in config and "pde" not in options:
        config["pde"] = f"the PDE of problem {problem.name!r}"
    record = {
        "schema": RESULTS_SCHEMA,
        "algorithm": algo.name, "options": {k: repr(v) for k, v in options.items()},
        "resolved_options": config,
        "config_reproducible": not inexact, "config_described_only": inexact,
        "problem": problem.name, "dim": int(problem.dim), "noise_std": float(problem.noise_std),
        "optimum": optimum, "budget": budget, "seeds": seeds, "seed": seed,
        "block": block, "seed_index": seed_index, "config_file": config_file,
        "min_capacity": min_capacity,
        "n_init": int(loop.default_n_init(problem, budget, algo) if n_init is None else n_init),
        "q": loop.batch_size(algo, problem),
        "dtype": "float64" if jax.config.read("jax_enable_x64") else "float32",
        "wall_time_s": wall, "ntkbo": ntkbo.__version__, "jax": jax.__version__,
        "python": platform.python_version(), "versions": versions(),
        "device_kind": jax.devices()[0].device_kind, "command": command or " ".join(sys.argv),
        "git_revision": git_revision(),
        "summary": {**summarise(last.f, optimum),
                    # failed evaluations (NaN/inf observations), per seed (ntkbo.data)
                    "failed": (~np.isfinite(last.y)).sum(axis=1).tolist()},
        "runs": [{"seed_index": s, "x": last.x[i].tolist(), "y": last.y[i].tolist(),
                  "f": last.f[i].tolist()} for i, s in enumerate(ran)],
    }
    if k:  # constraints c_k(x) <= 0: values, feasibility and Neural-CBO's metric per run
        metric = np.asarray(loop.best_regret_plus_violation(last.f, last.c, optimum))
        feasible = np.all(last.c <= 0, axis=-1)
        record["n_constraints"] = k
        record["summary"]["final_metric_mean"] = float(np.mean(metric[:, -1]))
        record["summary"]["found_feasible"] = feasible.any(axis=1).tolist()
        for i, run_i in enumerate(record["runs"]):
            run_i.update(c=last.c[i].tolist(), c_obs=last.c_obs[i].tolist(),
                         feasible=feasible[i].tolist(), metric=metric[i].tolist())
    if out:
        # whole or not at all: a run killed while writing leaves the previous results.json
        files.atomic_write(os.path.join(out, "results.json"), json.dumps(record).encode())
        if make_plot:
            record["plot"] = plot(os.path.join(out, "best_so_far.png"),
                                  f"{algo_name} on {problem.name} (d={problem.dim}), "
                                  + (f"{seeds} seeds" if seed_index is None
                                     else f"seed {seed_index} of {seeds}"),
                                  record["summary"], optimum)
    return record


#: The statistic ``ntkbo run``'s progress bar shows, as its label there: the best noise-free
#: value of all the seeds run so far (it never rises). The printed summary shows it too, in the
#: row of the same name, beside the mean over seeds of each seed's best.
BAR_STATISTIC = "best over seeds"

#: The width of the labels of ``ntkbo run``'s printed summary.
SUMMARY_WIDTH = 42


def summary_rows(rec: dict) -> list[tuple[str, str]]:
    """The rows (label, value) of ``ntkbo run``'s printed summary of the record ``rec``, each label
    naming its statistic: the best value of all seeds together (``BAR_STATISTIC``, where the
    progress bar ended), the mean and standard error over seeds of each seed's best, and with a
    known optimum that optimum and the mean over seeds of the final simple regret."""
    s = rec["summary"]
    n = len(rec["runs"])
    best = s.get("final_best_min")
    if best is None:  # a record written before the summary kept it
        best = min((min(r["f"], default=np.inf) for r in rec["runs"]), default=np.nan)
    rows = [(f"{BAR_STATISTIC} (as the progress bar)", f"{best:.6g}"),
            (f"each seed's best, mean +- se over {n} seed{'s' * (n != 1)}",
             f"{s['final_best_mean']:.6g} +- {s['final_best_se']:.2g}")]
    if rec["optimum"] is not None:
        rows += [("known optimum", f"{rec['optimum']:.6g}"),
                 ("final simple regret, mean over seeds", f"{s['final_regret_mean']:.4g}")]
    return rows


def _print_summary(rec: dict, out: str | None) -> None:
    s = rec["summary"]
    seeds = (f"{rec['seeds']} seeds" if rec.get("seed_index") is None
             else f"seed {rec['seed_index']} of {rec['seeds']}")
    print(f"\n{rec['algorithm']} on {rec['problem']} (d={rec['dim']}), budget {rec['budget']}, "
          f"{seeds}, {rec['wall_time_s']:.1f} s")
    for label, value in summary_rows(rec):
        print(f"  {label:<{SUMMARY_WIDTH}}  {value}")
    if rec.get("n_constraints"):
        print(f"  {rec['n_constraints']} constraints: feasible point found in "
              f"{sum(s['found_feasible'])}/{rec['seeds']} seeds; best positive regret plus "
              f"violation {s.get('final_metric_mean', float('nan')):.4g} (mean)")
    if out:
        print(f"  results: {os.path.join(out, 'results.json')}"
              + (f", plot: {os.path.join(out, 'best_so_far.png')}" if rec.get("plot") else ""))


def _summary(dirs: list[str]) -> int:
    """``ntkbo summary DIR...``: writes each DIR/summary.npz (ntkbo.experiments.summary)."""
    from ntkbo.experiments import summary

    for out in dirs:
        if not os.path.isdir(out):
            print(f"ntkbo summary: error: DIR {out!r} is not a folder", file=sys.stderr)
            return 2
        try:
            path = summary.write_summary(out)
        except ValueError as err:
            print(f"ntkbo summary: error: {err}", file=sys.stderr)
            return 2
        if path is None:
            print(f"ntkbo summary: error: DIR {out!r} has no cell files (DIR/cells/*.npz) and no "
                  f"{summary.SUMMARY}", file=sys.stderr)
            return 2
        n = len(summary.read_summary(out))
        print(f"summary: {path} ({n} cells, {os.path.getsize(path) / 1e3:.0f} kB)")
    return 0


def _report(out: str, reference: str | None, plots: bool) -> int:
    """``ntkbo report DIR``: writes DIR/report.md (ntkbo.experiments.report) and says where."""
    from ntkbo.experiments import report

    try:
        rep = report.write_report(out, reference=reference, plots=plots)
    except ValueError as err:
        print(f"ntkbo report: error: {err}", file=sys.stderr)
        return 2
    print(f"report: {rep['report']} ({len(rep['problems'])} problems, "
          f"{len(rep['algorithms'])} algorithms, reference {rep['reference']}; "
          f"{len(rep['figures'])} figures)")
    return 0


def _list() -> None:
    """``ntkbo list``: one line per algorithm (name, family, source; ``ALGORITHMS``), then one line
    per problem with its dimension(s)."""
    import ntkbo
    from ntkbo.benchmarks import registry, tasks

    names = ntkbo.algorithms.names()
    w = max(map(len, names))
    print("algorithms (name, family, paper or source):")
    for name in names:
        family, source = ALGORITHMS.get(name, ("?", "(not in ntkbo.cli.ALGORITHMS; see "
                                                    f"ntkbo.algorithms.{name}'s docstring)"))
        print(f"  {name:<{w}}  {family:<14}  {source}")
    problems = ntkbo.benchmarks.names()
    w = max(map(len, problems))
    print("problems (name, dimension):")
    for name in problems:
        dims = registry.dims(name)  # the registry's own account of its dimensions
        dims = str(tasks.task(name).dim) if dims is None else dims
        print(f"  {name:<{w}}  {dims}")


#: Options that an algorithm reads only under other options' values: registry name of the
#: factory (``ntkbo.algorithms.<factory>``) -> option -> the conditions under which it is read,
#: each ``(the option it depends on, the values under which it is read)``, all to hold.
#: ``ntkbo list --options`` marks such an option inert when the algorithm's defaults (a
#: registered partial's own, e.g. ``gp_ucb``'s ``acquisition="ucb"``) fail a condition;
#: ``tests/test_options_help.py`` checks each entry against behaviour (changing the option under
#: the defaults leaves a run's program unchanged, under activating values it does not).
#: ``gp``'s and ``ntk_gp``'s acquisitions: a Thompson draw (``"ts"``) takes the minimum of
#: ``num_ts_candidates`` points and runs no search; constrained EI (``"cei"``,
#: ``ntkbo.algorithms.constrained_ei``) maximises its own log-acquisition, reading neither
#: ``log_ei`` nor the posterior's inverse.
_NOT_TS = ("ucb", "ei", "logei", "pi", "mean", "cei")
_KERNEL_ACQUISITION = {
    "beta": [("acquisition", ("ucb",))],
    "xi": [("acquisition", ("ei", "logei", "pi", "cei"))],
    "search.log_ei": [("acquisition", ("ei",))],
    "search.num_ts_candidates": [("acquisition", ("ts",))],
    **{f"search.{f}": [("acquisition", _NOT_TS)]
       for f in ("num_candidates", "num_restarts", "num_steps")},
    "search.posterior_inverse": [("acquisition", ("ucb", "ei", "logei", "pi", "ts", "mean"))],
}
_FIT_ON = [("fit.enabled", (True,))]
ACTIVE_ONLY_WITH = {
    "neural_bo": {**{f"search.{f}": [("thompson", ("pathwise",))]
                     for f in ("num_restarts", "num_steps", "method")},
                  # GD's optax state is empty: nothing to keep
                  "training.keep_optimizer_state": [("training.optimizer", ("adam",))]},
    "gp": {**_KERNEL_ACQUISITION, "fit.learning_rate": [("fit.method", ("adam",))]},
    "ntk_gp": {**_KERNEL_ACQUISITION,
               **{f"fit.{f}": _FIT_ON for f in ("method", "num_steps", "refit_until",
                                                "refit_ratio")},
               "fit.learning_rate": _FIT_ON + [("fit.method", ("adam",))]},
    "go_ucb": {"F": [("beta", ("paper",))], "beta_scale": [("beta", ("theory",))],
               "search.num_steps": [("optimistic", ("linearized",))],
               **{f"search.{f}": [("optimistic", ("joint",))]
                  for f in ("joint_steps", "joint_learning_rate")}},
    # Levenberg-Marquardt takes no step size (``ntkbo.nets.train_member``)
    "neural_greedy": {"training.learning_rate": [("training.optimizer", ("gd", "adam"))]},
    # the step size and the loss's scaling are GD's alone (``ntkbo.nets.train_member``)
    "sto_bnts": {f"training.{f}": [("training.optimizer", ("gd",))]
                 for f in ("learning_rate", "loss_reduction")},
    # the constants of nu="thesis"; a Thompson draw takes the best candidate, no refinement
    "pinn_ntk_gp": {**{f: [("nu", ("thesis",))] for f in ("B", "R1", "R2", "delta")},
                    **{f"search.{f}": [("acquisition", ("lcb", "mean"))]
                       for f in ("num_steps", "method")}},
}


def _factory_name(name: str) -> str:
    """The name of the factory function behind registered algorithm ``name`` (``gp`` for
    ``gp_ucb``, a partial of it)."""
    import ntkbo.algorithms

    f = ntkbo.algorithms.factory(name)
    return getattr(getattr(f, "func", f), "__name__", name)


def _lookup(defaults: dict, option: str):
    """The value of ``option`` (``part.field`` for a part's field) in ``defaults``."""
    if "." in option:
        part, field = option.split(".", 1)
        return (defaults.get(part) or {}).get(field)
    return defaults.get(option)


def inert_options(name: str, defaults: dict | None = None) -> dict:
    """The options of algorithm ``name`` that do nothing under ``defaults`` (default: its own,
    ``ntkbo.algorithms.defaults``): option -> why, e.g. ``{"search.num_steps": 'read only with
    thompson="pathwise"'}`` (``ACTIVE_ONLY_WITH``)."""
    import ntkbo

    rules = ACTIVE_ONLY_WITH.get(_factory_name(name), {})
    if not rules:
        return {}
    defaults = ntkbo.algorithms.defaults(name) if defaults is None else defaults
    out = {}
    for option, conditions in rules.items():
        if not all(_lookup(defaults, on) in values for on, values in conditions):
            out[option] = "read only with " + " and ".join(
                f"{on}={values[0]!r}" if len(values) == 1 else f"{on} in {values!r}"
                for on, values in conditions)
    return out


def _balanced(text: str) -> str:
    """The content of the parenthesis that opens ``text``."""
    end = _parenthesis_end(text)
    return text[1:end - 1]


def _part_notes(entry: str, defaults: dict) -> dict:
    """What a factory's ``Args:`` entry for a part says of the default value of each field of
    ``defaults`` (field -> default) beyond the part's own docstring: the text after the field's
    name outside parentheses (``W_std`` (``"paper"``: ...)`` gives the parenthesis' content,
    ``optimizer`` ``"gd"`` (default, paper), ...`` the text up to the next field or ``;``),
    kept only where it starts with that default (``"paper"``, ``None``, ``True``): what the
    value the algorithm takes means for it."""
    depth, level = 0, []
    for ch in entry:
        depth += (ch == "(") - (ch == ")")
        level.append(depth)
    spots = []
    for f in defaults:
        m = next((m for m in re.finditer(rf"``{re.escape(f)}``", entry)
                  if level[m.start()] == 0), None)
        if m:
            spots.append((m.start(), m.end(), f))
    spots.sort()
    out = {}
    for i, (_, end, f) in enumerate(spots):
        stop = spots[i + 1][0] if i + 1 < len(spots) else len(entry)
        rest = entry[end:stop].strip()
        if rest.startswith("("):
            note = _balanced(rest)
        else:
            depth, cut = 0, len(rest)
            for j, ch in enumerate(rest):
                depth += (ch in "([") - (ch in ")]")
                if ch == ";" and depth == 0:
                    cut = j
                    break
            note = rest[:cut]
        note = plain(" ".join(note.split())).strip(" ,;.")
        note = re.sub(r"(,|;)?\s*(and|or|also|with)$", "", note).strip(" ,;")
        value = defaults[f]
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        if note.startswith(shown) and note != shown:
            out[f] = note
    return out


def option_rows(name: str) -> list[tuple[str, str, str, str]]:
    """``ntkbo list --options NAME``'s rows: ``(option, default, meaning, inert)`` per option of
    algorithm ``name`` in the factory's order, a part's fields as ``part.field``. ``meaning``: the
    first sentence of the option's ``Args:`` entry in the factory's docstring (``option_meanings``)
    or, for a part's field, of the field's entry in the part's docstring (``ntkbo.parts``)
    followed by what the factory's entry for the part says of it (its values: ``W_std="paper"``);
    ``"(undocumented)"`` if neither says anything. ``inert``: why the option does nothing under
    the defaults (``inert_options``), else ``""``. ``ValueError`` naming ``name`` if unknown."""
    import inspect

    import ntkbo
    from ntkbo.parts import PARTS

    defaults = ntkbo.algorithms.defaults(name)
    inert = inert_options(name, defaults)
    # the factory's order; a required option (PINN-BO's pde, which the problem supplies) shown
    inner = ntkbo.algorithms.factory(name)
    params = inspect.signature(inner).parameters
    order = [k for k in params if k in defaults or params[k].default is inspect.Parameter.empty]
    meanings = option_meanings(name)
    entries, _ = _args_entries(inspect.getdoc(getattr(inner, "func", inner)) or "")
    rows = []
    for opt in order + [k for k in defaults if k not in order]:
        value = defaults.get(opt, inspect.Parameter.empty)
        if opt in PARTS and isinstance(value, dict):  # a part: one row per field it reads
            fields, _ = _args_entries((inspect.getdoc(PARTS[opt]) or "").replace(
                "Attributes:", "Args:"))
            notes = _part_notes(entries.get(opt, ""), value)
            for f, v in value.items():
                text = plain(first_sentence(fields.get(f, "")))
                if f in notes:
                    text = (text + " " if text else "") + f"Here: {notes[f]}."
                key = f"{opt}.{f}"
                rows.append((key, repr(v), text or "(undocumented)", inert.get(key, "")))
            continue
        shown = "(required)" if value is inspect.Parameter.empty else repr(value)
        rows.append((opt, shown, meanings.get(opt, "(undocumented)"), inert.get(opt, "")))
    return rows


def _list_options(name: str, markdown: bool = False) -> int:
    """``ntkbo list --options NAME``: ``option = default  meaning`` per option (``option_rows``),
    an inert one marked ``[inert under these defaults: read only with ...]``; with ``markdown`` the
    table of the algorithm pages (``options_markdown``). Exit 2 naming ``--options`` for an
    unknown name."""
    try:
        rows = option_rows(name)
    except (ValueError, TypeError) as err:
        print(f"ntkbo list: error: --options: {err}", file=sys.stderr)
        return 2
    if markdown:
        print(options_markdown(name), end="")
        return 0
    w = min(max(len(f"{a} = {b}") for a, b, _, _ in rows), 40)
    for opt, default, meaning, inert in rows:
        mark = f" [inert under these defaults: {inert}]" if inert else ""
        print(f"{opt + ' = ' + default:<{w}}  {meaning}{mark}")
    return 0


def _md_cell(text: str) -> str:
    """``text`` for a Markdown table cell: ``|``, ``*`` and ``_`` escaped (``W_2``, ``**kwargs``
    stay as written)."""
    return text.replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def options_markdown(name: str) -> str:
    """The options table of algorithm ``name`` as its page in ``docs/algorithms/`` carries it,
    from ``option_rows`` (the same source as ``ntkbo list --options``): one row per option with
    its default and meaning, an inert one marked; ``tests/test_options_help.py`` checks that the
    pages hold exactly this text."""
    lines = [f"Every option of `{name}` (`ntkbo list --options {name}` prints the same):", "",
             "| option | default | meaning |", "|---|---|---|"]
    for opt, default, meaning, inert in option_rows(name):
        mark = f" *Inert under these defaults: {inert}.*" if inert else ""
        lines.append(f"| `{opt}` | `{_md_cell(default)}` | {_md_cell(meaning)}{mark} |")
    presets = preset_rows(name)
    if presets:
        lines += ["", f"Presets (`ntkbo list --presets {name}`; `preset=NAME`):", ""]
        lines += [f"- `{p}`: {_md_cell(text)}" for p, text in presets]
    return "\n".join(lines) + "\n"


#: The factories whose options table (``options_markdown``) each page of ``docs/algorithms/``
#: carries (a page's other registered names are partials of these or, for
#: ``constrained_ei.md``, ``gp``'s and ``ntk_gp``'s ``acquisition="cei"``, tabled on
#: ``gp_bo.md``). ``tests/test_options_help.py`` checks that every registered algorithm's factory
#: is here and that each page holds its tables as ``write_option_pages`` writes them.
OPTION_PAGES = {"go_ucb.md": ("go_ucb",), "gp_bo.md": ("gp", "ntk_gp"),
                "neural_bo.md": ("neural_bo",), "neural_cbo.md": ("neural_cbo",),
                "neural_greedy.md": ("neural_greedy",), "neural_linear.md": ("neural_linear",),
                "neural_ucb.md": ("neural_ucb", "neural_ts"),
                "pinn_bo.md": ("pinn_bo", "pinn_ntk_gp"), "random_search.md": ("random_search",),
                "sto_bnts.md": ("sto_bnts", "sto_bnts_linear")}

#: The lines around the generated options tables of an algorithm page.
OPTIONS_BEGIN = ("<!-- generated by ntkbo.cli.write_option_pages from the factories' docstrings "
                 "(ntkbo list --options NAME): edit those, not this -->")
OPTIONS_END = "<!-- end of the generated options -->"


def option_pages_block(page: str) -> str:
    """The generated block of ``docs/algorithms/<page>``: ``OPTIONS_BEGIN``, the options table of
    each factory ``OPTION_PAGES`` assigns to the page, ``OPTIONS_END``."""
    tables = "\n".join(options_markdown(name) for name in OPTION_PAGES[page])
    return f"{OPTIONS_BEGIN}\n\n{tables}\n{OPTIONS_END}\n"


def write_option_pages(folder: str) -> list[str]:
    """Writes the generated options block (``option_pages_block``) into each page of
    ``OPTION_PAGES`` in ``folder`` (``docs/algorithms``): in place of the block already there,
    else as a ``### Options`` subsection ending the page's section before ``## Cost per step``.
    Returns the pages rewritten."""
    done = []
    for page in OPTION_PAGES:
        path = os.path.join(folder, page)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        block = option_pages_block(page)
        if OPTIONS_BEGIN in text:
            start = text.index(OPTIONS_BEGIN)
            end = text.index(OPTIONS_END, start) + len(OPTIONS_END) + 1
            new = text[:start] + block + text[end:]
        else:
            at = text.index("## Cost per step")
            head = "" if "### Options" in text[:at] else "### Options\n\n"
            new = text[:at] + head + block + "\n" + text[at:]
        if new != text:
            files.atomic_write(path, new.encode("utf-8"))
            done.append(path)
    return done


def _preset_notes(name: str) -> dict:
    """Preset -> the first sentence of its bullet (``* ``"NAME"``: text``) in the ``#:`` comment
    above the ``PRESETS`` (or ``PRESETS_BY_NAME``) table of the module behind ``name``."""
    import inspect

    import ntkbo.algorithms

    f = ntkbo.algorithms.factory(name)
    module = sys.modules.get(getattr(getattr(f, "func", f), "__module__", ""))
    try:
        lines = inspect.getsource(module).splitlines() if module else []
    except (OSError, TypeError):
        return {}
    out: dict = {}
    for i, line in enumerate(lines):
        if not re.match(r"(PRESETS|PRESETS_BY_NAME)\s*(:.*)?=", line):
            continue
        j = i
        while j > 0 and lines[j - 1].startswith("#:"):
            j -= 1
        comment = "\n".join(ln[2:].strip() for ln in lines[j:i])
        for m in re.finditer(r"^\*\s+``\"(\w+)\"``(?:\s*\([^)]*\))?:\s*(.*?)(?=^\*\s|\Z)", comment,
                             re.S | re.M):
            out.setdefault(m.group(1), plain(first_sentence(m.group(2))))
    return out


def preset_rows(name: str) -> list[tuple[str, str]]:
    """``ntkbo list --presets NAME``'s rows: ``(preset, line)`` per preset of algorithm ``name``
    (``ntkbo.algorithms.presets``), the line the first sentence of the preset's entry in its
    module's comment, then how many options it changes from the defaults
    (``ntkbo.algorithms.preset_differences``) and its initial design (``design``)."""
    import ntkbo

    notes = _preset_notes(name)
    rows = []
    for preset in ntkbo.algorithms.presets(name):
        n = len(ntkbo.algorithms.preset_differences(name, preset))
        n_init = ntkbo.algorithms.design(name, preset)
        extra = f"{n} option{'s' * (n != 1)} changed from the defaults" + (
            f", {n_init} initial points" if n_init is not None else "")
        text = notes.get(preset, "")
        rows.append((preset, f"{text} ({extra})" if text else f"({extra})"))
    return rows


def _list_presets(name: str) -> int:
    """``ntkbo list --presets NAME``: one line per preset (``preset_rows``), or a line saying it
    has none; exit 2 naming ``--presets`` for an unknown name."""
    import ntkbo

    if name not in ntkbo.algorithms.names():
        print(f"ntkbo list: error: --presets: unknown algorithm {name!r}; choose one of: "
              f"{', '.join(ntkbo.algorithms.names())}", file=sys.stderr)
        return 2
    rows = preset_rows(name)
    if not rows:
        print(f"{name} has no presets")
        return 0
    w = max(len(p) for p, _ in rows)
    for p, text in rows:
        print(f"{p:<{w}}  {text}")
    return 0


def _demo(args) -> int:
    """``ntkbo demo``: a small study (ntkbo.experiments.demo) with progress bars, its report and a
    printed verdict against random search."""
    from ntkbo.experiments import demo

    spec = demo.make_spec([a.strip() for a in args.algos.split(",") if a.strip()], args.problem,
                          args.budget, args.seeds, args.n_init)
    print(f"ntkbo demo: {', '.join(a.id for a in spec.algorithms)} on {args.problem}, "
          f"{spec.budget} evaluations ({spec.n_init} initial) x {spec.seeds} seeds each; "
          "the first chunk of each compiles", file=sys.stderr)
    command = (f"ntkbo demo --algos {','.join(a.id for a in spec.algorithms)} --problem "
               f"{args.problem} --budget {spec.budget} --seeds {spec.seeds} --n-init {spec.n_init}")
    rep = demo.run(args.out, spec, command=command)
    print("\n".join(demo.summary_lines(rep)))
    return 0


def _coco(args) -> int:
    """``ntkbo coco`` and ``ntkbo coco-report`` (``ntkbo.experiments.coco``)."""
    from ntkbo.experiments import coco

    try:
        if args.command == "coco-report":
            rep = coco.report(args.dirs, args.out)
        else:
            from ntkbo.algorithms import from_text

            opts = from_text(args.algo, _parse_options(args.set))
            dims = coco.parse_ints(args.dims, "--dims", coco.BBOB_DIMS)
            instances = coco.parse_ints(args.instances, "--instances")
            functions = coco.parse_ints(args.functions, "--functions", coco.BBOB_FUNCTIONS)
            if not args.float32:
                import jax

                jax.config.update("jax_enable_x64", True)
            res = coco.run(args.algo, dims=dims, instances=instances, functions=functions,
                           budget_multiplier=args.budget_multiplier, options=opts, seed=args.seed,
                           out=args.out or os.path.join("runs", "coco", args.algo))
            rep = res["report"]
            print(f"\n{args.algo}: {res['problems']} bbob problems in {res['wall_time_s']:.1f} s; "
                  "fraction of (function, instance, target) triples solved at the budget: "
                  + ", ".join(f"{d}-D {v:.3f}" for d, v in res["solved"].items()))
            print(f"  cocoex folder (python -m cocopp reads it): {res['cocoex_folder']}")
    except (ValueError, TypeError, ImportError, files.FolderLocked) as err:
        print(f"ntkbo: error: {err}", file=sys.stderr)
        return 2
    print(f"  report: {rep['markdown']}" + (f", plot: {rep['png']}" if rep["png"] else ""))
    return 0


def _bench(args) -> int:
    """``ntkbo bench SPEC --out DIR``: runs a study's cells (ntkbo.experiments.run), optionally as
    one of several processes (jax.distributed), with a progress bar over this process's cells."""
    if not os.path.isfile(args.spec):
        print(f"ntkbo bench: error: SPEC must be an experiment spec file (TOML), got "
              f"{args.spec!r}, which is not a file", file=sys.stderr)
        return 2
    if args.host_devices:  # before JAX's CPU backend starts: read once, at its initialisation
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_"
                                   f"device_count={args.host_devices}").strip()
    import jax

    from ntkbo import experiments

    dtype = _set_dtype(args)
    try:
        stored = _stored_dtypes(args.out)
    except ValueError as err:  # a damaged cell or summary file, named
        print(f"ntkbo bench: error: {err}", file=sys.stderr)
        return 2
    if stored and stored != {dtype}:
        print(f"ntkbo bench: error: the cells in {args.out} ran in {', '.join(sorted(stored))}, "
              f"this run in {dtype}; a study resumes only in its own dtype: pass --dtype "
              f"{sorted(stored)[0]} (or use another --out)", file=sys.stderr)
        return 2
    env = os.environ.get
    coordinator = args.coordinator or env("NTKBO_COORDINATOR")
    num_processes = args.num_processes or (int(n) if (n := env("NTKBO_NUM_PROCESSES")) else None)
    process_id = args.process_id if args.process_id is not None else (
        int(i) if (i := env("NTKBO_PROCESS_ID")) else None)
    try:
        if coordinator or num_processes:
            experiments.distributed.initialize(coordinator, num_processes, process_id)
        block = "auto" if args.block is None else (None if args.block == 0 else args.block)
        paths = experiments.run(args.spec, args.out, args.scale, progress=not args.quiet,
                                block=block)
    except (ValueError, TypeError, OSError, files.FolderLocked) as err:
        print(f"ntkbo bench: error: {err}", file=sys.stderr)
        return 2
    print(f"{len(paths)} cells of process {jax.process_index()} of {jax.process_count()} in "
          f"{os.path.join(args.out, 'cells')}; report: ntkbo report {args.out}")
    return 0


def _campaign(args) -> int:
    """``ntkbo campaign SPEC --time-budget S --out DIR``: the cells of a study that fit the
    window, by priority (``ntkbo.experiments.campaign``)."""
    if not os.path.isfile(args.spec):
        print(f"ntkbo campaign: error: SPEC must be an experiment spec file (TOML), got "
              f"{args.spec!r}, which is not a file", file=sys.stderr)
        return 2
    import jax

    from ntkbo.experiments import campaign

    jax.config.update("jax_enable_x64", args.dtype == "float64")
    try:
        priors = {}
        for item in args.prior:
            label, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--prior: expected LABEL=SECONDS, got {item!r}")
            try:
                seconds = float(value)
            except ValueError:
                seconds = math.nan
            if not (math.isfinite(seconds) and seconds > 0):
                raise ValueError(f"--prior: expected LABEL=SECONDS with SECONDS a positive "
                                 f"number, got {item!r}")
            priors[label] = seconds
        block = "auto" if args.block is None else (None if args.block == 0 else args.block)
        window = campaign.run(args.spec, args.out, args.time_budget, args.scale,
                              priority=None if args.priority is None else
                              [v for v in args.priority.split(",") if v],
                              priors=priors, keep_cells=not args.drop_cells, block=block,
                              command="ntkbo " + " ".join(sys.argv[1:]))
    except (ValueError, TypeError, OSError, files.FolderLocked) as err:
        print(f"ntkbo campaign: error: {err}", file=sys.stderr)
        return 2
    print(f"{len(window['ran'])} cells run in {window['seconds']:.0f} s, "
          f"{len(window['left'])} left; ledger {os.path.join(args.out, campaign.LEDGER)}")
    return 0


class _PlainFormatter(argparse.HelpFormatter):
    """Help and descriptions as plain text: the reST markup of the docstrings they quote removed
    (``plain``)."""

    def _format_text(self, text):
        return super()._format_text(plain(text))

    def _expand_help(self, action):
        return plain(super()._expand_help(action))


class _Version(argparse.Action):
    """``--version``: prints ``ntkbo <version>`` and exits 0; imports ``ntkbo`` (and JAX) only
    when given."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print ntkbo's version and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        import ntkbo

        print(f"ntkbo {ntkbo.__version__}")
        parser.exit(0)


#: The floating-point precision ``run`` and ``bench`` run in unless ``--dtype`` says otherwise:
#: one default for both, float64, the dtype of every committed study of a shipped spec
#: (``benchmarks/results``): a cell's dtype is part of its hash, so a study resumes only in the
#: precision it started in, and a ``run`` record compares with the studies' cells.
DEFAULT_DTYPE = {"run": "float64", "bench": "float64"}

_DTYPE_WHY = ("as every committed study ran; a study resumes only in the dtype its cells "
              "recorded")


def _add_dtype(p, command: str) -> None:
    p.add_argument("--dtype", choices=("float32", "float64"), default=None,
                   help=f"floating-point precision (default: {DEFAULT_DTYPE[command]}, "
                   f"{_DTYPE_WHY}; float32 is faster)")


def _set_dtype(args) -> str:
    """Applies ``args.dtype`` (or the command's ``DEFAULT_DTYPE``; bench's ``--float32`` is
    float32) to ``jax_enable_x64``; the dtype set."""
    dtype = args.dtype
    if dtype is None:
        dtype = "float32" if getattr(args, "float32", False) else DEFAULT_DTYPE[args.command]
    import jax

    jax.config.update("jax_enable_x64", dtype == "float64")
    return dtype


def _stored_dtypes(out: str) -> set:
    """The dtypes the cells already in the study folder ``out`` ran in (empty if none): their
    cell files' and, for a folder whose raw cells are not kept, its summary's."""
    from ntkbo.experiments import store, summary

    if not os.path.isdir(out):
        return set()
    metas = [store.read_meta(p) for p in store.list_cells(out)]
    metas += [e.meta for e in summary.read_summary(out)]
    return {m.get("definition", {}).get("dtype") for m in metas} - {None}


def build_parser() -> argparse.ArgumentParser:
    """The ``ntkbo`` argument parser (its help text plain, ``_PlainFormatter``)."""
    parser = argparse.ArgumentParser(prog="ntkbo", description=(__doc__ or "").split("\n")[0],
                                     formatter_class=_PlainFormatter)
    parser.add_argument("--version", action=_Version)
    parser.add_argument("--no-cache", action="store_true",
                        help="do not use JAX's persistent compilation cache (ntkbo.cache: "
                        "$NTKBO_CACHE_DIR, default ~/.cache/ntkbo/jax)")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name, help, extra=""):
        return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + extra,
                              formatter_class=_PlainFormatter)

    r = add("run", "run an algorithm on a benchmark over several seeds",
            f". Precision: {DEFAULT_DTYPE['run']} unless --dtype says otherwise.")
    _add_dtype(r, "run")
    # Defaults are CONFIG_KEYS', applied after --config: None here means "not given".
    r.add_argument("--config", default=None, metavar="FILE.toml",
                   help="settings from a TOML file (keys: " + ", ".join(CONFIG_KEYS)
                   + "); flags given here override it")
    r.add_argument("--algo", default=None, help="required (here or in --config)")
    r.add_argument("--problem", default=None,
                   help="a registered problem (ntkbo list) or a module:attribute of your own (a "
                        "Problem, numpy_problem or a factory of one); required (here or in "
                        "--config)")
    r.add_argument("--dim", type=int, default=None)
    r.add_argument("--budget", type=int, default=None, help="default 50")
    r.add_argument("--seeds", type=int, default=None, help="default 4")
    r.add_argument("--seed", type=int, default=None, help="master seed for the seeds' keys "
                   "(default 0)")
    r.add_argument("--n-init", type=int, default=None)
    r.add_argument("--noise-std", type=float, default=None)
    r.add_argument("--chunk", type=int, default=None, help="rounds between progress updates "
                   "(default 5)")
    r.add_argument("--block", type=int, default=None,
                   help="seeds vmapped per call (default: 1 on CPU, all elsewhere)")
    r.add_argument("--min-capacity", type=int, default=None, metavar="C",
                   help="the buffers' smallest capacity, a power of two (default "
                   f"{RUN_MIN_CAPACITY}: fewer capacity stages to compile)")
    r.add_argument("--seed-index", type=int, default=None, metavar="I",
                   help="re-run only seed I, bit-identical to its trajectory in the full run "
                   "with the same settings (module docstring)")
    r.add_argument("--out", default=None, help="output folder ('' for none; default "
                   "runs/latest)")
    r.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="algorithm options, e.g. --set network.width=200 lam=0.01")
    r.add_argument("--no-plot", action="store_true")
    d = add("demo", "the README's main job: NeuralBO, GP-EI and random search "
                       "compared on Branin (progress bars, report.md, plot, Welch tests), in "
                       "float32, JAX's default, for speed (run and bench default to float64)")
    d.add_argument("--out", default="runs/demo")
    d.add_argument("--algos", default="neural_bo,gp_ei,random_search",
                   help="comma-separated algorithms; must include random_search, the reference")
    d.add_argument("--problem", default="branin")
    d.add_argument("--budget", type=int, default=30)
    d.add_argument("--seeds", type=int, default=8)
    d.add_argument("--n-init", type=int, default=5)
    ls = add("list", "list algorithms and problems, or one algorithm's options")
    ls.add_argument("--options", metavar="ALGO", default=None,
                    help="print every option of ALGO with its default and meaning (the first "
                    "sentence of its entry in the factory's docstring), marking those inert under "
                    "the defaults")
    ls.add_argument("--presets", metavar="ALGO", default=None,
                    help="print the presets of ALGO (preset=NAME), one line each")
    ls.add_argument("--markdown", action="store_true",
                    help="with --options: the table the algorithm's documentation page carries")
    c = add("coco", "an algorithm on the COCO/BBOB suite through cocoex (the coco "
                       "extra); writes cocoex's folder, ntkbo_runs.npz and coco_report.md")
    c.add_argument("--algo", required=True)
    c.add_argument("--dims", default="2,3,5,10", help="bbob dimensions, e.g. 2,3,5,10")
    c.add_argument("--instances", default="1-15", help="bbob instance ids, e.g. 1-15 or 1-5,7")
    c.add_argument("--functions", default="1-24", help="bbob function ids, e.g. 1-24")
    c.add_argument("--budget-multiplier", type=int, default=20, help="evaluations per problem / d")
    c.add_argument("--out", default=None, help="a new output folder (default runs/coco/ALGO)")
    c.add_argument("--seed", type=int, default=0, help="master seed of the per-problem keys")
    c.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="algorithm options")
    c.add_argument("--float32", action="store_true",
                   help="keep JAX in float32 (default: float64, for targets down to 1e-8)")
    cr = add("coco-report", "coco_report.md and the ECDF plot comparing the "
                        "folders of several `ntkbo coco` runs")
    cr.add_argument("dirs", nargs="+", metavar="DIR")
    cr.add_argument("--out", default=None, help="default: the folders' common parent")
    b = add("bench", "run an experiment spec (TOML): one file per finished "
            "cell in OUT/cells, resumable, seeds sharded over the local devices",
            f". Precision: {DEFAULT_DTYPE['bench']} unless --dtype says otherwise.")
    b.add_argument("spec", metavar="SPEC", help="the spec file (ntkbo.experiments.spec)")
    b.add_argument("--out", required=True, help="the experiment folder (re-run to resume)")
    b.add_argument("--scale", default="full", help="smoke, cpu, full or a scale the spec defines")
    b.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="jax.distributed coordinator (or $NTKBO_COORDINATOR)")
    b.add_argument("--num-processes", type=int, default=None,
                   help="processes sharing the cells (or $NTKBO_NUM_PROCESSES)")
    b.add_argument("--process-id", type=int, default=None,
                   help="this process's rank (or $NTKBO_PROCESS_ID)")
    b.add_argument("--host-devices", type=int, default=None, metavar="N",
                   help="split the CPU into N devices (XLA_FLAGS host platform device count)")
    b.add_argument("--block", type=int, default=None, metavar="B",
                   help="seeds vmapped at once per device (0: all; default: 1 on CPU devices, "
                   "where vmapped seeds gain nothing, else all; ntkbo.experiments.runner."
                   "default_block)")
    _add_dtype(b, "bench")
    b.add_argument("--float32", action="store_true", help="the same as --dtype float32")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    cp = add("campaign", "run a study spec across time-limited windows: the pending cells "
             "that fit --time-budget, in order of priority; run it again (or in a folder holding "
             "the last window's spec.json, summary.npz and campaign.json) to continue "
             "(ntkbo.experiments.campaign)")
    cp.add_argument("spec", metavar="SPEC", help="the spec file (ntkbo.experiments.spec)")
    cp.add_argument("--time-budget", type=float, required=True, metavar="S",
                    help="seconds this window may spend on cells")
    cp.add_argument("--out", required=True, help="the study folder (continued if it exists)")
    cp.add_argument("--scale", default="full", help="smoke, cpu, full or a scale the spec "
                    "defines")
    cp.add_argument("--priority", default=None, metavar="LABEL,...",
                    help="algorithm labels to run first (default: the spec's reference and its "
                    "random-search rows)")
    cp.add_argument("--prior", nargs="*", default=[], metavar="LABEL=S",
                    help="seconds assumed for a cell of an algorithm not yet measured (default "
                    "120)")
    cp.add_argument("--drop-cells", action="store_true",
                    help="delete each cell file once summary.npz holds it (the compact record)")
    cp.add_argument("--block", type=int, default=None, metavar="B",
                    help="seeds vmapped at once per device (0: all; default as bench)")
    cp.add_argument("--dtype", choices=("float32", "float64"), default="float64",
                    help="floating-point precision (default float64, as bench)")
    rp = add("report", "report.md and plots from a study's stored cells "
                        "(never re-runs anything)")
    rp.add_argument("dir", metavar="DIR", help="the experiment folder (DIR/cells/*.npz)")
    rp.add_argument("--reference", default=None, metavar="LABEL",
                    help="algorithm the others are tested against (default: spec.json's)")
    rp.add_argument("--no-plot", action="store_true")
    sm = add("summary", "summary.npz from a study's stored cells: per cell and seed the "
                        "best-so-far curve, keys and wall time, what reports read when the raw "
                        "cells are not kept (entries of cells without a file are kept)")
    sm.add_argument("dirs", metavar="DIR", nargs="+", help="experiment folders (DIR/cells/*.npz)")
    return parser


#: The commands that run algorithms, which ``main`` stops cleanly on ``Ctrl-C`` or ``SIGTERM``.
LONG_COMMANDS = ("run", "demo", "bench", "coco")

#: ``main``'s exit status after ``Ctrl-C`` (``SIGINT``) and after ``SIGTERM``: 128 plus the
#: signal's number, what a shell reports for a process the signal killed.
EXIT_INTERRUPTED = {"SIGINT": 130, "SIGTERM": 143}


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by ``main``'s ``SIGTERM`` handler, so that a terminated command
    unwinds like an interrupted one: locks released, temporary files removed, one line said."""


def _raise_terminated(signum, frame):
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Runs the ``ntkbo`` command ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    ``Ctrl-C`` (``KeyboardInterrupt``) or ``SIGTERM`` during ``run``, ``demo``, ``bench`` or
    ``coco`` prints one line on stderr, saying what was kept and the command that resumes (or
    re-runs) it, and returns ``EXIT_INTERRUPTED`` (130, or 143 for ``SIGTERM``). What finished
    stays: every file is written whole or not at all (``ntkbo.files.atomic_write``), so a study's
    finished cells and a previous ``results.json`` are intact; ``coco`` saves the problems it
    finished first. ``SIGTERM``'s handler is installed only for these commands, and only while
    they run in the main thread; the previous handler is restored."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "float32", False) and getattr(args, "dtype", None) == "float64":
        parser.error("--float32 contradicts --dtype float64; give one of them")
    if args.command not in LONG_COMMANDS:
        return _main(parser, args, argv)
    import signal
    import threading

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    before = _kept_state(args)
    try:
        return _main(parser, args, argv)
    except KeyboardInterrupt as stop:
        _close_progress_bars()
        name = "SIGTERM" if isinstance(stop, Terminated) else "SIGINT"
        how = "terminated (SIGTERM)" if name == "SIGTERM" else "interrupted"
        command = " ".join(["ntkbo", *map(_quote, sys.argv[1:] if argv is None else argv)])
        print(f"ntkbo {args.command}: {how}; {_kept_line(args, before, command)}",
              file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED[name]
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


def _close_progress_bars() -> None:
    """Closes the progress bars an interruption left open (tqdm's live instances), so that each
    ends its line before the one line ``main`` prints."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # a bar half torn down: its line is not worth a traceback
            pass


def _run_out(args) -> str | None:
    """The output folder of ``ntkbo run`` as given (flag, else ``--config``, else default)."""
    if args.out is not None:
        return args.out or None
    try:
        file = read_config(args.config) if args.config else {}
    except ValueError:
        return None
    return file.get("out", CONFIG_KEYS["out"]) or None


def _kept_state(args) -> dict:
    """What a long command's output folder holds before it starts, for ``_kept_line``: the
    ``os.stat`` of ``run``'s ``results.json`` (``None`` if absent) and the number of finished cells
    of a ``bench`` folder."""
    if args.command == "run":
        out = _run_out(args)
        path = None if out is None else os.path.join(out, "results.json")
        try:
            st = None if path is None else os.stat(path)
        except OSError:
            st = None
        return {"path": path, "stat": None if st is None else (st.st_ino, st.st_mtime_ns)}
    if args.command == "bench":
        from ntkbo.experiments import store

        return {"cells": len(store.list_cells(args.out))}
    return {}


def _kept_line(args, before: dict, command: str) -> str:
    """The line ``main`` prints after an interruption: what was kept, and the command that resumes
    or re-runs it."""
    if args.command == "bench":
        from ntkbo.experiments import store

        n = len(store.list_cells(args.out))
        new = n - before.get("cells", 0)
        cells = os.path.join(args.out, "cells")
        return (f"{n} finished cell{'' if n == 1 else 's'} kept in {cells} ({new} new, none "
                f"lost); resume with: {command}")
    if args.command == "run":
        path = before.get("path")
        if path is None:
            return f"nothing was written (no --out); run again: {command}"
        try:
            st = os.stat(path)
            now = (st.st_ino, st.st_mtime_ns)
        except OSError:
            now = None
        if now is None:
            kept = f"nothing was written to {path}"
        elif now == before.get("stat"):
            kept = f"{path} from the previous run left as it was"
        else:
            kept = f"{path} was written whole (its plot may be missing)"
        return f"{kept}; a run does not resume, run again: {command}"
    if args.command == "coco":
        from ntkbo.experiments import coco

        out = args.out or os.path.join("runs", "coco", args.algo)
        try:
            runs = coco.read_runs(out)
            n = sum(len(d["function"]) for d in runs["dims"].values())
        except (ValueError, OSError):
            n = 0
        path = os.path.join(out, coco.RUNS_FILE)
        kept = (f"{n} finished problem{'' if n == 1 else 's'} kept in {path} (marked "
                f"incomplete; ntkbo coco-report {out} reads them)" if n else
                "no problem finished, nothing kept")
        return (f"{kept}; a COCO run does not resume (cocoex starts a new folder): run again "
                f"with a new --out: {command}")
    return (f"a demo starts afresh, replacing the cells in {os.path.join(args.out, 'cells')}; "
            f"run again: {command}")


def _main(parser, args, argv) -> int:
    """``main`` after parsing the arguments."""
    if args.command in ("run", "demo", "bench", "coco", "campaign"):
        from ntkbo.lapack_threads import configure_blas_threads

        # a command is a program: it sets the LAPACK threads as the environment says (one by
        # default: ntkbo.lapack_threads), which importing ntkbo leaves to the program
        configure_blas_threads()
    folder = None
    if args.command in ("run", "demo", "bench", "coco", "campaign") and not args.no_cache:
        from ntkbo import cache

        # A second identical command loads its compiled programs (JAX's persistent cache) and,
        # for ``run``, its traced ones (``ntkbo.programs``) instead of tracing and compiling.
        folder = cache.enable()
    if args.command in ("run", "demo", "bench", "coco", "campaign"):
        from ntkbo import compiling

        compiling.quiet()  # the progress bars say when a program compiles
    if args.command in ("coco", "coco-report"):
        return _coco(args)
    if args.command == "bench":
        return _bench(args)
    if args.command == "campaign":
        return _campaign(args)
    if args.command == "report":
        return _report(args.dir, args.reference, not args.no_plot)
    if args.command == "summary":
        return _summary(args.dirs)

    if args.command == "list" and args.options:
        return _list_options(args.options, args.markdown)
    if args.command == "list" and args.presets:
        return _list_presets(args.presets)
    if args.command == "list":
        _list()
        return 0
    if args.command == "run":
        _set_dtype(args)
    try:
        if args.command == "demo":
            return _demo(args)
        cfg = _run_settings(args)
        problem_options = {} if cfg["noise_std"] is None else {"noise_std": cfg["noise_std"]}
        rec = run(cfg["algo"], cfg["problem"], cfg["dim"], cfg["budget"], cfg["seeds"],
                  cfg["n_init"], cfg["out"] or None, cfg["options"], problem_options,
                  seed=cfg["seed"], chunk=cfg["chunk"], make_plot=cfg["plot"],
                  command=" ".join(["ntkbo", *(sys.argv[1:] if argv is None else argv)]),
                  block=cfg["block"], seed_index=cfg["seed_index"],
                  min_capacity=cfg["min_capacity"], config_file=None if args.config is None else
                  {"path": args.config, "settings": cfg["file"]},
                  programs_dir=None if folder is None else os.path.join(folder, "programs"))
    except (ValueError, TypeError, files.FolderLocked) as err:
        print(f"ntkbo: error: {err}", file=sys.stderr)
        return 2
    _print_summary(rec, cfg["out"] or None)
    return 0


def _run_settings(args) -> dict:
    """``ntkbo run``'s settings: ``CONFIG_KEYS``' defaults, then the ``--config`` file, then the
    flags given on the command line (``--set`` options over the file's ``[options]``); the file's
    own settings under ``"file"``. ``ValueError`` if ``algo`` or ``problem`` is missing."""
    from ntkbo.parts import merge

    file = read_config(args.config) if args.config else {}
    cfg = {**CONFIG_KEYS, **file}
    for k in CONFIG_KEYS:
        v = getattr(args, k, None)
        if v is not None:
            cfg[k] = v
    if args.no_plot:
        cfg["plot"] = False
    cfg["options"] = merge(file.get("options", {}), _parse_options(args.set))
    for k in ("algo", "problem"):
        if not cfg[k]:
            raise ValueError(f"--{k} is required (on the command line or in --config)")
    cfg["file"] = file
    return cfg


if __name__ == "__main__":
    sys.exit(main())
