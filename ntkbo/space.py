"""Search spaces for ask/tell: named parameters mapped to the unit box and back.

A training job's hyper-parameters are not a box of reals: a learning rate lives on a log scale, a
layer count is an integer, an activation is a category. ``Space`` maps such parameters to the unit
box ``[0, 1]^D`` that every ntkbo algorithm optimises over, and back::

    space = ntkbo.space.Space([
        ntkbo.space.Float("learning_rate", 1e-5, 1e-1, log=True),
        ntkbo.space.Int("layers", 1, 8),
        ntkbo.space.Categorical("activation", ("relu", "tanh", "gelu")),
    ])
    study = ntkbo.space.start(algo, space, key, n_init=5)
    for _ in range(30):
        params, study = ntkbo.space.ask(algo, study, space)      # list of q dicts
        scores = [train_and_validate(**p) for p in params]
        study = ntkbo.space.tell(algo, study, space, params, scores, maximize=True)
    best_params, best_score = ntkbo.space.best(study, space, maximize=True)

The study keeps its space (``study.space``; ``ntkbo.ask_tell.save`` writes it and ``load``
restores it), so ``space`` may be left out of ``ask``, ``ask_trial`` and ``best``. Parallel
workers use trial ids (``ntkbo.ask_tell``, "Parallel workers")::

    trial, params, study = ntkbo.space.ask_trial(algo, study)   # one dict, conditioned on pending
    study = ntkbo.space.tell(algo, study, trial, score, maximize=True)
    study = ntkbo.ask_tell.fail(algo, study, other_trial)        # or ntkbo.ask_tell.abandon

Encodings: ``Float`` and ``Int`` take one coordinate each (optionally on a log scale),
``Categorical`` one per choice (one-hot); the ``Space`` class gives the maps.

``tell`` tells the model the *canonical* encoding of the decoded parameters (``to_unit(from_unit(u))``:
the integer's centre, the one-hot corner), so the surrogate learns where the objective was really
evaluated, as BoTorch does for rounded parameters. ``maximize=True`` negates the scores (ntkbo
minimises) and ``best`` reports them in the user's sign. A NaN score is a failed evaluation
(``ntkbo.ask_tell``). Telling parameter dicts closes the pending trial whose asked point decodes
to the same parameters (the lowest id first); a dict asked nowhere is a new trial.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ntkbo import ask_tell
# the parameter types live in a bottom module that ask_tell can import (to restore a saved space)
from ntkbo.search_space import Categorical, Float, Int, Param, Space  # noqa: F401  (re-exported)

__all__ = ["Categorical", "Float", "Int", "Param", "Space", "ask", "ask_trial", "best", "load",
           "start", "tell"]


def start(algo, space: Space, key, **kwargs) -> ask_tell.Study:
    """``ntkbo.ask_tell.start`` on the space's unit box (``kwargs``: ``n_init``, ``capacity``); the
    study keeps ``space``."""
    return ask_tell.start(algo, space.bounds, key, **kwargs)._replace(space=space)


def _space(study: ask_tell.Study, space: Space | None) -> Space:
    """``space``, or the study's own; ``ValueError`` if neither or if they differ."""
    own = getattr(study, "space", None)
    if space is None:
        if own is None:
            raise ValueError("space: the study keeps no Space (started with ntkbo.ask_tell.start?);"
                             " pass the space")
        return own
    if not isinstance(space, Space):
        raise ValueError(f"space must be an ntkbo.space.Space, got {type(space).__name__}")
    if own is not None and own != space:
        raise ValueError(f"space {space!r} differs from the study's space {own!r}")
    return space


def ask(algo, study: ask_tell.Study, space: Space | None = None, *, lie: str = "mean"
        ) -> tuple[list[dict[str, Any]], ask_tell.Study]:
    """The next ``q`` parameter dicts to evaluate, and the new study (each a pending trial,
    conditioned on the pending ones as ``ntkbo.ask_tell.ask``). ``space``: the study's if left
    out."""
    space = _space(study, space)
    x, study = ask_tell.ask(algo, study, lie=lie)
    return [space.from_unit(row) for row in np.asarray(x)], study


def ask_trial(algo, study: ask_tell.Study, space: Space | None = None, *, lie: str = "mean"
              ) -> tuple[int, dict[str, Any], ask_tell.Study]:
    """``(trial_id, params, study)``: one new pending trial (``ntkbo.ask_tell.ask_trial``) and its
    parameter dict. ``space``: the study's if left out."""
    space = _space(study, space)
    trial, x, study = ask_tell.ask_trial(algo, study, lie=lie)
    return trial, space.from_unit(x), study


