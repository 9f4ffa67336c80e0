"""Fuzzed runs: random problems, algorithms, options and hostile objectives.

Every run is ``ntkbo.minimize`` on a problem from ``ntkbo.benchmarks`` whose objective is
transformed as ``scale * f(x) + shift``, with ``NaN`` on a region of the box (``x_0 > cut``, a
random fraction of the first coordinate's range, or nowhere), under float32 or float64. The
scales include ``1e20`` and ``1e-30`` and the shifts ``1e6``: the numerics the algorithms must
survive. A run passes when

* no evaluated point ``x`` holds a NaN;
* ``best_y`` is finite whenever at least one evaluation did not fail (``Result.failed``);
* no round is *silently blind*: a round whose diagnostics (``info.acq_value``, ``mean``,
  ``std``) are not finite must say so in ``info`` (a retry or fallback counter > 0, such as
  ``ts_retries``, or a ``*_ok`` flag that is False, also in the ``update_info`` of the update
  that fitted the round's model, such as ``train_ok``). GO-UCB's exploration phase, whose
  diagnostics are NaN by definition (``info.phase == 1``), is not a model round.

Options are random but valid: the string options' choices are read from each factory's own
error message (``ntkbo.validation.check_choice``), numbers are scaled by up to 10x around their
defaults, and the sizes (widths, steps, candidates) are tiny so that a run costs its compilation.
To pay one compilation per several runs, the runs of a *group* share the algorithm, problem,
budget and dtype and differ in key and transform: the transform's numbers are arrays of the
problem's pytree, and the group's runs go through one ``jax.lax.map`` (sequential, unbatched).

    python tests/fuzz.py --runs 1000 --out fuzz.md

prints (and writes) a markdown summary with one reproducer line per failed run.

**Abuse cases** (``--abuse N``): hostile use of the library rather than hostile objectives, in
five classes drawn in turn: option values (words, numbers, ``None``, containers; through the
Python call and through the text path of ``--set`` and specs), ``update`` called eagerly with
bad points and values, ``minimize`` with a bad problem or argument, ask/tell misuse (told,
abandoned, unknown and non-integer trial ids, bad values and points), and damaged study files
(flipped bits, truncations, garbage, a refused save over a good file). Each case ends in one of
``OUTCOMES``: a clear error naming the culprit, a correct result (checked independently of the
library: the recorded option is what the user meant, a failed evaluation is stored as failed, a
loaded file equals what was saved), or a defect: silently wrong, data lost, a raw error.

    python tests/fuzz.py --abuse 500 --out abuse.md
"""

from __future__ import annotations

import argparse
import ast
import math
import platform
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

import ntkbo
from ntkbo import algorithms as A

#: Problems that are host programs (``ntkbo.benchmarks.tasks``) or a PDE solve: not fuzzed here.
HOST = re.compile(r"^(hpo_|robot_push|rover|lunar_lander|heat_equation)")
#: Tiny sizes for the options that set a run's cost (chosen uniformly when the factory takes them).
TINY = {
    "width": (8, 16), "depth": (1, 2), "num_steps": (5, 10), "num_candidates": (32, 64),
    "num_restarts": (1, 2), "num_acq_steps": (0, 3), "acq_steps": (3,),
    "num_perturbations": (8, 16), "num_residuals": (8,), "oracle_steps": (10,),
    "oracle_restarts": (1,), "joint_steps": (10,), "num_evidence_iters": (5,),
    "num_fit_steps": (5,), "num_explore": (2,), "num_best": (0, 2), "q": (1, 2),
}
#: Options left at their defaults (sizes tied to the budget, callables, the problem's own).
KEEP = {"n_constraints", "pde", "horizon", "chunk_size", "network", "kernel_fn", "refit_steps",
        "n_explore", "method", "input_scale", "jitter", "learning_rate", "b_std"}
#: The objective transforms: (scale, shift) pairs, and the NaN region's chance.
SCALES = ((1.0, 0.0), (1e20, 0.0), (-1e20, 0.0), (1e-30, 0.0), (1.0, 1e6), (1e-30, 1e6))
P_NAN = 0.5


@struct.dataclass
class Fuzzed:
    """``scale * base(x) + shift``, NaN where ``x[0] > cut``; the numbers are pytree leaves, so
    one compiled run serves every transform (the ``Problem`` fields the drivers read)."""

    name: str = struct.field(pytree_node=False)
    base: Callable = struct.field(pytree_node=False)
    bounds: Any
    scale: Any
    shift: Any
    cut: Any
    constraints: Optional[Callable] = struct.field(pytree_node=False, default=None)
    pde: Any = struct.field(pytree_node=False, default=None)
    n_constraints: int = struct.field(pytree_node=False, default=0)
    noise_std: float = 0.0
    constraint_noise_std: float = 0.0
    optimum: Any = struct.field(pytree_node=False, default=None)

    @property
    def dim(self) -> int:
        return self.bounds.shape[-1]

    def fn(self, x):
        v = self.scale * self.base(x) + self.shift
        return jnp.where(x[0] > self.cut, jnp.nan, v).astype(x.dtype)


