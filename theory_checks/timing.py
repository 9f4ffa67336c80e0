"""Time estimate and power of each check at a scale, for planning one GPU call.

``python -m theory_checks all --scale gpu --dry-run`` prints, per check, its sizes, its memory
estimate (``theory_checks.memory``), the time estimate below and its power (the smallest fault it
detects at those sizes), then the total against :data:`GPU_CALL_SECONDS`. Nothing is measured on
a GPU here: the estimate extrapolates CPU measurements with ratios measured on an H200 (sources
below), so it is an estimate (E), and the GPU report that runs the checks records the real times
next to it (``summary.json``: ``estimate_s`` beside ``seconds``).

**The model** of one check at settings ``s`` (:func:`estimate`)::

    seconds = compile + run
    compile = COMPILE_GPU_OVER_CPU * compile_cpu_smoke * (1 + stages(s)) / (1 + stages(smoke))
    run     = run_cpu_ref * work_gpu(s) / work(ref)

* ``stages(s)``: the number of chunked stages (``memory(s)``), each one compiled program (the
  check's other programs, small jitted helpers, are the ``1 +``).
* ``work(s) = sum over stages of num * per_item * iterations``: the bytes one item keeps alive
  (``theory_checks.memory``: parameters, Jacobians, Gram matrices) stand in for the work of one
  item's step, times the steps the stage takes (:data:`ITERATIONS`: training steps, the BO budget
  or horizon ``T``; 1 where a stage is one pass). A proxy, not a flop count: it is calibrated per
  check, so only how it *grows* between scales matters.
* ``compile_cpu_smoke``: the seconds in JAX's compile events (trace, lowering, backend compile) of
  the check's smoke run on this project's CPU machine (:data:`CALIBRATION`, measured by
  :func:`measure`); ``run_cpu_ref`` the check's CPU seconds at the ``cpu`` scale (measured and
  recorded in ``theory_checks/README.md``) less its compile seconds at that scale by the same
  stage ratio (at least 10% of the CPU seconds are kept as run).
* ``work_gpu(s)``: each stage's work divided by its speed-up on the GPU: :data:`GPU_OVER_CPU`
  for wide networks and ensembles; for BO runs vmapped over seeds (``loop`` checks)
  ``LOOP_STEP * min(chunk, LOOP_VMAP)`` (a seed's run is faster there, and vmapped seeds run
  side by side there, not here). These and ``COMPILE_GPU_OVER_CPU`` are ratios between the H200
  and this CPU machine, taken at or below the measured ones (sources at the constants).

The model's error is checked where a measurement exists: the smoke run's own run seconds
(predicted from the cpu reference), and ``pinn_information_gain`` at ``gpu`` scale on the H200
(51 s, ``benchmarks/results/gpu/2026-11-27-h200/report.md``): :func:`validation`.

**Power** (:func:`power`): the smallest fault a check detects at ``s``. For a check whose deciding
row is a z-score of a Monte Carlo mean (``ZSCORE``), the fault's effect is linear in ``F - 1`` and
the standard error falls as ``n^-1/2`` in the check's sample count, so from the ``cpu`` fault
matrix (``results/fault_matrix_cpu*.md``: a fault ``F_cpu`` measured at ``z_cpu`` against the
threshold ``q``)::

    F_min - 1 = (F_cpu - 1) * q / |z_cpu| * sqrt(n_cpu / n(s))

(an estimate: widths change too, which only lowers the Monte Carlo error of the deciding rows). The
identity checks detect their fault at any size (an identity fails by O(1)); the regret check's
``linear_regret`` makes the increments exponent exactly 1 at any size.
"""

from __future__ import annotations

import json
import math
import os
import time

import theory_checks

#: One GPU call's wall-clock limit for ``all --scale gpu`` (issue 50: at most 8 minutes).
GPU_CALL_SECONDS = 480.0
#: Processes ``python -m theory_checks --scale gpu`` runs the checks in by default (``--jobs``):
#: compiling dominates a GPU run (25-110 s per program measured, docs/speed.md) and is CPU-bound,
#: and the lent machine has 16 CPU cores; each process gets 1/8 of the 64 GB memory budget.
GPU_JOBS = 8
#: The share of :data:`GPU_CALL_SECONDS` the estimates may use: the rest is margin for the
#: model's error and the process start (imports, device initialisation: seconds).
GPU_FILL = 0.75

