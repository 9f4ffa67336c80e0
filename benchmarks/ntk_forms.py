"""NeuralBO's dual posterior with the empirical NTK from gradient features against per-layer factors.

    python benchmarks/ntk_forms.py                       # both configurations below
    python benchmarks/ntk_forms.py --reps 9

The same ``neural_bo.posterior`` inputs (``theta_0`` of the paper network, a buffer of capacity
``C`` three quarters full, ``N`` candidates), two programs compiled once each and called in turn
(interleaved, so a load change hits both):

* **factors**: ``neural_bo.posterior(uncertainty="dual")``, the kernel from
  ``ntkbo.kernels.structured`` (``sum_l (fan_in_l + out_l)`` numbers per point);
* **features**: the former form, ``g = grad_features(apply_fn)`` for the buffer and each candidate
  chunk, ``dual_factor`` and ``variance_dual`` (``N C p`` for the cross kernel).

Configurations: NeuralBO's default at n = 2048 (width 500, d = 10, 1300 candidates, float32) and
its authors' (width 200, d = 2, 50,000 candidates, float64, capacity 32). Printed: the largest
relative difference of the variances and the median wall and CPU time of each form.
"""

from __future__ import annotations

import argparse
import importlib
import time

import jax
import jax.numpy as jnp
import numpy as np

CONFIGS = {  # name: (x64, width, d, N, C)
    "default, n = 2048": (False, 500, 10, 1300, 2048),
    "authors', n = 32": (True, 200, 2, 50000, 32),
}


def measure(x64: bool, width: int, d: int, n_cand: int, capacity: int, reps: int) -> dict:
    jax.config.update("jax_enable_x64", x64)
    NB = importlib.import_module("ntkbo.algorithms.neural_bo")
    init_fn, apply_fn, feats = NB.network(d, 1, width, "relu", "paper", None, "sphere")
    _, p0 = init_fn(jax.random.PRNGKey(0), (-1, d + 1))
    z = jax.random.uniform(jax.random.PRNGKey(1), (capacity, d))
    zc = jax.random.uniform(jax.random.PRNGKey(2), (n_cand, d))
    mask = jnp.arange(capacity) < capacity * 3 // 4
    lam = 0.01

    def factors(z, zc):
        return NB.posterior(apply_fn, feats, p0, p0, jnp.zeros((0,)), z, mask, zc, lam,
                            uncertainty="dual", input_map="sphere")

    def features(z, zc):
        g_data = feats(NB.embed(z, "sphere"), p0)
        chol = NB.dual_factor(g_data, mask, lam)

        def moments(c):
            c = NB.embed(c, "sphere")
            return apply_fn(p0, c)[:, 0], NB.variance_dual(feats(c, p0), g_data, mask, chol)

        return NB.map_chunks(moments, zc, max(1, NB.chunk_entries() // g_data.shape[1]))

    fns = {"factors": jax.jit(factors), "features": jax.jit(features)}
    out = {k: jax.block_until_ready(f(z, zc)) for k, f in fns.items()}
    var_f, var_g = out["factors"][1], out["features"][1]
    diff = float(jnp.max(jnp.abs(var_f - var_g) / (jnp.abs(var_g) + 1e-12)))
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            c0, w0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(f(z, zc))
            times[k].append((time.perf_counter() - w0, time.process_time() - c0))
    med = {k: np.median(np.asarray(v), axis=0) for k, v in times.items()}
    return dict(diff=diff, **{f"{k}_{w}": float(med[k][i]) for k in fns
                              for i, w in enumerate(("wall", "cpu"))})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    import os

    print(f"load average at start: {', '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    print("| configuration | max rel. diff of var | factors wall / CPU | features wall / CPU "
          "| CPU ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, cfg in CONFIGS.items():
        r = measure(*cfg, reps=args.reps)
        print(f"| {name} | {r['diff']:.1e} | {r['factors_wall']:.3f} s / {r['factors_cpu']:.3f} s"
              f" | {r['features_wall']:.3f} s / {r['features_cpu']:.3f} s | "
              f"{r['features_cpu'] / r['factors_cpu']:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
