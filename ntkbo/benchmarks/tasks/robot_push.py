"""Robot pushing on Box2D: ``robot_push3``, ``robot_push4`` (one robot, one object) and
``robot_push14`` (two robots, two objects).

Re-implemented from the task definitions of Wang & Jegelka (2017, "Max-value entropy search",
code ``zi-w/Max-value-Entropy-Search``: ``generate_simudata3.py``, ``generate_simudata4.py``,
``push_world.py``) and Wang et al. (2018, "Batched large-scale Bayesian optimization in
high-dimensional spaces", code ``zi-w/Ensemble-Bayesian-Optimization``: ``push_function.py``,
``push_utils.py``). NeuralBO (Phan-Trong et al. 2023, Figure 5) and STO-BNTS (Dai et al. 2022,
Section 5.3) use the 14-D task.

The world (all three tasks): Box2D, no gravity, time step 1/100 s, 10 velocity and 10 position
iterations; a static 1000 x 1000 table; every moving body is tied to the table by a friction joint
(objects: max force 5, max torque 2; robot hands: 2 and 2). A hand is a rectangle of density 0.1
and friction 0.1, moved by the controller of the original code: each step, a torque
``m (omega* - omega) 30`` and a force ``m (v* - v) 30`` at its centre (``m`` its mass), for
``steps`` steps, then the world runs 100 more steps with the hand free.

**Sign: ntkbo minimises.** The papers maximise a reward; ``fn`` returns the negated reward.

Tasks: ``push14`` (``robot_push14``, 14-D, two hands pushing a box and a circle to two goals) and
``push3`` / ``push4`` (3-D / 4-D, one hand pushing a circle to ``goal``); their docstrings give
the parameterisation, the reward and the box.

Noise: the original code adds ``N(0, sd^2)`` to each target velocity component (``sd = 0.1`` in
the 3-/4-D code, ``0.01`` in the 14-D code). Here that is the option ``velocity_noise`` (default
``0.0``: deterministic, the same ``x`` gives the same value). With ``velocity_noise > 0`` the draws
come from ``numpy.random.default_rng(noise_seed)`` created per evaluation: ``noise_seed=None``
(fresh entropy, the original's behaviour) or an integer (the same draws at every evaluation).

Evaluation cost (measured on this machine, one core): about 2-6 ms per evaluation for
``robot_push3``/``4`` and 5-20 ms for ``robot_push14`` (up to 400 steps of 5 bodies).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from ntkbo.benchmarks.tasks._deps import require

TIME_STEP = 1.0 / 100.0
VEL_ITERS = POS_ITERS = 10
FORCE_UNIT = 30.0  # rectangle hands
TORQUE_UNIT = 30.0
EXTRA_STEPS = 100

PUSH14_LOWER = np.array([-5, -5, -10, -10, 2, 0, -5, -5, -10, -10, 2, 0, -5, -5], dtype=float)
PUSH14_UPPER = np.array([5, 5, 10, 10, 30, 2 * math.pi, 5, 5, 10, 10, 30, 2 * math.pi, 5, 5],
                        dtype=float)
PUSH3_LOWER, PUSH3_UPPER = np.array([-5.0, -5.0, 1.0]), np.array([5.0, 5.0, 30.0])
PUSH4_LOWER = np.array([-5.0, -5.0, 1.0, 0.0])
PUSH4_UPPER = np.array([5.0, 5.0, 30.0, 2 * math.pi])

START1, GOAL1 = (0.0, 2.0), (4.0, 3.5)  # the box object of robot_push14
START2, GOAL2 = (0.0, -2.0), (-4.0, 3.5)  # the circle object of robot_push14
F_MAX = math.dist(GOAL1, START1) + math.dist(GOAL2, START2)
DEFAULT_GOAL = (4.0, 3.5)  # robot_push3 / robot_push4
REWARD_OFFSET = 5.0  # robot_push3 / robot_push4: reward = 5 - |g - o|


class _World:
    """A Box2D world with the table every body is tied to by a friction joint."""

    def __init__(self):
        B = require("Box2D")
        self.B = B
        self.world = B.b2World(gravity=(0.0, 0.0), doSleep=True)
        self.table = self.world.CreateStaticBody(position=(0, 0),
                                                 shapes=B.b2PolygonShape(box=(500, 500)))

    def add_object(self, shape: str, size, position, friction=0.01, density=0.05):
        B = self.B
        body = self.world.CreateDynamicBody(position=position)
        geom = B.b2PolygonShape(box=size) if shape == "box" else B.b2CircleShape(radius=size)
        body.CreateFixture(shape=geom, density=density, friction=friction)
        self.world.CreateFrictionJoint(bodyA=self.table, bodyB=body, maxForce=5, maxTorque=2)
        return body

    def add_hand(self, position, angle, half_size):
        B = self.B
        hand = self.world.CreateDynamicBody(position=position, angle=angle)
        hand.CreateFixture(shape=B.b2PolygonShape(box=half_size), density=0.1, friction=0.1)
        self.world.CreateFrictionJoint(bodyA=self.table, bodyB=hand, maxForce=2, maxTorque=2)
        return hand

    def drive(self, hand, velocity, angular_velocity=0.0):
        """One step of the hand's velocity controller (torque first, then force)."""
        B = self.B
        torque = hand.mass * (angular_velocity - hand.angularVelocity) * TORQUE_UNIT
        hand.ApplyTorque(torque, wake=True)
        force = hand.mass * (B.b2Vec2(velocity) - B.b2Vec2(hand.linearVelocity)) * FORCE_UNIT
        hand.ApplyForce(force, hand.position, wake=True)

    def step(self):
        self.world.Step(TIME_STEP, VEL_ITERS, POS_ITERS)