#: Run-time ratio CPU / GPU of the float64 work of ``dense`` checks (:data:`KIND`: wide
#: networks and ensembles, large matrix products). Measured float32 ratios between this CPU
#: machine (2 cores, one BLAS thread) and the H200 for one BO step at n = 2000 (``docs/speed.md``,
#: "One BO step against n", and the two H200 reports): ``ntk_gp`` 397 ms / 4.34 ms = 91x,
#: ``neural_bo`` 399 ms / 9.3 ms = 43x; float64 takes up to twice float32's time on both devices.
#: 40 is taken.
GPU_OVER_CPU = 40.0
#: ``loop`` checks (BO runs of small steps, seeds vmapped in chunks): one seed's run is
#: ``LOOP_STEP`` times faster on the H200 (a ``ntk_gp`` run of 300 steps: 1.13 s there, about 4.5 s
#: here at ~15 ms per step, ``docs/speed.md``), and up to ``LOOP_VMAP`` vmapped seeds cost one
#: seed's time (256 ``ntk_gp`` seeds ran 58.9x a loop, 16 ``neural_bo`` seeds 11.5x: the H200
#: reports); on this CPU vmapped seeds gain nothing, so a stage of chunk ``c`` runs
#: ``LOOP_STEP * min(c, LOOP_VMAP)`` times faster there.
LOOP_STEP = 4.0
LOOP_VMAP = 16
#: The kind of each check's work; unlisted checks are ``dense`` (:data:`GPU_OVER_CPU`).
KIND = {"neuralbo_identities": "loop", "regret_scaling": "loop", "neural_cbo_coverage": "loop"}
#: Compile-time ratio GPU / CPU for the same program. Measured pairs (``docs/speed.md``: CPU under
#: load 3-5 at 04168f5, first ``minimize`` at budget 100; GPU at a27faea, budget 300): ``ntk_gp``
#: 24.9 s / 44-49 s, ``neural_bo`` 18.8 s / 25 s, ``gp`` 48.1 s / 109 s: 1.3-2.3x against CPU
#: times inflated by the load; 3x is taken.
COMPILE_GPU_OVER_CPU = 3.0

#: CPU seconds of each check's ``cpu``-scale run (process CPU time, the 2-core machine), as recorded
#: in ``theory_checks/README.md`` and ``results/*.json``; ``nngp_convergence`` has only its wall
#: time (515 s at load 9 on 2 cores), counted as 2/9 of it.
CPU_SECONDS_CPU_SCALE = {
    "ntk_convergence": 134.0, "gd_ensemble": 61.0, "sto_posterior": 128.0,
    "neuralbo_identities": 66.0, "regret_scaling": 776.0, "pinn_information_gain": 114.0,
    "nngp_convergence": 515.0 * 2 / 9, "pinn_gp_sample": 144.5, "neural_cbo_coverage": 66.4,
}

#: Each check's smoke run on the CPU machine (:func:`measure`, 2026-11-29 11:20-11:45 UTC, load
#: average 7-18 from other jobs, docs/decisions.md): ``compile_cpu``: seconds in JAX's compile
#: events scaled by the run's CPU / wall ratio; ``cpu``: process CPU seconds; ``wall``;
#: ``compiles``: backend compiles (programs, eager operations included); ``load`` at its end.
CALIBRATION: dict = {
    "ntk_convergence": dict(compile_cpu=16.6, cpu=19.9, wall=45.9, compiles=19, load=6.7),
    "gd_ensemble": dict(compile_cpu=9.4, cpu=9.8, wall=26.5, compiles=68, load=8.1),
    "sto_posterior": dict(compile_cpu=37.7, cpu=39.2, wall=151.8, compiles=139, load=13.0),
    "neuralbo_identities": dict(compile_cpu=33.7, cpu=34.9, wall=215.6, compiles=427, load=18.1),
    "regret_scaling": dict(compile_cpu=44.8, cpu=45.5, wall=322.2, compiles=32, load=17.3),
    "pinn_information_gain": dict(compile_cpu=17.3, cpu=17.5, wall=104.0, compiles=45, load=17.9),
    "nngp_convergence": dict(compile_cpu=10.8, cpu=11.4, wall=43.4, compiles=10, load=17.9),
    "pinn_gp_sample": dict(compile_cpu=20.1, cpu=21.1, wall=110.7, compiles=33, load=16.8),
    "neural_cbo_coverage": dict(compile_cpu=23.6, cpu=23.9, wall=84.1, compiles=40, load=15.8),
}

