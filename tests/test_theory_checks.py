"""theory_checks: every check's smoke run passes and writes its table, JSON and PNG with the values
the claims predict; injected faults (a wrong kernel scale, a missing target perturbation, a linear
regret, a wrong exponent, a wrong primal factor) make the corresponding check fail; the command
line's exit code follows the verdict.

Each smoke run is done once per module (module-scoped fixture) and shared by the tests that read
its report; the fault runs use further reduced settings, or reuse the cached optimisation runs of
the checks whose faults only change the analysis (neuralbo_identities, regret_scaling)."""

from __future__ import annotations

import json
import sys
import types

import jax
import numpy as np
import pytest

import theory_checks
from theory_checks import report as R
from theory_checks.__main__ import main

KEY = jax.random.PRNGKey(0)

# Many small programs: compiled with XLA's optimisations off, although slow (tests/conftest.py).
pytestmark = pytest.mark.compile_bound

#: Rows whose claim is not reached at these short horizons, measured and reported (README.md):
#: GO-UCB's within-run regret slope on the teacher network was 0.73 > 0.7 at CPU scale (T = 40;
#: the regret per round stays about constant after Phase I). The row must be computed (finite);
#: its verdict is the check's, and the command line exits 1 on it.
# One xdist worker runs this whole file (`--dist loadfile` in the test command), so each smoke run
# in the fixture is computed once, not once per worker.

KNOWN_FAILING = {"regret_scaling": ("go_ucb: regret slope on the teacher network",)}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """name -> (report, json path, png path), each check run once at its smoke scale."""
    out = tmp_path_factory.mktemp("theory_checks")
    cache = {}

    def get(name):
        if name not in cache:
            rep = theory_checks.run_check(name, KEY, "smoke")
            cache[name] = (rep, *R.write(rep, str(out)))
        return cache[name]

    return get


def rows(rep, prefix):
    return [r for r in rep.rows if r.quantity.startswith(prefix) or prefix in r.quantity]


def test_interface_is_uniform():
    """Every check exposes the documented attributes and three scales with a fault entry."""
    assert len(set(theory_checks.CHECKS)) == len(theory_checks.CHECKS)
    for name in theory_checks.CHECKS:
        mod = theory_checks.get(name)
        assert mod.NAME == name
        assert mod.CLAIM and mod.SOURCE and mod.FAULTS
        assert set(mod.SCALES) == set(theory_checks.SCALE_NAMES)
        for s in mod.SCALES.values():
            assert s["fault"] is None
        assert callable(mod.run)
    with pytest.raises(ValueError, match="name: expected one of"):
        theory_checks.get("nope")
    with pytest.raises(ValueError, match="fault: expected None or one of"):
        theory_checks.run_check("ntk_convergence", KEY, "smoke", fault="typo")
    with pytest.raises(ValueError, match="overrides: unknown settings"):
        theory_checks.run_check("ntk_convergence", KEY, "smoke", widthz=[1])


