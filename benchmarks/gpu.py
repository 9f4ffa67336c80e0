"""One prepared run for a borrowed GPU machine: environment, correctness, speed, theory checks.

Meant for a machine lent for a few minutes (an H100/H200 with CUDA JAX, flax, optax, chex, scipy,
and optionally PyTorch + BoTorch; no network), run from a bare checkout without installing::

    PYTHONPATH=. python benchmarks/gpu.py --scale gpu --out $OUT/gpu      # the real sizes
    PYTHONPATH=. python benchmarks/gpu.py --scale tiny --out /tmp/gpu     # seconds, any CPU (CI)

Everything goes under ``--out``: ``report.md`` and ``report.json`` (rewritten after every part, so
a run cut short still leaves a report), ``parts/<part>.json`` (each part's raw rows, written as it
goes), ``logs/`` (each part's stderr, pytest's and the theory checks' output) and
``theory/<check>/`` (the theory checks' own reports). Progress lines go to stdout.

The parts, in order (``--parts`` picks some):

1. ``environment``: device kind and platform, jax/jaxlib and package versions, the default matmul
   precision, the x64 flag, the XLA environment variables, ``nvidia-smi``, the git commit.
2. ``correctness``: a subset of the fast tests with pytest in a subprocess (pass/fail counts from
   its summary line), then float32 against float64 GP posteriors on the device: ``ntkbo.gp.fit``
   with an RBF and with the NTK kernel of ``ntk_gp``, the float32 means' largest error (in units of
   the standardised outputs) under the default matmul precision and under
   ``jax.default_matmul_precision("highest")``, against the target 1e-3; next to it the same
   algebra written with plain ``jnp`` (no ``ntkbo.gp.exact_matmuls``), which shows what the library
   guards against (TF32 products on GPUs).
3. ``seeds``: seeds per second of ``jax.jit(jax.vmap(minimize))`` for each algorithm and budget on
   Ackley in d = 10, over growing seed counts (stopping at the first out-of-memory or when the
   next count is not predicted to fit), against a Python loop over a jitted single run (at most
   ``--loop-seeds`` seeds, the time per seed extrapolated), and through the study runner (one
   cell of a spec, ``ntkbo.experiments.runner.run_cell``: sharded over the local devices with
   its default block of seeds per call) at the largest seed count the vmap cells ran. Compile
   time is the first call minus the second (on other keys).
4. ``step``: ``suggest`` and ``update`` of each ``--step-algos`` entry at n observations
   (``benchmarks/speed.py``'s
   ``measure_step``: buffer capacity ``ntkbo.data.next_capacity(n + 1)``, compile excluded, the
   median of a few calls), and ``botorch``: BoTorch's SingleTaskGP fit + LogEI ``optimize_acqf`` on
   the same points on the same device (its own process; skipped with the reason when torch or
   botorch do not import), with the ratio in the report.
5. ``theory``: what ``python -m theory_checks --help`` offers, then one ``python -m
   theory_checks NAMES --scale gpu --time-budget S`` (``smoke`` at tiny scale) with the time left:
   at gpu scale 8 processes, longest estimate first (``docs/theory.md``); its ``summary.json``
   gives each check's verdict, time and report path.

Scales (``SCALES``; ``--algos``, ``--step-algos``, ``--budgets``, ``--seeds``, ``--grid``,
``--theory`` override): ``gpu``: ntk_gp, gp, neural_bo (their defaults); budgets 100 and 300; seeds
1, 16, 64, 256, 1024 against a loop of at most 4; steps of ntk_gp, ntk_gp_solve (``NAMED``:
ntk_gp's suggest before the factor's inverse), neural_bo and gp at n = 2000, 4000, 8000; the GP
comparison at n = 2000; the fast-test subset of ``PYTEST_FILES`` with ``-k "not slow"`` (half the
CPUs, at most 8, as pytest-xdist workers when xdist imports and there are >= 8 CPUs); every theory
check at ``--scale gpu`` that fits. ``tiny``: random_search (the other algorithms' programs each
take 5-30 s to compile on 2 CPU cores; the code path is the same), budget 12, seeds 1 and 2, n =
64, the GP comparison at n = 64, two tests of ``tests/test_linalg.py``, the theory check
``gd_ensemble`` at ``--scale smoke``: about a minute. With the default 420 s the gpu scale is
compile-bound: each new seed count or n is a new program (tens of seconds), so the later cells of a
part are often skipped with their predicted time; run a part again alone for more (``--parts seeds
--budgets 100 --seeds 64,1024``).

One slice of a paper's study: ``--problem``, ``--dim`` and ``--relative-noise`` set the seeds
part's problem, ``--loop-seeds 0`` drops the loop (vmap only), and ``NAMED`` holds the papers'
settings (``neuralbo_paper``). NeuralBO's Table 2 protocol on one function and dimension::

    PYTHONPATH=. python benchmarks/gpu.py --out $OUT/slice --parts seeds --budget-s 540 \
        --algos neuralbo_paper --problem ackley --dim 100 --relative-noise \
        --budgets 2000 --seeds 10 --loop-seeds 0

Robustness: every part runs in its own process (a crash, a CUDA abort or an out-of-memory there is
recorded with its message and the script goes on); inside a part, every cell is wrapped the same
way. ``--budget-s`` (default 420) is shared between the parts not yet run, in proportion to
``WEIGHTS`` (time a part leaves unused goes to the later ones); a part whose time is up is
killed (its rows so far kept, status ``timeout``) and parts that no longer have time are recorded as
``skipped``. The script itself exits 0 whenever it could write its report.

JAX's GPU memory preallocation is turned off in the parts' processes
(``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set): several processes (pytest's workers, the
BoTorch process) share the device. The BoTorch process runs JAX on the CPU (``JAX_PLATFORMS=cpu``,
only to draw the same points).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

PARTS = ("environment", "correctness", "seeds", "step", "botorch", "theory")
#: Share of the time left that each part gets when it starts (relative to the parts still to run).
WEIGHTS = {"environment": 0.02, "correctness": 0.2, "seeds": 0.36, "step": 0.2, "botorch": 0.08,
           "theory": 0.14}
#: At tiny scale (CI on 2 CPU cores) compilation dominates and the measurements are cheap.
TINY_WEIGHTS = {"environment": 0.05, "correctness": 0.35, "seeds": 0.15, "step": 0.12,
                "botorch": 0.03, "theory": 0.3}
STATUSES = ("ok", "failed", "skipped", "timeout")
PROBLEM, DIM = "ackley", 10
#: Names that ``--algos`` and ``--step-algos`` accept besides the registry's: a registry name and
#: options. ``ntk_gp_solve`` is ``ntk_gp`` before its suggest used the factor's inverse (the
#: baseline of that change, timed next to it); ``neuralbo_paper`` is the NeuralBO row of
#: ``benchmarks/specs/neuralbo_synthetic.toml`` (the paper's section 7 settings).
NAMED = {"ntk_gp_solve": ("ntk_gp", {"search": {"posterior_inverse": False}}),
         "neuralbo_paper": ("neural_bo", {"network": {"width": 500, "depth": 1}, "lam": 0.01,
                                          "nu": 1.0, "training": {"warm_start": False}}),
         # ``neural_bo``'s candidate chunks (its default: ``CHUNK_ENTRIES // (w + C)`` rows)
         # against 256 rows and against one chunk of every candidate.
         "neural_bo_chunk256": ("neural_bo", {"search": {"chunk_size": 256}}),
         "neural_bo_onechunk": ("neural_bo", {"search": {"chunk_size": 1 << 20}})}


def algo_spec(name: str) -> tuple:
    """``(registry name, options)`` of an ``--algos`` entry (``NAMED`` or a registry name)."""
    return NAMED.get(name, (name, {}))
GP_TARGET = 1e-3  # largest float32 mean error allowed, in units of the standardised outputs

PYTEST_FILES = ("tests/test_linalg.py", "tests/test_gp.py", "tests/test_acquisition.py",
                "tests/test_loop.py", "tests/test_kernels_native.py", "tests/test_neural_bo.py")
#: The theory checks the theory part runs (one command; it orders them by its time estimates).
THEORY_ORDER = ("neuralbo_identities", "pinn_information_gain", "nngp_convergence",
                "ntk_convergence", "neural_cbo_coverage", "pinn_gp_sample", "gd_ensemble",
                "sto_posterior", "regret_scaling")

SCALES = {
    # CPU, for CI: the plumbing of every part in about a minute on 2 cores. random_search, not
    # the GP algorithms: on 2 CPU cores each of their programs compiles in 5-30 s (gp's update
    # 30 s), and a seeds cell compiles three (``--algos`` runs them: the same code paths).
    "tiny": dict(algos=("random_search",), step_algos=("random_search",), budgets=(12,),
                 seeds=(1, 2), loop_seeds=2,
                 grid=(64,), reps=2, gp_n=64, gp_test=64, pytest_files=("tests/test_linalg.py",),
                 pytest_k="values or gradients", theory_scale="smoke",
                 theory=("gd_ensemble",), min_start_s=3.0, botorch_grid=(64,),
                 weights=TINY_WEIGHTS),
    "gpu": dict(algos=("ntk_gp", "gp", "neural_bo"),
                step_algos=("ntk_gp", "ntk_gp_solve", "neural_bo", "gp"), budgets=(100, 300),
                seeds=(1, 16, 64, 256, 1024), loop_seeds=4, grid=(2000, 4000, 8000), reps=3,
                gp_n=2000, gp_test=1000, pytest_files=PYTEST_FILES, pytest_k="not slow",
                theory_scale="gpu", theory=THEORY_ORDER, min_start_s=15.0,
                botorch_grid=(2000, 4000, 8000), weights=WEIGHTS),
}


# ---------------------------------------------------------------------------------------------
# Small helpers (no jax)


def now_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def fmt_s(seconds) -> str:
    """``speed.py``'s ``fmt_time``, with NaN (a cell not measured) as ``-`` too."""
    if isinstance(seconds, float) and math.isnan(seconds):
        return "-"
    return _load_speed().fmt_time(seconds)