#: JAX's monitoring events whose durations make up compiling a program (the last: one per
#: backend compile, counted as a program).
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")

#: Checks timed on a GPU at given settings: ``name -> (settings, seconds, source)``. Where a
#: check's settings match, its estimate is that time times :data:`MEASURED_MARGIN` (the model's
#: compile / run split kept), not the model's.
GPU_MEASURED = {
    "pinn_information_gain": (
        dict(width=512, depth=2, num_points=48, num_residuals=[16, 32, 64, 128], num_test=1024),
        51.0, "benchmarks/results/gpu/2026-11-27-h200/report.md (H200, whole check)"),
}
MEASURED_MARGIN = 1.5

#: A stage's iterations: the steps each item takes, from the settings and the stage's label.
ITERATIONS = {
    "ntk_convergence": lambda s, label: s["train_steps"] if "training" in label else 1,
    "neuralbo_identities": lambda s, label: s["budget"] * s["train_steps"],
    "regret_scaling": lambda s, label: int(label.rsplit("T=", 1)[1]),
    "neural_cbo_coverage": lambda s, label: s["budget"] * s["train_steps"],
}

#: Z-score checks: ``(fault family, F_cpu, z_cpu, q, sample-count setting, n_cpu, deciding row)``
#: from the cpu fault matrix (``results/fault_matrix_cpu*.md``, theory_checks/README.md).
ZSCORE = {
    "ntk_convergence": ("ntk_scale", 1.01, 4.7, 3.88, lambda s: s["mean_seeds"][0], 64,
                        "mean projection at the largest width, depth 1"),
    "gd_ensemble": ("ntk_scale", 1.01, 5.0, 3.29, lambda s: s["members"], 384,
                    "time-scale error at the largest width"),
    "sto_posterior": ("ntk_scale", 1.2, 4.7, 4.5, lambda s: s["smb_members"], 384,
                      "PosteriorSMB covariance scale"),
    "nngp_convergence": ("nngp_scale", 1.02, 3.9, 3.72, lambda s: s["networks"][0], 16384,
                         "mean projection f^T K f/|K|^2"),
    "pinn_gp_sample": ("ntk_scale", 1.1, 6.2, 4.35, lambda s: s["members"], 4000,
                       "far-box variance ratio"),
}


def stages(name: str, settings: dict) -> list:
    return theory_checks.get(name).memory(dict(settings))


def work(name: str, settings: dict, device: str = "cpu") -> float:
    """The work proxy of check ``name`` at ``settings`` (module docstring); ``device="gpu"``:
    each stage's divided by its GPU speed-up (:data:`GPU_OVER_CPU`, or for a ``loop`` check
    ``LOOP_STEP * min(chunk, LOOP_VMAP)``)."""
    it = ITERATIONS.get(name, lambda s, label: 1)
    total = 0.0
    for st in stages(name, settings):
        ratio = 1.0
        if device == "gpu":
            ratio = (LOOP_STEP * min(st.chunk, LOOP_VMAP) if KIND.get(name) == "loop"
                     else GPU_OVER_CPU)
        total += st.num * st.per_item * it(settings, st.label) / ratio
    return total


def _settings(name: str, scale) -> dict:
    return dict(theory_checks.get(name).SCALES[scale]) if isinstance(scale, str) else dict(scale)


