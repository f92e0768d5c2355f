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

// exactRun runs one Gaussian-only estimator under g with noise=exact (one
// share of steps Gaussian steps) and returns its steps.
func exactRun(t *testing.T, g privacy.Grant, noise string, steps int) []privacy.Step {
	t.Helper()
	acct, err := privacy.NewAccountant(g)
	require.NoError(t, err)
	plan, err := privacy.NewPlan(acct, noise, privacy.Share{Name: "g", Weight: 1, Steps: steps})
	require.NoError(t, err)
	b, err := plan.Budget("g")
	require.NoError(t, err)
	src := privacy.NewSeededSource(1)
	for i := 0; i < steps; i++ {
		rel, err := acct.Gaussian("g", 1, 1, b)
		require.NoError(t, err)
		require.NoError(t, rel.Add(src, []float64{0}))
	}
	return acct.Steps()
}

// mixedRun is a run with a Laplace step beside a Gaussian one.
func mixedRun(t *testing.T, g privacy.Grant) []privacy.Step {
	t.Helper()
	acct, err := privacy.NewAccountant(g)
	require.NoError(t, err)
	plan, err := privacy.NewPlan(acct, privacy.NoiseExact, privacy.Share{Name: "mean", Weight: 0.1, Mechanism: privacy.MechLaplace},
		privacy.Share{Name: "g", Weight: 0.9})
	require.NoError(t, err)
	src := privacy.NewSeededSource(1)
	bl, err := plan.Budget("mean")
	require.NoError(t, err)
	lap, err := acct.Laplace("mean", 1, 1, bl)
	require.NoError(t, err)
	require.NoError(t, lap.Add(src, []float64{0}))
	bg, err := plan.Budget("g")
	require.NoError(t, err)
	rel, err := acct.Gaussian("g", 1, 1, bg)
	require.NoError(t, err)
	require.NoError(t, rel.Add(src, []float64{0}))
	return acct.Steps()
}

// runUntilRefused reserves and settles runs granted g with the given
// steps until a reservation is refused; it returns how many succeeded.
func runUntilRefused(t *testing.T, l *Ledger, h string, g privacy.Grant, steps func() []privacy.Step) int {
	t.Helper()
	ctx := context.Background()
	for n := 0; n < 1000; n++ {
		id, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: g})
		if err != nil {
			require.ErrorIs(t, err, ErrBudgetExceeded)
			return n
		}
		require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps(), Guarantee: privacy.Approx}))
	}
	t.Fatal("no refusal after 1000 runs")
	return 0
}