@dataclass
class Case:
    """One group: an algorithm with options on a problem, and its runs' transforms."""

    algo: str
    options: dict
    problem: str
    dim: int
    dtype: str
    budget: int
    n_init: int
    transforms: list  # [(seed, scale, shift, cut_fraction or None)]

    def reproducer(self, i: int) -> str:
        seed, scale, shift, frac = self.transforms[i]
        return (f"x64={self.dtype == 'float64'} algo={self.algo!r} options={self.options!r} "
                f"problem={self.problem!r} dim={self.dim} budget={self.budget} "
                f"n_init={self.n_init} key=PRNGKey({seed}) scale={scale:g} shift={shift:g} "
                f"nan_cut_fraction={frac}")


def choices(name: str, option: str, default) -> tuple:
    """The strings ``option`` of ``A.get(name)`` accepts, read from its ``check_choice`` error
    (``(default,)`` if the factory does not say)."""
    try:
        A.get(name, **public_options(name, {option: "__fuzz__"}))
    except (ValueError, TypeError) as err:
        m = re.search(rf"{re.escape(option)} must be one of (\(.*?\)|\[.*?\])", str(err))
        if m:
            try:
                got = tuple(v for v in ast.literal_eval(m.group(1)) if isinstance(v, str))
                return got or (default,)
            except (ValueError, SyntaxError):
                pass
    return (default,)


_CHOICES: dict = {}


def random_options(rng: np.random.Generator, name: str) -> dict:
    """Valid-looking random options for ``A.get(name)`` (the factory may still refuse a mix)."""
    out = {}
    inner = getattr(A._FACTORIES[name], "__wrapped__", None)
    fixed = set(getattr(inner, "keywords", {}))  # what the name fixes (gp_ts: acquisition)
    for k, v in A.resolved_options(name).items():
        if k in KEEP or k in fixed:
            continue
        if k in TINY:
            out[k] = int(rng.choice(TINY[k]))
        elif isinstance(v, bool):
            out[k] = bool(rng.integers(2))
        elif isinstance(v, str):
            if (name, k) not in _CHOICES:
                _CHOICES[name, k] = choices(name, k, v)
            out[k] = str(rng.choice(_CHOICES[name, k]))
        elif isinstance(v, float) and v > 0 and rng.random() < 0.3:
            out[k] = float(v * 10 ** rng.uniform(-1, 1))
    if "num_restarts" in out and "num_candidates" in out:
        out["num_restarts"] = min(out["num_restarts"], out["num_candidates"])
    return public_options(name, out)


def public_options(name: str, plain: dict) -> dict:
    """The plain options ``plain`` of ``name`` as ``A.get`` takes them: each in its part
    (``ntkbo.parts``, ``{"search": {"num_steps": 3}}`` for ``gp``'s ``num_steps``)."""
    layout = A.layout(A._FACTORIES[name])
    out: dict = {}
    for k, v in plain.items():
        part, _, field = layout.public_name(k).rpartition(".")
        if part:
            out.setdefault(part, {})[field] = v
        else:
            out[k] = v
    return out


def problems() -> list[str]:
    return [n for n in ntkbo.benchmarks.names() if not HOST.match(n)]


def make_problem(name: str, rng: np.random.Generator):
    """``ntkbo.benchmarks.get(name)`` at its fixed dimension, else a random one in 1..5."""
    try:
        return ntkbo.benchmarks.get(name)
    except ValueError:
        for d in rng.permutation(np.arange(1, 6)):
            try:
                return ntkbo.benchmarks.get(name, dim=int(d))
            except ValueError:
                continue
    raise ValueError(f"no small dimension for {name!r}")


def draw_case(rng: np.random.Generator, dtype: str, runs: int, algos: list[str],
              probs: list[str]) -> tuple[Case, Any, Any]:
    """A random group (``Case``), its built algorithm and base problem."""
    for _ in range(100):
        name = str(rng.choice(algos))
        pname = str(rng.choice(probs))
        if A.uses_pde(name):
            pname = str(rng.choice([p for p in probs if p.endswith("_pde") or p == "euler_beam"]))
        if A.models_constraints(name):
            pname = str(rng.choice([p for p in probs if "constrained" in p
                                    or p in ("gas_transmission", "speed_reducer")]))
        try:
            problem = make_problem(pname, rng)
            options = random_options(rng, name)
            algo = A.for_problem(name, problem, **options)
            q = ntkbo.loop.batch_size(algo, problem)
        except ValueError:
            continue  # an option mix the factory refuses: draw again
        budget = int(rng.integers(6, 11))
        n_init = int(rng.integers(2, 5))
        n_init += (budget - n_init) % q
        if n_init > budget:
            continue
        transforms = []
        for _ in range(runs):
            scale, shift = SCALES[rng.integers(len(SCALES))]
            frac = float(rng.uniform(0.2, 0.8)) if rng.random() < P_NAN else None
            transforms.append((int(rng.integers(2**31)), scale, shift, frac))
        case = Case(name, {k: v for k, v in options.items()}, pname, int(problem.dim), dtype,
                    budget, n_init, transforms)
        return case, algo, problem
    raise RuntimeError("no valid case in 100 draws")


