r"""Faults injected into the *library* (never into a check's reference side), to show that a check
can fail and to measure the smallest error it detects.

A fault is a context manager that monkeypatches the ``ntkbo`` function a check calls, so the check's
own code is the same with and without it::

    with theory_checks.faults.inject("ntk_scale:1.02"):
        report = theory_checks.ntk_convergence.run(key, settings)

``python -m theory_checks NAME --fault FAULT`` and ``theory_checks.run_check(..., fault=FAULT)`` do
this. Every check lists the faults it must detect in its module attribute ``DETECTS``
(``{scale: (fault, ...)}``) and the tests (``tests/test_theory_checks.py``) and
``python -m theory_checks.fault_matrix`` require a FAIL for each.

The faults (``FAULTS``; ``F`` a float parameter, written ``name:F``):

* ``ntk_scale:F``: the native closed-form NTK (``ntkbo.kernels.native``, hence every
  ``mlp(...)[2](x, y, "ntk")``, ``as_kernel(kernel_fn, "ntk")``, the NTK-GP algorithms, the SMB
  kernels) multiplied by ``F``; the NNGP is unchanged. The empirical NTK (autodiff of the network)
  is not touched.
* ``nngp_scale:F``: the native closed-form NNGP kernel (the same functions, ``mlp(...)[2](x, y,
  "nngp")``) multiplied by ``F``; the NTK is unchanged. The networks are not touched.
* ``drop_bias_ntk``: the native NTK recursion without the bias gradients: ``ntk' = W_std^2 nngp +
  W_std^2 ntk`` instead of ``ntk' = (W_std^2 nngp + b_std^2) + W_std^2 ntk`` in every Dense layer
  ("ntk" parameterisation), the NNGP keeping its bias.
* ``sto_no_regulariser``: STO-BNTS's loss (1) without ``lam |theta - theta_0|_P^2``: both
  ``sto_bnts.linear_solve`` and ``sto_bnts.train_member`` are called with ``lam = 0`` (the target
  perturbation ``eps ~ N(0, lam)`` is still drawn with the true ``lam``).
* ``neuralbo_wrong_lambda``: NeuralBO's dual factor built with ``lam = 1`` whatever ``lam`` is
  (the regime of the paper's Lemma 8.1): ``gram_factor`` (the factor made anew;
  ``ntkbo.feature_gp.dual_factor`` calls it) and ``extend_dual_factor`` (the factor the state
  carries with static features, extended at each update), in ``ntkbo.feature_gp``, where they
  live, and in ``ntkbo.algorithms.neural_bo``, which calls them by its own names.
* ``pinn_wrong_operator``: PINN-BO's kernel blocks ``pinn_bo.pinn_kernels`` built with the operator
  ``N[f] + f`` instead of ``N[f]`` (a zeroth-order term too many: Helmholtz for Laplace).
* ``linear_regret``: every algorithm factory the regret check calls (``ntkbo.algorithms.ntk_gp``,
  ``neural_bo``, ``sto_bnts``, ``go_ucb``, ``neural_greedy``) returns random search with a *fixed*
  key: after the initial design it evaluates the same point every round, so its per-round regret
  is the constant ``f(x_0) - f*``.
* ``cbo_sigma_scale:F``: Neural-CBO's ``neural_cbo.posterior_moments`` returning the variance
  times ``F^2`` (confidence bands ``F`` times as wide; ``suggest`` calls it by module attribute,
  so the runs see it too).

Caching: a check may cache a stage that calls none of the functions a fault patches (the network
side of ``ntk_convergence``, the runs of ``neuralbo_identities``); :func:`touches` tells a cached
stage whether the active fault patches something it calls.
"""

from __future__ import annotations

import contextlib
import functools
import importlib

import jax

#: name -> what it breaks. ``ntk_scale`` takes a float parameter (``ntk_scale:1.02``).
FAULTS: dict[str, str] = {
    "ntk_scale": "the native NTK multiplied by F (ntk_scale:F)",
    "nngp_scale": "the native NNGP kernel multiplied by F (nngp_scale:F)",
    "drop_bias_ntk": "the native NTK recursion without the bias gradient terms",
    "sto_no_regulariser": "STO-BNTS loss (1) without the lam |theta - theta_0|_P^2 regulariser",
    "neuralbo_wrong_lambda": "NeuralBO's dual factor built with lam = 1 instead of lam",
    "pinn_wrong_operator": "PINN-BO's kernel blocks with the operator N[f] + f instead of N[f]",
    "linear_regret": "every algorithm of the regret check replaced by a constant-point method",
    "cbo_sigma_scale": "Neural-CBO's posterior_moments' variance times F^2 (cbo_sigma_scale:F)",
}