// Closed-form counts: how many ε = 1 (δ = 1e-7) runs a total of
// (ε, δ) = (3, 1e-6) admits. Gaussian-DP filter: ⌊μ_T²/μ_g²⌋ with
// μ = GDPMu; the classic rule: 3 exact runs (basic composition of their
// (ε, δ) statements), or ⌊ρ_T/ρ_g⌋ zCDP-calibrated runs.
func TestGDPFilterCounts(t *testing.T) {
	total, g := approxG(3, 1e-6), approxG(1, 1e-7)
	muT, err := privacy.GDPMu(3, 1e-6)
	require.NoError(t, err)
	muG, err := privacy.GDPMu(1, 1e-7)
	require.NoError(t, err)
	wantGDP := int(math.Floor(muT * muT / (muG * muG)))
	rhoT, err := privacy.RhoForEpsDelta(3, 1e-6)
	require.NoError(t, err)
	rhoG, err := privacy.RhoForEpsDelta(1, 1e-7)
	require.NoError(t, err)
	wantZCDP := int(math.Floor(rhoT / rhoG))
	t.Logf("(3, 1e-6) total, (1, 1e-7) runs: μ_T = %.5f, μ_g = %.5f: GDP filter %d runs; zCDP-calibrated runs under the zCDP filter %d (ρ_T = %.5f, ρ_g = %.5f); basic 3",
		muT, muG, wantGDP, wantZCDP, rhoT, rhoG)

	tests := []struct {
		name  string
		noise string
		first func(t *testing.T) []privacy.Step // nil: none
		want  int
		comp  string
	}{
		{"exact runs, Gaussian-DP filter", privacy.NoiseExact, nil, wantGDP, "gdp"},
		{"zCDP runs, Gaussian-DP filter", privacy.NoiseZCDP, nil, int(math.Floor(muT * muT / (2 * rhoG))), "gdp"},
		// A first run with a Laplace step (charged (ε, δ) by its PLD) fixes
		// the classic rule: the exact runs then compose by basic
		// composition of their (ε, δ) statements.
		{"exact runs after a mixed run, classic rule", privacy.NoiseExact, func(t *testing.T) []privacy.Step { return mixedRun(t, approxG(0.1, 1e-8)) }, 2, "basic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := openT(t, t.TempDir())
			h := hashOf(tc.name)
			require.NoError(t, l.SetBudget(ctx, h, "", total))
			if tc.first != nil {
				id := reserve(t, l, h, approxG(0.1, 1e-8))
				require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: tc.first(t), Guarantee: privacy.Approx}))
			}
			n := runUntilRefused(t, l, h, g, func() []privacy.Step { return exactRun(t, g, tc.noise, 3) })
			st, err := l.Show(ctx, h)
			require.NoError(t, err)
			t.Logf("%s: %d runs, spent %s", tc.name, n, spentString(st.Spent))
			if tc.want >= 0 {
				assert.Equal(t, tc.want, n)
			} else {
				assert.Less(t, n, wantGDP)
			}
			assert.Equal(t, tc.comp, st.Spent.Composition)
			assert.LessOrEqual(t, st.Spent.Epsilon, 3.0)
		})
	}
	// Today's ledger admits wantZCDP zCDP-calibrated runs (9); the
	// Gaussian-DP filter admits as many exact runs (each with 7 % less
	// noise) or one more zCDP run.
	assert.GreaterOrEqual(t, wantGDP, wantZCDP)
	assert.Greater(t, int(math.Floor(muT*muT/(2*rhoG))), wantZCDP)
}

// Once the first run has fixed the Gaussian-DP filter, a run that is not
// Gaussian-only is withheld at settle (charged its reservation) and the
// budget keeps the filter; a first mixed run fixes the classic rule, under
// which Gaussian runs are admitted by zCDP.
func TestGDPFilterRefusesAfterSwitch(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("switch")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(3, 1e-6)))
	g := approxG(0.5, 1e-7)
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 2), "")
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	require.Equal(t, "gdp", st.Spent.Composition)
	before := st.Spent.Mu

	id := reserve(t, l, h, g)
	mixed := mixedRun(t, g)
	err = l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: mixed, Guarantee: privacy.Approx})
	require.ErrorIs(t, err, ErrIncompatible)
	r, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, Failed, r.State)
	assert.Contains(t, r.Error, "result withheld")
	muG, err := privacy.GDPMu(0.5, 1e-7)
	require.NoError(t, err)
	assert.InDelta(t, mixedMu2(t, g, mixed), r.Charge.Mu2, 1e-12, "charged its steps' GDP statement, at least its reservation")
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "gdp", st.Spent.Composition)
	assert.InDelta(t, math.Sqrt(before*before+mixedMu2(t, g, mixed)), st.Spent.Mu, 1e-8)
	assert.NotContains(t, st.String(), "none (no further run fits)")

	// A Gaussian-only run that failed after drawing noise keeps its
	// reservation's GDP statement; one with unknown steps carries none,
	// and the Gaussian-DP budget then admits nothing more.
	id = reserve(t, l, h, g)
	require.NoError(t, l.Settle(ctx, id, OutcomeOf(errors.New("crashed"), exactRun(t, g, privacy.NoiseExact, 1))))
	r, err = l.Get(ctx, id)
	require.NoError(t, err)
	assert.InDelta(t, muG*muG, r.Charge.Mu2, 1e-12)
	reserve(t, l, h, approxG(0.01, 1e-9))
	id = reserve(t, l, h, g)
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, NoiseDrawn: true, Error: "boom"}))
	_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: g})
	require.ErrorIs(t, err, ErrIncompatible)

	// The other way round: a mixed first run, then Gaussian runs settle.
	h2 := hashOf("switch-2")
	require.NoError(t, l.SetBudget(ctx, h2, "", approxG(3, 1e-6)))
	settleOK(t, l, reserve(t, l, h2, g), mixedRun(t, g), "")
	settleOK(t, l, reserve(t, l, h2, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	st, err = l.Show(ctx, h2)
	require.NoError(t, err)
	assert.NotEqual(t, "gdp", st.Spent.Composition)
	assert.Zero(t, st.Remaining.Mu)
}

// Two runs reserved before the first settles: the first run's kind can no
// longer decide the rule, so the classic rule applies (and a mixed second
// run settles).
func TestGDPFilterConcurrentFirstRuns(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("concurrent")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(3, 1e-6)))
	g := approxG(0.5, 1e-7)
	a, b := reserve(t, l, h, g), reserve(t, l, h, g)
	settleOK(t, l, a, exactRun(t, g, privacy.NoiseExact, 1), "")
	settleOK(t, l, b, mixedRun(t, g), "")
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.NotEqual(t, "gdp", st.Spent.Composition)
}