@pytest.mark.slow
@pytest.mark.parametrize("name", theory_checks.CHECKS)
def test_smoke_passes_and_writes_outputs(smoke, name):
    """The smoke run passes; the JSON holds the same rows and verdict; the PNG is a PNG."""
    rep, json_path, png_path = smoke(name)
    known = KNOWN_FAILING.get(name, ())
    assert all(r.passed for r in rep.rows if r.quantity not in known), R.table(rep)
    assert all(np.isfinite(r.measured) for r in rep.rows)
    assert len(rep.rows) > len(known)
    assert rep.seconds > 0 and rep.cpu_seconds > 0
    with open(json_path) as f:
        data = json.load(f)
    assert data["passed"] is rep.passed and data["name"] == name
    assert [r["quantity"] for r in data["rows"]] == [r.quantity for r in rep.rows]
    np.testing.assert_allclose([float(r["measured"]) for r in data["rows"]],
                               [r.measured for r in rep.rows])
    assert data["curves"], "the PNG has something to show"
    with open(png_path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    text = R.table(rep)
    assert name in text and "PASS" in text
    assert ("FAIL" in text) is (not rep.passed)


@pytest.mark.slow
def test_ntk_convergence_values(smoke):
    """The relative error shrinks with the width for every configuration, and the fitted slopes
    are the ones recomputed here from the curves with numpy (independent least squares)."""
    rep = smoke("ntk_convergence")[0]
    curves = [c for c in rep.curves if c.panel.startswith("relative error") and "reference" not in c.label]
    assert len(curves) == len(theory_checks.get("ntk_convergence").SCALES["smoke"]["configs"])
    slopes = [r.measured for r in rep.rows if r.quantity.startswith("slope of |Theta_m")]
    for c, slope in zip(curves, slopes):
        assert c.y[-1] < c.y[0] / 2  # 16x width: about 4x smaller error at rate m^-1/2
        np.testing.assert_allclose(np.polyfit(np.log(c.x), np.log(c.y), 1)[0], slope, rtol=1e-10)


@pytest.mark.slow
def test_gd_ensemble_values(smoke):
    """The pathwise gap to the infinite-width prediction shrinks with the width at every time."""
    rep = smoke("gd_ensemble")[0]
    gaps = [c for c in rep.curves if c.panel.startswith("pathwise")]
    assert len(gaps) == 3
    for c in gaps:
        assert c.y[-1] < 0.6 * c.y[0], c.y  # 16x width: m^-1/2 predicts a factor 4
        assert c.y[-1] < 0.2  # the targets are O(1); at m = 512 the gap is a few percent


@pytest.mark.slow
def test_sto_posterior_values(smoke):
    """The unperturbed Linear members' variance ratio at the training inputs matches the formula
    posterior - lam k A^-2 k to Monte Carlo accuracy, and the SMB Prop. 1 identity holds."""
    rep = smoke("sto_posterior")[0]
    ratio = rows(rep, "unperturbed: var / posterior var")[0]
    want = float(ratio.expected.split()[0])
    n = theory_checks.get("sto_posterior").SCALES["smoke"]["linear_members"]
    # A mean of 3 variance ratios, each with relative standard error sqrt(2 / M): 5 of them.
    assert abs(ratio.measured - want) <= 5 * want * np.sqrt(2 / n), (ratio.measured, want)
    assert want < 0.5  # the deficit is large at the data (the point of the fix)
    assert rows(rep, "Prop. 1 = gd_ensemble")[0].measured < 1e-10
    names = {r.quantity.split(":")[0].split(" m=")[0] for r in rep.rows}
    assert {"Linear", "STO-BNTS pathwise gap slope vs m", "STO-BNTS", "PosteriorSMB",
            "SimpleSMB"} <= names


@pytest.mark.slow
def test_neuralbo_identities_values(smoke):
    """Identities to rounding, inequalities strictly below their bounds, full coverage."""
    rep = smoke("neuralbo_identities")[0]
    for r in rows(rep, "sum log(1+a_t)"):
        assert r.measured < 1e-8
    assert rows(rep, "primal - dual")[0].measured < 1e-6
    for r in rows(rep, "sum min("):
        assert 0 < r.measured < 1
    assert rows(rep, "coverage")[0].measured >= 0.95


@pytest.mark.slow
def test_regret_scaling_values(smoke):
    """Cumulative regret curves are non-decreasing (regret is measured from the true minimum,
    lowered to the best evaluated value) and their slopes are sublinear."""
    rep = smoke("regret_scaling")[0]
    for c in rep.curves:
        if c.panel.startswith("cumulative regret"):
            assert np.all(np.diff(c.y) >= -1e-12)
    for r in rows(rep, "regret slope (95% CI"):
        assert r.measured < 1.0


FAULTS = [
    ("ntk_convergence", "wrong_kernel_scale", dict(configs=[["relu", 1]]), "slope of |Theta_m"),
    ("gd_ensemble", "wrong_kernel_scale", dict(widths=[32, 128], members=64), "slope of pathwise"),
    ("sto_posterior", "no_target_perturbation", dict(nonlinear=False, smb=False),
     "perturbed: cov error"),
    ("neuralbo_identities", "wrong_lam_primal", {}, "primal - dual"),
    ("neuralbo_identities", "wrong_kernel_scale", {}, "coverage"),
    ("regret_scaling", "wrong_exponent", {}, "regret slope"),
    ("regret_scaling", "linear_regret", dict(algorithms=["ntk_gp_ucb"]), "regret slope (95% CI"),
    # PDE data made independent of f carry no information about it.
    ("pinn_information_gain", "zero_cross_block", {}, "I(f; Y_T; U_r) with"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,fault,overrides,failing", FAULTS,
                         ids=[f"{f[0]}-{f[1]}" for f in FAULTS])
def test_faults_make_checks_fail(smoke, name, fault, overrides, failing):
    """A deliberately broken variant fails, and it fails on the rows the fault targets."""
    if name in ("neuralbo_identities", "regret_scaling") and not overrides:
        smoke(name)  # the fault reuses the cached smoke runs
    rep = theory_checks.run_check(name, KEY, "smoke", fault=fault, **overrides)
    assert not rep.passed
    targeted = rows(rep, failing)
    assert targeted and not all(r.passed for r in targeted), R.table(rep)


def _fake_check(monkeypatch, passed: bool):
    """A minimal check module registered under a new name: the command line's plumbing only."""
    mod = types.ModuleType("theory_checks.fake_check")
    mod.NAME, mod.CLAIM, mod.SOURCE = "fake_check", "1 + 1 = 2", "arithmetic"
    mod.FAULTS = {"off_by_one": "adds one"}
    mod.SCALES = {s: dict(fault=None) for s in theory_checks.SCALE_NAMES}

    def run(key, settings):
        rep = R.Report(mod.NAME, mod.CLAIM, mod.SOURCE, settings)
        value = 1 + 1 + (0 if passed else 1)
        rep.add("1 + 1", value, "== 2", value == 2, "2")
        rep.curve("values", "1 + 1", [1, 2], [value, value])
        return rep

    mod.run = run
    monkeypatch.setitem(sys.modules, "theory_checks.fake_check", mod)
    monkeypatch.setattr(theory_checks, "CHECKS", theory_checks.CHECKS + ["fake_check"])


@pytest.mark.parametrize("passed", [True, False])
def test_cli_exit_code_and_files(monkeypatch, tmp_path, capsys, passed):
    _fake_check(monkeypatch, passed)
    code = main(["fake_check", "--scale", "smoke", "--out", str(tmp_path), "--seed", "3"])
    assert code == (0 if passed else 1)
    out = capsys.readouterr().out
    assert "fake_check" in out and ("ALL PASSED" if passed else "SOME CHECKS FAILED") in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["seed"] == 3 and summary["checks"]["fake_check"]["passed"] is passed
    assert (tmp_path / "fake_check.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit):
        main(["no_such_check", "--out", str(tmp_path)])