def is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return ("RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()
            or re.search(r"\bOOM\b", text) is not None or isinstance(exc, MemoryError))


def short(exc: BaseException, limit: int = 400) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + " ..."


def _jsonable(v):
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):
            return v.tolist()
    except ImportError:
        pass
    return str(v)


def write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=_jsonable)
    os.replace(tmp, path)


def tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def last_error(path: str) -> str:
    """The last ``SomethingError: ...`` line of a log (else its last non-empty line)."""
    lines = [ln.strip() for ln in tail(path, 200).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"[\w.]*(Error|Exception|Exit)\b.*:", ln)]
    return ((errors or lines or ["(no output)"])[-1])[:400]


def kill_group(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


#: Subprocesses a part started (pytest, theory checks): killed with the part.
_CHILDREN: list = []


def run_logged(cmd: list, timeout: float, log_path: str, env=None) -> dict:
    """Runs ``cmd`` in its own process group from the repository root, output to ``log_path``;
    ``{"rc", "wall", "timed_out"}``; on timeout the whole group is killed."""
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        _CHILDREN.append(proc)
        try:
            rc = proc.wait(timeout=max(1.0, timeout))
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
            rc, timed_out = None, True
        finally:
            _CHILDREN.remove(proc)
            kill_group(proc)  # leftovers (e.g. pytest-xdist workers)
    return {"rc": rc, "wall": time.perf_counter() - t0, "timed_out": timed_out}


def child_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    path = env.get("PYTHONPATH", "")
    if ROOT not in path.split(os.pathsep):
        env["PYTHONPATH"] = ROOT + (os.pathsep + path if path else "")
    env.update(extra or {})
    return env


# ---------------------------------------------------------------------------------------------
# Inside a part's process


class Part:
    """A part's record, saved to ``parts/<name>.json`` after every change."""

    def __init__(self, name: str, out: str, deadline: float, cfg: dict, args):
        self.name, self.out, self.deadline, self.cfg, self.args = name, out, deadline, cfg, args
        self.t0 = time.time()
        self.path = os.path.join(out, "parts", name + ".json")
        self.data = {"name": name, "status": "running", "started": now_utc(), "rows": []}

    def left(self) -> float:
        return self.deadline - time.time()

    def log(self, msg: str) -> None:
        print(f"[{self.name} +{time.time() - self.t0:.0f}s] {msg}", flush=True)

    def save(self) -> None:
        self.data["wall_s"] = time.time() - self.t0
        write_json(self.path, self.data)

    def add(self, row: dict) -> dict:
        self.data["rows"].append(row)
        self.save()
        return row


def part_environment(p: Part) -> None:
    import importlib.metadata as md

    d = p.data
    d["python"] = platform.python_version()
    d["os"] = platform.platform()
    d["cpu_count"] = os.cpu_count()
    d["env"] = {k: os.environ.get(k) for k in (
        "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
        "XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_FLAGS", "JAX_PLATFORMS", "JAX_ENABLE_X64",
        "JAX_DEFAULT_MATMUL_PRECISION", "CUDA_VISIBLE_DEVICES", "OPENBLAS_NUM_THREADS",
        "NTKBO_CACHE_DIR", "NTKBO_LAPACK_THREADS") if k in os.environ}
    versions = {}
    for pkg in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin",
                "flax", "optax", "chex", "numpy", "scipy", "torch", "botorch", "gpytorch",
                "pytest", "pytest-xdist"):
        try:
            versions[pkg] = md.version(pkg)
        except Exception:  # noqa: BLE001 (not installed)
            pass
    d["packages"] = versions
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True, timeout=20)
        d["commit"] = head.stdout.strip() or f"unknown ({head.stderr.strip()[:100]})"
        d["modified_files"] = len(dirty.stdout.splitlines()) if dirty.returncode == 0 else None
    except Exception as e:  # noqa: BLE001
        d["commit"] = f"unknown ({short(e, 100)})"
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        d["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()[:200]
    except Exception as e:  # noqa: BLE001
        d["nvidia_smi"] = f"not available ({short(e, 100)})"
    p.save()

    import jax
    import jaxlib

    t0 = time.perf_counter()
    devices = jax.devices()
    d["device_init_s"] = time.perf_counter() - t0
    dev = devices[0]
    d.update(jax=jax.__version__, jaxlib=jaxlib.__version__, backend=jax.default_backend(),
             device_kind=dev.device_kind, platform=dev.platform, device_count=len(devices),
             devices=[str(x) for x in devices])
    prec = jax.config.jax_default_matmul_precision
    d["default_matmul_precision"] = "default (None)" if prec is None else str(prec)
    d["x64"] = bool(jax.config.jax_enable_x64)
    try:
        d["compilation_cache_dir"] = jax.config.jax_compilation_cache_dir
    except AttributeError:
        pass
    try:
        stats = dev.memory_stats() or {}
        d["memory_bytes_limit"] = stats.get("bytes_limit")
    except Exception as e:  # noqa: BLE001
        d["memory_bytes_limit"] = f"n/a ({short(e, 80)})"
    import jax.numpy as jnp

    a = jnp.ones((512, 512), jnp.float32)
    t0 = time.perf_counter()
    jax.block_until_ready(a @ a)
    d["first_matmul_s"] = time.perf_counter() - t0
    import ntkbo

    d["ntkbo"] = getattr(ntkbo, "__version__", "?")
    p.log(f"{d['device_kind']} ({d['platform']}, {d['device_count']} device(s)); jax "
          f"{d['jax']}, jaxlib {d['jaxlib']}; matmul precision {d['default_matmul_precision']}; "
          f"x64 {d['x64']}; commit {str(d.get('commit'))[:12]}")


def parse_pytest_summary(text: str) -> dict:
    """Counts from pytest's last summary line (``3 passed, 1 failed, 2 deselected in 4.1s``);
    without one (killed), the passed/failed progress characters seen so far."""
    words = r"passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?"
    for line in reversed(text.splitlines()):
        if re.search(rf"\d+ ({words})", line) and re.search(r" in [\d.]+s", line):
            counts = {}
            for num, word in re.findall(rf"(\d+) ({words})", line):
                word = {"error": "errors", "warning": "warnings"}.get(word, word)
                counts[word] = counts.get(word, 0) + int(num)
            return {"summary": line.strip("= ").strip(), "counts": counts}
        if "no tests ran" in line:
            return {"summary": line.strip("= ").strip(), "counts": {}}
    progress = "".join(ln.split("[")[0] for ln in text.splitlines()
                       if re.fullmatch(r"[.FEsxX]+\s*(\[\s*\d+%\])?", ln.strip()))
    return {"summary": None, "counts": {"passed": progress.count("."),
                                        "failed": progress.count("F"),
                                        "errors": progress.count("E")}}


def run_pytest(p: Part, timeout: float) -> dict:
    cfg = p.cfg
    files = [f for f in cfg["pytest_files"] if os.path.isfile(os.path.join(ROOT, f))]
    missing = [f for f in cfg["pytest_files"] if f not in files]
    row = {"what": "pytest", "files": files, "missing": missing, "k": cfg["pytest_k"]}
    if not files:
        row.update(status="failed", message="none of the test files exist")
        return row
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *files,
           "-k", cfg["pytest_k"]]
    workers = 0
    if p.args.scale == "gpu" and (os.cpu_count() or 1) >= 8:
        try:
            import xdist  # noqa: F401

            workers = min(8, (os.cpu_count() or 8) // 2)
        except ImportError:
            pass
    if workers:
        cmd += ["-n", str(workers)]
    row["command"] = " ".join(["python"] + cmd[1:])
    log_path = os.path.join(p.out, "logs", "pytest.log")
    p.log(f"pytest ({len(files)} files, -k {cfg['pytest_k']!r}"
          f"{f', {workers} workers' if workers else ''}; timeout {timeout:.0f} s) ...")
    r = run_logged(cmd, timeout, log_path, env=child_env())
    with open(log_path, errors="replace") as f:
        text = f.read()
    parsed = parse_pytest_summary(text)
    # ``-rfE``'s short summary: the ids of the tests that failed or errored.
    parsed["failed_tests"] = re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)
    counts = parsed["counts"]
    row.update(rc=r["rc"], wall_s=r["wall"], log=os.path.relpath(log_path, p.out), **parsed)
    if r["timed_out"]:
        row.update(status="timeout", message=f"killed after {r['wall']:.0f} s; so far "
                   f"{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed")
    elif r["rc"] == 0 and counts.get("passed", 0) > 0:
        row.update(status="pass", message=parsed["summary"])
    else:
        named = ", ".join(parsed["failed_tests"]) or last_error(log_path)
        row.update(status="fail", message=f"exit code {r['rc']}: {parsed['summary']}; {named}")
    p.log(f"pytest: {row['status']}: {row['message']}")
    return row


