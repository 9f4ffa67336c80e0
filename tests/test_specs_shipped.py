"""The shipped study specs (``benchmarks/specs``) and the spec fields they rely on: per-problem
budgets and initial designs, and a scale's ``n_init`` and per-algorithm options. Whether the
committed studies (``benchmarks/results``) are current is ``benchmarks/check_results.py``'s
question, tested here on a study run here, not on the archive."""

import glob
import os

import jax
import pytest

from ntkbo.experiments import runner
from ntkbo.experiments.spec import AlgorithmSpec, ProblemSpec, Spec

SPECS = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "specs")
BENCH_SPECS = sorted(f for f in glob.glob(os.path.join(SPECS, "*.toml"))
                     if not f.endswith("_coco.toml"))


@pytest.mark.parametrize("path", BENCH_SPECS, ids=os.path.basename)
def test_shipped_specs_parse_and_name_valid_scales(path):
    """Every shipped ``ntkbo bench`` spec parses, validates (labels, references, scale option
    tables naming existing algorithms) and has the ``cpu`` scale its report was run at, which
    resolves into cells (problems built, options checked, batch sizes dividing the rounds)."""
    spec = Spec.from_toml(path)
    cpu = spec.scale("cpu")  # raises ValueError if the scale is unknown
    assert spec.resolve("cpu")
    assert set(cpu.options) <= {a.id for a in spec.algorithms}
    assert spec.reference in {a.id for a in spec.algorithms}


def test_check_results_finds_stale_and_incomplete_studies(tmp_path):
    """``benchmarks/check_results.py`` (the maintenance check that replaced testing the committed
    folders) on a study run here: ``current`` against its own spec, in the dtype it ran in;
    ``stale`` naming the cell and option when a setting it relied on changed, also when only the
    summary is left (no cell files); ``incomplete`` when the spec has cells the folder lacks.
    Mutations caught (checked): ``check`` comparing cell ids only (the changed option passes);
    resolving in the session's dtype instead of the cells' (every digest differs)."""
    from benchmarks import check_results as C

    spec = Spec(name="t", budget=6, seeds=2, reference="random_search",
                algorithms=(AlgorithmSpec("random_search", {"q": 1}),),
                problems=(ProblemSpec("branin"),))
    out = str(tmp_path / "study")
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)  # a float32 study in a float64 session
    try:
        runner.run(spec, out, "smoke", devices=jax.devices()[:1], block=1)
    finally:
        jax.config.update("jax_enable_x64", x64)
    metas = C.stored_metas(out)
    assert C.check(out, spec, "smoke", {"float32"}, metas) == "current"
    changed = Spec.from_dict(dict(spec.to_dict(), algorithms=[
        {"name": "random_search", "options": {"q": 2}}]))
    status = C.check(out, changed, "smoke", {"float32"}, metas)
    assert status.startswith("stale") and "random_search__branin__d2" in status
    assert "algorithm.options.q" in status
    import shutil

    shutil.rmtree(os.path.join(out, "cells"))  # the committed state: spec.json and summary.npz
    os.remove(os.path.join(out, "spec.json"))  # only the summary's digests are left to compare
    assert C.check(out, changed, "smoke", {"float32"}, C.stored_metas(out)).startswith("stale")
    assert C.check(out, spec, "smoke", {"float32"}, C.stored_metas(out)) == "current"
    more = Spec.from_dict(dict(spec.to_dict(), problems=[{"name": "branin"},
                                                         {"name": "hartmann3"}]))
    assert C.check(out, more, "smoke", {"float32"}, C.stored_metas(out)) == (
        "incomplete (1 of 2 cells)")


def small_spec(**scales):
    return Spec(name="t", budget=30, seeds=2,
                algorithms=(AlgorithmSpec("random_search"),
                            AlgorithmSpec("ntk_gp_ei", {"beta": 2.0}, label="ntk")),
                problems=(ProblemSpec("branin", budget=12, n_init=4), ProblemSpec("hartmann6")),
                scales=scales)


def test_problem_budget_and_n_init_override_the_spec():
    """Catches the spec's budget used where a problem gives its own (mutation: ignore
    ``ProblemSpec.budget``): Branin runs 12 evaluations with 4 initial points, Hartmann-6 the
    spec's 30 with the default d + 1 = 7; a scale caps both."""
    cells = {c.cell_id: c for c in small_spec().resolve("full")}
    assert (cells["random_search__branin__d2"].budget, cells["random_search__branin__d2"].n_init) == (12, 4)
    assert (cells["random_search__hartmann6__d6"].budget,
            cells["random_search__hartmann6__d6"].n_init) == (30, 7)
    smoke = {c.cell_id: c for c in small_spec().resolve("smoke")}
    assert smoke["random_search__hartmann6__d6"].budget == 10  # the smoke cap
    assert smoke["random_search__hartmann6__d6"].n_init == 2  # the smoke preset's n_init


