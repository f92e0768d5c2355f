package ledger

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

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
	assert.InDelta(t, privacy.PureMu(0.2)*privacy.PureMu(0.2), r.Charge.Mu2, 1e-15, "the reservation holds μ_ε²")
	steps := []privacy.Step{pureStep(0.05), pureStep(0.05), pureStep(0.1)}
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps, Guarantee: privacy.Pure}), "released, not withheld")
	r, err = l.Get(ctx, id)
	require.NoError(t, err)
	want := 2*privacy.PureMu(0.05)*privacy.PureMu(0.05) + privacy.PureMu(0.1)*privacy.PureMu(0.1)
	assert.InDelta(t, want, r.Charge.Mu2, 1e-15, "Σ μ_j² of its steps, below μ² of ε = 0.2")
	assert.Less(t, want, privacy.PureMu(0.2)*privacy.PureMu(0.2))
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RuleGDP, st.Rule, "the rule stays")
	assert.InDelta(t, spent+want, st.Spent.Mu*st.Spent.Mu, 1e-12)

	// A pure run that failed after drawing noise keeps μ_ε² of its grant.
	id = mustReserve(t, l, h, ReserveRequest{Estimator: "amin", Grant: pg})
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, NoiseDrawn: true, Error: "crashed"}))
	r, err = l.Get(ctx, id)
	require.NoError(t, err)
	assert.InDelta(t, privacy.PureMu(0.2)*privacy.PureMu(0.2), r.Charge.Mu2, 1e-15)

	// The headroom shown is what Reserve admits.
	st, err = l.Show(ctx, h)
	require.NoError(t, err)
	require.Positive(t, st.Remaining.PureEpsilon)
	assert.Contains(t, st.String(), "a pure ε = ")
	assert.NoError(t, st.Fits(privacy.Grant{Kind: privacy.GrantPure, Epsilon: st.Remaining.PureEpsilon}))
	assert.ErrorIs(t, st.Fits(privacy.Grant{Kind: privacy.GrantPure, Epsilon: st.Remaining.PureEpsilon * 1.001}), ErrBudgetExceeded)
	assert.InDelta(t, st.Remaining.Mu, privacy.PureMu(st.Remaining.PureEpsilon), 1e-6)

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
	assert.InDelta(t, muG*muG+privacy.PureMu(0.1)*privacy.PureMu(0.1), st.Spent.Mu*st.Spent.Mu, 1e-9)
	reserve(t, l, h, g)
}