def gp_precision(p: Part) -> list:
    """float32 against float64 GP posteriors (module docstring, part 2)."""
    import functools

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.scipy.linalg import solve_triangular

    from ntkbo import data as D
    from ntkbo import gp as G
    from ntkbo.algorithms.observations import to_sphere
    from ntkbo.kernels import as_kernel, mlp, stationary

    n, m, d = p.cfg["gp_n"], p.cfg["gp_test"], 4
    rng = np.random.default_rng(0)
    x, xs = rng.uniform(size=(n, d)), rng.uniform(size=(m, d))

    def f(z):
        return np.sin(2 * np.pi * z[:, 0]) + 0.5 * np.cos(3 * z[:, 1]) + z[:, 2] ** 2 - z[:, 3]

    y = f(x) + 0.01 * rng.standard_normal(n)
    y = (y - y.mean()) / y.std()
    # The float64 reference sees the float32-rounded inputs: only the arithmetic differs.
    x32, xs32, y32 = (a.astype(np.float32) for a in (x, xs, y))
    ntk = as_kernel(mlp(2, 1, "relu", W_std=2.0**0.5, b_std=0.1)[2], "ntk")  # ntk_gp's default
    kernels = {
        "rbf (lengthscale 0.3, noise 1e-3)": (
            lambda a, b: stationary.rbf(a, b, 0.3, 1.0), 1e-3),
        "ntk (ntk_gp's: depth 2, relu, sphere inputs, noise 1e-2)": (
            lambda a, b: ntk(to_sphere(a), to_sphere(b)), 1e-2),
    }
    capacity = D.next_capacity(n)

    def via_gp(kern, lam, xa, ya, xt):
        data = D.append(D.empty(capacity, d, xa.dtype), xa, ya)
        post = G.fit(kern, data, lam)
        return G.mean(kern, post, xt), G.variance(kern, post, xt)

    def via_gp_inverse(kern, lam, xa, ya, xt):  # ntk_gp's suggest: the factor's inverse
        data = D.append(D.empty(capacity, d, xa.dtype), xa, ya)
        post = G.with_inverse(G.fit(kern, data, lam))
        return G.mean(kern, post, xt), G.variance(kern, post, xt)

    def raw(kern, lam, xa, ya, xt):  # the same algebra without ntkbo.gp's exact_matmuls
        k = kern(xa, xa)
        jitter = G.default_jitter(k.dtype) * jnp.mean(jnp.diag(k))
        chol = jnp.linalg.cholesky(k + (lam + jitter) * jnp.eye(n, dtype=k.dtype))
        alpha = solve_triangular(chol.T, solve_triangular(chol, ya, lower=True), lower=False)
        ks = kern(xt, xa)
        v = solve_triangular(chol, ks.T, lower=True)
        prior = jax.vmap(lambda z: kern(z[None], z[None])[0, 0])(xt)
        return ks @ alpha, prior - jnp.sum(v * v, axis=0)

    def compute(fn, kern, lam, arrays, precision):
        call = jax.jit(functools.partial(fn, kern, lam))
        if precision == "highest":
            with jax.default_matmul_precision("highest"):
                out = jax.block_until_ready(call(*arrays))
        else:
            out = jax.block_until_ready(call(*arrays))
        return [np.asarray(o, np.float64) for o in out]

    rows, results = [], {}
    for kname, (kern, lam) in kernels.items():
        for path, fn in (("ntkbo.gp", via_gp), ("ntkbo.gp, inverse", via_gp_inverse),
                         ("plain jnp", raw)):
            for precision in ("default", "highest"):
                if path == "ntkbo.gp, inverse" and precision == "highest":
                    continue  # exact_matmuls sets "highest" inside: the same program
                if p.left() < 2:
                    rows.append(dict(kernel=kname, path=path, precision=precision,
                                     status="skipped", message="no time left"))
                    continue
                try:
                    t0 = time.perf_counter()
                    results[kname, path, precision] = compute(
                        fn, kern, lam, (jnp.asarray(x32), jnp.asarray(y32), jnp.asarray(xs32)),
                        precision)
                    rows.append(dict(kernel=kname, path=path, precision=precision, n=n, m=m,
                                     lam=lam, status="ok", wall_s=time.perf_counter() - t0))
                except Exception as e:  # noqa: BLE001
                    rows.append(dict(kernel=kname, path=path, precision=precision,
                                     status="oom" if is_oom(e) else "failed", message=short(e)))
    # The float64 reference, last: enabling x64 changes every later trace in this process.
    jax.config.update("jax_enable_x64", True)
    refs = {}
    for kname, (kern, lam) in kernels.items():
        try:
            refs[kname] = compute(via_gp, kern, lam, tuple(
                jnp.asarray(a.astype(np.float64)) for a in (x32, y32, xs32)), "highest")
            prior = np.asarray(jax.vmap(lambda z, k=kern: k(z[None], z[None])[0, 0])(
                jnp.asarray(xs32.astype(np.float64))))
            refs[kname].append(float(np.max(np.abs(prior))))
        except Exception as e:  # noqa: BLE001
            for r in rows:
                if r["kernel"] == kname and r["status"] == "ok":
                    r.update(status="failed", message="float64 reference: " + short(e))
    for r in rows:
        key = (r["kernel"], r["path"], r["precision"])
        if r["status"] != "ok" or key not in results:
            continue
        mean32, var32 = results[key]
        mean64, var64, prior_max = refs[r["kernel"]]
        r["max_mean_error"] = float(np.max(np.abs(mean32 - mean64)))  # y has sd 1
        r["max_var_error"] = float(np.max(np.abs(var32 - var64)) / prior_max)
        r["finite"] = bool(np.all(np.isfinite(mean32)) and np.all(np.isfinite(var32)))
        r["within_target"] = bool(r["finite"] and r["max_mean_error"] <= GP_TARGET)
        p.log(f"GP {r['kernel'].split(' ')[0]} {r['path']} precision {r['precision']}: "
              f"max |mean32 - mean64| = {r['max_mean_error']:.2e} (target {GP_TARGET:g}), "
              f"max |var32 - var64| / prior = {r['max_var_error']:.2e}")
    return rows