def _noisy(v, velocity_noise: float, rng) -> tuple[float, float]:
    if velocity_noise > 0:
        return float(v[0] + rng.normal(0.0, velocity_noise)), \
            float(v[1] + rng.normal(0.0, velocity_noise))
    return float(v[0]), float(v[1])


def _rng(velocity_noise: float, noise_seed: Optional[int]):
    return np.random.default_rng(noise_seed) if velocity_noise > 0 else None


def push14_positions(x, velocity_noise: float = 0.0, noise_seed: Optional[int] = None):
    """The final positions ``(o1, o2)`` of the two objects after the push ``x`` ``(14,)``."""
    x = [float(v) for v in np.asarray(x, dtype=float).ravel()]
    if len(x) != 14:
        raise ValueError(f"x must have 14 coordinates for robot_push14, got {len(x)}")
    rx, ry, vx, vy, s, a, rx2, ry2, vx2, vy2, s2, a2, w, w2 = x
    steps, steps2 = int(s * 10), int(s2 * 10)
    world = _World()
    box = world.add_object("box", (0.5, 0.5), START1)
    circle = world.add_object("circle", 1.0, START2)
    hand = world.add_hand((rx, ry), a, (1.0, 0.3))
    hand2 = world.add_hand((rx2, ry2), a2, (1.0, 0.3))
    rng = _rng(velocity_noise, noise_seed)
    v1 = _noisy((vx, vy), velocity_noise, rng)
    v2 = _noisy((vx2, vy2), velocity_noise, rng)
    for t in range(max(steps, steps2) + EXTRA_STEPS):
        if t < steps:
            world.drive(hand, v1, w)
        if t < steps2:
            world.drive(hand2, v2, w2)
        world.step()
    return np.array(box.position, dtype=float), np.array(circle.position, dtype=float)


def push14(x, velocity_noise: float = 0.0, noise_seed: Optional[int] = None) -> float:
    """``robot_push14`` at ``x`` ``(14,)``: the negated reward ``|g1 - o1| + |g2 - o2| - f_max``.

    ``robot_push14``, ``x = (rx, ry, vx, vy, s, a, rx2, ry2, vx2, vy2, s2, a2, w, w2)``: robot ``i``
    starts at ``(rx, ry)`` with angle ``a``, targets velocity ``(vx, vy)`` and angular velocity
    ``w`` for ``int(10 s)`` steps. Hands are 2 x 0.6 boxes (half-sizes (1, 0.3)). Objects (friction
    0.01, density 0.05): a 1 x 1 box starting at ``s1 = (0, 2)`` with goal ``g1 = (4, 3.5)``, a
    circle of radius 1 starting at ``s2 = (0, -2)`` with goal ``g2 = (-4, 3.5)``. Reward (maximised
    in the papers) ``f_max - |g1 - o1| - |g2 - o2|``, ``o_i`` the objects' final positions and
    ``f_max = |g1 - s1| + |g2 - s2| = 4.2720 + 6.8007 = 11.0727``; ``fn = -reward`` (so ``fn = 0``
    when no object moves; the optimum is about ``-f_max``, both objects on their goals). Box: lower
    ``[-5,-5,-10,-10,2,0,-5,-5,-10,-10,2,0,-5,-5]``, upper
    ``[5,5,10,10,30,2pi,5,5,10,10,30,2pi,5,5]``.
    """
    o1, o2 = push14_positions(x, velocity_noise, noise_seed)
    reward = F_MAX - math.dist(GOAL1, o1) - math.dist(GOAL2, o2)
    return -reward


