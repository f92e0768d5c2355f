package ledger

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

func declared(ms ...privacy.Mechanism) ReserveRequest {
	return ReserveRequest{Estimator: "e", Grant: approxG(0.5, 1e-7), MechanismsDeclared: true, Mechanisms: ms}
}

// Reserve refuses, with nothing written, a run declared to use a
// non-Gaussian mechanism on a budget that follows the Gaussian-DP filter;
// declared Gaussian-only and undeclared runs are reserved as before, and
// under the other rules the declaration changes nothing.
func TestReserveRefusesDeclaredMechanismsTheRuleCannotAdmit(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	g := approxG(0.5, 1e-7)

	h := hashOf("gdp")
	require.NoError(t, l.SetBudget(ctx, h, "", approxG(3, 1e-6)))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RuleUndecided, st.Rule)
	assert.Contains(t, st.String(), "rule:      undecided")
	settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 2), "")
	before, err := l.Show(ctx, h)
	require.NoError(t, err)
	require.Equal(t, RuleGDP, before.Rule)
	assert.Contains(t, before.String(), "rule:      Gaussian-DP filter")

	for _, ms := range [][]privacy.Mechanism{{privacy.MechLaplace}, {privacy.MechGaussian, privacy.MechExponential}} {
		_, err := l.Reserve(ctx, h, declared(ms...))
		require.ErrorIs(t, err, ErrIncompatible, "%v", ms)
		require.ErrorIs(t, err, ErrMechanism)
		assert.Contains(t, err.Error(), "Gaussian-DP filter")
		assert.Contains(t, err.Error(), string(ms[len(ms)-1]))
		assert.ErrorIs(t, before.AdmitsMechanisms(g, ms), ErrIncompatible, "the preview agrees")
	}
	after, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, before.Spent, after.Spent, "nothing written")
	assert.Equal(t, before.Runs, after.Runs)
	assert.Equal(t, before.Remaining, after.Remaining)

	for _, req := range []ReserveRequest{declared(privacy.MechGaussian), declared(), {Estimator: "e", Grant: g}} {
		assert.NoError(t, before.AdmitsMechanisms(req.Grant, req.Mechanisms))
		settleOK(t, l, mustReserve(t, l, h, req), exactRun(t, g, privacy.NoiseExact, 1), "")
	}

	// Classic rule (a mixed first run), undecided, ρ and pure totals, no
	// total: a declared Laplace run is reserved.
	hc := hashOf("classic")
	require.NoError(t, l.SetBudget(ctx, hc, "", approxG(3, 1e-6)))
	settleOK(t, l, mustReserve(t, l, hc, declared(privacy.MechLaplace, privacy.MechGaussian)), mixedRun(t, g), "")
	st, err = l.Show(ctx, hc)
	require.NoError(t, err)
	assert.Equal(t, RuleClassic, st.Rule)
	mustReserve(t, l, hc, declared(privacy.MechLaplace))
	hu := hashOf("undecided")
	require.NoError(t, l.SetBudget(ctx, hu, "", approxG(3, 1e-6)))
	mustReserve(t, l, hu, declared(privacy.MechExponential))
	hr := hashOf("rho")
	require.NoError(t, l.SetBudget(ctx, hr, "", zcdpG(1)))
	mustReserve(t, l, hr, ReserveRequest{Estimator: "e", Grant: zcdpG(0.1), MechanismsDeclared: true, Mechanisms: []privacy.Mechanism{privacy.MechExponential}})
	st, err = l.Show(ctx, hr)
	require.NoError(t, err)
	assert.Equal(t, RuleClassic, st.Rule)
	mustReserve(t, l, hashOf("none"), declared(privacy.MechLaplace))
	st, err = l.Show(ctx, hashOf("none"))
	require.NoError(t, err)
	assert.Empty(t, st.Rule)
}

func mustReserve(t *testing.T, l *Ledger, h string, req ReserveRequest) RunID {
	t.Helper()
	id, err := l.Reserve(context.Background(), h, req)
	require.NoError(t, err)
	return id
}

// Show states the rule in force and the remaining budget under that same
// rule: under the Gaussian-DP filter the remaining μ is what Reserve
// admits (a Gaussian-only run of that μ fits, a slightly larger one does
// not), and the JSON carries the rule.
func TestShowReportsTheRuleAndItsRemaining(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("show")
	total := approxG(3, 1e-6)
	require.NoError(t, l.SetBudget(ctx, h, "", total))
	g := approxG(1, 1e-6)
	for i := 0; i < 3; i++ {
		settleOK(t, l, reserve(t, l, h, g), exactRun(t, g, privacy.NoiseExact, 1), "")
	}
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	require.Equal(t, RuleGDP, st.Rule)
	muT, err := privacy.GDPMu(3, 1e-6)
	require.NoError(t, err)
	assert.InDelta(t, muT*muT-st.Spent.Mu*st.Spent.Mu, st.Remaining.Mu*st.Remaining.Mu, 1e-9*muT*muT)
	next := approxG(st.Remaining.Epsilon, total.Delta)
	assert.NoError(t, st.Fits(next), "the remaining (ε, δ_T) fits under the rule shown")
	assert.ErrorIs(t, st.Fits(approxG(st.Remaining.Epsilon*1.001, total.Delta)), ErrBudgetExceeded)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"rule":"gaussian-dp"`)
	assert.Contains(t, st.String(), "remaining: μ =")
}