def part_correctness(p: Part) -> None:
    reserve = max(10.0, 0.2 * p.left())  # for the GP comparison
    row = run_pytest(p, p.left() - reserve)
    p.data["pytest"] = row
    p.save()
    try:
        p.data["gp_rows"] = gp_precision(p)
    except Exception as e:  # noqa: BLE001
        p.data["gp_rows"] = [{"status": "oom" if is_oom(e) else "failed", "message": short(e),
                              "traceback": traceback.format_exc()[-2000:]}]
    library = [r for r in p.data["gp_rows"] if r.get("path", "").startswith("ntkbo.gp")]
    gp_ok = bool(library) and all(r.get("within_target") for r in library)
    p.data["gp_target"] = GP_TARGET
    p.data["verdict"] = "pass" if row["status"] == "pass" and gp_ok else "fail"
    p.log(f"verdict {p.data['verdict']} (pytest {row['status']}; ntkbo.gp float32 within "
          f"{GP_TARGET:g}: {gp_ok})")


def _fit_exponent(backend: str) -> float:
    """Run time against seed count used to predict the next cell: linear on CPU, square-root
    on accelerators (a vmapped BO step is latency-bound there until the device fills)."""
    return 1.0 if backend == "cpu" else 0.5


def part_seeds(p: Part) -> None:
    import jax

    import ntkbo

    args = p.args
    noise = {"noise": "relative"} if args.relative_noise else {}
    problem = ntkbo.benchmarks.get(args.problem, dim=args.dim, **noise)
    exponent = _fit_exponent(jax.default_backend())
    p.data.update(problem=f"{args.problem} (d = {args.dim}"
                          f"{', relative noise' if noise else ''})", seed_counts=list(args.seeds),
                  loop_seeds=args.loop_seeds, growth_exponent=exponent,
                  returns="(best_f, f) of each run (not the final state)")
    slots = [(b, a) for b in args.budgets for a in args.algos]
    for i, (budget, name) in enumerate(slots):
        left = p.left()
        row = p.add({"algo": name, "budget": budget, "loop": None, "vmap": []})
        if left < 3:
            row.update(status="skipped", message=f"no time left ({left:.0f} s)")
            p.save()
            continue
        slot_end = time.time() + left / (len(slots) - i)
        p.log(f"{name} budget {budget}: slot of {slot_end - time.time():.0f} s")
        try:
            base, options = algo_spec(name)
            algo = ntkbo.algorithms.get(base, **options)

            def run(k, prob, algo=algo, budget=budget):
                r = ntkbo.minimize(algo, prob, budget, k)
                return r.best_f, r.f

            prev, per_seed = None, None
            if args.loop_seeds > 0:
                prev, per_seed = _loop(p, row, run, problem, slot_end)
            row["status"] = "ok"
            many = jax.jit(jax.vmap(run, in_axes=(0, None)))
            for s in args.seeds:
                if prev is not None:
                    s0, compile0, run0 = prev
                    est = compile0 + 2 * run0 * (s / s0) ** exponent
                    if time.time() + est > slot_end:
                        row["vmap"].append({"seeds": s, "status": "skipped", "message":
                                            f"predicted {est:.0f} s > "
                                            f"{slot_end - time.time():.0f} s left in this slot"})
                        p.save()
                        p.log(f"  vmap {s} seeds: skipped (predicted {est:.0f} s)")
                        break
                try:
                    k1 = jax.random.split(jax.random.PRNGKey(1000 + s), s)
                    k2 = jax.random.split(jax.random.PRNGKey(2000 + s), s)
                    t0 = time.perf_counter()
                    jax.block_until_ready(many(k1, problem))
                    t_first = time.perf_counter() - t0
                    # Kept at once: a slot that ends in the second call still has the first.
                    row["vmap"].append({"seeds": s, "status": "first call only",
                                        "first_call_s": t_first})
                    p.save()
                    p.log(f"  vmap {s} seeds: first call {fmt_s(t_first)}")
                    t0 = time.perf_counter()
                    best, _ = jax.block_until_ready(many(k2, problem))
                    t_second = time.perf_counter() - t0
                except Exception as e:  # noqa: BLE001
                    oom = is_oom(e)
                    if row["vmap"] and row["vmap"][-1]["seeds"] == s:
                        row["vmap"].pop()
                    row["vmap"].append({"seeds": s, "status": "oom" if oom else "failed",
                                        "message": short(e)})
                    p.save()
                    p.log(f"  vmap {s} seeds: {'OUT OF MEMORY' if oom else 'failed'}: "
                          f"{short(e, 200)}")
                    break
                import numpy as np

                cell = {"seeds": s, "status": "ok", "first_call_s": t_first,
                        "second_call_s": t_second, "compile_s": max(t_first - t_second, 0.0),
                        "seeds_per_s": s / t_second,
                        "speedup": None if per_seed is None else s * per_seed / t_second,
                        "mean_best_f": float(np.nanmean(np.asarray(best)))}
                row["vmap"][-1] = cell
                p.save()
                vs = "" if per_seed is None else f", {cell['speedup']:.2f}x the loop"
                p.log(f"  vmap {s} seeds: first call {fmt_s(t_first)}, second {fmt_s(t_second)}"
                      f" -> {cell['seeds_per_s']:.3g} seeds/s{vs}")
                prev = (s, cell["compile_s"], t_second)
            _runner(p, row, base, options, budget, noise, prev, per_seed, slot_end)
        except Exception as e:  # noqa: BLE001
            row.update(status="oom" if is_oom(e) else "failed", message=short(e))
            p.save()
            p.log(f"  failed: {short(e, 200)}")


def _runner(p: Part, row: dict, base: str, options: dict, budget: int, noise: dict, prev,
            per_seed, slot_end: float) -> None:
    """The study runner's side of a seeds cell: the same algorithm, problem and budget as one
    cell of a spec (``ntkbo.experiments.runner.run_cell``: sharded over the local devices, its
    block of seeds per call from ``cell_block``), for the largest seed count the vmap cells ran
    (the smallest of ``--seeds`` if none did); its first call compiles, the second (same keys)
    is timed. Skipped when the vmap cell of that count predicts more than the slot has left."""
    from ntkbo.experiments import runner
    from ntkbo.experiments.spec import Spec

    args = p.args
    seeds = prev[0] if prev is not None else min(args.seeds)
    if prev is not None and time.time() + prev[1] + 2 * prev[2] > slot_end:
        row["runner"] = {"seeds": seeds, "status": "skipped", "message":
                         f"predicted {prev[1] + 2 * prev[2]:.0f} s > "
                         f"{slot_end - time.time():.0f} s left in this slot"}
        p.save()
        p.log(f"  runner {seeds} seeds: skipped ({row['runner']['message']})")
        return
    try:
        spec = Spec.from_dict({"name": "gpu", "budget": budget, "seeds": seeds,
                               "algorithms": [{"name": base, "options": options}],
                               "problems": [{"name": args.problem, "dims": [args.dim],
                                             "options": noise}]})
        cell = spec.resolve("full")[0]
        mesh = runner.seed_mesh()
        block = runner.cell_block(cell, mesh)
        t0 = time.perf_counter()
        runner.run_cell(cell, mesh, block)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = runner.run_cell(cell, mesh, block)
        t_second = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        row["runner"] = {"seeds": seeds, "status": "oom" if is_oom(e) else "failed",
                         "message": short(e)}
        p.save()
        p.log(f"  runner {seeds} seeds: failed: {short(e, 200)}")
        return
    import numpy as np

    row["runner"] = {"seeds": seeds, "status": "ok", "devices": int(mesh.devices.size),
                     "block": block, "first_call_s": t_first, "second_call_s": t_second,
                     "compile_s": max(t_first - t_second, 0.0), "seeds_per_s": seeds / t_second,
                     "speedup": None if per_seed is None else seeds * per_seed / t_second,
                     "mean_best_f": float(np.mean(np.min(out["f"], axis=1)))}
    p.save()
    r = row["runner"]
    vs = "" if per_seed is None else f", {r['speedup']:.2f}x the loop"
    p.log(f"  runner {seeds} seeds ({r['devices']} device(s), block {block}): first call "
          f"{fmt_s(t_first)}, second {fmt_s(t_second)} -> {r['seeds_per_s']:.3g} seeds/s{vs}")


