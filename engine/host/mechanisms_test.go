package host

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

// runnerOver starts the bad plugin once per mode, all over one fresh
// ledger (each plugin process reads its mode when it starts).
func runnerOver(t *testing.T, modes ...string) (*Runner, *ledger.Ledger) {
	t.Helper()
	bad := filepath.Join(buildPlugins(t), "dplr-bad")
	var ps Plugins
	for _, m := range modes {
		t.Setenv("DPLR_BAD_MODE", m)
		p, err := Start(context.Background(), bad, Options{StartTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
		require.NoError(t, err)
		t.Cleanup(p.Close)
		ps = append(ps, p)
	}
	led, err := ledger.Open(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = led.Close() })
	return &Runner{Ledger: led, Plugins: ps}, led
}

var approxGrant = privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}

func show(t *testing.T, led *ledger.Ledger) ledger.Status {
	t.Helper()
	st, err := led.Show(context.Background(), fakeHandle().Hash)
	require.NoError(t, err)
	return st
}

// gdpLedger returns a runner over modes whose ledger's data set has an
// (ε = 3, δ = 1e-6) total and follows the Gaussian-DP filter: its first
// run (declared and Gaussian-only) has settled.
func gdpLedger(t *testing.T, modes ...string) (*Runner, *ledger.Ledger) {
	t.Helper()
	r, led := runnerOver(t, append([]string{"declare-gauss"}, modes...)...)
	err := led.SetBudget(context.Background(), fakeHandle().Hash, "", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 3, Delta: 1e-6})
	require.NoError(t, err)
	_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-gauss", Grant: approxGrant, Data: fakeHandle()})
	require.NoError(t, err)
	st := show(t, led)
	require.Equal(t, ledger.RuleGDP, st.Rule, "a Gaussian-only first run fixes the Gaussian-DP filter")
	return r, led
}

// TestRunnerRefusesWhatTheRuleCannotAdmit: under the Gaussian-DP filter, a
// request declared to use the exponential mechanism is refused before
// anything is reserved — no budget is lost on a result that would be
// withheld — with a message naming the mechanism, what needs it and the
// rule; the budget position is unchanged and a Gaussian-only request still
// runs.
func TestRunnerRefusesWhatTheRuleCannotAdmit(t *testing.T) {
	r, led := gdpLedger(t, "declare-exponential")
	before := show(t, led)
	_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-exponential", Grant: approxGrant, Data: fakeHandle()})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrBudget)
	assert.ErrorIs(t, err, ledger.ErrIncompatible)
	assert.ErrorIs(t, err, ledger.ErrMechanism)
	for _, want := range []string{"nothing was run or spent", "exponential (clip quantile (clip=auto))", "Gaussian-DP filter", "give a numeric clip instead of clip=auto"} {
		assert.Contains(t, err.Error(), want)
	}
	var fe *FitError
	require.True(t, errors.As(err, &fe))
	assert.Zero(t, fe.RunID)
	assert.False(t, fe.Charged)
	after := show(t, led)
	assert.Equal(t, before.Spent, after.Spent, "nothing spent")
	assert.Equal(t, before.Remaining, after.Remaining)
	assert.Len(t, history(t, led), 1, "nothing reserved")

	_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-gauss", Grant: approxGrant, Data: fakeHandle()})
	require.NoError(t, err, "Gaussian-only runs are still admitted")
}

// TestRunnerUndeclaredKeepsTodaysBehaviour: an estimator that declares
// nothing is reserved and run as before; under the Gaussian-DP filter a
// non-Gaussian result is then withheld at settlement and charged its
// reservation (which is why estimators should declare).
func TestRunnerUndeclaredKeepsTodaysBehaviour(t *testing.T) {
	r, led := gdpLedger(t, "laplace")
	_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-laplace", Grant: approxGrant, Data: fakeHandle()})
	require.Error(t, err)
	assert.ErrorIs(t, err, ledger.ErrIncompatible)
	var fe *FitError
	require.True(t, errors.As(err, &fe))
	assert.True(t, fe.Charged)
	runs := history(t, led)
	require.Len(t, runs, 2)
	assert.Equal(t, ledger.Failed, runs[1].State)
	assert.Contains(t, runs[1].Error, "withheld")
}