// Reservations stay sound: an (ε, δ) reservation holds μ_g² = GDPMu(ε, δ)²
// under the Gaussian-DP filter, a Gaussian-only exact run spends up to
// that μ and is charged at most its reservation, and while it is open the
// headroom excludes it.
func TestGDPFilterReservationSound(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("reserve")
	total := approxG(2, 1e-6)
	require.NoError(t, l.SetBudget(ctx, h, "", total))
	g := approxG(1, 1e-7)
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "") // fixes the filter
	muT, _ := privacy.GDPMu(2, 1e-6)
	muG, _ := privacy.GDPMu(1, 1e-7)

	id := reserve(t, l, h, g)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, math.Sqrt(muT*muT-2*muG*muG), st.Remaining.Mu, 1e-6, "the open reservation holds μ_g²")
	steps := exactRun(t, g, privacy.NoiseExact, 4)
	mu2, ok := privacy.StepsMu2(steps)
	require.True(t, ok)
	assert.LessOrEqual(t, mu2, muG*muG, "an exact run spends at most its grant's μ")
	assert.Greater(t, mu2, muG*muG*(1-1e-6), "and uses it")
	settleOK(t, l, id, steps, "")
	r, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.LessOrEqual(t, r.Charge.Mu2, muG*muG)

	// What Show reports is what Reserve admits.
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	require.NoError(t, st.Fits(approxG(st.Remaining.Epsilon, st.Remaining.Delta)))
	assert.ErrorIs(t, st.Fits(approxG(st.Remaining.Epsilon*1.001, st.Remaining.Delta)), ErrBudgetExceeded)
	assert.InDelta(t, 1e-6, st.Remaining.Delta, 1e-18, "δ is not consumed by the Gaussian-DP filter")
	rem, err := privacy.GDPEpsilon(st.Remaining.Mu, 1e-6)
	require.NoError(t, err)
	assert.InDelta(t, rem, st.Remaining.Epsilon, 1e-6)
}

// A total set on an existing history fixes the rule when it is set: the
// Gaussian-DP filter for a Gaussian-only history, the classic rule
// otherwise.
func TestGDPFilterTotalOnHistory(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	g := approxG(0.5, 1e-7)
	h := hashOf("history-gauss")
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(3, 1e-6)))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "gdp", st.Spent.Composition)
	assert.Positive(t, st.Remaining.Mu)

	h2 := hashOf("history-mixed")
	settleOK(t, l, reserve(t, l, h2, g), mixedRun(t, g), "")
	require.NoError(t, l.SetBudget(ctx, h2, "", approxG(3, 1e-6)))
	settleOK(t, l, reserve(t, l, h2, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	st, err = l.Show(ctx, h2)
	require.NoError(t, err)
	assert.NotEqual(t, "gdp", st.Spent.Composition)
}
