"""The fuzz of ``tests/fuzz.py`` at CI size (runs and abuse cases), and its checkers on known
defects."""

import fuzz
import numpy as np


class _Res:
    """The fields of ``ntkbo.Result`` that ``fuzz.check`` reads, for one run (leading axis 1)."""

    def __init__(self, x, failed, best_y, info):
        self.x, self.failed, self.best_y, self.info = (np.asarray(x)[None], np.asarray(failed)[None],
                                                       np.asarray(best_y)[None], info)


def test_check_flags_each_defect_it_is_meant_to_find():
    """The checker itself: a NaN point, a NaN best value while an evaluation succeeded, and a
    non-finite acquisition value with no counter are flagged; the same round with
    ``ts_retries > 0`` or ``train_ok`` False, or GO-UCB's exploration phase, is not silent; a
    run where every evaluation failed may have a NaN best value."""
    x = np.zeros((4, 2))
    ok_info = {"acq_value": np.ones((1, 2, 1))}
    assert fuzz.check(_Res(x, [False] * 4, 1.0, ok_info), 0) == []
    assert fuzz.check(_Res(np.where(np.eye(4, 2), np.nan, x), [False] * 4, 1.0, ok_info),
                      0) == ["nan_x"]
    assert fuzz.check(_Res(x, [True, False, True, True], np.nan, ok_info), 0) == ["nan_best"]
    assert fuzz.check(_Res(x, [True] * 4, np.nan, ok_info), 0) == []
    blind = {"acq_value": np.array([[[1.0], [np.nan]]])}
    assert fuzz.check(_Res(x, [False] * 4, 1.0, blind), 0) == ["silent_blind_rounds=1"]
    for flag in ({"ts_retries": np.array([[0, 3]])}, {"train_ok": np.array([[True, False]])},
                 {"phase": np.array([[2, 1]])}):
        assert fuzz.check(_Res(x, [False] * 4, 1.0, {**blind, **flag}), 0) == []


def test_ten_fuzzed_runs_pass():
    """Ten runs (two compiled groups: float32 then float64) of random search and NTK-GP-UCB on
    random problems with NaN regions and extreme scales pass every check; the draw holds at least
    one failed evaluation and one run at a scale of 1e20 or 1e-30 (so the checks were exercised)."""
    tally = fuzz.fuzz(10, seed=3, per_group=5, algos=["random_search", "ntk_gp_ucb"],
                      log=lambda s: None)
    assert tally["runs"] == 10 and not tally["errors"], tally["errors"]
    assert not tally["failures"], tally["failures"]
    assert tally["failed_evaluations"] > 0
    assert set(tally["by_dtype"]) == {"float32", "float64"}


def test_abuse_cases_end_in_a_clear_error_or_a_correct_result():
    """Sixty abuse cases (twelve per class: options, update, minimize, ask/tell, files) in
    float32: none is silently wrong, loses data or raises a raw error; each class ran."""
    report = fuzz.abuse(60, seed=1, log=lambda s: None)
    assert not report["findings"], report["findings"]
    for cls, counts in report["counts"].items():
        assert sum(counts.values()) == 12, (cls, counts)
        assert counts["clear_error"] > 0, (cls, counts)


def test_abuse_checker_flags_an_unchecked_update_and_untyped_options(monkeypatch):
    """The classifier itself, on the defects it is meant to find: with the type rule turned off
    (``check_types`` a no-op) a string recorded for a boolean or numeric option is
    ``silent_wrong``; with ``update`` unchecked a stored NaN point is ``silent_wrong``."""
    import ntkbo.algorithms as A
    import ntkbo.parts as P

    monkeypatch.setattr(P, "check_types", lambda *a, **k: None)
    monkeypatch.setattr(A, "check_types", lambda *a, **k: None)
    monkeypatch.setattr(A, "checked_update", lambda update, n_constraints=0: update)
    monkeypatch.setattr(fuzz, "_STATES", {})
    report = fuzz.abuse(100, seed=0, classes=("options", "update"), log=lambda s: None)
    assert report["counts"]["options"]["silent_wrong"] > 0, report["counts"]
    assert report["counts"]["update"]["silent_wrong"] > 0, report["counts"]
    assert any("nan_x: accepted" in f for f in report["findings"]), report["findings"]
