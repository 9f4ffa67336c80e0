"""theory_checks.timing (time estimates, power, the GPU call's plan) and the command line's
``--jobs`` runner (one process per check or shard, ``--time-budget`` kills, the gathered report).

The estimates are arithmetic on the checks' memory stages (no check runs); the runner tests run
``nngp_convergence`` at smoke sizes in two child processes (about 10 s of CPU each) and a killed
run (process start only).
"""

from __future__ import annotations

import json
import math
import os

import jax
import pytest

import theory_checks
from theory_checks import timing
from theory_checks.__main__ import _child_argv, jobs_for, main

jax.config.update("jax_enable_x64", True)


def test_makespan_is_longest_first_and_plan_counts_device_work_serialised():
    """LPT: {5, 4, 3, 3, 3} on 2 processes ends at 10 (5+3, 4+3+3 -> 8 and 10); one process: the
    sum. The plan is the larger of that and the summed run parts. Mutations caught: jobs taken in
    the given order (5, 3, 3 / 4, 3 -> 11 with the order a, c, d, e, b); the summed run bound
    dropped (the plan would be 10, not 12; 11, not 450)."""
    est = {"c": 3.0, "a": 5.0, "d": 3.0, "e": 3.0, "b": 4.0}
    assert timing.lpt_order(est)[:2] == ["a", "b"]
    assert timing.makespan(est, 2) == 10.0
    assert timing.makespan(est, 1) == 18.0
    assert timing.makespan(est, 9) == 5.0
    jobs = {k: {"total": v, "compile": v / 3, "run": 2 * v / 3} for k, v in est.items()}
    total, text = timing.plan_jobs(jobs, "gpu", 2)
    assert total == pytest.approx(12.0) and "fits" in text
    jobs = {k: dict(v, run=90.0) for k, v in jobs.items()}
    assert timing.plan_jobs(jobs, "gpu", 2)[0] == 450.0
    assert "DOES NOT FIT" in timing.plan_jobs(jobs, "gpu", 2)[1]


def test_estimate_reproduces_its_calibration_and_the_loop_speedup():
    """On the CPU at the cpu scale the estimate is the recorded CPU seconds (compile from the
    smoke calibration scaled by stages, the rest run); a loop check's GPU work is its CPU work
    over LOOP_STEP * min(chunk, LOOP_VMAP). Mutations caught: the stage ratio of the compile
    inverted (the cpu-scale compile of regret_scaling, 28 stages against 6, would shrink and the
    total differ); min(chunk, LOOP_VMAP) dropped (32 seeds would count 32, not 16)."""
    for name in theory_checks.CHECKS:
        e = timing.estimate(name, "cpu", "cpu")
        assert e["total"] == pytest.approx(
            max(timing.CPU_SECONDS_CPU_SCALE[name], e["compile"] + 0.1
                * timing.CPU_SECONDS_CPU_SCALE[name]), rel=1e-9), name
    regret = theory_checks.get("regret_scaling")
    e = timing.estimate("regret_scaling", "cpu", "cpu")
    assert e["compile"] == pytest.approx(timing.CALIBRATION["regret_scaling"]["compile_cpu"]
                                         * 29 / 7)
    s = dict(regret.SCALES["gpu"], seeds=32, go_ucb_seeds=32, algorithms=["neural_bo"])
    ratio = timing.work("regret_scaling", s) / timing.work("regret_scaling", s, "gpu")
    assert ratio == pytest.approx(timing.LOOP_STEP * timing.LOOP_VMAP)
    s = dict(s, seeds=8)
    ratio = timing.work("regret_scaling", s) / timing.work("regret_scaling", s, "gpu")
    assert ratio == pytest.approx(timing.LOOP_STEP * 8)