def run_case(case: Case, algo, problem):
    """The group's runs (one compilation): ``Result`` with a leading axis of ``len(transforms)``."""
    fdt = jnp.float64 if case.dtype == "float64" else jnp.float32
    bounds = jnp.asarray(problem.bounds, fdt)
    fz = Fuzzed(problem.name, problem.fn, bounds, jnp.zeros((), fdt), jnp.zeros((), fdt),
                jnp.zeros((), fdt), constraints=problem.constraints, pde=problem.pde,
                n_constraints=int(problem.n_constraints))
    lo, hi = np.asarray(problem.bounds[0, 0]), np.asarray(problem.bounds[1, 0])
    keys = jnp.stack([jax.random.PRNGKey(t[0]) for t in case.transforms])
    scales = jnp.asarray([t[1] for t in case.transforms], fdt)
    shifts = jnp.asarray([t[2] for t in case.transforms], fdt)
    cuts = jnp.asarray([np.inf if t[3] is None else lo + t[3] * (hi - lo)
                        for t in case.transforms], fdt)

    def one(args):
        key, s, b, c = args
        return ntkbo.minimize(algo, fz.replace(scale=s, shift=b, cut=c), case.budget, key,
                              n_init=case.n_init)

    return jax.jit(lambda *a: jax.lax.map(one, a))(keys, scales, shifts, cuts)


def _as_dict(info) -> dict:
    """An info pytree as ``{field: array}`` (a dict as it is, a NamedTuple by its fields)."""
    if hasattr(info, "_asdict"):
        return dict(info._asdict())
    return dict(info) if isinstance(info, dict) else {}


def _flags(info: dict, r: int) -> bool:
    """Whether round ``r``'s info reports a fallback (a counter > 0 or an ``*_ok`` flag False)."""
    for k, v in info.items():
        v = np.asarray(v[r])
        if any(w in k for w in ("retries", "fallback", "blind", "failed")) and np.any(v > 0):
            return True
        if k.endswith("ok") and v.dtype == bool and not np.all(v):
            return True
    return False


def check(res, i: int) -> list[str]:
    """The defects of run ``i`` of a group's ``Result`` (empty: it passed)."""
    out = []
    x = np.asarray(res.x[i])
    if np.isnan(x).any():
        out.append("nan_x")
    ok = ~np.asarray(res.failed[i])
    if ok.any() and not np.isfinite(np.asarray(res.best_y[i])):
        out.append("nan_best")
    info = _as_dict(res.info)
    if info:
        info = {k: np.asarray(v[i]) for k, v in info.items()}
        rounds = next(iter(info.values())).shape[0]
        # the update that fitted round r's model is update_info's entry r (ntkbo.loop.Result)
        info.update({k: np.asarray(v[i])[:rounds]
                     for k, v in _as_dict(getattr(res, "update_info", None)).items()})
        silent = 0
        for r in range(rounds):
            if "phase" in info and np.all(info["phase"][r] == 1):
                continue  # GO-UCB's exploration phase: no model yet
            blind = any(not np.all(np.isfinite(info[k][r]))
                        for k in ("acq_value", "mean", "std") if k in info
                        and np.issubdtype(info[k].dtype, np.floating))
            if blind and not _flags(info, r):
                silent += 1
        if silent:
            out.append(f"silent_blind_rounds={silent}")
    return out


def fuzz(runs: int, seed: int = 0, per_group: int = 5, algos: list[str] | None = None,
         probs: list[str] | None = None, dtypes=("float32", "float64"), log=print,
         on_group: Callable | None = None) -> dict:
    """``runs`` fuzzed runs, half per dtype, in groups of ``per_group``; returns the tallies and
    the failures (``reproducer`` lines). ``on_group(tally)`` is called after every group (the
    command line rewrites its summary there, so an interrupted fuzz keeps what it found)."""
    rng = np.random.default_rng(seed)
    algos = algos or A.names()
    probs = probs or problems()
    tally = {"runs": 0, "groups": 0, "refused": 0, "failed_evaluations": 0,
             "runs_with_failed_evaluations": 0, "by_dtype": {}, "by_algo": {}, "failures": [],
             "errors": []}
    x64_before = jax.config.jax_enable_x64
    t0 = time.time()
    try:
        for j, dtype in enumerate(dtypes):
            jax.config.update("jax_enable_x64", dtype == "float64")
            todo = runs // len(dtypes) + (j < runs % len(dtypes))
            while todo > 0:
                n = min(per_group, todo)
                case, algo, problem = draw_case(rng, dtype, n, algos, probs)
                # before compiling, so that a group that never finishes names itself
                log(f"[{time.time() - t0:7.1f} s] group {tally['groups'] + 1}: "
                    f"{case.reproducer(0)}")
                try:
                    res = run_case(case, algo, problem)
                except Exception as err:  # noqa: BLE001 - a crash is a finding, not the end
                    tally["errors"].append(f"{type(err).__name__}: {str(err)[:300]} | "
                                           f"{case.reproducer(0)}")
                    todo -= n
                    continue
                tally["groups"] += 1
                for i in range(n):
                    defects = check(res, i)
                    nf = int(np.asarray(res.failed[i]).sum())
                    tally["runs"] += 1
                    tally["failed_evaluations"] += nf
                    tally["runs_with_failed_evaluations"] += nf > 0
                    for key, v in (("by_dtype", dtype), ("by_algo", case.algo)):
                        row = tally[key].setdefault(v, [0, 0])
                        row[0] += 1
                        row[1] += bool(defects)
                    if defects:
                        tally["failures"].append(f"{', '.join(defects)} | {case.reproducer(i)}")
                todo -= n
                tally["wall_time_s"] = time.time() - t0
                if on_group is not None:
                    on_group(tally)
                log(f"[{time.time() - t0:7.1f} s] {tally['runs']:5d} runs, "
                    f"{len(tally['failures'])} failed, {len(tally['errors'])} errors; last: "
                    f"{case.algo} on {case.problem}-{case.dim}d {dtype}")
    finally:
        jax.config.update("jax_enable_x64", x64_before)
    tally["wall_time_s"] = time.time() - t0
    return tally


