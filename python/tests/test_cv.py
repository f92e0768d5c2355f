"""Cross-validation with a budget: the ledger counts the folds scikit-learn
makes against the budget of the array they were cut from (issue 26 §7)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dplr

model_selection = pytest.importorskip("sklearn.model_selection")


def _gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) of a μ-GDP mechanism (Dong, Roth and Su 2022)."""
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))  # noqa: E731
    return phi(-eps / mu + mu / 2) - math.exp(eps) * phi(-eps / mu - mu / 2)


def _bisect(f, lo: float, hi: float) -> float:
    """The root of an increasing f on [lo, hi]."""
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if f(mid) > 0 else (mid, hi)
    return lo


def _gdp_mu(eps: float, delta: float) -> float:
    """The μ of a μ-GDP mechanism that is exactly (eps, delta)-DP."""
    return _bisect(lambda mu: _gdp_delta(mu, eps) - delta, 1e-3, 20.0)


def _captured(est, X, y=None) -> float:
    """Share of the held-out rows' energy the released components capture."""
    return float(np.sum(est.transform(X) ** 2) / np.sum(np.asarray(X) ** 2))


def _grid(eps: float):
    return model_selection.GridSearchCV(dplr.PcaAnalyzeGauss(epsilon=eps, delta=1e-6, rank=2, clip=12),
                                        {"rank": [2, 3]}, cv=2, scoring=_captured, error_score="raise")


def test_budgeted_grid_search_is_charged_to_the_array(spiked, dplr_config):
    X, _ = spiked
    X = X[:600]
    b = dplr.budget(X)
    b.set(epsilon=10, delta=1e-5, name="cv")
    with pytest.warns(dplr.DplrWarning, match="counted against the budgeted data set cv"):
        g = _grid(1.0).fit(X)
    assert g.best_params_["rank"] in (2, 3)

    shown = b.show()
    assert shown["runs"]["total"] == 5 and shown["runs"]["succeeded"] == 5  # 2 ranks × 2 folds + refit
    assert shown["runs"]["linked"] == 4, "the four fold fits ran on files linked to X"
    # Gaussian-DP filter: five exactly calibrated (1, 1e-6) runs compose to √5·μ(1, 1e-6).
    assert shown["rule"] == "gaussian-dp"
    assert shown["spent"]["mu"] == pytest.approx(math.sqrt(5) * _gdp_mu(1.0, 1e-6), rel=1e-6)
    hist = b.history()
    assert len(hist) == 5
    folds = {r["data"] for r in hist if r.get("data")}
    assert folds == set(shown["aliases"]) and len(folds) == 2, "each training fold is linked to X"
    assert sum(1 for r in hist if not r.get("data")) == 1, "the refit ran on X itself"

    # A grid whose fits would each fit the total alone, but not what is left,
    # is refused at its first fit, naming the array's data set, with nothing
    # more spent. (scikit-learn fits one at a time: the ledger refuses each
    # fit that does not fit, and fits admitted before it stay charged.)
    mu_total = _gdp_mu(10, 1e-5)
    mu_left = math.sqrt(mu_total ** 2 - shown["spent"]["mu"] ** 2)
    assert shown["remaining"]["mu"] == pytest.approx(mu_left, rel=1e-6)
    eps = _bisect(lambda e: _gdp_mu(e, 1e-6) - (mu_left + mu_total) / 2, 0.01, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dplr.DplrWarning)
        with pytest.raises(dplr.BudgetRefused) as e:
            _grid(eps).fit(X)
    assert e.value.exit_code == 3 and not e.value.may_have_spent
    assert "cv" in e.value.message
    assert ".npy" not in e.value.message and str(dplr_config.tmpdir) not in e.value.message
    after = b.show()
    assert after["spent"] == shown["spent"] and after["runs"]["total"] == 5


def test_a_fold_has_no_budget_of_its_own(spiked):
    X, _ = spiked
    X = X[:600]
    b = dplr.budget(X)
    b.set(epsilon=10, delta=1e-5, name="cv")
    fold = X[:420]
    with pytest.warns(dplr.DplrWarning, match="counted against"):
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-6, rank=2, clip=12).fit(fold)
    assert dplr.budget(fold).show()["data_hash"] == b.show()["data_hash"]
    with pytest.raises(dplr.BudgetRefused) as e:
        dplr.budget(fold).set(epsilon=5, delta=1e-5)
    assert "linked to the data set cv" in e.value.message and ".npy" not in e.value.message
    assert "dplr.budget(X).unlink()" in e.value.message
    with pytest.raises(dplr.BudgetRefused):  # a fold is budgeted data: no non-private reference on it
        dplr.PcaNonprivate(non_private=True, rank=2).fit(X[100:500])
    # A superset with most of its rows elsewhere is refused; the advice names
    # the data set, not a temporary file.
    other = np.random.default_rng(3).normal(size=(2000, X.shape[1]))
    with pytest.raises(dplr.BudgetRefused) as e:
        dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-6, rank=2, clip=12).fit(np.vstack([X, other]))
    assert 'dplr.budget(X).link("cv")' in e.value.message and ".npy" not in e.value.message
    assert b.show()["runs"]["total"] == 1


def test_messages_name_the_array_not_a_temporary_file(dplr_config):
    X = np.random.default_rng(1).normal(size=(100, 4))
    X[3, 2] = np.nan
    for call in (lambda: dplr.PcaAnalyzeGauss(epsilon=1, delta=1e-6, rank=2, clip=5).fit(X),
                 lambda: dplr.budget(X).set(epsilon=1)):
        with pytest.raises(dplr.DataError) as e:
            call()
        assert "the array" in e.value.message and "row 3, column 2" in e.value.message
        assert str(dplr_config.tmpdir) not in str(e.value)


def test_grid_search_before_and_after_the_total(spiked):
    """Folds fitted before the array had a total are merged into its data set
    on their next fit: the earlier fold runs used its rows, and are charged."""
    X, _ = spiked
    X = X[:600]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dplr.DplrWarning)
        _grid(1.0).fit(X)  # no total yet: five runs on three data sets
        b = dplr.budget(X)
        b.set(epsilon=10, delta=1e-5, name="cv")
        assert b.show()["runs"]["total"] == 1  # the refit on X itself
        _grid(1.0).fit(X)
    shown = b.show()
    assert shown["rule"] == "gaussian-dp"
    # all ten runs, the four earlier fold runs merged in: √10·μ(1, 1e-6)
    assert shown["spent"]["mu"] == pytest.approx(math.sqrt(10) * _gdp_mu(1.0, 1e-6), rel=1e-6)
    assert len(shown["aliases"]) == 2
