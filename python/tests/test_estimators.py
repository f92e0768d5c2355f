"""End-to-end tests of the dplr Python package through bin/dplr and bin/plugins."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import dplr


def sin_theta(u: np.ndarray, v: np.ndarray) -> float:
    """‖sin Θ(u, v)‖₂ of two orthonormal p×r bases."""
    s = np.linalg.svd(u.T @ v, compute_uv=False)
    return float(math.sqrt(max(0.0, 1 - s.min() ** 2)))


# ---- catalogue ----------------------------------------------------------------

def test_every_estimator_has_a_class_of_its_family():
    fam = {"rows": dplr.PCA, "trace": dplr.TraceRegression, "users": dplr.Personalization}
    names = dplr.estimator_names()
    assert {"pca-analyze-gauss", "rgrad-strict", "fedrep-private"} <= set(names)
    for name in names:
        cls = dplr.estimator_class(name)
        assert issubclass(cls, fam[dplr.describe(name).data_kind])
        assert getattr(dplr, dplr.class_name(name)) is cls
        assert name in cls.__doc__


def test_keyword_arguments_are_checked_against_the_catalogue():
    with pytest.raises(dplr.ParameterError, match="unknown parameter 'rnak'"):
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-6, rnak=2)
    with pytest.raises(dplr.ParameterError, match="is an int"):
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-6, rank="two")
    with pytest.raises(dplr.ParameterError, match="must be one of"):
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-6, center="median")
    with pytest.raises(dplr.ParameterError, match="reads trace data"):
        dplr.PCA(estimator="rgrad-strict")
    with pytest.raises(dplr.ParameterError) as e:
        dplr.PcaAnalyzeGauss(rnak=2)
    assert e.value.exit_code == 2 and isinstance(e.value, dplr.UsageError)


def test_sklearn_params_roundtrip():
    p = dplr.PcaAnalyzeGauss(epsilon=1.0, delta=1e-6, rank=2, clip=12)
    params = p.get_params()
    assert params["rank"] == 2 and params["epsilon"] == 1.0
    q = type(p)(**params)
    assert q.get_params() == params
    q.set_params(rank=3)
    assert q.params["rank"] == 3


# ---- PCA ----------------------------------------------------------------------

def test_pca_end_to_end(spiked):
    X, U = spiked
    pca = dplr.PcaAnalyzeGauss(epsilon=1.0, delta=1e-5, rank=2, clip=12, center="none", output_sigma=True, seed=1)
    Z = pca.fit_transform(X)
    assert pca.components_.shape == (2, 10)
    assert Z.shape == (2000, 2)
    np.testing.assert_allclose(pca.components_ @ pca.components_.T, np.eye(2), atol=1e-8)
    assert sin_theta(pca.components_.T, U) < 0.5
    assert pca.explained_variance_.shape == (2,)
    assert pca.explained_variance_ratio_ is not None and 0 < pca.explained_variance_ratio_.sum() < 1
    assert pca.mean_ is None  # center=none: no mean released

    centred = dplr.PcaAnalyzeGauss(epsilon=1.0, delta=1e-5, rank=2, center="private", seed=1).fit(X)
    assert centred.mean_.shape == (10,)
    np.testing.assert_allclose(centred.transform(X[:4]), (X[:4] - centred.mean_) @ centred.components_.T)
    pr = pca.privacy_
    assert pr.kind == "approx" and 0 < pr.epsilon <= 1.0 and pr.delta == pytest.approx(1e-5)
    assert "row" in pr.neighbours and pr.assumptions and pr.steps and pr.seeded
    assert pr.steps[0]["mechanism"] == "gaussian"
    assert "differential privacy" in str(pr)
    assert pca.releases_["U"] == "public"
    # the seed reproduces
    again = dplr.PcaAnalyzeGauss(epsilon=1.0, delta=1e-5, rank=2, clip=12, center="none", output_sigma=True, seed=1).fit(X)
    np.testing.assert_array_equal(again.components_, pca.components_)


def test_pca_pure_and_rho_budgets(spiked):
    X, _ = spiked
    amin = dplr.PCA(estimator="pca-amin", epsilon=2.0, rank=1, clip=12, seed=3).fit(X)
    assert amin.privacy_.kind == "pure" and amin.privacy_.delta in (None, 0)
    assert amin.components_.shape == (1, 10)
    ag = dplr.PCA(rho=0.05, rank=2, clip=12).fit(X)
    assert ag.privacy_.rho == pytest.approx(0.05, rel=1e-6)
    assert amin.explained_variance_ratio_ is None  # no private total released
    with pytest.raises(dplr.ParameterError, match="does not accept"):
        dplr.PCA(estimator="pca-amin", rho=0.1, rank=1, clip=12).fit(X)


def test_privacy_statements_are_read_from_the_result():
    # A pure run with a tighter (ε, δ) statement: each in its own keys.
    result = {"privacy": {"guarantee": "pure", "epsilon": 1.371, "delta": 0, "rho": 0.094,
                          "statements": {"pure_epsilon": 1.371, "epsilon": 0.958, "delta": 1e-6, "rho": 0.094}}}
    p = dplr.Privacy.from_result(result)
    assert p.kind == "pure" and p.epsilon == 1.371 and p.delta == 0
    assert p.statements == {"pure_epsilon": 1.371, "epsilon": 0.958, "delta": 1e-6, "rho": 0.094}
    assert dplr.Privacy.from_result({"privacy": {}}).statements == {}


def test_nonprivate_reference_needs_opt_in(spiked):
    X, U = spiked
    with pytest.raises(dplr.ParameterError, match="give a budget"):
        dplr.PCA(estimator="pca-nonprivate", rank=2).fit(X)
    ref = dplr.PCA(estimator="pca-nonprivate", rank=2, non_private=True).fit(X)
    assert ref.privacy_.kind == "none" and sin_theta(ref.components_.T, U) < 0.2


# ---- trace regression and personalization -------------------------------------

def test_trace_regression_end_to_end(trace):
    X, y, M = trace
    reg = dplr.RgradStrict(epsilon=2.0, delta=1e-5, rank=2, clip_y=10, clip=5, seed=2).fit(X, y)
    assert reg.coef_.shape == (6, 5)
    assert np.linalg.norm(reg.coef_ - M) / np.linalg.norm(M) < 0.6
    pred = reg.predict(X[:200])
    assert pred.shape == (200,) and np.corrcoef(pred, y[:200])[0, 1] > 0.6
    np.testing.assert_allclose(reg.predict(X[:5].reshape(5, -1)), pred[:5])
    assert reg.privacy_.kind in ("approx", "zcdp") and reg.privacy_.epsilon <= 2.0


def test_personalization_end_to_end(users):
    X, y, ids = users
    fr = dplr.FedrepPrivate(epsilon=4.0, delta=1e-3, rank=2, seed=5).fit(X, y, ids)
    assert fr.representation_.shape == (10, 2)
    assert set(fr.heads_) == set(np.unique(ids).tolist())
    assert fr.releases_["V"] == "per-user" and fr.releases_["U"] == "public"
    pred = fr.predict(X[:50], ids[:50])
    assert pred.shape == (50,) and np.all(np.isfinite(pred))
    assert "user" in fr.privacy_.neighbours
    with pytest.raises(ValueError, match="no head"):
        fr.predict(X[:1], [10**9])


# ---- refusals arrive as exceptions with nothing spent --------------------------

def _runs(X) -> int:
    return dplr.budget(X).show()["runs"]["total"]


def test_bad_parameter_is_a_usage_error_with_nothing_spent(spiked):
    X, _ = spiked
    with pytest.raises(dplr.UsageError) as e:
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=0, clip=12).fit(X)
    assert e.value.exit_code == 2 and "rank" in e.value.message
    with pytest.raises(dplr.UsageError) as e:  # required parameter missing
        dplr.RgradStrict(epsilon=1, delta=1e-5, clip_y=10, clip=5).fit(np.zeros((10, 2, 2)), np.zeros(10))
    assert e.value.exit_code == 2 and "rank" in e.value.message
    assert _runs(X) == 0


def test_budget_exhausted_is_refused_with_nothing_spent(spiked):
    X, _ = spiked
    b = dplr.budget(X)
    shown = b.set(epsilon=1.1, delta=1e-5, name="spiked")
    assert shown["has_budget"] and shown["total"]["epsilon"] == 1.1
    p = dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=2, clip=12)
    p.fit(X)
    before = b.show()["spent"]
    with pytest.raises(dplr.BudgetRefused) as e:
        p.fit(X.copy())  # the same values again: the same data set for the ledger
    assert e.value.exit_code == 3 and not e.value.may_have_spent
    after = b.show()
    assert after["spent"] == before
    hist = b.history()
    assert [r["state"] for r in hist].count("succeeded") == 1
    assert dplr.budget(dataset="spiked").show()["data_hash"] == p.data_hash_


def test_same_array_same_dataset(spiked):
    X, _ = spiked
    a = dplr.PcaAnalyzeGauss(epsilon=0.5, delta=1e-5, rank=2, clip=12).fit(X)
    b = dplr.PcaAnalyzeGauss(epsilon=0.5, delta=1e-5, rank=2, clip=12).fit(np.asfortranarray(X))
    assert a.data_hash_ == b.data_hash_
    assert _runs(X) == 2


def test_nan_data_is_a_data_error_with_nothing_spent(spiked):
    X, _ = spiked
    bad = X.copy()
    bad[3, 4] = np.nan
    with pytest.raises(dplr.DataError) as e:
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=2, clip=12).fit(bad)
    assert e.value.exit_code == 5 and "NaN" in e.value.message
    assert dplr.ledger_list() in (None, [])


def test_temporary_files_are_removed(spiked):
    X, _ = spiked
    dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=2, clip=12).fit(X)
    with pytest.raises(dplr.UsageError):
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=0, clip=12).fit(X)
    assert os.listdir(dplr.config.tmpdir) == []


def test_missing_binary_is_reported(monkeypatch):
    monkeypatch.setattr(dplr.config, "binary", "/nonexistent/dplr")
    with pytest.raises(dplr.DplrNotFound, match="DPLR_BIN"):
        dplr.catalogue(refresh=True)


def test_exit_code_table_matches_the_cli():
    assert {c: cls.__name__ for c, cls in dplr.EXIT_CODES.items()} == {
        1: "RuntimeFailure", 2: "UsageError", 3: "BudgetRefused", 4: "PluginFailure",
        5: "DataError", 6: "EstimatorFailure", 130: "Interrupted"}


def test_interrupted_run_raises_and_is_not_charged(spiked, monkeypatch):
    X, _ = spiked
    est = dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=2, clip=12)
    assert est.info  # the catalogue is read before the deadline is set
    monkeypatch.setattr(dplr.config, "timeout", 0.001)
    with pytest.raises(dplr.Interrupted) as e:
        est.fit(X)
    assert e.value.exit_code == 130
    monkeypatch.setattr(dplr.config, "timeout", None)
    for run in dplr.budget(X).history():
        assert run["state"] != "succeeded"
    # may_have_spent is what the ledger recorded for that process's run
    run = e.value.ledger_run
    assert run is None or run["pid"] == e.value.pid
    assert e.value.may_have_spent == (run is not None and (run["state"] in ("reserved", "interrupted")
                                                           or any(v > 0 for v in run["charge"].values()
                                                                  if isinstance(v, (int, float)))))
    assert os.listdir(dplr.config.tmpdir) == []


def test_spool_reuses_one_file_per_array(spiked, tmp_path, monkeypatch):
    X, _ = spiked
    spool = tmp_path / "spool"
    monkeypatch.setattr(dplr.config, "spool_dir", str(spool))
    a = dplr.PcaAnalyzeGauss(epsilon=0.5, delta=1e-5, rank=2, clip=12).fit(X)
    files = sorted(p for p in os.listdir(spool) if p.endswith(".npy"))
    mtime = os.stat(spool / files[0]).st_mtime_ns
    b = dplr.PcaAnalyzeGauss(epsilon=0.5, delta=1e-5, rank=2, clip=12).fit(X.copy())
    assert sorted(p for p in os.listdir(spool) if p.endswith(".npy")) == files and len(files) == 1
    assert os.stat(spool / files[0]).st_mtime_ns == mtime and oct(os.stat(spool / files[0]).st_mode)[-3:] == "600"
    assert a.data_hash_ == b.data_hash_
    monkeypatch.setattr(dplr.config, "spool_max_bytes", 1)
    dplr.PcaAnalyzeGauss(epsilon=0.5, delta=1e-5, rank=2, clip=12).fit(X[:1000])
    assert len(os.listdir(spool)) == 2  # the older file (and its stamp) was evicted


def test_pca_transform_applies_every_released_preprocessing_as_the_cli(spiked):
    """PCA.transform runs dplr transform: the released feature_scale, the
    released mean and --scale are applied exactly as the CLI applies them
    (it used to skip the division by feature_scale)."""
    X, _ = spiked
    X = X * np.linspace(1, 40, X.shape[1])  # columns in different units
    pca = dplr.PcaAnalyzeGauss(epsilon=2.0, delta=1e-5, rank=2, center="private", feature_scale="private",
                               scale=0.5, seed=3).fit(X)
    fs = pca.outputs_.get("feature_scale")
    assert fs is not None and fs.shape[-1] == X.shape[1]
    want = ((X[:5] * 0.5) / fs.ravel() - pca.mean_) @ pca.components_.T
    np.testing.assert_allclose(pca.transform(X[:5]), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("code,run,spent", [
    (-9, None, False),                                                     # killed before reserving
    (-9, {"state": "interrupted", "charge": {"epsilon": 1.0}}, True),      # killed after reserving
    (5, {"state": "failed", "charge": {"epsilon": 1.0, "delta": 1e-6}}, True),  # exit 5 after a charge
    (6, {"state": "failed", "charge": {"epsilon": 0}, "refunded": True}, False),
    (4, {"state": "unknown"}, True),                                      # ledger unreadable: the exit code
    (2, {"state": "reserved", "charge": {}}, True),
])
def test_may_have_spent_follows_the_ledger_record(code, run, spent):
    e = dplr.errors.error_for_exit(code, "dplr: failed", ["fit"], pid=123)
    e.settle_from_ledger(run)
    assert e.may_have_spent is spent and e.pid == 123


def test_dplr_warnings_reach_python(spiked):
    """A seeded fit is reproducible, hence not private against whoever knows
    the seed: dplr says so on stderr, and Python raises it as a warning."""
    X, _ = spiked
    with pytest.warns(dplr.DplrWarning, match="seed"):
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=2, clip=12, seed=1).fit(X)


def test_a_result_warning_reaches_python():
    """A table whose first column's variance dwarfs the others' (units): the
    released first component is that column alone, and the fit's warning
    is a DplrWarning and in warnings_ (not only a note)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4000, 6))
    X[:, 0] *= 1000.0
    with pytest.warns(dplr.DplrWarning, match="component 1 is column 1 alone"):
        est = dplr.PcaAnalyzeGauss(epsilon=4, delta=1e-6, rank=2).fit(X)
    assert any("--column-scales" in w for w in est.warnings_)


