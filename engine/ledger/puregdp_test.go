package ledger

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mathext"

	"github.com/dplr/dplr/engine/privacy"
)

func phi(x float64) float64    { return 0.5 * math.Erfc(-x/math.Sqrt2) }
func phiInv(p float64) float64 { return mathext.NormalQuantile(p) }

// gaussTradeoff is G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), with Φ⁻¹(1 − α) taken as
// −Φ⁻¹(α) for small α (1 − α would round to 1).
func gaussTradeoff(mu, alpha float64) float64 {
	if alpha < 0.5 {
		return phi(-phiInv(alpha) - mu)
	}
	return phi(phiInv(1-alpha) - mu)
}

// pureTradeoff is f_ε(α) = max(0, 1 − e^ε α, e^{−ε}(1 − α)).
func pureTradeoff(eps, alpha float64) float64 {
	return math.Max(0, math.Max(1-math.Exp(eps)*alpha, math.Exp(-eps)*(1-alpha)))
}

// μ_ε = 2Φ⁻¹(e^ε/(1+e^ε)) is an ε-DP run's GDP parameter: the Gaussian
// trade-off curve lies below the ε-DP one everywhere (on a grid of α,
// denser near 0 and 1), touches it at the kink α* = 1/(1+e^ε) (so no
// smaller μ holds), behaves as √(π/2)·ε for small ε, and pureEpsilonForMu
// inverts it.
func TestPureMuIsTheTightGDPOfEpsDP(t *testing.T) {
	for _, eps := range []float64{1e-4, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30} {
		mu := pureMu(eps)
		for i := 1; i < 2000; i++ {
			for _, a := range []float64{float64(i) / 2000, math.Pow(10, -float64(i)/100), 1 - math.Pow(10, -float64(i)/100)} {
				if a <= 0 || a >= 1 {
					continue
				}
				g, f := gaussTradeoff(mu, a), pureTradeoff(eps, a)
				require.LessOrEqual(t, g, f+1e-12, "ε = %g, α = %g: G_μ = %g > f_ε = %g", eps, a, g, f)
			}
		}
		star := 1 / (1 + math.Exp(eps))
		assert.InEpsilon(t, star, gaussTradeoff(mu, star), 1e-6, "tight at the kink (ε = %g)", eps)
		assert.Greater(t, gaussTradeoff(mu*(1-1e-6), star), star, "a smaller μ fails (ε = %g)", eps)
		back := pureEpsilonForMu(mu)
		assert.LessOrEqual(t, pureMu(back), mu)
		assert.InDelta(t, eps, back, 1e-7*eps)
	}
	assert.InDelta(t, math.Sqrt(math.Pi/2)*1e-3, pureMu(1e-3), 1e-9)
	assert.InDelta(t, 1.23204, pureMu(1), 1e-4)
	assert.Zero(t, pureMu(0))
}

// The fallback: on a budget that follows the Gaussian-DP filter, a run
// granted a pure ε is admitted whatever its declared mechanisms, reserves
// μ_ε², and settles at the smaller of μ² of its achieved ε and the sum of
// its steps' μ_j²; its result is released, not withheld. A failure after
// noise keeps the reservation's statement. Show's pure ε headroom is what
// Reserve admits. A pure first run leaves the classic rule.
func TestGDPFilterAdmitsPureGrants(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("pure-fallback")
	total := approxG(3, 1e-6)
	require.NoError(t, l.SetBudget(ctx, h, "", total))
	g := approxG(1, 1e-6)
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	require.Equal(t, RuleGDP, st.Rule)
	spent := st.Spent.Mu * st.Spent.Mu

	pg := privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.2}
	req := ReserveRequest{Estimator: "amin", Grant: pg, MechanismsDeclared: true, Mechanisms: []privacy.Mechanism{privacy.MechLaplace, privacy.MechExponential}}
	assert.NoError(t, st.AdmitsMechanisms(pg, req.Mechanisms))
	id := mustReserve(t, l, h, req)
	r, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.InDelta(t, pureMu(0.2)*pureMu(0.2), r.Charge.Mu2, 1e-15, "the reservation holds μ_ε²")
	steps := []privacy.Step{pureStep(0.05), pureStep(0.05), pureStep(0.1)}
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps, Guarantee: privacy.Pure}), "released, not withheld")
	r, err = l.Get(ctx, id)
	require.NoError(t, err)
	want := 2*pureMu(0.05)*pureMu(0.05) + pureMu(0.1)*pureMu(0.1)
	assert.InDelta(t, want, r.Charge.Mu2, 1e-15, "Σ μ_j² of its steps, below μ² of ε = 0.2")
	assert.Less(t, want, pureMu(0.2)*pureMu(0.2))
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RuleGDP, st.Rule, "the rule stays")
	assert.InDelta(t, spent+want, st.Spent.Mu*st.Spent.Mu, 1e-12)

	// A pure run that failed after drawing noise keeps μ_ε² of its grant.
	id = mustReserve(t, l, h, ReserveRequest{Estimator: "amin", Grant: pg})
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, NoiseDrawn: true, Error: "crashed"}))
	r, err = l.Get(ctx, id)
	require.NoError(t, err)
	assert.InDelta(t, pureMu(0.2)*pureMu(0.2), r.Charge.Mu2, 1e-15)

	// The headroom shown is what Reserve admits.
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	require.Positive(t, st.Remaining.PureEpsilon)
	assert.Contains(t, st.String(), "a pure ε = ")
	assert.NoError(t, st.Fits(privacy.Grant{Kind: privacy.GrantPure, Epsilon: st.Remaining.PureEpsilon}))
	assert.ErrorIs(t, st.Fits(privacy.Grant{Kind: privacy.GrantPure, Epsilon: st.Remaining.PureEpsilon * 1.001}), ErrBudgetExceeded)
	assert.InDelta(t, st.Remaining.Mu, pureMu(st.Remaining.PureEpsilon), 1e-6)

	// (ε, δ) and ρ grants declared non-Gaussian are still refused.
	for _, gg := range []privacy.Grant{approxG(0.2, 1e-7), zcdpG(0.01)} {
		_, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: gg, MechanismsDeclared: true, Mechanisms: []privacy.Mechanism{privacy.MechExponential}})
		assert.ErrorIs(t, err, ErrMechanism)
	}

	// A pure first run fixes the classic rule, as before.
	h2 := hashOf("pure-first")
	require.NoError(t, l.SetBudget(ctx, h2, "", total))
	settleOK(t, l, reserve(t, l, h2, pg), []privacy.Step{pureStep(0.2)}, "")
	st, err = l.Show(ctx, h2)
	require.NoError(t, err)
	assert.Equal(t, RuleClassic, st.Rule)
}

// A pure spend recorded from outside dplr counts μ_ε² under the Gaussian-DP
// filter, which keeps admitting runs after it.
func TestGDPFilterCountsPureExternalSpends(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("pure-external")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(3, 1e-6)))
	g := approxG(1, 1e-6)
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	_, err := l.RecordCharge(ctx, h, ChargeRequest{Cost: pureG(0.1), Note: "a report"})
	require.NoError(t, err)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RuleGDP, st.Rule)
	muG, err := privacy.GDPMu(1, 1e-6)
	require.NoError(t, err)
	assert.InDelta(t, muG*muG+pureMu(0.1)*pureMu(0.1), st.Spent.Mu*st.Spent.Mu, 1e-9)
	reserve(t, l, h, g)
}