def _loop(p: Part, row: dict, run, problem, slot_end: float) -> tuple:
    """The loop side of a seeds cell: a jitted single run, its compiling call, then up to
    ``--loop-seeds`` keys within 35% of the slot. Returns ``((1, compile, per seed), per seed)``."""
    import jax

    args = p.args
    # The loop: a jitted single run; the first call compiles, then up to loop_seeds keys.
    one = jax.jit(run)
    loop_end = time.time() + 0.35 * (slot_end - time.time())  # the rest for vmap
    keys = jax.random.split(jax.random.PRNGKey(1), args.loop_seeds + 1)
    t0 = time.perf_counter()
    jax.block_until_ready(one(keys[0], problem))
    first = time.perf_counter() - t0
    times = []
    for k in keys[1:]:
        t0 = time.perf_counter()
        jax.block_until_ready(one(k, problem))
        times.append(time.perf_counter() - t0)
        if time.time() + times[-1] > loop_end:
            break
    per_seed = sum(times) / len(times)
    row["loop"] = {"first_call_s": first, "compile_s": max(first - per_seed, 0.0),
                   "timed_seeds": len(times), "per_seed_s": per_seed,
                   "seeds_per_s": 1.0 / per_seed, "times": times}
    row["status"] = "ok"
    p.save()
    p.log(f"  loop: first call {fmt_s(first)}, {fmt_s(per_seed)} per seed over "
          f"{len(times)} seed(s) -> {1 / per_seed:.3g} seeds/s")
    return (1, max(first - per_seed, 0.0), per_seed), per_seed


@functools.lru_cache(maxsize=None)
def _load_speed():
    """``benchmarks/speed.py`` as a module (it imports jax only inside its functions)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ntkbo_bench_speed",
                                                  os.path.join(HERE, "speed.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def part_step(p: Part) -> None:
    from ntkbo import data as D

    speed = _load_speed()
    args = p.args
    p.data.update(problem=f"{PROBLEM} (d = {DIM})", grid=list(args.grid), reps=args.reps,
                  how="benchmarks/speed.py measure_step: n - 1 points told in one update, then "
                      "one more; suggest and update AOT-compiled, warm-up, median of reps")
    stopped: dict = {}
    last: dict = {}
    for n in args.grid:
        for name in args.step_algos:
            row = {"algo": name, "n": n, "capacity": D.next_capacity(n + 1)}
            if name in stopped:
                p.add(dict(row, status="skipped", message=stopped[name]))
                continue
            left = p.left()
            if name in last:  # compile time does not grow with n; the rest as n^2
                n0, compile0, rest0 = last[name]
                est = compile0 + rest0 * (n / n0) ** 2
                if est > left:
                    stopped[name] = f"predicted {est:.0f} s from n = {n0} > {left:.0f} s left"
                    p.add(dict(row, status="skipped", message=stopped[name]))
                    p.log(f"{name} n = {n}: skipped ({stopped[name]})")
                    continue
            if left < 3:
                p.add(dict(row, status="skipped", message="no time left"))
                continue
            p.log(f"{name} n = {n} (capacity {row['capacity']}) ...")
            t0 = time.perf_counter()
            try:
                base, options = algo_spec(name)
                r = speed.measure_step(base, options, PROBLEM, DIM, n, args.reps,
                                       time.monotonic() + max(left, 1.0), 0, False)
                r.pop("note", None)
                # measure_step's ``algo`` is the registry name; the row keeps the entry's.
                row.update(r, algo=name, status="ok", wall_s=time.perf_counter() - t0)
                compiled = r["compile_suggest"] + r["compile_update"]
                last[name] = (n, compiled, max(row["wall_s"] - compiled, 0.0))
                p.log(f"  suggest {fmt_s(r['suggest'])}, update {fmt_s(r['update'])} (compile "
                      f"{fmt_s(r['compile_suggest'])} / {fmt_s(r['compile_update'])}, fit of "
                      f"n - 1 points {fmt_s(r['fit'])}; cell {row['wall_s']:.0f} s)")
            except Exception as e:  # noqa: BLE001
                oom = is_oom(e)
                row.update(status="oom" if oom else "failed", message=short(e),
                           wall_s=time.perf_counter() - t0)
                stopped[name] = f"n = {n} {'ran out of memory' if oom else 'failed'}"
                p.log(f"  {'OUT OF MEMORY' if oom else 'failed'}: {short(e, 200)}")
            p.add(row)


def part_botorch(p: Part) -> None:
    try:
        import botorch
        import gpytorch
        import torch
        from botorch.acquisition import LogExpectedImprovement
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.optim import optimize_acqf
        from gpytorch.mlls import ExactMarginalLogLikelihood
    except Exception as e:  # noqa: BLE001 (ImportError, or a broken CUDA torch)
        p.data.update(status="skipped", message=f"torch/botorch do not import: {short(e, 200)}")
        p.log(p.data["message"])
        return
    import jax
    import numpy as np

    import ntkbo
    from ntkbo import qmc

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    p.data.update(torch=torch.__version__, botorch=botorch.__version__,
                  gpytorch=gpytorch.__version__, device=str(device),
                  device_name=(torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"),
                  how="float64; SingleTaskGP(train_X in the unit cube, -y) with its defaults, "
                      "fit_gpytorch_mll; LogExpectedImprovement(best_f = max); optimize_acqf(q=1, "
                      "num_restarts=10, raw_samples=512); the points of the step part (same "
                      "Sobol key); one timed call after a warm-up at n = 32")
    problem = ntkbo.benchmarks.get(PROBLEM, dim=DIM)
    lo, hi = (np.asarray(b, np.float64) for b in problem.bounds)
    kw = dict(dtype=torch.float64, device=device)
    unit = torch.stack([torch.zeros(DIM, **kw), torch.ones(DIM, **kw)])

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def points(n):  # as benchmarks/speed.py's measure_step draws them
        _, k_x, _ = jax.random.split(jax.random.PRNGKey(0), 3)
        x = qmc.sobol(k_x, n, problem.bounds)
        return np.asarray(x, np.float64), np.asarray(jax.vmap(problem.fn)(x), np.float64)

    def step(n):
        x, y = points(n)
        train_x = torch.tensor((x - lo) / (hi - lo), **kw)
        train_y = -torch.tensor(y, **kw).unsqueeze(-1)  # BoTorch maximises
        torch.manual_seed(0)
        sync()
        t0 = time.perf_counter()
        model = SingleTaskGP(train_x, train_y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        sync()
        t1 = time.perf_counter()
        acq = LogExpectedImprovement(model, best_f=train_y.max())
        optimize_acqf(acq, bounds=unit, q=1, num_restarts=10, raw_samples=512)
        sync()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    p.log(f"BoTorch {botorch.__version__} on {p.data['device_name']}: warm-up at n = 32 ...")
    step(32)
    last = None
    for n in p.args.botorch_grid:
        row = {"n": n}
        left = p.left()
        est = None if last is None else last[1] * (n / last[0]) ** 2
        if left < 3 or (est is not None and est > left):
            p.add(dict(row, status="skipped", message=f"predicted {est or 0:.0f} s > "
                                                      f"{left:.0f} s left"))
            continue
        try:
            fit, acq = step(n)
            row.update(status="ok", fit_s=fit, acq_s=acq, step_s=fit + acq)
            last = (n, fit + acq)
            p.log(f"n = {n}: fit {fmt_s(fit)}, optimize_acqf {fmt_s(acq)}")
        except Exception as e:  # noqa: BLE001
            row.update(status="oom" if is_oom(e) else "failed", message=short(e))
            p.log(f"n = {n}: {row['status']}: {short(e, 200)}")
            p.add(row)
            break
        p.add(row)


def theory_names() -> tuple[list, str]:
    r = subprocess.run([sys.executable, "-m", "theory_checks", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env=child_env())
    text = r.stdout + r.stderr
    flat = " ".join(text.split())
    m = re.search(r"checks to run: (.*?) or all", flat)
    names = [s.strip() for s in m.group(1).split(",")] if m else []
    if not names:
        import theory_checks

        names = list(theory_checks.CHECKS)
    return names, text


def part_theory(p: Part) -> None:
    args = p.args
    names, help_text = theory_names()
    p.data.update(available=names, help=help_text, scale=p.cfg["theory_scale"])
    order = [n for n in args.theory if n in names]
    p.data["unknown"] = [n for n in args.theory if n not in names]
    if p.cfg["theory_scale"] == "gpu" and p.left() > 60:
        log = os.path.join(p.out, "logs", "theory_dry_run.log")
        r = run_logged([sys.executable, "-m", "theory_checks", *order, "--scale", "gpu",
                        "--dry-run"], min(60.0, p.left() / 4), log, env=child_env())
        p.data["dry_run"] = {"rc": r["rc"], "log": os.path.relpath(log, p.out),
                             "output": tail(log, 60)}
    p.save()
    # One command for every selected check (theory_checks.__main__: at gpu scale 8 processes,
    # longest estimate first, regret_scaling as one process per algorithm; a check still
    # running at --time-budget is killed, TIMEOUT); its summary.json gives the rows.
    left = p.left()
    if left < 10 or not order:
        for name in order:
            p.add({"check": name, "scale": p.cfg["theory_scale"], "status": "skipped",
                   "message": f"no time left ({left:.0f} s)"})
        return
    out_dir = os.path.join(p.out, "theory")
    log = os.path.join(p.out, "logs", "theory.log")
    cmd = [sys.executable, "-m", "theory_checks", *order, "--scale", p.cfg["theory_scale"],
           "--time-budget", f"{max(left - 15.0, 5.0):.0f}", "--out", out_dir]
    p.log(f"{' '.join(cmd[3:])} ...")
    r = run_logged(cmd, left, log, env=child_env())
    p.data.update(command="python " + " ".join(cmd[1:]).replace(p.out, "$OUT"), rc=r["rc"],
                  log=os.path.relpath(log, p.out))
    try:
        with open(os.path.join(out_dir, "summary.json")) as f:
            checks = json.load(f)["checks"]
    except (OSError, ValueError, KeyError):
        checks = {}
    for job in order if not checks else checks:
        c = checks.get(job, {})
        verdict = c.get("verdict", "no verdict (the command ended first)")
        status = {"PASS": "ok", "FAIL": "ok", "TIMEOUT": "timeout", "SKIPPED": "skipped"}.get(
            verdict, "failed")
        report = os.path.join(out_dir, job, f"{job.split('.')[0]}.json")
        if not os.path.isfile(report):
            report = os.path.join(out_dir, f"{job}.json")
        p.add({"check": job, "scale": p.cfg["theory_scale"], "verdict": verdict,
               "status": status, "rc": r["rc"], "wall_s": c.get("seconds"),
               "estimate_s": c.get("estimate_s"),
               "message": (c.get("reason") or "")[:300] if status != "ok" else "",
               "report": os.path.relpath(report, p.out) if os.path.isfile(report) else None})
    p.log(f"theory: exit {r['rc']} in {r['wall']:.0f} s")


PART_FUNCTIONS = {"environment": part_environment, "correctness": part_correctness,
                  "seeds": part_seeds, "step": part_step, "botorch": part_botorch,
                  "theory": part_theory}


def run_part_here(args) -> int:
    """The body of a part's process: runs it, records any exception, always exits 0 itself."""
    p = Part(args.part, args.out, args.deadline, SCALES[args.scale], args)

    def on_term(signum, frame):
        for proc in list(_CHILDREN):
            kill_group(proc)
        p.data.update(status="timeout", message="stopped by the driver (time limit)")
        try:
            p.save()
        finally:
            os._exit(143)

    signal.signal(signal.SIGTERM, on_term)
    p.save()
    try:
        PART_FUNCTIONS[args.part](p)
        if p.data["status"] == "running":
            p.data["status"] = "ok"
    except BaseException as e:  # noqa: BLE001
        p.data.update(status="failed", message=short(e), oom=is_oom(e),
                      traceback=traceback.format_exc()[-3000:])
        p.log(f"FAILED: {short(e, 300)}")
    p.save()
    return 0