def local_device() -> str:
    """``"cpu"`` when JAX's default backend is the CPU, else ``"gpu"``: the device whose
    estimates a run on this machine uses."""
    import jax

    return "cpu" if jax.default_backend() == "cpu" else "gpu"


def estimate(name: str, scale: str | dict = "gpu", device: str = "gpu",
             measured: bool = True) -> dict:
    """``{"compile": s, "run": s, "total": s}``: the estimated seconds of check ``name`` at
    ``scale`` (a scale name or a settings dict) on ``device`` (``"gpu"``: the H200 ratios;
    ``"cpu"``: this CPU machine's CPU seconds)."""
    s = _settings(name, scale)
    smoke, ref = _settings(name, "smoke"), _settings(name, "cpu")
    cal = CALIBRATION[name]
    n_smoke, n_ref, n_s = (len(stages(name, x)) for x in (smoke, ref, s))
    compile_cpu_ref = cal["compile_cpu"] * (1 + n_ref) / (1 + n_smoke)
    total_ref = CPU_SECONDS_CPU_SCALE[name]
    run_ref = max(total_ref - compile_cpu_ref, 0.1 * total_ref)
    compile_cpu = cal["compile_cpu"] * (1 + n_s) / (1 + n_smoke)
    run = run_ref * work(name, s, device) / work(name, ref)
    c = compile_cpu if device == "cpu" else COMPILE_GPU_OVER_CPU * compile_cpu
    if device == "gpu" and measured and name in GPU_MEASURED:
        at, seconds, _ = GPU_MEASURED[name]
        if all(json.dumps(s.get(k)) == json.dumps(v) for k, v in at.items()):
            f = MEASURED_MARGIN * seconds / (c + run)
            c, run = c * f, run * f
    return {"compile": c, "run": run, "total": c + run}


def smallest_fault(name: str, scale: str | dict = "gpu") -> float | None:
    """``F_min`` of a :data:`ZSCORE` check at ``scale`` (module docstring); ``None`` for others."""
    if name not in ZSCORE:
        return None
    _, f_cpu, z_cpu, q, count, n_cpu, _ = ZSCORE[name]
    return 1 + (f_cpu - 1) * q / z_cpu * math.sqrt(n_cpu / count(_settings(name, scale)))


def power(name: str, scale: str | dict = "gpu") -> str:
    """The smallest fault check ``name`` detects at ``scale`` (module docstring), one line."""
    s = _settings(name, scale)
    module = theory_checks.get(name)
    f_min = smallest_fault(name, scale)
    if name in ZSCORE and f_min is not None:
        family, f_cpu, z_cpu, _, count, n_cpu, row = ZSCORE[name]
        n = count(s)
        return (f"{family}:{f_min:.4g} (E: {row}; {family}:{f_cpu} at z = {z_cpu} with n = "
                f"{n_cpu} at cpu, n = {n} here)")
    if name == "neural_cbo_coverage":
        n, delta = s["seeds"], s["delta"]
        z = 3.09  # one-sided normal quantile at 1e-3 (module docstring: Bonferroni over 3 rows)
        floor = 1 - delta - z * math.sqrt(delta * (1 - delta) / n)
        return (f"bands narrowed until fewer than {floor:.3f} of {n} runs are covered (cpu: "
                "cbo_sigma_scale:0.05 fails, 0.1 passes, at 24 runs)")
    listed = ", ".join(module.DETECTS.get(scale if isinstance(scale, str) else "gpu", ()))
    if name == "regret_scaling":
        return f"{listed} at any size (the increments exponent of constant regret is 1)"
    return f"{listed} at any size (an identity off by O(1), tolerance 1e-6)"


def describe(name: str, scale: str | dict = "gpu", device: str = "gpu") -> str:
    """One line: the estimate on ``device`` and the power of ``name`` at ``scale``."""
    e = estimate(name, scale, device)
    return (f"time estimate {name} ({device}): {e['total']:.0f} s (compile {e['compile']:.0f} s "
            f"+ run {e['run']:.0f} s, E); power: {power(name, scale)}")