#: The library functions each fault patches (module, attribute), for :func:`touches`.
PATCHES: dict[str, tuple[tuple[str, str], ...]] = {
    "ntk_scale": (("ntkbo.kernels.native", "_compiled_kernels"),
                  ("ntkbo.kernels.native", "_op_by_op_kernels")),
    "nngp_scale": (("ntkbo.kernels.native", "_compiled_kernels"),
                   ("ntkbo.kernels.native", "_op_by_op_kernels")),
    "drop_bias_ntk": (("ntkbo.kernels.native", "dense_kernel"),
                      ("ntkbo.kernels.native", "_compiled_kernels")),
    "sto_no_regulariser": (("ntkbo.algorithms.sto_bnts", "linear_solve"),
                           ("ntkbo.algorithms.sto_bnts", "train_member")),
    "neuralbo_wrong_lambda": (("ntkbo.algorithms.neural_bo", "gram_factor"),
                              ("ntkbo.algorithms.neural_bo", "extend_dual_factor"),
                              ("ntkbo.feature_gp", "gram_factor"),
                              ("ntkbo.feature_gp", "extend_dual_factor")),
    "pinn_wrong_operator": (("ntkbo.algorithms.pinn_bo", "pinn_kernels"),),
    "linear_regret": (("ntkbo.algorithms", "ntk_gp"), ("ntkbo.algorithms", "neural_bo"),
                      ("ntkbo.algorithms", "sto_bnts"), ("ntkbo.algorithms", "go_ucb"),
                      ("ntkbo.algorithms", "neural_greedy")),
    "cbo_sigma_scale": (("ntkbo.algorithms.neural_cbo", "posterior_moments"),),
}

#: The fault being injected (``None`` outside :func:`inject`).
_ACTIVE: list = [None]


def parse(fault: str) -> tuple[str, float | None]:
    """``"ntk_scale:1.02" -> ("ntk_scale", 1.02)``, ``"drop_bias_ntk" -> ("drop_bias_ntk", None)``.

    Raises:
      ValueError: unknown name, a missing or non-positive ``ntk_scale`` factor, or a parameter given
        to a fault that takes none.
    """
    name, _, arg = str(fault).partition(":")
    if name not in FAULTS:
        raise ValueError(f"fault: expected one of {', '.join(sorted(FAULTS))} "
                         f"(ntk_scale:F with a float F), got {fault!r}")
    if name in ("ntk_scale", "nngp_scale", "cbo_sigma_scale"):
        try:
            value = float(arg)
        except ValueError:
            raise ValueError(f"fault: {name} needs a factor, e.g. {name}:1.02, "
                             f"got {fault!r}") from None
        if not value > 0:
            raise ValueError(f"fault: the {name} factor must be positive, got {fault!r}")
        return name, value
    if arg:
        raise ValueError(f"fault: {name} takes no parameter, got {fault!r}")
    return name, None


def family(fault: str | None) -> str | None:
    """The fault's name without its parameter (``None`` for ``None``)."""
    return None if fault is None else parse(fault)[0]


def active() -> str | None:
    """The fault injected by the innermost :func:`inject` (``None``: the real library)."""
    return _ACTIVE[-1]


def touches(stage: tuple[str, ...]) -> str | None:
    """The active fault if its family is in ``stage`` (the faults that patch something a cached
    stage calls), else ``None``: the value a stage's cache key must include."""
    fault = active()
    return fault if family(fault) in stage else None


@contextlib.contextmanager
def _patched(module_name: str, attr: str, value):
    module = importlib.import_module(module_name)
    old = getattr(module, attr)
    setattr(module, attr, value)
    try:
        yield old
    finally:
        setattr(module, attr, old)


def _kernel_scale(stack, nngp_factor: float = 1.0, ntk_factor: float = 1.0):
    """The native kernels' NNGP and NTK multiplied by the factors (``nngp_scale:F``,
    ``ntk_scale:F``), in both the compiled and the op-by-op path."""
    native = importlib.import_module("ntkbo.kernels.native")
    compiled, op_by_op = native._compiled_kernels, native._op_by_op_kernels

    def scale(nngp, ntk):
        return nngp_factor * nngp, None if ntk is None else ntk_factor * ntk

    # A new jitted function (its own trace cache: a spec traced before the fault is retraced).
    @functools.partial(jax.jit, static_argnums=(0, 3))
    def scaled_compiled(spec, x1, x2, compute_ntk):
        return scale(*compiled(spec, x1, x2, compute_ntk))

    def scaled_op_by_op(spec, x1, x2, compute_ntk):
        return scale(*op_by_op(spec, x1, x2, compute_ntk))

    stack.enter_context(_patched("ntkbo.kernels.native", "_compiled_kernels", scaled_compiled))
    stack.enter_context(_patched("ntkbo.kernels.native", "_op_by_op_kernels", scaled_op_by_op))