def test_plan_spends_nothing_and_a_near_random_fit_warns_before_spending(spiked):
    """dplr.plan answers the steps and the indicator with nothing recorded;
    a fit the plan calls near random warns (a DplrWarning), a well-powered
    one does not."""
    X, _ = spiked
    tiny = X[:100]
    plan = dplr.plan("pca-amin", tiny, epsilon=0.05, rank=2)
    assert {"steps", "accounting", "expected_score", "random_score", "near_random"} <= set(plan)
    assert plan["near_random"] and plan["accounting"] == "pure"
    assert sum(s["epsilon"] for s in plan["steps"]) == pytest.approx(0.05)
    assert dplr.budget(tiny).history() == []  # nothing recorded
    with pytest.warns(dplr.DplrWarning, match="near random"):
        dplr.PcaAmin(epsilon=0.05, rank=2).fit(tiny)
    assert len(dplr.budget(tiny).history()) == 1
    good = dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-5, rank=2)
    assert not good.plan(X)["near_random"]


def test_column_scales_are_applied_before_the_fit_and_by_transform(spiked):
    """column_scales divide each column before the fit (a non-private PCA of
    a table with one column in other units equals the PCA of the rescaled
    table), are recorded in result_, and transform applies them."""
    X, _ = spiked
    units = np.ones(X.shape[1])
    units[3] = 1000.0
    raw = X * units
    a = dplr.PcaNonprivate(non_private=True, rank=2, column_scales=units).fit(raw)
    b = dplr.PcaNonprivate(non_private=True, rank=2).fit(X)
    assert a.result_["data"]["column_scales"] == list(units)
    np.testing.assert_allclose(np.abs(a.components_ @ b.components_.T), np.eye(2), atol=1e-8)
    np.testing.assert_allclose(np.abs(a.transform(raw[:5])), np.abs(b.transform(X[:5])), rtol=1e-8, atol=1e-8)
    assert a.data_hash_ == dplr.PcaNonprivate(non_private=True, rank=2).fit(raw).data_hash_, \
        "the budget's key is the raw table's"


