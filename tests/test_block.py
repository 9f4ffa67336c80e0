"""The study runner's seeds per device call: one on CPU, as many as the memory holds elsewhere.

``runner.default_block`` reads the device's platform and memory; these tests give it CPU meshes
(the real devices, and 4 forced ones in a subprocess-free way: the rule reads only the first
device) and fake accelerator devices whose memory statistics the test sets, and check the block
against the arithmetic of the rule. ``run_bytes`` is checked against the bytes of a real run.
"""

import types

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

import ntkbo
from ntkbo.experiments import runner


def _fake_mesh(platform="gpu", stats=None, n=1, raises=False):
    def memory_stats():
        if raises:
            raise RuntimeError("no memory statistics on this backend")
        return stats

    device = types.SimpleNamespace(platform=platform, memory_stats=memory_stats)
    return types.SimpleNamespace(devices=np.asarray([device] * n, dtype=object))


def test_cpu_runs_one_seed_per_call_whatever_the_memory():
    mesh = Mesh(np.asarray(jax.devices()[:1]), ("seeds",))
    assert runner.default_block(mesh) == 1 and runner.default_block(mesh, 10**12) == 1
    assert runner.default_block(_fake_mesh("cpu", {"bytes_limit": 8 << 30}), 1) == 1


@pytest.mark.parametrize("n_devices", [1, 4])
def test_an_accelerator_takes_as_many_seeds_as_half_its_memory_holds(n_devices):
    # 8 GiB and 3 MB per seed: floor(0.5 * 8 GiB / 3e6) = 1431 seeds per device, on 1 or 4 devices
    # (the block is per device). Mutations caught (checked): MEMORY_SHARE ignored (2863), the
    # block computed from all devices' memory (5726 on 4 devices).
    limit = 8 << 30
    mesh = _fake_mesh("gpu", {"bytes_limit": limit}, n_devices)
    assert runner.default_block(mesh, 3_000_000) == (limit // 2) // 3_000_000 == 1431
    assert runner.default_block(mesh, 10 * limit) == 1  # a seed larger than the device: one
    # unknown memory or unknown seed size: every seed of a device at once, as before
    assert runner.default_block(mesh) is None
    assert runner.default_block(_fake_mesh("gpu", {}), 100) is None
    assert runner.default_block(_fake_mesh("gpu", raises=True), 100) is None


def test_run_bytes_is_the_results_bytes_times_the_temporaries_factor():
    # Against the arrays of a real run of the same call (state, trajectories, info): the shapes
    # eval_shape traces are those minimize returns. Mutation caught (checked): counting only the
    # trajectories (x, y, f) and not the state gives a smaller number.
    problem = ntkbo.benchmarks.get("branin")
    algo = ntkbo.algorithms.random_search()
    r = ntkbo.minimize(algo, problem, 6, jax.random.PRNGKey(0), n_init=3)
    want = sum(np.asarray(leaf).nbytes for leaf in jax.tree_util.tree_leaves(r))
    assert runner.run_bytes(algo, problem, 6, 3) == runner.TEMPORARIES * want