def test_scale_options_reach_the_cell_and_its_digest():
    """Catches scale options that are recorded but not run (mutation: merge them into the
    definition only): at scale ``cpu`` the cell's resolved options, its digest and the algorithm
    ``build()`` returns carry ``beta = 0.5``; at ``full`` the spec's ``beta = 2``."""
    spec = small_spec(cpu={"n_init": 3, "options": {"ntk": {"beta": 0.5}}})
    spec = Spec.from_dict(spec.to_dict())  # the TOML layout round trip keeps the new fields
    cpu = {c.cell_id: c for c in spec.resolve("cpu")}["ntk__hartmann6__d6"]
    full = {c.cell_id: c for c in spec.resolve("full")}["ntk__hartmann6__d6"]
    assert cpu.options["beta"] == 0.5 and full.options["beta"] == 2.0
    assert cpu.n_init == 3 and cpu.digest != full.digest
    assert dict(cpu.algorithm.options)["beta"] == 0.5


def test_scale_options_and_exclusions_must_name_an_algorithm():
    with pytest.raises(ValueError, match=r"scales.cpu.options.nope': no algorithm has that label"):
        small_spec(cpu={"options": {"nope": {"beta": 1.0}}})
    with pytest.raises(ValueError, match=r"scales.cpu.exclude': 'nope' is not an algorithm or problem"):
        small_spec(cpu={"exclude": ["nope"]})


def test_scale_exclude_drops_only_that_algorithm_at_that_scale():
    """Catches an exclusion applied at every scale or to the wrong label: at ``cpu`` the ``ntk``
    cells are gone and the random-search cells stay; at ``full`` both run."""
    spec = Spec.from_dict(small_spec(cpu={"exclude": ["ntk"]}).to_dict())
    assert {c.algorithm.id for c in spec.resolve("cpu")} == {"random_search"}
    assert {c.algorithm.id for c in spec.resolve("full")} == {"random_search", "ntk"}


def test_a_batch_size_that_does_not_divide_the_rounds_is_refused_before_any_run():
    """Catches the check missing (mutation: drop it): STO-BNTS with ``q = 4`` at a scale leaving
    ``budget - n_init = 30`` evaluations is refused when the spec is resolved, naming the fields,
    instead of failing after the cells before it have run."""
    spec = Spec(name="t", budget=40, seeds=2, n_init=10,
                algorithms=(AlgorithmSpec("sto_bnts", {"q": 4, "network": {"width": 8}}),),
                problems=(ProblemSpec("branin"),))
    with pytest.raises(ValueError, match=r"budget - n_init = 40 - 10 .* multiple of q = 4"):
        spec.resolve("full")
    assert len(Spec.from_dict(dict(spec.to_dict(), n_init=8)).resolve("full")) == 1


def test_scale_exclude_drops_a_problem_at_that_scale():
    """Catches a problem exclusion ignored or applied at every scale (mutation: skip the
    ``p.id in sc.exclude`` test): at ``cpu`` only Branin's cells remain, at ``full`` both."""
    spec = Spec.from_dict(small_spec(cpu={"exclude": ["hartmann6"]}).to_dict())
    assert {c.problem.id for c in spec.resolve("cpu")} == {"branin"}
    assert {c.problem.id for c in spec.resolve("full")} == {"branin", "hartmann6"}


def test_coco_spec_resolves_its_cpu_scale():
    """``benchmarks/coco_study.py`` merges a scale's options into the named algorithm only and
    replaces the listed settings (the NeuralBO COCO study's cpu scale: d = 2, 3; instances 1-3)."""
    import tomllib

    from benchmarks import coco_study

    with open(os.path.join(SPECS, "neuralbo_coco.toml"), "rb") as fh:
        spec = tomllib.load(fh)
    settings, algorithms = coco_study.resolve(spec, "cpu")
    assert settings["dims"] == [2, 3] and settings["instances"] == "1-3"
    opts = {a["label"]: a["options"] for a in algorithms}
    assert opts["NeuralGreedy"]["network"] == {"width": 256}
    assert opts["NeuralGreedy"]["training"] == {"optimizer": "levenberg_marquardt", "num_steps": 5}
    assert opts["NeuralBO"] == {"training": {"warm_start": False}}
    with pytest.raises(ValueError, match="--scale 'gpu'"):
        coco_study.resolve(spec, "gpu")
