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

    python benchmarks/fuzz.py --runs 1000 --out benchmarks/results/fuzz.md

prints (and writes) a markdown summary with one reproducer line per failed run.
"""

from __future__ import annotations

import argparse
import ast
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
    args = p.parse_args(argv)
    algos = args.algos.split(",") if args.algos else None
    command = "python benchmarks/fuzz.py " + " ".join(sys.argv[1:] if argv is None else argv)

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
