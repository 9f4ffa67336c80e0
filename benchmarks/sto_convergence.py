"""Does STO-BNTS's training reach its posterior sample?

Sample-then-optimise (Dai et al. 2022): the minimiser of loss (1),

    L(th) = sum_j (y_j - f~(z_j; th))^2 + lam |th - theta_0|_P^2,        lam = beta^2 sigma^2,

for the network *linearised at theta_0*, ``f_lin(z; th) = g(z) + J(z) (th - theta_0)`` with
``g = f~(.; theta_0)`` the member's prior draw and ``J = grad f~(.; theta_0)``, is in closed form::

    f_lin*(z) = g(z) + K(z, X) (K_XX + lam I)^-1 (y - g(X)),   K = J P^-1 J^T  (empirical NTK)

an exact draw of the (empirical-)NTK-GP posterior (up to the target-noise deficit,
the same for every trainer here), and the paper's claim is that the finite network trained on (1)
"till convergence" approximates it. For each member (fresh ``theta_0, theta_0'``, as ``suggest``
draws them) and each training configuration this script measures:

* ``loss gap``: ``(L(theta) - L_best) / L_best``, the relative optimality gap on the nonlinear loss
  (1), ``L_best`` the lowest loss any network-training row of the table reached for that member
  (the nonlinear minimiser has no closed form; in practice the 300-step or ``tol`` row);
  for the ``"linearized"`` row, which minimises (1) for the linearised network, the gap is to that
  problem's closed-form minimum ``L_lin* = lam r^T (K_XX + lam I)^-1 r``, ``r = y - g(X)``;
* ``|f - f_lin*| / sd``: the RMS over test points of the distance of the trained member's values to
  the closed-form minimiser's, in units of the linearised posterior's standard deviation
  ``sd(z) = sqrt(K(z, z) - K(z, X) (K_XX + lam I)^-1 K(X, z))`` (0 = the exact posterior sample;
  an RMS of 1 = wrong by a whole posterior sd);
* ``grad``: the norm of the gradient of (1) after training, relative to its norm at ``theta_0``;
* ``s/member``: seconds of one member's training (jitted, ``vmap`` over the members, compile
  excluded, best of 2 calls, divided by the number of members).

Medians over members. Data: the first ``n`` points of a scrambled Sobol sequence (seed 1) in the
box of a dev-suite problem of dimension ``d`` (``ntkbo.benchmarks.suite("dev")``), its values
standardised (as ``suggest`` does); 64 uniform test points in the same box (seed 2). The network,
inputs and ``lam`` are STO-BNTS's defaults (``ntkbo.algorithms.sto_bnts``: ``W_std="paper"``,
inputs on the sphere, ``sigma = 0.1``, ``beta = 1``, no target perturbation).

Usage::

    python benchmarks/sto_convergence.py                          # d, n = 2,10 6,30 10,50 20,100
    python benchmarks/sto_convergence.py --cases 2:10 --members 2 --steps 1,10   # smoke
    python benchmarks/sto_convergence.py --x64 --width 1024
    python benchmarks/sto_convergence.py --no-table --suggest     # seconds of one suggest, q = 1

Prints one Markdown table per case.
"""

from __future__ import annotations

import argparse
import warnings
import importlib
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo
from ntkbo import linalg
from ntkbo.kernels import grad_features, mlp, mlp_spec

S = importlib.import_module("ntkbo.algorithms.sto_bnts")

#: Dev-suite problem used for each dimension (the first of that dimension in the suite's order).
PROBLEMS = {2: "branin2", 4: "rosenbrock4", 6: "hartmann6", 8: "styblinski_tang8", 10: "levy10",
            12: "dixon_price12", 20: "levy20"}


def configs(steps, tols):
    """label -> ``train_member`` keyword arguments: Levenberg-Marquardt for each of ``steps``
    (``sto_bnts``'s default: 10), with the stopping rule ``tol`` (at most 300 steps) for each of
    ``tols``, and the closed-form ``"linearized"`` trainer (``preset="linearized"``), whose member is
    evaluated by ``linearized_member_fn``; the others by ``member_fn``."""
    grid = f"damping grid {S.LM_DAMPING[1]:g}..{S.LM_DAMPING[-1]:g}"
    out = {f"LM, {k} steps, {grid}": dict(optimizer="levenberg_marquardt", num_steps=k)
           for k in steps}
    for tol in tols:
        out[f"LM, tol {tol:g} (<= 300 steps), {grid}"] = dict(
            optimizer="levenberg_marquardt", num_steps=300, tol=tol)
    out["linearized (closed form)"] = dict(optimizer="linearized")
    return out