def test_the_model_does_not_underestimate_the_check_timed_on_the_gpu():
    """validation(): the model alone (without the recorded measurement) predicts
    pinn_information_gain at its measured H200 settings at or above the 51 s measured, and every
    smoke run's CPU seconds within 30% (its compile is the calibration; the run part is
    extrapolated from the cpu scale). Mutation caught: the ratios ten times more optimistic
    (GPU_OVER_CPU 400 and COMPILE_GPU_OVER_CPU 1: 35 s predicted against 51 s measured, an
    estimate that can overrun the call); the model is 4.5 times above the measurement as set."""
    rows = timing.validation()
    gpu = [r for r in rows if "H200" in r[0]]
    assert len(gpu) == 1 and gpu[0][1] >= gpu[0][2]
    for what, predicted, measured in rows:
        if "smoke" in what:
            assert abs(predicted / measured - 1) < 0.3, what


def test_power_grows_with_the_sample_count():
    """The smallest detected fault at a scale: F - 1 = (F_cpu - 1) q / z_cpu sqrt(n_cpu / n), so
    the cpu scale gives (F_cpu - 1) q / z_cpu, and more samples detect a smaller fault.
    Mutation caught: the square root inverted (more samples would need a larger fault)."""
    for name, (family, f_cpu, z_cpu, q, count, n_cpu, _) in timing.ZSCORE.items():
        module = theory_checks.get(name)
        assert count(module.SCALES["cpu"]) == n_cpu, name
        at_cpu = timing.smallest_fault(name, "cpu")
        assert at_cpu is not None and f"{family}:{at_cpu:.4g}" in timing.power(name, "cpu")
        assert at_cpu == pytest.approx(1 + (f_cpu - 1) * q / z_cpu, rel=1e-12), name
        s = dict(module.SCALES["cpu"])
        key = {"ntk_convergence": "mean_seeds", "nngp_convergence": "networks"}.get(name)
        if key:
            s[key] = [4 * v for v in s[key]]
        else:
            k = {"gd_ensemble": "members", "sto_posterior": "smb_members",
                 "pinn_gp_sample": "members"}[name]
            s[k] = 4 * s[k]
        bigger = timing.smallest_fault(name, s)
        assert bigger is not None and bigger - 1 == pytest.approx((at_cpu - 1) / 2), name
    assert "at any size" in timing.power("neuralbo_identities", "gpu")
    # Neural-CBO: the covered fraction a run must reach rises with the runs (a tighter floor)
    floors = [float(timing.power("neural_cbo_coverage", sc).split("fewer than ")[1].split()[0])
              for sc in ("cpu", "gpu")]
    assert 0 < floors[0] < floors[1] < 0.9 and all(map(math.isfinite, floors))


def test_gpu_dry_run_fits_the_call(capsys, monkeypatch):
    """``python -m theory_checks all --scale gpu --dry-run`` (8 processes by default) prints
    every job's sizes, memory, time estimate and power, and a total that fits the 8-minute call;
    in one process it does not fit (exit 1): the parallel plan is what makes it fit. The command
    turns JAX's GPU memory preallocation off (else the parent would hold 75% of the device its 8
    children share). Mutations caught: a gpu scale grown back to its former sizes (e.g.
    gd_ensemble's 2048 members of width 16384 at depth 2: estimated at hours) fails the fit; the
    preallocation line removed."""
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE", raising=False)
    assert main(["all", "--scale", "gpu", "--dry-run"]) == 0
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    out = capsys.readouterr().out
    jobs = jobs_for(theory_checks.CHECKS, "gpu", timing.GPU_JOBS)
    assert len(jobs) == len(theory_checks.CHECKS) - 1 + len(
        theory_checks.get("regret_scaling").SHARDS["gpu"])
    for job, name, _ in jobs:
        assert f"memory estimate {job}: peak" in out and f"time estimate {name} (gpu)" in out
    assert out.count("power: ") == len(jobs)
    assert "8 process(es)" in out and ": fits" in out and "DOES NOT FIT" not in out
    assert main(["all", "--scale", "gpu", "--dry-run", "--jobs", "1"]) == 1