def _drop_bias_ntk(stack):
    native = importlib.import_module("ntkbo.kernels.native")
    dense = native.dense_kernel

    def dense_without_bias_gradient(k, W_std, b_std, parameterization, input_width):
        out = dense(k, W_std, b_std, parameterization, input_width)
        if out.ntk is None or b_std is None:
            return out
        # "ntk": ntk' = nngp' + W^2 ntk with nngp' = W^2 nngp + b^2: drop the b^2 (bias gradient).
        # "standard": the bias gradient adds 1.
        drop = b_std**2 if parameterization == "ntk" else 1.0
        return out._replace(ntk=out.ntk - drop)

    stack.enter_context(_patched("ntkbo.kernels.native", "dense_kernel",
                                 dense_without_bias_gradient))

    # _compiled_kernels caches traces per spec: a fresh jit traces the patched recursion.
    @functools.partial(jax.jit, static_argnums=(0, 3))
    def compiled(spec, x1, x2, compute_ntk):
        k = native.mlp_layer_kernel(spec, x1, x2, compute_ntk)
        return k.nngp, k.ntk

    stack.enter_context(_patched("ntkbo.kernels.native", "_compiled_kernels", compiled))


def _sto_no_regulariser(stack):
    S = importlib.import_module("ntkbo.algorithms.sto_bnts")
    linear_solve, train_member = S.linear_solve, S.train_member

    def linear_solve_no_reg(apply_fn, theta0, theta0p, z, y, mask, lam, *args, **kwargs):
        return linear_solve(apply_fn, theta0, theta0p, z, y, mask, 0.0 * lam, *args, **kwargs)

    def train_member_no_reg(apply_fn, theta0, theta0p, z, y, mask, lam, *args, **kwargs):
        return train_member(apply_fn, theta0, theta0p, z, y, mask, 0.0 * lam, *args, **kwargs)

    stack.enter_context(_patched("ntkbo.algorithms.sto_bnts", "linear_solve", linear_solve_no_reg))
    stack.enter_context(_patched("ntkbo.algorithms.sto_bnts", "train_member", train_member_no_reg))


def _neuralbo_wrong_lambda(stack):
    FG = importlib.import_module("ntkbo.feature_gp")
    gram_factor = FG.gram_factor  # dual_factor calls it too

    def gram_factor_lam_one(k, mask, lam, jitter=None):
        del lam
        return gram_factor(k, mask, 1.0, jitter)

    extend = FG.extend_dual_factor

    def extend_lam_one(f, apply_fn, theta_feat, z, data, start, q, lam, jitter=None):
        del lam
        return extend(f, apply_fn, theta_feat, z, data, start, q, 1.0, jitter)

    for module in ("ntkbo.feature_gp", "ntkbo.algorithms.neural_bo"):
        stack.enter_context(_patched(module, "gram_factor", gram_factor_lam_one))
        stack.enter_context(_patched(module, "extend_dual_factor", extend_lam_one))


def _pinn_wrong_operator(stack):
    PB = importlib.import_module("ntkbo.algorithms.pinn_bo")
    pinn_kernels = PB.pinn_kernels

    def with_extra_term(kernel, pde):
        operator = pde.operator

        def wrong(f):
            op = operator(f)
            return lambda x: op(x) + jax.numpy.reshape(f(x), jax.numpy.shape(op(x)))

        return pinn_kernels(kernel, pde._replace(operator=wrong))

    stack.enter_context(_patched("ntkbo.algorithms.pinn_bo", "pinn_kernels", with_extra_term))


def _linear_regret(stack):
    algorithms = importlib.import_module("ntkbo.algorithms")
    random_search = algorithms.random_search

    def constant_point(*args, **kwargs):
        del args, kwargs
        base = random_search()
        # The same key every round: the same point, so the per-round regret is constant.
        return base._replace(suggest=lambda key, state: base.suggest(jax.random.PRNGKey(7), state))

    for _, attr in PATCHES["linear_regret"]:
        stack.enter_context(_patched("ntkbo.algorithms", attr, constant_point))


def _cbo_sigma_scale(stack, factor: float):
    NC = importlib.import_module("ntkbo.algorithms.neural_cbo")
    moments = NC.posterior_moments

    def scaled(*args, **kwargs):
        mu, var = moments(*args, **kwargs)
        return mu, factor**2 * var

    stack.enter_context(_patched("ntkbo.algorithms.neural_cbo", "posterior_moments", scaled))


@contextlib.contextmanager
def inject(fault: str | None):
    """Context manager: the library with ``fault`` injected (``None``: unchanged)."""
    if fault is None:
        yield
        return
    name, arg = parse(fault)
    with contextlib.ExitStack() as stack:
        if name == "ntk_scale":
            _kernel_scale(stack, ntk_factor=arg)
        elif name == "nngp_scale":
            _kernel_scale(stack, nngp_factor=arg)
        elif name == "drop_bias_ntk":
            _drop_bias_ntk(stack)
        elif name == "sto_no_regulariser":
            _sto_no_regulariser(stack)
        elif name == "neuralbo_wrong_lambda":
            _neuralbo_wrong_lambda(stack)
        elif name == "pinn_wrong_operator":
            _pinn_wrong_operator(stack)
        elif name == "linear_regret":
            _linear_regret(stack)
        elif name == "cbo_sigma_scale":
            _cbo_sigma_scale(stack, arg)
        _ACTIVE.append(fault)
        try:
            yield
        finally:
            _ACTIVE.pop()
