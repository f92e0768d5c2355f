package ledger

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

// gdpSpent returns a ledger whose data set has the total (ε, δ) =
// (100, 1e-3) and follows the Gaussian-DP filter, with μ = 0.27 spent by
// one Gaussian-only run.
func gdpSpent(t *testing.T) (*Ledger, string) {
	t.Helper()
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("keep")
	require.NoError(t, l.SetBudget(ctx, h, "keep", approxG(100, 1e-3)))
	g := zcdpG(0.27 * 0.27 / 2)
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	require.Equal(t, RuleGDP, st.Rule)
	require.InDelta(t, 0.27, st.Spent.Mu, 1e-9)
	return l, h
}

// The reproduction: under the Gaussian-DP filter an outside spend stated
// as ρ or (ε, δ) carries no Gaussian-DP statement. Recording it used to
// succeed with a warning and leave the data set admitting nothing, for
// ever (μ ≈ 11.44 of ε ≈ 99.95 lost). It is now refused before it is
// written, with its cost under the rule; a μ-GDP spend is recorded and
// counted; and a spend recorded anyway (Force) has a way back.
func TestOutsideSpendCannotDestroyABudget(t *testing.T) {
	ctx := context.Background()
	l, h := gdpSpent(t)
	before, err := l.Show(ctx, h)
	require.NoError(t, err)
	for _, cost := range []privacy.Grant{zcdpG(0.01), approxG(0.5, 1e-6)} {
		id, err := l.RecordCharge(ctx, h, ChargeRequest{Cost: cost, Note: "by hand"})
		require.ErrorIs(t, err, ErrIncompatible, "%v", cost)
		assert.Zero(t, id, "nothing recorded")
		for _, want := range []string{"nothing was recorded", "Gaussian-DP filter", "no Gaussian-DP statement", "μ = 11.4", "ε = 99.9"} {
			assert.Contains(t, err.Error(), want)
		}
	}
	after, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, before.Spent, after.Spent)
	assert.Equal(t, before.Remaining, after.Remaining)
	assert.Equal(t, before.Runs, after.Runs)

	// A μ-GDP spend is what the rule counts.
	_, err = l.RecordCharge(ctx, h, ChargeRequest{Mu: 0.1, Note: "a Gaussian release, σ = 10Δ"})
	require.NoError(t, err)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 0.27*0.27+0.01, st.Spent.Mu*st.Spent.Mu, 1e-9)
	assert.Equal(t, RuleGDP, st.Rule)
	g := approxG(1, 1e-6)
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "")

	// Recorded anyway: the rule then admits nothing, and a total change
	// (even to the same total) counts the history under the classic rule,
	// which counts every charge.
	id, err := l.RecordCharge(ctx, h, ChargeRequest{Cost: zcdpG(0.01), Note: "by hand", Force: true})
	require.ErrorIs(t, err, ErrIncompatible)
	assert.Positive(t, int64(id), "recorded")
	_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: approxG(1, 1e-6)})
	require.ErrorIs(t, err, ErrIncompatible)
	require.NoError(t, l.ChangeBudget(ctx, h, approxG(100, 1e-3), "count the outside spend"))
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RuleClassic, st.Rule)
	assert.InDelta(t, 0.27*0.27/2+0.01/2+0.01+muOf(t, approxG(1, 1e-6))/2, st.Spent.Rho, 1e-9, "every charge counted, in zCDP")
	assert.Greater(t, st.Remaining.Rho, 60.0)
	reserve(t, l, h, zcdpG(1))
	_, err = l.Verify(ctx)
	require.NoError(t, err)
}

// A data set over its total (an outside spend recorded anyway) accepts a
// larger total even while the history does not fit it: that never lowers
// what is recorded as spent. A smaller total is still refused.
func TestLargerTotalAcceptedOverBudget(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("over")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))
	_, err := l.RecordCharge(ctx, h, ChargeRequest{Cost: pureG(1.5), Note: "a report"})
	require.ErrorIs(t, err, ErrBudgetExceeded, "refused without Force")
	assert.Contains(t, err.Error(), "nothing was recorded")
	_, err = l.RecordCharge(ctx, h, ChargeRequest{Cost: pureG(1.5), Note: "a report", Force: true})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	require.ErrorIs(t, l.ChangeBudget(ctx, h, pureG(0.9), "lower"), ErrBudgetExceeded)
	require.NoError(t, l.ChangeBudget(ctx, h, pureG(1.2), "larger, still short"))
	_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(0.01)})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	require.NoError(t, l.ChangeBudget(ctx, h, pureG(2), "enough"))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, st.Remaining.Epsilon, 1e-9)
}

// A plugin whose steps break its declaration (a Laplace step in a run
// granted (ε, δ)) under the Gaussian-DP filter used to leave a charge with
// no Gaussian-DP statement, after which the budget admitted nothing. Its
// steps are each μ-GDP (a Laplace step of ε_j is μ_{ε_j}-GDP), so the run
// is charged their sum, and the budget keeps admitting.
func TestBrokenDeclarationKeepsTheBudget(t *testing.T) {
	ctx := context.Background()
	l, h := gdpSpent(t)
	g := approxG(0.5, 1e-7)
	steps := mixedRun(t, g)
	want := mixedMu2(t, g, steps)
	for _, out := range []Outcome{
		OutcomeOf(errors.New("broke its declaration"), steps),
		{Status: Succeeded, Steps: steps, Guarantee: privacy.Approx},
	} {
		id := reserve(t, l, h, g)
		_ = l.Settle(ctx, id, out)
		r, err := l.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, Failed, r.State)
		assert.InDelta(t, want, r.Charge.Mu2, 1e-12, "the steps' own GDP statement, never below the reservation")
		reserve(t, l, h, g)
	}
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RuleGDP, st.Rule)
	assert.Positive(t, st.Remaining.Mu)
}

// mixedMu2 is the GDP statement of a mixed run's steps, in closed form:
// Σ (Δ/σ)² over its Gaussian steps plus Σ μ_ε² over its Laplace ones, or
// its grant's μ_g² when that is larger.
func mixedMu2(t *testing.T, g privacy.Grant, steps []privacy.Step) float64 {
	t.Helper()
	var sum float64
	for _, s := range steps {
		mu := s.Sensitivity / s.Scale
		if s.Mechanism == privacy.MechLaplace {
			mu = privacy.PureMu(s.Epsilon)
		}
		sum += mu * mu
	}
	muG, err := privacy.GDPMu(g.Epsilon, g.Delta)
	require.NoError(t, err)
	return math.Max(sum, muG*muG)
}

// muOf is μ_g² of an (ε, δ) grant.
func muOf(t *testing.T, g privacy.Grant) float64 {
	t.Helper()
	mu, err := privacy.GDPMu(g.Epsilon, g.Delta)
	require.NoError(t, err)
	return mu * mu
}