def test_jobs_run_shards_in_processes_and_gather_the_report(tmp_path, monkeypatch, capsys):
    """``--jobs 2`` with a check split into two shards (``SHARDS``, passed to the children as
    ``--set``): two processes, both PASS, summary.json and report.md gather them with the device
    and versions; ``--time-budget`` kills a child still running (TIMEOUT, exit 1, report
    written). Mutations caught: the shard overrides not passed (both children would run the
    same settings: the children's summaries show their networks); a killed child's verdict
    taken as PASS."""
    nngp = theory_checks.get("nngp_convergence")
    # the smoke networks and one more batch of depth-1 networks (fewer fail its kurtosis rows,
    # measured: 512 networks gave excess kurtosis -1.13 at m = 128, z = -5.4)
    small = [dict(networks=[2048, 1024]), dict(networks=[3072, 1024])]
    monkeypatch.setattr(nngp, "SHARDS", {"smoke": small}, raising=False)
    out = tmp_path / "run"
    code = main(["nngp_convergence", "--scale", "smoke", "--jobs", "2", "--out", str(out),
                 "--time-budget", "900"])
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0, summary
    assert sorted(summary["checks"]) == ["nngp_convergence.0", "nngp_convergence.1"]
    for i, job in enumerate(sorted(summary["checks"])):
        c = summary["checks"][job]
        assert c["verdict"] == "PASS" and c["overrides"] == small[i]
        child = json.loads((out / job / "nngp_convergence.json").read_text())
        assert child["settings"]["networks"] == small[i]["networks"]
    report = (out / "report.md").read_text()
    assert report.count("| PASS |") == 2 and summary["environment"]["platform"] == "cpu"
    assert "jax " in report and "Device: " in report
    capsys.readouterr()

    killed = tmp_path / "killed"
    code = main(["nngp_convergence", "--scale", "smoke", "--jobs", "2", "--out", str(killed),
                 "--time-budget", "1"])
    summary = json.loads((killed / "summary.json").read_text())
    assert code == 1
    assert {c["verdict"] for c in summary["checks"].values()} <= {"TIMEOUT", "SKIPPED"}
    assert "TIMEOUT" in (killed / "report.md").read_text()


def test_regret_shards_partition_the_algorithms():
    """regret_scaling's gpu SHARDS: one per algorithm, the random-search control in the first
    only; a run without NTK-GP-UCB has no information-gain rows (Srinivas et al.'s
    sqrt(T gamma_T) bound is GP-UCB's, not the other algorithms'), here random search alone at
    smoke horizons. Mutation caught: the gain rows taken from another algorithm's runs when
    NTK-GP-UCB is absent (the former fallback: here it raised, having none)."""
    regret = theory_checks.get("regret_scaling")
    shards = regret.SHARDS["gpu"]
    assert [a for o in shards for a in o["algorithms"]] == list(regret.ALGORITHMS)
    assert [o["controls"] for o in shards] == [True] + [False] * (len(shards) - 1)
    assert regret._names(dict(regret.SCALES["gpu"], **shards[1])) == [shards[1]["algorithms"][0]]
    rep = theory_checks.run_check("regret_scaling", jax.random.PRNGKey(0), "smoke",
                                  algorithms=[])
    assert rep.passed and [r.quantity.split(" ")[0] for r in rep.rows] == ["random_search"]
    assert "no information-gain rows" in rep.notes


def test_a_child_runs_its_check_itself():
    """Each child of ``--jobs`` runs with ``--jobs 1`` (at gpu scale the default is 8: without it
    a child would start its own children, each with 1/64 of the memory budget, and
    regret_scaling's shards would split again), with the shard's settings as ``--set``.
    Mutation caught: ``--jobs 1`` left out of the child's command line."""
    import argparse

    args = argparse.Namespace(scale="gpu", seed=3, fault="ntk_scale:1.1", chunk=None)
    argv = _child_argv(args, "regret_scaling", "OUT/regret_scaling.1",
                       {"algorithms": ["ntk_gp_ts"], "controls": False})
    assert argv[:2] == ["regret_scaling", "--scale"] and argv[argv.index("--jobs") + 1] == "1"
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    assert sets == ['algorithms=["ntk_gp_ts"]', "controls=false"]
    assert argv[argv.index("--fault") + 1] == "ntk_scale:1.1" and "--chunk" not in argv
