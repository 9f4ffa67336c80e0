"""Stress test: every algorithm vmapped over seeds on CPU, at large buffers, on 1 and 4 devices.

Each case runs in its own process under a hard timeout, so a deadlocked XLA program is reported as
``HANG`` instead of stopping the table. A case is one algorithm with its defaults on a problem it
applies to, ``S`` seeds, a buffer of ``capacity`` rows, and ``devices`` forced CPU devices:

* ``minimize``: ``jit(vmap(minimize))`` (one device) or ``jit(shard_map(vmap(minimize)))`` over
  the devices (the study runner's program, all of a device's seeds at once), with
  ``min_capacity=capacity`` so the buffer has ``capacity`` rows from the first step, ``n_init``
  points and two more BO steps;
* ``ask``: ``ask_tell``'s path, ``jit(vmap(update))`` then ``jit(vmap(suggest))`` called from
  Python on vmapped states (``n_obs`` observations in a ``capacity``-row buffer).

Status ``ok``, ``ERROR``, or past the timeout ``HANG`` (no CPU time in the next 10 s: asleep) or
``SLOW`` (still computing). Columns: the wall time (compilation included), and ``batched``: the
number of LAPACK calls in
the lowered program that factorise more than one matrix (``num_batch_dims`` > 0), the calls that
can deadlock jaxlib 0.10's CPU kernels; ``ntkbo.linalg`` makes it 0.

    python benchmarks/vmap_stress.py                      # the default grid, a table on stdout
    python benchmarks/vmap_stress.py --algos ntk_gp_ei,gp_ei --capacities 4096 --seeds 3
    python benchmarks/vmap_stress.py --md out.md --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

LAPACK_CALL = re.compile(r'custom_call @(lapack_\w+)\(.*?num_batch_dims = "(\d+)"')

#: Problems by the kind of algorithm (``ntkbo.algorithms.problem_options``).
PROBLEMS = {"plain": ("branin", None), "constrained": ("ackley_constrained", 5),
            "pde": ("heat_equation_1", None)}


def _problem_for(name):
    from ntkbo import algorithms, benchmarks
    kind = ("pde" if algorithms.uses_pde(name) else
            "constrained" if algorithms.models_constraints(name) else "plain")
    pname, dim = PROBLEMS[kind]
    return benchmarks.get(pname, dim=dim) if dim else benchmarks.get(pname)


def run_case(name: str, mode: str, seeds: int, capacity: int, n_obs: int) -> dict:
    """One case in this process (devices from ``XLA_FLAGS``); returns its row."""
    import jax
    import numpy as np
    import ntkbo
    from jax.sharding import Mesh, PartitionSpec

    ntkbo.configure_blas_threads()  # one LAPACK thread (ntkbo.lapack_threads), as ntkbo's CLI
    problem = _problem_for(name)
    algo = ntkbo.algorithms.for_problem(name, problem)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    devices = jax.local_devices()
    t0 = time.perf_counter()
    batched = 0
    if mode == "minimize":
        def one(k):
            return ntkbo.minimize(algo, problem, n_obs + 2, k, n_init=n_obs,
                                  min_capacity=capacity).best_f
        fn = jax.vmap(one)
        if len(devices) > 1:
            mesh = Mesh(np.asarray(devices), ("seeds",))
            fn = jax.shard_map(fn, mesh=mesh, in_specs=PartitionSpec("seeds"),
                               out_specs=PartitionSpec("seeds"), check_vma=False)
        fn = jax.jit(fn)
        batched = sum(n != "0" for _, n in LAPACK_CALL.findall(fn.lower(keys).as_text()))
        out = np.asarray(fn(keys))
    else:
        lo, hi = np.asarray(problem.bounds)
        k_algo = jax.random.split(jax.random.PRNGKey(1), seeds)
        x = lo + (hi - lo) * jax.random.uniform(jax.random.PRNGKey(2), (seeds, n_obs, lo.size))
        y = jax.vmap(jax.vmap(problem.fn))(x)
        if getattr(algo, "n_constraints", 0):
            c = jax.vmap(jax.vmap(problem.constraints))(x)
            y = np.concatenate([np.asarray(y)[..., None], np.asarray(c)], axis=-1)
        init = jax.jit(jax.vmap(lambda k: algo.init(k, problem.bounds, capacity)))
        update = jax.jit(jax.vmap(algo.update))
        suggest = jax.jit(jax.vmap(algo.suggest))
        states = init(k_algo)
        batched += sum(n != "0" for _, n in LAPACK_CALL.findall(
            update.lower(states, x, y).as_text()))
        states, _ = update(states, x, y)
        batched += sum(n != "0" for _, n in LAPACK_CALL.findall(
            suggest.lower(keys, states).as_text()))
        out, _ = suggest(keys, states)
        out = np.asarray(out)
    return {"algorithm": name, "mode": mode, "seeds": seeds, "capacity": capacity,
            "n_obs": n_obs, "devices": len(devices), "seconds": time.perf_counter() - t0,
            "batched": batched, "finite": bool(np.all(np.isfinite(out)))}


def spawn(name, mode, seeds, capacity, n_obs, devices, timeout) -> dict:
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "")
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    cmd = [sys.executable, __file__, "--case", name, mode, str(seeds), str(capacity), str(n_obs)]
    row = {"algorithm": name, "mode": mode, "seeds": seeds, "capacity": capacity,
           "n_obs": n_obs, "devices": devices}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Asleep (a deadlock: no CPU time in 10 s) or still computing (slow, not hung)?
        before = _cpu_seconds(proc.pid)
        time.sleep(10.0)
        busy = _cpu_seconds(proc.pid) - before
        proc.kill()
        proc.communicate()
        return {**row, "status": "SLOW" if busy > 0.5 else "HANG",
                "seconds": time.perf_counter() - t0}
    if proc.returncode != 0:
        return {**row, "status": "ERROR", "seconds": time.perf_counter() - t0,
                "error": err.strip().splitlines()[-1:]}
    return {**json.loads(out.strip().splitlines()[-1]), "status": "ok"}


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` and its threads (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def table(rows) -> str:
    lines = ["| algorithm | mode | seeds | capacity | n_obs | devices | status | seconds | batched |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['algorithm']} | {r['mode']} | {r['seeds']} | {r['capacity']} | "
                     f"{r['n_obs']} | {r['devices']} | {r['status']} | {r['seconds']:.1f} | "
                     f"{r.get('batched', '')} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", nargs=5, help=argparse.SUPPRESS)
    p.add_argument("--algos", default="all", help="comma-separated registry names, or 'all'")
    p.add_argument("--modes", default="minimize,ask")
    p.add_argument("--capacities", default="512")
    p.add_argument("--seeds", type=int, default=3, help="seeds per device")
    p.add_argument("--devices", default="1,4", help="forced CPU device counts")
    p.add_argument("--n-obs", type=int, default=None,
                   help="observations before the BO steps (default: capacity / 2 + 20, so the "
                        "buffer would have this capacity without min_capacity)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per case; then HANG (asleep) or SLOW (computing)")
    p.add_argument("--md", help="also write the table here")
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args(argv)
    if args.case:
        name, mode, seeds, capacity, n_obs = args.case
        import jax
        jax.config.update("jax_enable_x64", os.environ.get("JAX_ENABLE_X64", "0") == "1")
        print(json.dumps(run_case(name, mode, int(seeds), int(capacity), int(n_obs))))
        return 0
    from ntkbo import algorithms
    names = algorithms.names() if args.algos == "all" else args.algos.split(",")
    rows = []
    for capacity in map(int, args.capacities.split(",")):
        n_obs = args.n_obs or capacity // 2 + 20  # default: a buffer of this size for real
        for devices in map(int, args.devices.split(",")):
            for mode in args.modes.split(","):
                if mode == "ask" and devices > 1:
                    continue  # ask/tell runs on one device
                for name in names:
                    row = spawn(name, mode, args.seeds * devices, capacity, n_obs, devices,
                                args.timeout)
                    rows.append(row)
                    print(f"{name} {mode} cap={capacity} dev={devices}: {row['status']} "
                          f"{row['seconds']:.1f} s batched={row.get('batched')}",
                          file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["status"] == "ok" and not r.get("batched") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