def _canonical(space: Space, u: np.ndarray) -> np.ndarray:
    return space.to_unit(space.from_unit(u))


def tell(algo, study: ask_tell.Study, trial, *args, maximize: bool = False,
         constraints=None) -> ask_tell.Study:
    """Tells scores, in either form (``maximize=True`` for scores to maximise; NaN or inf scores
    are failed evaluations; ``constraints``: the values ``c_k <= 0`` of a constrained algorithm):

    - ``tell(algo, study, trial_id, score)``: the one score of the pending trial ``trial_id``
      (``ask_trial``), ``constraints`` ``(K,)``; the model is told the canonical encoding of its
      parameters;
    - ``tell(algo, study, space, params, scores)``: a list of ``q`` dicts (as ``ask`` returned
      them, or any others in the space) and their ``(q,)`` scores, ``constraints`` ``(q, K)``.
      Each dict closes the pending trial whose point decodes to it (the lowest id first) or is a
      new trial.

    Raises ``ValueError`` naming the argument and leaves the study as it was on bad input."""
    if ask_tell.is_trial_id(trial):
        if len(args) != 1:
            raise ValueError(f"tell(algo, study, trial_id, score): one score, got {len(args)} "
                             "arguments after the trial id")
        space = _space(study, None)
        tid = ask_tell.check_trial(study, trial, "tell")
        score = np.asarray(args[0], dtype=float)
        if score.size != 1:
            raise ValueError(f"score must be one value for trial {tid}, got shape {score.shape}; "
                             "nothing was recorded")
        y = -score.reshape(1) if maximize else score.reshape(1)
        x = _canonical(space, ask_tell.trial_table(study).x[tid])[None]
        c = None if constraints is None else np.asarray(constraints, float).reshape(1, -1)
        return ask_tell.tell_rows(algo, study, x, y, c, [tid])
    if trial is not None and not isinstance(trial, Space):
        raise ValueError(f"trial must be a trial id (an int from ask_trial), or the study's Space "
                         f"followed by params and scores; got {type(trial).__name__} {trial!r}; "
                         "nothing was recorded")
    if len(args) != 2:
        raise ValueError(f"tell(algo, study, space, params, scores): got {1 + len(args)} "
                         "arguments after the study")
    space = _space(study, trial)
    params, scores = args
    params = list(params)
    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.shape[0] != len(params):
        raise ValueError(f"scores must have one value per parameter dict: got {scores.shape[0]} "
                         f"scores for {len(params)} dicts")
    x = np.stack([space.to_unit(p) for p in params])
    y = -scores if maximize else scores
    table = ask_tell.trial_table(study)
    open_ = np.flatnonzero(table.status == ask_tell.PENDING)
    canon = [_canonical(space, table.x[i]) for i in open_]
    ids: list[int | None] = []
    for row in x:
        hit = next((j for j, u in enumerate(canon)
                    if open_[j] not in ids and np.array_equal(u, row)), None)
        ids.append(None if hit is None else int(open_[hit]))
    return ask_tell.tell_rows(algo, study, x, y, constraints, ids)


def best(study: ask_tell.Study, space: Space | None = None, *, maximize: bool = False):
    """``(params, score)`` of the best told evaluation in the user's sign, or ``None`` when no
    evaluation succeeded (``ntkbo.ask_tell.best``). ``space``: the study's if left out."""
    space = _space(study, space)
    found = ask_tell.best(study)
    if found is None:
        return None
    x, y = found
    return space.from_unit(x), (-y if maximize else y)


def load(path: str | os.PathLike, algo, space: Space | None = None) -> ask_tell.Study:
    """``ntkbo.ask_tell.load`` of a study started on a space: the saved space, or ``space``,
    which must then equal the saved one if the file has one (``ValueError`` naming both)."""
    saved = ask_tell.saved_space(path, ask_tell.read_payload(path))
    if space is None:
        if saved is None:
            raise ValueError(f"{path}: the file records no space; pass space")
        space = saved
    elif saved is not None and space != saved:
        raise ValueError(f"{path}: space {space!r} differs from the saved space {saved!r}")
    return ask_tell.load(path, algo, space.bounds)._replace(space=space)
