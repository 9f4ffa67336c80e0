"""Hyper-parameter tuning on scikit-learn's bundled datasets (no download).

Tasks ``hpo_<model>_<dataset>``, ``model`` in ``rf`` (random forest), ``mlp`` (multi-layer
perceptron), ``hgb`` (histogram gradient-boosted trees), ``dataset`` in ``breast_cancer`` (569 x 30,
2 classes), ``wine`` (178 x 13, 3 classes), ``digits`` (1797 x 64, 10 classes) and ``diabetes``
(442 x 10, regression); and the constrained ``hpo_mlp_digits_size``.

Papers: GO-UCB (Liu and Wang 2023, Section 6.2 and App. D.2) tunes RF (7 hyper-parameters), MLP (8)
and gradient boosting (11) on UCI breast cancer, Australian and (Pima) diabetes, maximising
accuracy, every hyper-parameter encoded in ``[0, 10]``. STO-BNTS (Dai et al. 2022, Section 5.2)
tunes a random forest on Pima diabetes and XGBoost/CNN on MNIST, minimising validation error.
Substitutes, stated: the bundled datasets replace the UCI/Kaggle/Keras ones (sklearn's ``diabetes``
is a regression dataset, not Pima's classification one; ``digits`` stands in for MNIST); gradient
boosting is scikit-learn's ``HistGradientBoosting*`` with a 7-D space (below) instead of GO-UCB's
11-D ``GradientBoostingClassifier`` space.

Encoding (GO-UCB's): the box is ``[0, 10]^d``; with ``u = x_i / 10``, a choice among ``k`` values
(categories, booleans, integers ``a..b`` with ``k = b - a + 1``) takes value number
``min(floor(u k), k - 1)`` (equal-width bins); a float in ``[a, b]`` is ``a + u (b - a)``
(``"log"``: ``10^(log10 a + u (log10 b - log10 a))``; GO-UCB does not say how it scales
``alpha`` and the learning rate, a log scale is the usual choice).

Value (**minimised**): the cross-validated error, ``1 - mean accuracy`` (classification) or
``1 - mean R^2`` (``diabetes``), over ``folds`` fixed folds (option, default 5;
``StratifiedKFold``/``KFold`` with ``shuffle=True, random_state=0``), every model with
``random_state=0`` and ``n_jobs=1``: the same ``x`` gives the same value. The MLPs see
standardised features (a ``StandardScaler`` fitted on each training fold).

Spaces: ``space(model, regression)`` (its docstring lists them).

``hpo_mlp_digits_size`` (constrained, Neural-CBO-style: thesis chapter 4 handles black-box
constraints ``c(x) <= 0``; its own real task, constrained sensitive samples on MNIST, is a different
problem). Minimise the 5-fold error of an adam/relu MLP (``max_iter=50``) on ``digits`` over
``x in [0, 10]^4``: first hidden width int [8, 128], second hidden width int [0, 128] (0: one
hidden layer), ``alpha`` log [1e-6, 1e-1], ``learning_rate_init`` log [1e-4, 1e-1]; subject to a
model-size budget, deterministic unlike latency: ``c(x) = n_params(x) / 10000 - 1 <= 0``, where
``n_params`` counts the weights and biases (``64 h1 + h1 + 10 h1 + 10`` for one layer,
``64 h1 + h1 + h1 h2 + h2 + 10 h2 + 10`` for two).

Evaluation costs: ``COSTS`` (median and maximum over 8 random points, one core, 5 folds).
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import NamedTuple

import numpy as np

from ntkbo.benchmarks.tasks._deps import require

BOX_UPPER = 10.0
DATASETS = ("breast_cancer", "wine", "digits", "diabetes")
MODELS = ("rf", "mlp", "hgb")
REGRESSION = {"diabetes"}
SIZE_BUDGET = 10_000


class Param(NamedTuple):
    """One hyper-parameter: ``kind`` in "choice" (``values``), "int" (``lo..hi``), "float" and
    "log" (``[lo, hi]``)."""

    name: str
    kind: str
    lo: float = 0.0
    hi: float = 0.0
    values: tuple = ()


def decode_one(p: Param, xi: float):
    """The value of hyper-parameter ``p`` encoded by ``xi`` in ``[0, 10]`` (module docstring)."""
    u = min(max(float(xi) / BOX_UPPER, 0.0), 1.0)
    if p.kind in ("choice", "int"):
        k = len(p.values) if p.kind == "choice" else int(p.hi) - int(p.lo) + 1
        i = min(int(math.floor(u * k)), k - 1)
        return p.values[i] if p.kind == "choice" else int(p.lo) + i
    if p.kind == "float":
        return p.lo + u * (p.hi - p.lo)
    if p.kind == "log":
        return 10.0 ** (math.log10(p.lo) + u * (math.log10(p.hi) - math.log10(p.lo)))
    raise ValueError(f"unknown kind {p.kind!r} of hyper-parameter {p.name!r}")


def decode(space: tuple[Param, ...], x) -> dict:
    x = np.asarray(x, dtype=float).ravel()
    if x.shape != (len(space),):
        raise ValueError(f"x must have {len(space)} coordinates, got {x.shape[0]}")
    return {p.name: decode_one(p, xi) for p, xi in zip(space, x)}


def _choice(name, *values):
    return Param(name, "choice", values=tuple(values))


def space(model: str, regression: bool) -> tuple[Param, ...]:
    """The search space of ``model``, ``x in [0, 10]^k`` decoded as the module docstring says:

    - ``rf`` (GO-UCB's 7): ``n_estimators`` int [20, 200]; ``criterion`` {gini, entropy, log_loss}
      (regression: {squared_error, absolute_error, poisson}); ``max_depth`` int [1, 10];
      ``min_samples_split`` int [2, 10]; ``min_samples_leaf`` int [1, 10]; ``max_features``
      {sqrt, log2}; ``bootstrap`` {True, False}.
    - ``mlp`` (GO-UCB's 8; adam, one hidden layer of 100): ``activation``
      {identity, logistic, tanh, relu}; ``alpha`` log [1e-6, 1e-2]; ``learning_rate_init`` log
      [1e-6, 1e-2]; ``max_iter`` int [100, 300]; ``shuffle`` {True, False}; ``beta_1``, ``beta_2``
      [0, 0.999] (GO-UCB: (0, 1)); ``n_iter_no_change`` int [1, 10].
    - ``hgb`` (7): ``learning_rate`` log [1e-3, 1]; ``max_iter`` int [20, 200];
      ``max_leaf_nodes`` int [2, 64]; ``max_depth`` int [1, 10]; ``min_samples_leaf`` int
      [1, 50]; ``l2_regularization`` [0, 10]; ``max_features`` [0.1, 1]; no early stopping.
    """
    if model == "rf":
        crit = (("squared_error", "absolute_error", "poisson") if regression
                else ("gini", "entropy", "log_loss"))
        return (Param("n_estimators", "int", 20, 200), _choice("criterion", *crit),
                Param("max_depth", "int", 1, 10), Param("min_samples_split", "int", 2, 10),
                Param("min_samples_leaf", "int", 1, 10), _choice("max_features", "sqrt", "log2"),
                _choice("bootstrap", True, False))
    if model == "mlp":
        return (_choice("activation", "identity", "logistic", "tanh", "relu"),
                Param("alpha", "log", 1e-6, 1e-2), Param("learning_rate_init", "log", 1e-6, 1e-2),
                Param("max_iter", "int", 100, 300), _choice("shuffle", True, False),
                Param("beta_1", "float", 0.0, 0.999), Param("beta_2", "float", 0.0, 0.999),
                Param("n_iter_no_change", "int", 1, 10))
    if model == "hgb":
        return (Param("learning_rate", "log", 1e-3, 1.0), Param("max_iter", "int", 20, 200),
                Param("max_leaf_nodes", "int", 2, 64), Param("max_depth", "int", 1, 10),
                Param("min_samples_leaf", "int", 1, 50), Param("l2_regularization", "float", 0, 10),
                Param("max_features", "float", 0.1, 1.0))
    raise ValueError(f"model={model!r} is not one of {MODELS}")


SIZE_SPACE = (Param("h1", "int", 8, 128), Param("h2", "int", 0, 128),
              Param("alpha", "log", 1e-6, 1e-1), Param("learning_rate_init", "log", 1e-4, 1e-1))


@functools.lru_cache(maxsize=None)
def load(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a bundled scikit-learn dataset (read-only arrays)."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset={dataset!r} is not one of {DATASETS}")
    sk = require("sklearn.datasets")
    X, y = getattr(sk, f"load_{dataset}")(return_X_y=True)
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def _estimator(model: str, regression: bool, params: dict):
    ens = require("sklearn.ensemble")
    if model == "rf":
        cls = ens.RandomForestRegressor if regression else ens.RandomForestClassifier
        return cls(random_state=0, n_jobs=1, **params)
    if model == "hgb":
        cls = ens.HistGradientBoostingRegressor if regression else ens.HistGradientBoostingClassifier
        return cls(random_state=0, early_stopping=False, **params)
    if model == "mlp":
        nn = require("sklearn.neural_network")
        cls = nn.MLPRegressor if regression else nn.MLPClassifier
        return _scaled(cls(hidden_layer_sizes=(100,), solver="adam", random_state=0, **params))
    raise ValueError(f"model={model!r} is not one of {MODELS}")


def _scaled(est):
    pipeline = require("sklearn.pipeline")
    pre = require("sklearn.preprocessing")
    return pipeline.make_pipeline(pre.StandardScaler(), est)


def cv_error(estimator, dataset: str, folds: int) -> float:
    """``1 - mean score`` (accuracy, or R^2 for a regression dataset) over fixed folds."""
    ms = require("sklearn.model_selection")
    X, y = load(dataset)
    splitter = (ms.KFold if dataset in REGRESSION else ms.StratifiedKFold)(
        n_splits=int(folds), shuffle=True, random_state=0)
    threadpoolctl = require("threadpoolctl")
    # one thread: HistGradientBoosting's OpenMP threads on these small datasets cost more than
    # they save (measured: 10x slower on a shared 2-core machine), and values stay reproducible
    with warnings.catch_warnings(), threadpoolctl.threadpool_limits(1):
        warnings.simplefilter("ignore")  # a tuned max_iter that stops early is part of the task
        scores = ms.cross_val_score(estimator, X, y, cv=splitter, n_jobs=1, error_score="raise")
    return float(1.0 - np.mean(scores))


def hpo(x, model: str, dataset: str, folds: int = 5) -> float:
    """``hpo_<model>_<dataset>`` at ``x`` in ``[0, 10]^d``: the cross-validated error."""
    regression = dataset in REGRESSION
    params = decode(space(model, regression), x)
    return cv_error(_estimator(model, regression, params), dataset, folds)


def n_params(h1: int, h2: int, n_in: int = 64, n_out: int = 10) -> int:
    """Weights and biases of an MLP ``n_in -> h1 [-> h2] -> n_out`` (``h2 = 0``: one layer)."""
    if h2 == 0:
        return n_in * h1 + h1 + h1 * n_out + n_out
    return n_in * h1 + h1 + h1 * h2 + h2 + h2 * n_out + n_out


def size_objective(x, folds: int = 5) -> float:
    """``hpo_mlp_digits_size``'s objective: the cross-validated error on ``digits``."""
    p = decode(SIZE_SPACE, x)
    hidden = (p["h1"],) if p["h2"] == 0 else (p["h1"], p["h2"])
    nn = require("sklearn.neural_network")
    est = _scaled(nn.MLPClassifier(hidden_layer_sizes=hidden, alpha=p["alpha"],
                                   learning_rate_init=p["learning_rate_init"], max_iter=50,
                                   random_state=0))
    return cv_error(est, "digits", folds)


def size_constraint(x) -> float:
    """``hpo_mlp_digits_size``'s constraint ``n_params / 10000 - 1`` (feasible iff ``<= 0``)."""
    p = decode(SIZE_SPACE, x)
    return n_params(p["h1"], p["h2"]) / SIZE_BUDGET - 1.0


#: Measured evaluation cost (median and maximum over random points of the box, default 5 folds,
#: one core of this machine while other jobs shared it; 4 points for rf/hgb, 2 for mlp).
COSTS = {
    "hpo_rf_breast_cancer": "2.3 s (max 4.6 s)", "hpo_rf_wine": "1.3 s (max 3.4 s)",
    "hpo_rf_digits": "5.4 s (max 7.1 s)", "hpo_rf_diabetes": "2.7 s (max 3.4 s)",
    "hpo_hgb_breast_cancer": "3.0 s (max 3.6 s)", "hpo_hgb_wine": "1.1 s (max 1.5 s)",
    "hpo_hgb_digits": "20 s (max 22 s)", "hpo_hgb_diabetes": "1.1 s (max 1.3 s)",
    "hpo_mlp_breast_cancer": "9 s (max 13 s)", "hpo_mlp_wine": "2.2 s (max 3.6 s)",
    "hpo_mlp_digits": "36 s (max 38 s)", "hpo_mlp_diabetes": "3.2 s (max 4.1 s)",
    "hpo_mlp_digits_size": "7.9 s (max 13 s; 3 points)",
}
