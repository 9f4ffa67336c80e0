"""Ask/tell with parallel workers, saved after every step so a run can resume.

    python examples/ask_tell.py            # run it twice: the second run continues the first
    NTKBO_EXAMPLE_SMALL=1 python examples/ask_tell.py   # 6 results instead of 12: what CI runs

Three workers evaluate an objective outside JAX at once. Each asks for a trial while the other
two are still running: the ask conditions on those pending trials (ntkbo.ask_tell, "Parallel
workers"), so the three points differ. Results come back in the order the workers finish, not
the order asked, and are told by trial id; a crashed evaluation is a failed trial. The study is
saved after every ask and tell, the running trials with it: a resumed run evaluates them again
and tells them by their ids.
"""

import heapq
import os

import jax
import numpy as np

import ntkbo
from ntkbo import ask_tell


def simulator(x):  # any Python code: here the Branin function in numpy
    a, b, c, r, s, t = 1.0, 5.1 / (4 * np.pi**2), 5 / np.pi, 6.0, 10.0, 1 / (8 * np.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * np.cos(x[0]) + s


bounds = np.array([[-5.0, 0.0], [10.0, 15.0]])
algo = ntkbo.algorithms.gp(acquisition="ei")
path = "branin_study.msgpack"
n_workers = 3
# NTKBO_EXAMPLE_SMALL=1 (tests/test_examples.py sets it): fewer results per run, the same code.
n_results = 6 if os.environ.get("NTKBO_EXAMPLE_SMALL") == "1" else 12
rng = np.random.default_rng(0)  # how long each evaluation takes
if os.path.exists(path):
    study = ask_tell.load(path, algo, bounds)
    print(f"resumed: {len(ask_tell.observations(study)[1])} told, running trials "
          f"{[t.id for t in ask_tell.pending(study)]} are evaluated again")
else:
    study = ask_tell.start(algo, bounds, jax.random.PRNGKey(0), n_init=5)

clock = 0.0
running = []  # (finish time, trial id, point): one entry per busy worker
for t in ask_tell.pending(study):  # trials that were running when the study was saved
    heapq.heappush(running, (clock + rng.exponential(), t.id, t.x))
while len(running) < n_workers:
    trial, x, study = ask_tell.ask_trial(algo, study)  # conditioned on the running trials
    heapq.heappush(running, (clock + rng.exponential(), trial, x))
ask_tell.save(path, study)
print(f"running trials {sorted(t for _, t, _ in running)}")

order = []
for step in range(n_results):
    clock, trial, x = heapq.heappop(running)  # the first worker to finish
    if step == 4:  # say this evaluation crashed: a failed trial, no model sees it
        study = ask_tell.fail(algo, study, trial)
    else:
        study = ask_tell.tell(algo, study, trial, simulator(x))
    order.append(trial)
    trial, x, study = ask_tell.ask_trial(algo, study)  # that worker's next trial
    heapq.heappush(running, (clock + rng.exponential(), trial, x))
    ask_tell.save(path, study)

print(f"told trials in the order finished: {order}")
print(f"still running (saved pending): {[t.id for t in ask_tell.pending(study)]}")
statuses = [t.status for t in ask_tell.trials(study)]
print({s: statuses.count(s) for s in ("complete", "failed", "pending")})
rec = ask_tell.recommend(algo, study)
print(f"best observation {rec.y:.4f} at {rec.x} (trial {rec.trial}; optimum 0.3979); "
      f"best posterior mean {rec.model_mean:.4f} at {rec.model_x}")
