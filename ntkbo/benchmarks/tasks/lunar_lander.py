"""``lunar_lander12``: the 12-parameter heuristic controller of gymnasium's ``LunarLander-v3``.

The controller is gymnasium's (and OpenAI Gym's) ``heuristic`` for the discrete lander with its 12
constants made parameters, the parameterisation of TuRBO (Eriksson et al. 2019) used by STO-BNTS
(Dai et al. 2022, arXiv:2210.06850, Section 5.3). With the state ``s`` (``s[0], s[1]`` position,
``s[2], s[3]`` velocity, ``s[4]`` angle, ``s[5]`` angular velocity, ``s[6], s[7]`` leg contacts)::

    angle_targ = clip(s[0] w0 + s[2] w1, -w2, w2)
    hover_targ = w3 |s[0]|
    angle_todo = (angle_targ - s[4]) w4 - s[5] w5
    hover_todo = (hover_targ - s[1]) w6 - s[3] w7
    if s[6] or s[7]:  angle_todo = w8;  hover_todo = -s[3] w9
    action = 2 (main engine)  if hover_todo > |angle_todo| and hover_todo > w10
             3 (right engine) elif angle_todo < -w11
             1 (left engine)  elif angle_todo > w11
             0 (nothing)      otherwise

Gymnasium's own heuristic is ``w = DEFAULT_W = (0.5, 1, 0.4, 0.55, 0.5, 1, 0.5, 0.5, 0, 0.5,
0.05, 0.05)`` (a test checks the trajectories are identical). Box: ``[0, 2]^12`` (STO-BNTS:
``w = 2 x``, ``x in [0, 1]^12``; TuRBO the same).

Value: the mean undiscounted return over the episodes reset with the seeds
``seed0, seed0 + 1, ..., seed0 + episodes - 1`` (options; default ``episodes=20`` as STO-BNTS,
``seed0=0``), each at most 1000 steps (the registered time limit). The seeds make the task
deterministic: the same ``w`` gives the same value. STO-BNTS resets without a seed, so its
objective is noisy; a different ``seed0`` per evaluation reproduces that if wanted. **ntkbo
minimises: ``fn = -mean return``.** Returns above 200 count as solved; the default heuristic scores
about 260 on the default seeds.

Evaluation cost (measured on this machine): about 0.1 ms per simulated step; about 1.2 s for the
default 20 episodes with the default controller (environment creation included) (an episode that
hovers until the time limit
costs 1000 steps, so up to about 2 s).
"""

from __future__ import annotations

import numpy as np

from ntkbo.benchmarks.tasks._deps import require

DIM = 12
LOWER, UPPER = 0.0, 2.0
DEFAULT_W = np.array([0.5, 1.0, 0.4, 0.55, 0.5, 1.0, 0.5, 0.5, 0.0, 0.5, 0.05, 0.05])
MAX_STEPS = 1000


def controller(s, w) -> int:
    """The action of the parameterised heuristic (module docstring) in state ``s``."""
    angle_targ = s[0] * w[0] + s[2] * w[1]
    if angle_targ > w[2]:
        angle_targ = w[2]
    if angle_targ < -w[2]:
        angle_targ = -w[2]
    hover_targ = w[3] * np.abs(s[0])
    angle_todo = (angle_targ - s[4]) * w[4] - s[5] * w[5]
    hover_todo = (hover_targ - s[1]) * w[6] - s[3] * w[7]
    if s[6] or s[7]:
        angle_todo = w[8]
        hover_todo = -s[3] * w[9]
    if hover_todo > np.abs(angle_todo) and hover_todo > w[10]:
        return 2
    if angle_todo < -w[11]:
        return 3
    if angle_todo > w[11]:
        return 1
    return 0


def make_env():
    """A ``LunarLander-v3`` environment (discrete actions, no rendering)."""
    require("Box2D")
    gym = require("gymnasium")
    return gym.make("LunarLander-v3", max_episode_steps=MAX_STEPS)


def episode_return(env, policy, seed: int) -> float:
    """The undiscounted return of one episode reset with ``seed`` under ``policy(s) -> action``."""
    s, _ = env.reset(seed=int(seed))
    total = 0.0
    while True:
        s, r, terminated, truncated, _ = env.step(policy(s))
        total += float(r)
        if terminated or truncated:
            return total


def lunar_lander12(x, episodes: int = 20, seed0: int = 0) -> float:
    """``lunar_lander12`` at ``w = x`` ``(12,)``: minus the mean return over the episodes."""
    w = [float(v) for v in np.asarray(x, dtype=float).ravel()]
    if len(w) != DIM:
        raise ValueError(f"x must have {DIM} coordinates for lunar_lander12, got {len(w)}")
    env = make_env()
    try:
        returns = [episode_return(env, lambda s: controller(s, w), seed0 + i)
                   for i in range(episodes)]
    finally:
        env.close()
    return -float(np.mean(returns))