def test_edited_spool_file_is_rewritten_not_fitted(spiked, tmp_path, monkeypatch):
    """A spool file changed after it was written (here replaced by other
    values of the same shape) is written again from the array, never fitted
    in its place."""
    X, _ = spiked
    spool = tmp_path / "spool"
    monkeypatch.setattr(dplr.config, "spool_dir", str(spool))
    a = dplr.PcaNonprivate(non_private=True, rank=2).fit(X)
    (f,) = [p for p in os.listdir(spool) if p.endswith(".npy")]
    np.save(spool / "evil.npy", X[::-1] * 7)
    os.replace(spool / "evil.npy", spool / f)
    b = dplr.PcaNonprivate(non_private=True, rank=2).fit(X)
    assert b.content_hash_ == a.content_hash_, "the fit read the array, not the replaced file"
    np.testing.assert_array_equal(np.load(spool / f), X)


def test_budget_merge_and_unlink(spiked, tmp_path):
    """merge charges the kept data set with every charge of the other, whose
    data then counts against it; unlink gives a linked file a data set of its
    own charged what the one it leaves was charged: neither lowers a spend."""
    X, _ = spiked
    other = np.random.default_rng(5).normal(size=(400, X.shape[1]))  # the same people, collected apart
    a, b = dplr.budget(X), dplr.budget(other)
    a.set(epsilon=10, delta=1e-5, name="a")
    b.set(epsilon=10, delta=1e-5, name="b")
    a.charge(epsilon=1, delta=1e-6, note="an outside release")
    b.charge(epsilon=2, delta=1e-6, note="another")
    shown = b.merge("a", note="the same people")
    assert shown["name"] == "a"
    assert shown["spent"]["epsilon"] >= 3 - 1e-9
    c = dplr.budget(X[:300] + 1.0)
    c.link("a", note="a copy")
    before = a.show()["spent"]["epsilon"]
    own = c.unlink(note="not the same people after all")
    assert own["data_hash"] != a.show()["data_hash"]
    assert own["spent"]["epsilon"] >= before - 1e-9
    assert a.show()["spent"]["epsilon"] >= before - 1e-9


def test_private_selection_is_one_run(spiked):
    X, _ = spiked
    b = dplr.budget(X)
    b.set(epsilon=3, delta=1e-5, name="spiked")
    p = dplr.PCA(epsilon=1, delta=1e-6, rank=2, select={"clip_quantile": [0.5, 0.9]})
    p.fit(X)
    cands = [{"clip_quantile": 0.5}, {"clip_quantile": 0.9}]
    assert p.selection_["candidates"] == cands
    assert p.selection_["chosen"] in cands
    assert p.outputs_["selected_clip_quantile"] == p.selection_["chosen"]["clip_quantile"]
    hist = b.history()
    assert len(hist) == 1 and hist[0]["state"] == "succeeded"  # one ledger run
    assert b.show()["spent"]["epsilon"] <= 1 + 1e-9
    with pytest.raises(dplr.ParameterError):
        dplr.PCA(epsilon=1, delta=1e-6, select={"no_such": [1, 2]})
