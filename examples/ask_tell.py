"""Ask/tell for an objective outside JAX, saved after every observation so a run can resume.

    python examples/ask_tell.py            # run it twice: the second run continues the first
"""

import os

import jax
import numpy as np

import ntkbo


def simulator(x):  # any Python code: here the Branin function in numpy
    a, b, c, r, s, t = 1.0, 5.1 / (4 * np.pi**2), 5 / np.pi, 6.0, 10.0, 1 / (8 * np.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * np.cos(x[0]) + s


bounds = np.array([[-5.0, 0.0], [10.0, 15.0]])
algo = ntkbo.algorithms.gp(acquisition="ei")
path = "branin_study.msgpack"
if os.path.exists(path):
    study = ntkbo.ask_tell.load(path, algo, bounds)
else:
    study = ntkbo.ask_tell.start(algo, bounds, jax.random.PRNGKey(0), n_init=5)
for _ in range(10):
    x, study = ntkbo.ask_tell.ask(algo, study)
    y = np.array([simulator(row) for row in x])
    study = ntkbo.ask_tell.tell(algo, study, x, y)
    ntkbo.ask_tell.save(path, study)
xs, ys = ntkbo.ask_tell.observations(study)
print(f"{len(ys)} observations, best {ys.min():.4f} at {xs[ys.argmin()]} (optimum 0.3979)")