def lpt_order(estimates: dict) -> list:
    """Names by decreasing estimated seconds: the order ``--jobs`` starts them in (longest
    processing time first, the classic schedule for parallel machines)."""
    return sorted(estimates, key=lambda n: -estimates[n])


def makespan(estimates: dict, jobs: int) -> float:
    """Seconds until the last of the checks ends when ``jobs`` processes take them in
    :func:`lpt_order` (each process compiles on its own CPU cores; ``estimates``: name ->
    seconds). ``jobs = 1``: the sum."""
    ends = [0.0] * max(1, int(jobs))
    for name in lpt_order(estimates):
        i = ends.index(min(ends))
        ends[i] += estimates[name]
    return max(ends) if estimates else 0.0


def plan(names, scale="gpu", jobs: int = 1) -> tuple[float, str]:
    """:func:`plan_jobs` of the checks ``names`` at ``scale``, one job each."""
    return plan_jobs({n: estimate(n, scale) for n in names}, scale, jobs)


def plan_jobs(est: dict, scale="gpu", jobs: int = 1) -> tuple[float, str]:
    """``(seconds, text)``: the call's estimated wall time against the GPU call, ``est``: job ->
    :func:`estimate`. With ``jobs`` processes: the larger of the :func:`makespan` of the jobs'
    totals and the sum of their run parts (the processes share one device: their device work is
    counted as if serialised)."""
    total = makespan({n: e["total"] for n, e in est.items()}, jobs)
    total = max(total, sum(e["run"] for e in est.values()))
    limit = GPU_FILL * GPU_CALL_SECONDS
    verdict = "fits" if total <= limit else "DOES NOT FIT"
    return total, (f"time estimate of the call ({scale}, one GPU, {jobs} process(es)): "
                   f"{total:.0f} s against {limit:.0f} s ({GPU_FILL:.0%} of the "
                   f"{GPU_CALL_SECONDS:.0f} s call): {verdict}")


def validation() -> list:
    """``(what, predicted s, measured s)`` where a measurement exists: every check's smoke run
    seconds on the CPU (compile + run, from the cpu reference) and ``pinn_information_gain`` at
    ``gpu`` scale on the H200."""
    rows = [(f"{n} smoke, CPU s", estimate(n, "smoke", "cpu")["total"], CALIBRATION[n]["cpu"])
            for n in theory_checks.CHECKS]
    at, seconds, _ = GPU_MEASURED["pinn_information_gain"]
    s = dict(theory_checks.get("pinn_information_gain").SCALES["gpu"], **at)
    rows.append(("pinn_information_gain gpu (the model alone), H200 wall s",
                 estimate("pinn_information_gain", s, measured=False)["total"], seconds))
    return rows


def measure(names, scale: str = "smoke", out: str | None = None) -> dict:
    """Runs each check at ``scale`` once and returns ``{name: {"compile_s", "compile_cpu",
    "compiles", "cpu", "wall", "passed", "load"}}``: the seconds in JAX's compile events (wall),
    the same scaled to CPU seconds by the run's CPU / wall ratio (the machine is shared), the
    number of backend compiles, and the run's CPU and wall seconds. Written to ``out`` as JSON."""
    import jax

    spent = {"n": 0, "s": 0.0}
    events = COMPILE_EVENTS

    def listen(event: str, duration_secs: float, **kwargs: str | int) -> None:
        del kwargs
        if event in events:
            spent["s"] += duration_secs
            spent["n"] += event == events[-1]

    jax.monitoring.register_event_duration_secs_listener(listen)
    result = {}
    for name in names:
        spent.update(n=0, s=0.0)
        rep = theory_checks.run_check(name, jax.random.PRNGKey(0), scale)
        ratio = min(1.0, rep.cpu_seconds / max(rep.seconds, 1e-9))
        result[name] = {"compile_s": spent["s"], "compile_cpu": spent["s"] * ratio,
                        "compiles": spent["n"], "cpu": rep.cpu_seconds, "wall": rep.seconds,
                        "passed": rep.passed, "load": os.getloadavg()[0],
                        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        if out:
            from ntkbo.files import atomic_write

            atomic_write(out, json.dumps(result, indent=1).encode())
    return result