def _push_one(rx, ry, angle, velocity, steps, velocity_noise, noise_seed):
    """``velocity`` ``(vx, vy)``, or ``None``: speed 5 from the hand towards the object, computed
    from the bodies' (single-precision) positions as in the MES code."""
    world = _World()
    obj = world.add_object("circle", 1.0, (0.0, 0.0))
    hand = world.add_hand((rx, ry), angle, (0.3, 1.0))
    if velocity is None:
        velocity = obj.position - hand.position
        velocity = velocity / np.linalg.norm(velocity) * 5
    v = _noisy(velocity, velocity_noise, _rng(velocity_noise, noise_seed))
    for t in range(steps + EXTRA_STEPS):
        if t < steps:
            world.drive(hand, v)
        world.step()
    return np.array(obj.position, dtype=float)


def _direction(rx: float, ry: float, speed: float, name: str):
    norm = math.hypot(rx, ry)
    if norm == 0.0:
        raise ValueError(f"{name}: the hand starts on the object (rx = ry = 0), so the push "
                         "direction (towards the object) is undefined")
    return (-rx / norm * speed, -ry / norm * speed)


def _check(x, d, name):
    x = [float(v) for v in np.asarray(x, dtype=float).ravel()]
    if len(x) != d:
        raise ValueError(f"x must have {d} coordinates for {name}, got {len(x)}")
    return x


def push3_position(x, velocity_noise: float = 0.0, noise_seed: Optional[int] = None):
    """The object's final position after the push ``x = (rx, ry, s)``."""
    rx, ry, s = _check(x, 3, "robot_push3")
    angle = math.pi / 2 if rx == 0.0 else math.atan(ry / rx)
    _direction(rx, ry, 5.0, "robot_push3")  # refuses rx = ry = 0
    return _push_one(rx, ry, angle, None, int(s * 10), velocity_noise, noise_seed)


def push4_position(x, velocity_noise: float = 0.0, noise_seed: Optional[int] = None):
    """The object's final position after the push ``x = (rx, ry, s, a)``."""
    rx, ry, s, a = _check(x, 4, "robot_push4")
    v = _direction(rx, ry, 10.0, "robot_push4")
    return _push_one(rx, ry, a, v, int(s * 10), velocity_noise, noise_seed)


def push3(x, goal: Sequence[float] = DEFAULT_GOAL, velocity_noise: float = 0.0,
          noise_seed: Optional[int] = None) -> float:
    """``robot_push3`` at ``x`` ``(3,)``: ``|g - o| - 5``, the negated reward ``5 - |g - o|``.

    ``robot_push3``, ``x = (rx, ry, s)``, box ``[-5,-5,1] .. [5,5,30]``: one hand (half-sizes (0.3,
    1)) at ``(rx, ry)`` with angle ``arctan(ry / rx)`` (``pi/2`` at ``rx = 0``: the limit; a box
    rotated by ``pi`` is the same box, so ``arctan`` and ``arctan2`` agree) pushes at speed 5
    towards a circular object (radius 1, friction 0.01, density 0.05) at the origin for
    ``int(10 s)`` steps. ``robot_push4``, ``x = (rx, ry, s, a)``, box
    ``[-5,-5,1,0] .. [5,5,30,2pi]``: the same with the hand's angle ``a`` and speed 10. The MES code
    minimises the distance ``|g - o|`` of the object to the goal ``g`` (its maximised form is
    ``5 - |g - o|``); ``fn = |g - o| - 5`` (the negated reward), so the optimum is ``-5``. The MES
    code draws ``g`` uniformly in ``[-5, 5]^2`` per experiment; here it is the option ``goal``,
    default ``(4.0, 3.5)`` (the 14-D task's first goal; any fixed choice makes the task
    deterministic). At ``rx = ry = 0`` the hand sits on the object and the push direction is
    undefined (``0/0`` in the original code): the evaluation fails with a ``TaskError`` naming the
    point (the centre of both boxes is such a point).
    """
    return math.dist(goal, push3_position(x, velocity_noise, noise_seed)) - REWARD_OFFSET


def push4(x, goal: Sequence[float] = DEFAULT_GOAL, velocity_noise: float = 0.0,
          noise_seed: Optional[int] = None) -> float:
    """``robot_push4`` at ``x`` ``(4,)``: ``|g - o| - 5``, the negated reward ``5 - |g - o|``."""
    return math.dist(goal, push4_position(x, velocity_noise, noise_seed)) - REWARD_OFFSET