def data(d: int, n: int, dtype):
    from scipy.stats import qmc

    problem = ntkbo.benchmarks.suite("dev")[PROBLEMS[d]]
    lo, hi = np.asarray(problem.bounds[0], float), np.asarray(problem.bounds[1], float)
    with warnings.catch_warnings():  # n need not be a power of 2 here
        warnings.simplefilter("ignore", UserWarning)
        x = lo + (hi - lo) * qmc.Sobol(d, scramble=True, seed=1).random(n)
    y = np.asarray(problem.fn_batch(jnp.asarray(x, problem.bounds.dtype)), float)
    y = (y - y.mean()) / y.std(ddof=1)
    zt = np.random.default_rng(2).uniform(size=(64, d))
    z = (x - lo) / (hi - lo)
    return (PROBLEMS[d], jnp.asarray(z, dtype), jnp.asarray(y, dtype), jnp.asarray(zt, dtype))


def network(d: int, width: int, depth: int):
    w_std = (1.0,) + (2.0**0.5,) * depth
    spec = mlp_spec(depth, width, "relu", w_std, None, "ntk")
    init_fn, apply_fn, _ = mlp(depth, width, "relu", W_std=spec.W_std, b_std=None)
    shapes = jax.eval_shape(lambda k: init_fn(k, (-1, d + 1))[1], jax.random.PRNGKey(0))
    return apply_fn, S.prior_variances(shapes, spec)


def closed_form(apply_fn, pvar, theta0, theta0p, x, y, xt, lam):
    """``(f_lin* (nt,), sd (nt,), L_lin*)``: the linearised minimiser at the test points, the
    linearised posterior's sd there, and the minimum of the linearised loss (module docstring)."""
    g = lambda z: S.member_fn(apply_fn, theta0, theta0, theta0p, z)  # noqa: E731
    feats = grad_features(apply_fn)
    prec = 1.0 / jax.flatten_util.ravel_pytree(pvar)[0]
    j, jt = feats(x, theta0), feats(xt, theta0)
    k_xx, k_tx = (j / prec) @ j.T, (jt / prec) @ j.T
    k_tt = jnp.sum(jt * jt / prec, axis=1)
    a = k_xx + lam * jnp.eye(x.shape[0])
    chol = linalg.cholesky(a)
    solve = lambda b: linalg.cho_solve(chol, b)  # noqa: E731
    r0 = y - g(x)
    f_star = g(xt) + k_tx @ solve(r0)
    var = k_tt - jnp.sum(k_tx * solve(k_tx.T).T, axis=1)
    # The minimum of ||r0 - J d||^2 + lam |d|_P^2 is lam r0^T A^-1 r0.
    return f_star, jnp.sqrt(jnp.maximum(var, 0.0)), lam * r0 @ solve(r0)