// TestRunnerCatchesAFalseDeclaration: a plugin that declares Gaussian
// steps only and then takes a Laplace step is caught after the fit: the
// error names the undeclared mechanism and step, nothing is released, and
// the run stays charged its grant (noise was drawn). Under the Gaussian-DP
// filter the charge carries its steps' own GDP statement (the Laplace step
// is μ_ε-GDP), so the budget keeps admitting runs; with no budget it
// carries none.
func TestRunnerCatchesAFalseDeclaration(t *testing.T) {
	for _, rule := range []string{"no budget", "gaussian-dp"} {
		t.Run(rule, func(t *testing.T) {
			var (
				r   *Runner
				led *ledger.Ledger
			)
			if rule == "no budget" {
				r, led = runnerOver(t, "under-declare")
			} else {
				r, led = gdpLedger(t, "under-declare")
			}
			res, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-under-declare", Grant: approxGrant, Data: fakeHandle()})
			require.Error(t, err)
			assert.Nil(t, res, "nothing is released")
			assert.ErrorIs(t, err, ErrPlugin)
			for _, want := range []string{"broke its pre-flight declaration", `privacy step 1 ("mean") uses the laplace mechanism`, "declared: gaussian (the released matrix)"} {
				assert.Contains(t, err.Error(), want)
			}
			var fe *FitError
			require.True(t, errors.As(err, &fe))
			assert.True(t, fe.Charged, "noise was drawn: charged")
			runs := history(t, led)
			last := runs[len(runs)-1]
			assert.Equal(t, ledger.Failed, last.State)
			assert.Equal(t, privacy.GrantCharge(approxGrant).Epsilon, last.Charge.Epsilon, "charged its full grant")
			if rule == "no budget" {
				assert.Zero(t, last.Charge.Mu2, "a Laplace step leaves no GDP statement of the grant")
				return
			}
			assert.Positive(t, last.Charge.Mu2, "the steps' own GDP statement")
			// Its Laplace step (μ² ≈ 0.39) took the history past μ_T² of
			// (3, 1e-6); a larger total lets Gaussian runs in again.
			require.NoError(t, led.ChangeBudget(context.Background(), fakeHandle().Hash, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 6, Delta: 1e-6}, "larger"))
			_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-gauss", Grant: approxGrant, Data: fakeHandle()})
			require.NoError(t, err, "the budget admits Gaussian runs again")
			assert.Equal(t, ledger.RuleGDP, show(t, led).Rule)
		})
	}
}

// TestRunnerRefusesMalformedDeclarations: a declaration naming a mechanism
// the host cannot verify, or listing mechanisms without declaring them, is
// a plugin failure before anything is reserved.
func TestRunnerRefusesMalformedDeclarations(t *testing.T) {
	for mode, want := range map[string]string{
		"declare-unknown":    `unknown privacy mechanism "quantum"`,
		"declare-undeclared": "without declaring them",
	} {
		t.Run(mode, func(t *testing.T) {
			r, led := runnerOver(t, mode)
			_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-" + mode, Grant: approxGrant, Data: fakeHandle()})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrPlugin)
			assert.Contains(t, err.Error(), want)
			assert.Empty(t, history(t, led), "nothing reserved")
		})
	}
}

// TestRunnerDeclaredRunsUnderOtherRules: a declared non-Gaussian run is
// admitted where the rule allows it — on a budget not yet decided (it then
// fixes the classic rule), or without a budget — and the example plugin's
// Gaussian mean declares what it does.
func TestRunnerDeclaredRunsUnderOtherRules(t *testing.T) {
	r, led := runnerOver(t, "declare-exponential", "declare-gauss")
	err := led.SetBudget(context.Background(), fakeHandle().Hash, "", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 3, Delta: 1e-6})
	require.NoError(t, err)
	require.Equal(t, ledger.RuleUndecided, show(t, led).Rule)
	res, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-exponential", Grant: approxGrant, Data: fakeHandle()})
	require.NoError(t, err)
	assert.True(t, res.Check.Mechanisms.Declared)
	assert.Equal(t, []privacy.Mechanism{privacy.MechExponential, privacy.MechGaussian}, res.Check.Mechanisms.Mechanisms())
	// Its steps were in fact Gaussian-only, so it fixed the Gaussian-DP
	// filter: the declaration only refuses, it never changes a charge.
	assert.Equal(t, ledger.RuleGDP, show(t, led).Rule)
	_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-exponential", Grant: approxGrant, Data: fakeHandle()})
	assert.ErrorIs(t, err, ErrBudget)
}

// The fallback: under the Gaussian-DP filter a declared Laplace fit is
// refused with an (ε, δ) grant (the advice says a pure ε would do), and
// admitted, released and charged its μ_ε-GDP statement with a pure grant.
func TestRunnerPureGrantFallback(t *testing.T) {
	r, led := gdpLedger(t, "declare-laplace")
	_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-laplace", Grant: approxGrant, Data: fakeHandle()})
	require.ErrorIs(t, err, ledger.ErrMechanism)
	assert.Contains(t, err.Error(), "grant it a pure ε budget")
	res, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-declare-laplace", Grant: privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.5}, Data: fakeHandle()})
	require.NoError(t, err)
	require.NotNil(t, res.Outcome)
	runs := history(t, led)
	last := runs[len(runs)-1]
	assert.Equal(t, ledger.Succeeded, last.State)
	assert.Positive(t, last.Charge.Mu2, "charged a GDP statement")
	assert.Equal(t, ledger.RuleGDP, show(t, led).Rule)
}