# ---------------------------------------------------------------------------------------------
# The driver


def run_part(name: str, args, soft: float, hard: float) -> dict:
    out = args.out
    path = os.path.join(out, "parts", name + ".json")
    if os.path.exists(path):
        os.remove(path)
    log_path = os.path.join(out, "logs", name + ".log")
    cmd = [sys.executable, os.path.abspath(__file__), "--part", name, "--out", out,
           "--scale", args.scale, "--deadline", repr(time.time() + soft), "--algos",
           ",".join(args.algos), "--step-algos", ",".join(args.step_algos), "--problem",
           args.problem, "--dim", str(args.dim), "--budgets", ",".join(map(str, args.budgets)), "--seeds",
           ",".join(map(str, args.seeds)), "--loop-seeds", str(args.loop_seeds), "--grid",
           ",".join(map(str, args.grid)), "--botorch-grid", ",".join(map(str, args.botorch_grid)),
           "--reps", str(args.reps), "--theory", ",".join(args.theory)]
    cmd += ["--relative-noise"] if args.relative_noise else []
    env = child_env({"JAX_PLATFORMS": "cpu"} if name == "botorch" else None)
    t0 = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        _CHILDREN.append(proc)
        try:
            rc = proc.wait(timeout=hard)
        except subprocess.TimeoutExpired:
            kill_group(proc, signal.SIGTERM)  # the part kills its own subprocesses, saves
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            kill_group(proc)
            proc.wait()
            rc = None
        finally:
            _CHILDREN.remove(proc)
    wall = time.time() - t0
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {"rows": []}
    data["wall_s"] = wall
    data["log"] = os.path.relpath(log_path, out)
    if rc is None:
        data.update(status="timeout", message=f"killed at the part's hard limit ({hard:.0f} s); "
                    "the rows measured before are kept")
    elif data.get("status") in (None, "running"):
        why = f"exit code {rc}" + (f" ({signal.Signals(-rc).name})" if rc < 0 else "")
        data.update(status="failed", message=f"the part's process ended without a result: {why}"
                    f"; {tail(log_path, 5).strip()[-500:]}")
    elif data["status"] not in STATUSES:
        data["status"] = "failed"
    return data