def measure(case, width, depth, sigma, members, steps, tols, key):
    d, n = case
    dtype = jnp.result_type(float)
    name, z, y, zt = data(d, n, dtype)
    x, xt = S.embed_inputs(z, "sphere"), S.embed_inputs(zt, "sphere")
    apply_fn, pvar = network(d, width, depth)
    lam, mask = sigma**2, jnp.ones(n, bool)
    keys = jax.random.split(key, members)

    def draw(k):
        theta0, theta0p = S.draw_params(jax.random.split(k)[0], pvar, 2)
        return theta0, S.zero_last_layer(theta0p, depth)

    @jax.jit
    def reference(keys):
        def one(k):
            theta0, theta0p = draw(k)
            f_star, sd, l_lin = closed_form(apply_fn, pvar, theta0, theta0p, x, y, xt, lam)
            g0 = jax.grad(lambda th: S.sto_loss(
                lambda t: S.member_fn(apply_fn, t, theta0, theta0p, x), th, theta0, y, mask, lam,
                pvar))(theta0)
            gn0 = jnp.sqrt(sum(jnp.sum(v * v) for v in jax.tree_util.tree_leaves(g0)))
            return f_star, sd, l_lin, gn0
        return jax.vmap(one)(keys)

    f_star, sd, l_lin, gn0 = map(np.asarray, reference(keys))
    rows = []
    for label, kwargs in configs(steps, tols).items():
        fn = S.linearized_member_fn if kwargs["optimizer"] == "linearized" else S.member_fn

        @jax.jit
        def train(keys, kwargs=kwargs, fn=fn):
            def one(k):
                theta0, theta0p = draw(k)
                th, _, l1, gn, _ = S.train_member(apply_fn, theta0, theta0p, x, y, mask, lam,
                                                  pvar, **kwargs)
                return fn(apply_fn, th, theta0, theta0p, xt), l1, gn
            return jax.vmap(one)(keys)

        out = jax.block_until_ready(train(keys))  # compiles
        secs = []
        for _ in range(2):
            t0 = time.perf_counter()
            jax.block_until_ready(train(keys))
            secs.append(time.perf_counter() - t0)
        f, loss, gn = map(np.asarray, out)
        rows.append((label, f, loss, gn, min(secs) / members, fn is S.linearized_member_fn))
    best = np.min(np.stack([r[2] for r in rows if not r[5]]), axis=0)
    print(f"\n### {name} (d = {d}), n = {n}, width {width}, depth {depth}, sigma {sigma}, "
          f"{members} members, {np.dtype(dtype).name}\n")
    print(f"Linearised minimum L_lin* / L_best (median): {np.median(l_lin / best):.3f}\n")
    print("| training | loss gap (L - L_best) / L_best | \\|f - f_lin*\\| / sd (RMS) "
          "| grad / grad_0 | s/member |")
    print("|---|---|---|---|---|")
    for label, f, loss, gn, sec, linearized in rows:
        # The linearised trainer minimises the linearised (1): its gap is to that minimum.
        ref = l_lin if linearized else best
        gap = np.median((loss - ref) / ref)
        dist = np.median(np.sqrt(np.mean(((f - f_star) / sd) ** 2, axis=1)))
        print(f"| {label} | {gap:.2e} | {dist:.3f} | {np.median(gn / gn0):.1e} | {sec:.3f} |")


def suggest_seconds(case, options, key, reps=3):
    """Seconds of one ``suggest`` of ``sto_bnts(**options)`` (``q = 1``, the acquisition search
    included) on the case's ``n`` points, jitted, compile excluded, best of ``reps``."""
    d, n = case
    problem = ntkbo.benchmarks.suite("dev")[PROBLEMS[d]]
    _, z, y, _ = data(d, n, problem.bounds.dtype)
    lo, hi = problem.bounds
    algo = S.sto_bnts(**options)
    state, _ = algo.update(algo.init(key, problem.bounds, n), lo + (hi - lo) * z, y)
    suggest = jax.jit(algo.suggest)
    jax.block_until_ready(suggest(key, state))
    secs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(suggest(key, state))
        secs.append(time.perf_counter() - t0)
    return min(secs)


#: ``--suggest``'s configurations, each labelled by what it runs: the default, the same training
#: at the paper's width, and the closed form of ``preset="linearized"`` (the default 2026-11-24 to
#: 2026-11-27) at that width.
SUGGEST = {"default: LM, 10 steps, width 128": {},
           "LM, 10 steps, width 256": dict(
               training=dict(optimizer="levenberg_marquardt", num_steps=10),
               network=dict(width=256)),
           "preset former: linearized, width 256": dict(training=dict(optimizer="linearized"),
                                                        network=dict(width=256))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="2:10,6:30,10:50,20:100", help="d:n,...")
    parser.add_argument("--steps", default="1,10,30,100,300", help="LM steps of the LM rows")
    parser.add_argument("--tols", default="1e-4", help="LM stopping-rule rows ('' for none)")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--x64", action="store_true", help="float64 (default: float32, as runs)")
    parser.add_argument("--suggest", action="store_true",
                        help="time one suggest (q = 1) per case for each setting of SUGGEST")
    parser.add_argument("--no-table", action="store_true", help="skip the convergence table")
    args = parser.parse_args()
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
          f"load {os.getloadavg()[0]:.1f}")
    steps = [int(s) for s in args.steps.split(",")]
    tols = [float(t) for t in args.tols.split(",") if t]
    for case in args.cases.split(","):
        d, n = (int(v) for v in case.split(":"))
        if not args.no_table:
            measure((d, n), args.width, args.depth, args.sigma, args.members, steps, tols,
                    jax.random.PRNGKey(args.seed))
        if args.suggest:
            for label, options in SUGGEST.items():
                sec = suggest_seconds((d, n), options, jax.random.PRNGKey(args.seed))
                print(f"suggest, {PROBLEMS[d]}, n = {n}, {label}: {sec:.3f} s")


if __name__ == "__main__":
    main()