def markdown(tally: dict, command: str) -> str:
    lines = [
        "# Fuzzed runs", "",
        f"Command: `{command}`  ", f"Wall time {tally['wall_time_s']:.0f} s"
        + (f" (process CPU time {tally['cpu_time_s']:.0f} s)" if "cpu_time_s" in tally else "")
        + "; "
        f"jax {jax.__version__}, python {platform.python_version()}, {platform.machine()}.", "",
        f"{tally['runs']} runs in {tally['groups']} compiled groups; "
        f"{tally['failed_evaluations']} failed evaluations (NaN region) in "
        f"{tally['runs_with_failed_evaluations']} runs; {len(tally['failures'])} runs with a "
        f"defect; {len(tally['errors'])} groups raised.", "",
        "Checks per run: no NaN in `x`; `best_y` finite when an evaluation succeeded; no round "
        "whose `acq_value`/`mean`/`std` is not finite without a counter or flag in `info`.", "",
        "| dtype | runs | with a defect |", "|---|---:|---:|"]
    lines += [f"| {k} | {v[0]} | {v[1]} |" for k, v in sorted(tally["by_dtype"].items())]
    lines += ["", "| algorithm | runs | with a defect |", "|---|---:|---:|"]
    lines += [f"| {k} | {v[0]} | {v[1]} |" for k, v in sorted(tally["by_algo"].items())]
    if tally["failures"]:
        lines += ["", "## Runs with a defect (reproducers)", ""]
        lines += [f"- {f}" for f in tally["failures"]]
    if tally["errors"]:
        lines += ["", "## Groups that raised", ""]
        lines += [f"- {e}" for e in tally["errors"]]
    return "\n".join(lines) + "\n"



# ---------------------------------------------------------------------------------------------
# Abuse: bad inputs, ask/tell misuse, corrupt files and option values, each with its outcome.

#: The outcomes of an abuse case, in the report's order. ``clear_error``: a ``ValueError`` or
#: ``TypeError`` (or a host ``TaskError``) whose message names the argument, file or option;
#: ``correct``: accepted, and what was recorded is what was meant (checked independently);
#: ``silent_wrong``: accepted, and something recorded differs from what was meant;
#: ``data_loss``: a refused operation changed what a study or file held before it;
#: ``raw_error``: any other exception, or a message that does not name the culprit.
OUTCOMES = ("clear_error", "correct", "silent_wrong", "data_loss", "raw_error")
#: The classes of abuse ``abuse`` draws from.
CLASSES = ("options", "update", "minimize", "ask_tell", "files")

#: Values a hostile user gives an option: words, numbers, None, containers.
OPTION_VALUES = ("false", "False", "no", "flase", "off", "1", "0", "yes", "abc", "", "0.1", "nan",
                 None, True, False, 0, 1, 2, -1, 0.5, 1e300, float("nan"), [1], {"a": 1}, (0,))
#: The spellings of a boolean a user writes in text (independent of ``ntkbo.validation``).
_WORDS = {"true": True, "yes": True, "on": True, "1": True,
          "false": False, "no": False, "off": False, "0": False}


class Outcome(Exception):
    """Raised inside a case to report an outcome other than the one its code reached."""

    def __init__(self, outcome: str, why: str):
        super().__init__(why)
        self.outcome = outcome


def _named(err: BaseException, *names: str) -> bool:
    """Whether ``err`` is a clear error: an expected type whose message names one of ``names``."""
    from ntkbo.benchmarks.tasks.host import TaskError

    text = str(err)
    # a missing file's FileNotFoundError names it: Python's own clear error for that case
    clear_type = isinstance(err, (ValueError, TypeError, TaskError, FileNotFoundError)) or (
        "TaskError" in text and isinstance(err, jax.errors.JaxRuntimeError))
    return clear_type and any(n in text for n in names)