def build_parser() -> argparse.ArgumentParser:
    ints = lambda s: tuple(int(v) for v in s.split(",") if v.strip())  # noqa: E731
    names = lambda s: tuple(v.strip() for v in s.split(",") if v.strip())  # noqa: E731
    p = argparse.ArgumentParser(description="ntkbo on a borrowed GPU: environment, correctness, "
                                "seeds per second, step time, theory checks (module docstring).")
    p.add_argument("--out", required=True, help="output folder (report.md, report.json, ...)")
    p.add_argument("--scale", choices=sorted(SCALES), default="gpu",
                   help="tiny: seconds on a CPU (CI); gpu: the real sizes (default)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="wall-clock budget of the whole run in seconds (default 420)")
    p.add_argument("--parts", type=names, default=PARTS,
                   help="comma-separated subset of " + ",".join(PARTS))
    p.add_argument("--algos", type=names, default=None,
                   help="algorithms of the seeds part (registry names or NAMED)")
    p.add_argument("--step-algos", type=names, default=None,
                   help="algorithms of the step part (registry names or NAMED)")
    p.add_argument("--problem", default=PROBLEM, help=f"the seeds part's problem ({PROBLEM})")
    p.add_argument("--dim", type=int, default=DIM, help=f"the seeds part's dimension ({DIM})")
    p.add_argument("--relative-noise", action="store_true",
                   help="the seeds part's problem with noise='relative' (NeuralBO's protocol)")
    p.add_argument("--budgets", type=ints, default=None, help="budgets of the seeds part")
    p.add_argument("--seeds", type=ints, default=None, help="seed counts of the seeds part")
    p.add_argument("--loop-seeds", type=int, default=None,
                   help="at most this many loop seeds (0: no loop, vmap only)")
    p.add_argument("--grid", type=ints, default=None, help="n of the step part")
    p.add_argument("--botorch-grid", type=ints, default=None, help="n of the BoTorch step")
    p.add_argument("--reps", type=int, default=None, help="timed calls per step cell")
    p.add_argument("--theory", type=names, default=None, help="theory checks, in order")
    p.add_argument("--part", default=None, help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    return p


def resolve(args) -> None:
    cfg = SCALES[args.scale]
    for key, cfg_key in (("algos", "algos"), ("step_algos", "step_algos"),
                         ("budgets", "budgets"), ("seeds", "seeds"),
                         ("loop_seeds", "loop_seeds"), ("grid", "grid"),
                         ("botorch_grid", "botorch_grid"), ("reps", "reps"),
                         ("theory", "theory")):
        if getattr(args, key) is None:
            setattr(args, key, cfg[cfg_key])
    args.out = os.path.abspath(args.out)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    resolve(args)
    if args.part:
        return run_part_here(args)
    unknown = [x for x in args.parts if x not in PARTS]
    if unknown:
        raise SystemExit(f"--parts: unknown {unknown}; choose from {', '.join(PARTS)}")
    for sub in ("", "parts", "logs", "theory"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    start = time.time()
    end = start + args.budget_s
    cmd = "python benchmarks/gpu.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report = {"command": cmd, "scale": args.scale, "budget_s": args.budget_s,
              "started": now_utc(), "settings": {k: getattr(args, k) for k in (
                  "algos", "step_algos", "problem", "dim", "relative_noise", "budgets", "seeds",
                  "loop_seeds", "grid", "botorch_grid", "reps", "theory")}, "parts": {}}
    selected = [x for x in PARTS if x in args.parts]
    for x in PARTS:
        if x not in selected:
            report["parts"][x] = {"status": "skipped", "message": "not selected (--parts)"}

    def finish(note=None):
        report["finished"] = now_utc()
        report["wall_s"] = time.time() - start
        if note:
            report["note"] = note
        write_report(args.out, report)

    def on_signal(signum, frame):
        for proc in list(_CHILDREN):
            kill_group(proc, signal.SIGTERM)
        time.sleep(2)
        for proc in list(_CHILDREN):
            kill_group(proc)
        for x in selected:
            report["parts"].setdefault(x, {"status": "skipped", "message": "interrupted"})
        finish(f"interrupted by signal {signal.Signals(signum).name}")
        print(f"[gpu.py] interrupted; report in {args.out}", flush=True)
        os._exit(130)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    min_start = SCALES[args.scale]["min_start_s"]
    print(f"[gpu.py] scale {args.scale}, budget {args.budget_s:.0f} s, parts "
          f"{', '.join(selected)}; output {args.out}", flush=True)
    for i, name in enumerate(selected):
        left = end - time.time()
        if left < min_start:
            report["parts"][name] = {"status": "skipped",
                                     "message": f"time budget used up ({left:.0f} s left)"}
            print(f"[gpu.py] {name}: skipped ({left:.0f} s left)", flush=True)
            finish()
            continue
        weights = SCALES[args.scale]["weights"]
        soft = left * weights[name] / sum(weights[x] for x in selected[i:])
        hard = min(soft + max(15.0, 0.2 * soft), left + 10.0)
        print(f"[gpu.py] {name}: start ({soft:.0f} s share, killed after {hard:.0f} s; "
              f"{left:.0f} s of the budget left)", flush=True)
        try:
            data = run_part(name, args, soft, hard)
        except Exception as e:  # noqa: BLE001 (the driver itself must not crash)
            data = {"status": "failed", "message": "driver: " + short(e)}
        report["parts"][name] = data
        print(f"[gpu.py] {name}: {data['status']} in {data.get('wall_s', 0):.0f} s"
              + (f": {data['message'][:200]}" if data.get("message") else ""), flush=True)
        finish()
    finish()
    print(f"[gpu.py] done in {time.time() - start:.0f} s: "
          + ", ".join(f"{x} {report['parts'][x]['status']}" for x in PARTS)
          + f"; {os.path.join(args.out, 'report.md')}", flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The report


def write_report(out: str, report: dict) -> None:
    write_json(os.path.join(out, "report.json"), report)
    try:
        text = render(report)
    except Exception as e:  # noqa: BLE001
        text = f"# ntkbo GPU report\n\nThe report could not be rendered ({short(e)}); see " \
               f"report.json.\n\n```\n{traceback.format_exc()}\n```\n"
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


def _section(lines: list, title: str, fn, data) -> None:
    lines += ["", f"## {title}", ""]
    if data is None:
        lines.append("Not run.")
        return
    status = data.get("status", "?")
    lines.append(f"Status: **{status}**" + (f" ({fmt_s(data['wall_s'])})" if data.get("wall_s")
                                           else "")
                 + (f". {data['message']}" if data.get("message") else ""))
    if status == "skipped" and not data.get("rows") and not data.get("pytest"):
        return
    try:
        fn(lines, data)
    except Exception as e:  # noqa: BLE001
        lines += ["", f"(this section could not be rendered: {short(e)})"]


def _env(lines, d) -> None:
    lines += ["", "| item | value |", "|---|---|"]
    for key in ("device_kind", "platform", "device_count", "backend", "jax", "jaxlib",
                "default_matmul_precision", "x64", "memory_bytes_limit", "nvidia_smi", "commit",
                "modified_files", "ntkbo", "python", "os", "cpu_count", "device_init_s",
                "first_matmul_s", "compilation_cache_dir"):
        if key in d:
            v = d[key]
            lines.append(f"| {key} | {fmt_s(v) if key.endswith('_s') else v} |")
    if d.get("packages"):
        lines.append("| packages | " + ", ".join(f"{k} {v}" for k, v in d["packages"].items())
                     + " |")
    if d.get("env"):
        lines.append("| environment | " + ", ".join(f"`{k}={v}`" for k, v in d["env"].items())
                     + " |")


def _correctness(lines, d) -> None:
    t = d.get("pytest") or {}
    lines += ["", f"Verdict: **{d.get('verdict', '-')}**.", "",
              f"pytest: **{t.get('status', '-')}**: {t.get('message', '')} "
              f"(`{t.get('command', '')}`, {fmt_s(t.get('wall_s'))}; log `{t.get('log', '')}`)"]
    if t.get("missing"):
        lines.append(f"Missing test files: {', '.join(t['missing'])}.")
    rows = d.get("gp_rows") or []
    if rows:
        lines += ["", f"float32 against float64 GP posteriors on the device (n training points, m "
                  "test points, d = 4, outputs standardised): the largest |mean32 - mean64| "
                  f"(target {d.get('gp_target', GP_TARGET):g}) and |var32 - var64| over the "
                  "test points (relative to the largest prior variance). `ntkbo.gp` is "
                  "`fit`/`mean`/`variance` (matrix products at `highest` inside, "
                  "`ntkbo.gp.exact_matmuls`), `ntkbo.gp, inverse` the same with the variance "
                  "through the factor's inverse (`with_inverse`, `ntk_gp`'s suggest); "
                  "`plain jnp` the same algebra without `exact_matmuls`. "
                  "Precision: the `jax.default_matmul_precision` around the call.", "",
                  "| kernel | path | precision | n / m | max mean error | max var error | "
                  "within target | time |", "|---|---|---|---|---:|---:|---|---:|"]
        for r in rows:
            if r.get("status") != "ok":
                lines.append(f"| {r.get('kernel', '')} | {r.get('path', '')} | "
                             f"{r.get('precision', '')} | | {r.get('status')}: "
                             f"{r.get('message', '')} | | | |")
                continue
            lines.append(f"| {r['kernel']} | {r['path']} | {r['precision']} | {r['n']} / "
                         f"{r['m']} | {r['max_mean_error']:.2e} | {r['max_var_error']:.2e} | "
                         f"{'yes' if r['within_target'] else '**no**'} | {fmt_s(r['wall_s'])} |")


def _seeds(lines, d) -> None:
    lines += ["", f"`jax.jit(jax.vmap(run))` over seeds against a Python loop over a jitted single "
              f"run, {d.get('problem', '')}; `run` returns {d.get('returns', '')}. The loop is "
              f"timed on at most {d.get('loop_seeds')} seeds after its compiling call and "
              "**extrapolated per seed**; speed-up = seeds x loop time per seed / vmap time. "
              "Compile = first call - second call (second call on other keys). Next seed count "
              f"predicted as compile + 2 x run x (ratio)^{d.get('growth_exponent')}. `runner`: "
              "the same as one cell of a study (`ntkbo.experiments.runner.run_cell`, sharded over "
              "the local devices, `block` seeds per device and call), second call timed.", "",
              "| algorithm | budget | seeds | first call | second call | compile | seeds/s | "
              "loop seeds/s | speed-up | mean best f |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in d.get("rows", []):
        loop = r.get("loop")
        if loop:
            lines.append(f"| {r['algo']} | {r['budget']} | loop ({loop['timed_seeds']} timed) | "
                         f"{fmt_s(loop['first_call_s'])} | {fmt_s(loop['per_seed_s'])} / seed | "
                         f"{fmt_s(loop['compile_s'])} | {loop['seeds_per_s']:.3g} | | | |")
        elif r.get("status") not in (None, "ok"):
            lines.append(f"| {r['algo']} | {r['budget']} | | {r.get('status')}: "
                         f"{r.get('message', '')} | | | | | | |")
        for c in r.get("vmap", []):
            if c["status"] == "first call only":
                lines.append(f"| {r['algo']} | {r['budget']} | {c['seeds']} | "
                             f"{fmt_s(c['first_call_s'])} | stopped before its end | | | | | |")
            else:
                lines.append(_seed_line(r, str(c["seeds"]), c, loop))
        c = r.get("runner")
        if c is not None:
            where = f", {c['devices']} device(s), block {c['block']}" if c["status"] == "ok" else ""
            lines.append(_seed_line(r, f"{c['seeds']} (runner{where})", c, loop))


def _seed_line(r: dict, label: str, c: dict, loop) -> str:
    """One row of the seeds table: a vmap or runner cell ``c`` of the slot ``r``."""
    if c["status"] != "ok":
        return (f"| {r['algo']} | {r['budget']} | {label} | {c['status']}: "
                f"{c.get('message', '')} | | | | | | |")
    return (f"| {r['algo']} | {r['budget']} | {label} | {fmt_s(c['first_call_s'])} | "
            f"{fmt_s(c['second_call_s'])} | {fmt_s(c['compile_s'])} | "
            f"**{c['seeds_per_s']:.3g}** | {format(loop['seeds_per_s'], '.3g') if loop else '-'} | "
            f"{'-' if c['speedup'] is None else format(c['speedup'], '.2f') + 'x'} | "
            f"{c['mean_best_f']:.3g} |")


def _step(lines, d, botorch=None) -> None:
    lines += ["", f"{d.get('problem', '')}: {d.get('how', '')}.", "",
              "| algorithm | n | capacity | compile suggest / update | fit (n - 1 points) | "
              "suggest | update | step | reps | BoTorch step / step |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    bt = {r["n"]: r for r in (botorch or {}).get("rows", []) if r.get("status") == "ok"}
    for r in d.get("rows", []):
        if r.get("status") != "ok":
            lines.append(f"| {r['algo']} | {r['n']} | {r['capacity']} | {r.get('status')}: "
                         f"{r.get('message', '')} | | | | | | |")
            continue
        step = r["suggest"] + r["update"]
        ratio = f"{bt[r['n']]['step_s'] / step:.3g}x" if r["n"] in bt else "-"
        lines.append(f"| {r['algo']} | {r['n']} | {r['capacity']} | "
                     f"{fmt_s(r['compile_suggest'])} / {fmt_s(r['compile_update'])} | "
                     f"{fmt_s(r['fit'])} | {fmt_s(r['suggest'])} | {fmt_s(r['update'])} | "
                     f"**{fmt_s(step)}** | {r['reps']} | {ratio} |")


def _botorch(lines, d) -> None:
    lines += ["", f"BoTorch {d.get('botorch', '')} (torch {d.get('torch', '')}) on "
              f"{d.get('device_name', '')}: {d.get('how', '')}. It refits its hyper-parameters "
              "every step; ntkbo's `update` refits on its own schedule (`gp`) or extends the "
              "Cholesky factor (`ntk_gp`), so the ratio column of the step table compares one BO "
              "step of each as its defaults run it.", "",
              "| n | fit | optimize_acqf | step |", "|---:|---:|---:|---:|"]
    for r in d.get("rows", []):
        if r.get("status") != "ok":
            lines.append(f"| {r['n']} | {r.get('status')}: {r.get('message', '')} | | |")
            continue
        lines.append(f"| {r['n']} | {fmt_s(r['fit_s'])} | {fmt_s(r['acq_s'])} | "
                     f"**{fmt_s(r['step_s'])}** |")


def _theory(lines, d) -> None:
    lines += ["", f"Available: {', '.join(d.get('available', []))}. Scale "
              f"`{d.get('scale', '')}`; one command with --time-budget (theory_checks: at gpu "
              "scale 8 processes, longest first)."]
    if d.get("dry_run"):
        lines.append(f"Memory estimates (`--dry-run`, exit {d['dry_run']['rc']}): "
                     f"`{d['dry_run']['log']}`.")
    lines += ["", "| check | verdict | status | exit code | time | report |",
              "|---|---|---|---:|---:|---|"]
    for r in d.get("rows", []):
        lines.append(f"| {r['check']} | {r.get('verdict', '-')} | {r['status']}"
                     + (f": {r['message']}" if r.get("message") else "")
                     + f" | {'-' if r.get('rc') is None else r['rc']} | {fmt_s(r.get('wall_s'))} | "
                     f"{r.get('report') or r.get('log') or ''} |")


def render(report: dict) -> str:
    parts = report["parts"]
    env = parts.get("environment") or {}
    lines = [f"# ntkbo on {env.get('device_kind', 'an unknown device')}", "",
             f"Command: `{report['command']}` (scale `{report['scale']}`, budget "
             f"{report['budget_s']:.0f} s). Started {report['started']}, "
             f"finished {report.get('finished', '-')} ({fmt_s(report.get('wall_s'))}).",
             f"Device: {env.get('device_kind', '?')} ({env.get('platform', '?')}); jax "
             f"{env.get('jax', '?')}, jaxlib {env.get('jaxlib', '?')}; commit "
             f"{str(env.get('commit', '?'))[:12]}" + (
                 f" with {env['modified_files']} modified files" if env.get("modified_files")
                 else "") + ".", ""]
    if report.get("note"):
        lines += [f"**{report['note']}**", ""]
    lines += ["| part | status | time | message |", "|---|---|---:|---|"]
    for name in PARTS:
        d = parts.get(name)
        if d is None:
            lines.append(f"| {name} | pending | | |")
            continue
        msg = d.get("message") or (f"verdict {d['verdict']}" if d.get("verdict") else "")
        if name == "theory" and d.get("rows"):
            msg = ", ".join(f"{r['check']} {r.get('verdict') or r['status']}" for r in d["rows"])
        counts: dict = {}
        for r in d.get("rows") or []:
            for c in [r] + list(r.get("vmap") or []):
                if c.get("status") not in (None, "ok"):
                    counts[c["status"]] = counts.get(c["status"], 0) + 1
        if counts:
            msg = "; ".join(filter(None, [msg, "cells: " + ", ".join(
                f"{v} {k}" for k, v in sorted(counts.items()))]))
        lines.append(f"| {name} | {d.get('status')} | {fmt_s(d.get('wall_s'))} | "
                     f"{str(msg).replace('|', '/')[:300]} |")
    _section(lines, "1. Environment", _env, parts.get("environment"))
    _section(lines, "2. Correctness", _correctness, parts.get("correctness"))
    _section(lines, "3. Seeds per second", _seeds, parts.get("seeds"))
    _section(lines, "4. Step time at n", lambda ls, d: _step(ls, d, parts.get("botorch")),
             parts.get("step"))
    _section(lines, "4b. BoTorch step at n", _botorch, parts.get("botorch"))
    _section(lines, "5. Theory checks", _theory, parts.get("theory"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