def _intent_bool(value, text: bool):
    """What a user means by ``value`` for a boolean option (``None``: nothing a boolean means)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if text and isinstance(value, str) and value.strip().lower() in _WORDS:
        return _WORDS[value.strip().lower()]
    if text and isinstance(value, int) and value in (0, 1):
        return bool(value)
    return None


def _case_options(rng: np.random.Generator) -> tuple[str, str]:
    """A random option of a random algorithm set to a hostile value, through the Python API or as
    text (``from_text``, the path of ``--set`` and specs). A clear error must name the option; an
    accepted value must be recorded as what the user meant."""
    from ntkbo.parts import option_types

    name = str(rng.choice(A.names()))
    if A.uses_pde(name) or A.models_constraints(name):
        name = "gp_ei"
    factory = A._FACTORIES[name].__wrapped__
    kinds = option_types(A._plain(factory))
    fixed = set(getattr(factory, "keywords", {}))
    typed = [k for k, ks in kinds.items() if ks & {"bool", "int", "float"} and k not in fixed]
    plain = str(rng.choice(typed))
    value = OPTION_VALUES[rng.integers(len(OPTION_VALUES))]
    text = bool(rng.integers(2))
    given = public_options(name, {plain: value})
    shown = A.layout(A._FACTORIES[name]).public_name(plain)
    what = f"{name} {shown}={value!r} ({'text' if text else 'python'})"
    try:
        options = A.from_text(name, given) if text else given
        algo = A.get(name, **options)
    except Exception as err:  # noqa: BLE001 - every exception is classified
        return ("clear_error" if _named(err, shown) else "raw_error"), what
    recorded = A.layout(A._FACTORIES[name]).split({plain: None})  # where it sits
    part = next(iter(recorded))
    got = algo.config[part][shown.split(".")[-1]] if isinstance(recorded[part], dict) else \
        algo.config[part]
    ks = kinds[plain]
    if "bool" in ks and not ks & {"int", "float"}:
        intent = _intent_bool(value, text)
        ok = intent is not None and isinstance(got, bool) and got is intent
        ok = ok or (isinstance(value, str) and "str" in ks and got == value)
        ok = ok or (value is None and "none" in ks and got is None)
    elif isinstance(value, (str, bytes, bool)) and "str" not in ks:
        numeric_text = text and isinstance(value, str) and "float" in ks
        ok = numeric_text and isinstance(got, float) and (
            got == float(value) or math.isnan(got) and math.isnan(float(value)))
    else:
        ok = (got == value or value is None and got is None
              or isinstance(value, float) and isinstance(got, float) and math.isnan(value)
              and math.isnan(got) or not isinstance(value, (int, float)) and value is not None)
    return ("correct" if ok else "silent_wrong"), what + f" -> recorded {got!r}"


_STATES: dict = {}
#: Small algorithms whose eager ``update`` is cheap, for the ``update`` class.
UPDATE_ALGOS = {"random_search": {}, "gp_ei": {"fit": {"enabled": False}},
                "neural_bo": {"network": {"width": 8}, "training": {"num_steps": 2}}}


def _bad_told(rng: np.random.Generator, d: int) -> tuple[Any, Any, str, tuple]:
    """A hostile ``(x, y)`` for a state of ``d`` inputs, its label and the names a clear error
    must use."""
    x = rng.uniform(0.1, 0.9, (1, d))
    kind = str(rng.choice(["nan_x", "inf_x", "wide_x", "narrow_x", "overflow_y", "complex_y",
                           "bool_y", "str_y", "ragged_x", "nan_y", "3d_x", "long_y"]))
    y: Any = np.array([0.5])
    if kind == "nan_x":
        x[0, rng.integers(d)] = np.nan
    elif kind == "inf_x":
        x[0, rng.integers(d)] = -np.inf
    elif kind == "wide_x":
        x = rng.uniform(size=(1, d + 1))
    elif kind == "narrow_x":
        x = rng.uniform(size=(1, max(d - 1, 1) if d > 1 else 3))
    elif kind == "overflow_y":
        y = np.array([float(rng.choice([1e39, -1e300, 5e38]))])
    elif kind == "complex_y":
        y = np.array([1.0 + 2j])
    elif kind == "bool_y":
        y = np.array([True])
    elif kind == "str_y":
        y = np.array(["1.0"])
    elif kind == "ragged_x":
        x = [[0.5] * d, [0.5]]
    elif kind == "nan_y":
        y = np.array([np.nan])
    elif kind == "3d_x":
        x = x[None]
    elif kind == "long_y":
        y = np.array([0.5, 0.5])
    return x, y, kind, ("x", "y") if kind != "nan_y" else ()


def _case_update(rng: np.random.Generator) -> tuple[str, str]:
    """``algo.update`` called eagerly (float32 state) with a hostile ``(x, y)``; a NaN ``y`` must
    be stored as a failed evaluation, everything else refused naming ``x`` or ``y``."""
    name = str(rng.choice(list(UPDATE_ALGOS)))
    if name not in _STATES:
        algo = A.get(name, **UPDATE_ALGOS[name])
        _STATES[name] = (algo, algo.init(jax.random.PRNGKey(0), jnp.zeros((2, 2)).at[1].set(1.0)
                                         .astype(jnp.float32), 16))
    algo, state = _STATES[name]
    x, y, kind, names = _bad_told(rng, 2)
    what = f"{name}.update {kind}"
    try:
        new, _ = algo.update(state, x if isinstance(x, list) else jnp.asarray(x, jnp.float32)
                             if kind != "nan_x" and kind != "inf_x" else np.asarray(x), y)
    except Exception as err:  # noqa: BLE001
        return ("clear_error" if names and _named(err, *(f"{n} " for n in names)) else
                "raw_error"), what + f": {type(err).__name__}"
    data = new.data if hasattr(new, "data") else None
    if data is None:
        return "silent_wrong", what + ": no buffer to check"
    n = int(data.count)
    row_ok = n == 1 and np.all(np.isfinite(np.asarray(data.x[0])))
    if kind == "nan_y":
        return ("correct" if row_ok and np.isnan(np.asarray(data.y[0])) else "silent_wrong"), what
    return "silent_wrong", what + f": accepted (count {n})"


def _case_minimize(rng: np.random.Generator) -> tuple[str, str]:
    """``minimize`` with a bad problem or argument, refused before anything compiles."""
    from ntkbo.benchmarks import Problem

    box = jnp.array([[0.0, 0.0], [1.0, 1.0]])
    good = Problem(name="quad", fn=lambda x: jnp.sum(x ** 2), bounds=box)
    cases = [
        ("function problem", lambda: (good.fn, 5, {}), ("problem",)),
        ("string problem", lambda: ("branin", 5, {}), ("problem",)),
        ("None problem", lambda: (None, 5, {}), ("problem",)),
        ("list bounds", lambda: (good.replace(bounds=[[0.0, 0.0], [1.0, 1.0]]), 5, {}),
         ("problem.bounds",)),
        ("inverted bounds", lambda: (good.replace(bounds=box[::-1]), 5, {}), ("bounds",)),
        ("nan noise", lambda: (good.replace(noise_std=float("nan")), 5, {}), ("noise_std",)),
        ("negative noise", lambda: (good.replace(noise_std=-1.0), 5, {}), ("noise_std",)),
        ("string noise", lambda: (good.replace(noise_std="0.1"), 5, {}), ("noise_std",)),
        ("bool objective", lambda: (good.replace(fn=lambda x: x[0] > 0), 5, {}), ("problem.fn",)),
        ("complex objective", lambda: (good.replace(fn=lambda x: x[0] * 1j), 5, {}),
         ("problem.fn",)),
        ("string budget", lambda: (good, "10", {}), ("budget",)),
        ("float budget", lambda: (good, 10.0, {}), ("budget",)),
        ("bool budget", lambda: (good, True, {}), ("budget",)),
        ("zero budget", lambda: (good, 0, {}), ("budget",)),
        ("string min_capacity", lambda: (good, 5, {"min_capacity": "x"}), ("min_capacity",)),
        ("zero min_capacity", lambda: (good, 5, {"min_capacity": 0}), ("min_capacity",)),
        ("float n_init", lambda: (good, 5, {"n_init": 2.0}), ("n_init",)),
        ("n_init above budget", lambda: (good, 5, {"n_init": 9}), ("n_init",)),
    ]
    label, make, names = cases[rng.integers(len(cases))]
    problem, budget, kwargs = make()
    driver = ntkbo.minimize if rng.integers(2) else ntkbo.maximize
    try:
        driver(A.random_search(), problem, budget, jax.random.PRNGKey(0), **kwargs)
    except Exception as err:  # noqa: BLE001
        return ("clear_error" if _named(err, *names) else "raw_error"), \
            f"{driver.__name__} {label}: {type(err).__name__}"
    return "silent_wrong", f"{driver.__name__} {label}: ran"


def _snapshot(study) -> tuple:
    from ntkbo import ask_tell

    x, y = ask_tell.observations(study)
    return (x.tobytes(), y.tobytes(), tuple(t.status for t in ask_tell.trials(study)))


def _case_ask_tell(rng: np.random.Generator) -> tuple[str, str]:
    """A misuse of ``ntkbo.ask_tell`` on a study with told, pending and abandoned trials: it must
    be refused naming the argument, and the study must hold exactly what it held before."""
    from ntkbo import ask_tell

    algo = A.random_search()
    study = ask_tell.start(algo, np.array([[0.0, 0.0], [1.0, 1.0]]), jax.random.PRNGKey(
        int(rng.integers(1 << 30))), n_init=3)
    ids = []
    for _ in range(3):
        tid, _, study = ask_tell.ask_trial(algo, study)
        ids.append(tid)
    study = ask_tell.tell(algo, study, ids[0], 1.0)
    study = ask_tell.abandon(study, ids[1])
    before = _snapshot(study)
    kind = str(rng.choice(["tell_twice", "tell_abandoned", "tell_unknown", "tell_float_id",
                           "tell_bool_id", "tell_str_id", "tell_negative_id", "tell_two_values",
                           "tell_string_value", "tell_complex_value", "tell_bool_value",
                           "tell_overflow", "tell_outside", "tell_nan_point", "tell_c",
                           "abandon_twice", "fail_told", "tell_wide_point", "lie"]))
    pending = ids[2]
    calls = {
        "tell_twice": (lambda: ask_tell.tell(algo, study, ids[0], 2.0), ("trial",)),
        "tell_abandoned": (lambda: ask_tell.tell(algo, study, ids[1], 2.0), ("trial",)),
        "tell_unknown": (lambda: ask_tell.tell(algo, study, 99, 2.0), ("trial",)),
        "tell_float_id": (lambda: ask_tell.tell(algo, study, float(pending), 2.0), ("trial",)),
        "tell_bool_id": (lambda: ask_tell.tell(algo, study, True, 2.0), ("trial",)),
        "tell_str_id": (lambda: ask_tell.tell(algo, study, str(pending), 2.0), ("trial",)),
        "tell_negative_id": (lambda: ask_tell.tell(algo, study, -1, 2.0), ("trial",)),
        "tell_two_values": (lambda: ask_tell.tell(algo, study, pending, [1.0, 2.0]), ("y",)),
        "tell_string_value": (lambda: ask_tell.tell(algo, study, pending, "abc"), ("y",)),
        "tell_complex_value": (lambda: ask_tell.tell(algo, study, pending, 1j), ("y",)),
        "tell_bool_value": (lambda: ask_tell.tell(algo, study, pending, False), ("y",)),
        "tell_overflow": (lambda: ask_tell.tell(algo, study, pending, 1e39)
                          if not jax.config.jax_enable_x64 else ask_tell.tell(
                              algo, study, pending, 1e309), ("y",)),
        "tell_outside": (lambda: ask_tell.tell(algo, study, [[2.0, 0.5]], [1.0]), ("x",)),
        "tell_nan_point": (lambda: ask_tell.tell(algo, study, [[np.nan, 0.5]], [1.0]), ("x",)),
        "tell_c": (lambda: ask_tell.tell(algo, study, pending, 1.0, c=[0.5]), ("c",)),
        "abandon_twice": (lambda: ask_tell.abandon(study, ids[1]), ("trial",)),
        "fail_told": (lambda: ask_tell.fail(algo, study, ids[0]), ("trial",)),
        "tell_wide_point": (lambda: ask_tell.tell(algo, study, [[0.5, 0.5, 0.5]], [1.0]), ("x",)),
        "lie": (lambda: ask_tell.ask(algo, study, lie="max "), ("lie",)),
    }
    call, names = calls[kind]
    try:
        result = call()
    except Exception as err:  # noqa: BLE001
        if _snapshot(study) != before:
            return "data_loss", kind
        return ("clear_error" if _named(err, *names) else "raw_error"), \
            f"{kind}: {type(err).__name__}: {str(err)[:80]}"
    if kind == "tell_overflow" and jax.config.jax_enable_x64:
        y = ask_tell.observations(result)[1]  # 1e309 is inf as a Python float: a failed one
        return ("correct" if np.isinf(y[-1]) and ask_tell.failed(result)[-1] else
                "silent_wrong"), kind
    return "silent_wrong", f"{kind}: accepted"


def _case_files(rng: np.random.Generator, folder: str) -> tuple[str, str]:
    """A saved study damaged on disk (a flipped bit, a truncation, appended or replaced bytes, an
    empty file, a missing one) and loaded: refused naming the file, or loaded equal to what was
    saved; and a refused save over a good file must leave that file whole."""
    import os

    from ntkbo import ask_tell

    algo = A.random_search()
    box = np.array([[0.0, 0.0], [1.0, 1.0]])
    study = ask_tell.start(algo, box, jax.random.PRNGKey(int(rng.integers(1 << 30))), n_init=2)
    for _ in range(2):
        tid, x, study = ask_tell.ask_trial(algo, study)
        study = ask_tell.tell(algo, study, tid, float(np.sum(x)))
    path = os.path.join(folder, f"study-{rng.integers(1 << 30)}.ntkbo")
    ask_tell.save(path, study)
    with open(path, "rb") as fh:
        good = fh.read()
    kind = str(rng.choice(["flip", "flip", "flip", "truncate", "append", "empty", "garbage",
                           "missing", "json", "bad_save"]))
    data = bytearray(good)
    if kind == "flip":
        i = int(rng.integers(len(data)))
        data[i] ^= 1 << int(rng.integers(8))
    elif kind == "truncate":
        data = data[:int(rng.integers(len(data)))]
    elif kind == "append":
        data += bytes(rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8))
    elif kind == "empty":
        data = bytearray()
    elif kind == "garbage":
        data = bytearray(rng.integers(0, 256, len(data), dtype=np.uint8).tobytes())
    elif kind == "json":
        data = bytearray(b'{"format": 1}')
    if kind == "missing":
        os.remove(path)
    elif kind == "bad_save":
        try:
            ask_tell.save(path, "not a study")  # type: ignore[arg-type]
        except Exception as err:  # noqa: BLE001
            with open(path, "rb") as fh:
                if fh.read() != good:
                    return "data_loss", kind
            return ("clear_error" if isinstance(err, (ValueError, TypeError, AttributeError))
                    else "raw_error"), f"{kind}: {type(err).__name__}"
        return "silent_wrong", f"{kind}: saved"
    else:
        with open(path, "wb") as fh:
            fh.write(bytes(data))
    try:
        loaded = ask_tell.load(path, algo, box)
    except Exception as err:  # noqa: BLE001
        return ("clear_error" if _named(err, os.path.basename(path)) else "raw_error"), \
            f"{kind}: {type(err).__name__}: {str(err)[:80]}"
    same = _snapshot(loaded) == _snapshot(study) and all(
        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(
            jax.tree_util.tree_leaves(loaded.state), jax.tree_util.tree_leaves(study.state)))
    return ("correct" if same else "silent_wrong"), f"{kind}: loaded"


def abuse(cases: int, seed: int = 0, classes=CLASSES, log=print) -> dict:
    """``cases`` abuse cases spread evenly over ``classes`` (in float32: the dtype where overflow
    is reachable); returns ``{"counts": {class: {outcome: n}}, "findings": [lines]}`` where the
    findings are the cases whose outcome is not a clear error or a correct result."""
    import tempfile

    rng = np.random.default_rng(seed)
    counts = {c: dict.fromkeys(OUTCOMES, 0) for c in classes}
    findings = []
    x64_before = jax.config.jax_enable_x64
    t0 = time.time()
    jax.config.update("jax_enable_x64", False)
    try:
        with tempfile.TemporaryDirectory(prefix="ntkbo-abuse-") as folder:
            for i in range(cases):
                cls = classes[i % len(classes)]
                try:
                    if cls == "options":
                        outcome, what = _case_options(rng)
                    elif cls == "update":
                        outcome, what = _case_update(rng)
                    elif cls == "minimize":
                        outcome, what = _case_minimize(rng)
                    elif cls == "ask_tell":
                        outcome, what = _case_ask_tell(rng)
                    else:
                        outcome, what = _case_files(rng, folder)
                except Exception as err:  # noqa: BLE001 - the harness's own failure is raw
                    outcome, what = "raw_error", f"harness: {type(err).__name__}: {err}"
                counts[cls][outcome] += 1
                if outcome not in ("clear_error", "correct"):
                    findings.append(f"{outcome} | {cls} | {what}")
                if (i + 1) % 50 == 0:
                    log(f"[{time.time() - t0:7.1f} s] {i + 1} abuse cases, "
                        f"{len(findings)} findings")
    finally:
        jax.config.update("jax_enable_x64", x64_before)
    return {"counts": counts, "findings": findings, "wall_time_s": time.time() - t0}


def abuse_markdown(report: dict, command: str) -> str:
    counts = report["counts"]
    total = {o: sum(c[o] for c in counts.values()) for o in OUTCOMES}
    lines = ["# Abuse cases", "", f"Command: `{command}`  ",
             f"Wall time {report['wall_time_s']:.0f} s; jax {jax.__version__}, float32.", "",
             f"{sum(total.values())} cases: " + ", ".join(f"{total[o]} {o}" for o in OUTCOMES)
             + ".", "", "| class | " + " | ".join(OUTCOMES) + " |",
             "|---|" + "---:|" * len(OUTCOMES)]
    lines += [f"| {c} | " + " | ".join(str(v[o]) for o in OUTCOMES) + " |"
              for c, v in counts.items()]
    lines += ["| all | " + " | ".join(str(total[o]) for o in OUTCOMES) + " |"]
    if report["findings"]:
        lines += ["", "## Findings", ""] + [f"- {f}" for f in report["findings"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ntkbo.configure_blas_threads()  # one LAPACK thread (ntkbo.lapack_threads), as ntkbo's CLI
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-group", type=int, default=5, help="runs per compilation")
    p.add_argument("--algos", default=None, help="comma-separated (default: every algorithm)")
    p.add_argument("--dtypes", default="float32,float64",
                   help="comma-separated, run in this order (the runs split evenly)")
    p.add_argument("--out", default=None, help="write the markdown summary here too")
    p.add_argument("--abuse", type=int, default=0, metavar="N",
                   help="run N abuse cases (bad inputs, ask/tell misuse, corrupt files, options) "
                        "instead of the fuzzed runs")
    args = p.parse_args(argv)
    algos = args.algos.split(",") if args.algos else None
    command = "python tests/fuzz.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.abuse:
        report = abuse(args.abuse, args.seed, log=lambda s: print(s, file=sys.stderr, flush=True))
        text = abuse_markdown(report, command)
        print(text)
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(text)
        return 1 if report["findings"] else 0

    def write(tally, partial=True):
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(markdown(tally, command)
                         + (f"\n(partial: {tally['runs']} of {args.runs} runs so far)\n"
                            if partial else ""))

    t_cpu = time.process_time()
    tally = fuzz(args.runs, args.seed, args.per_group, algos,
                 dtypes=tuple(args.dtypes.split(",")),
                 log=lambda s: print(s, file=sys.stderr, flush=True), on_group=write)
    tally["cpu_time_s"] = time.process_time() - t_cpu
    print(markdown(tally, command))
    write(tally, partial=False)
    return 1 if tally["failures"] or tally["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
