package host

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// fakeHandle is a data handle the bad plugin never opens: the runner only
// needs its kind, shape and hash.
func fakeHandle() dataio.Handle {
	return dataio.Handle{Version: dataio.HandleVersion, Kind: data.Rows, Hash: strings.Repeat("ab", 32), N: 10, P: 2}
}

// runnerFor starts the bad plugin in mode and returns a runner over it
// with a fresh ledger.
func runnerFor(t *testing.T, mode string) (*Runner, *ledger.Ledger) {
	t.Helper()
	bad := filepath.Join(buildPlugins(t), "dplr-bad")
	t.Setenv("DPLR_BAD_MODE", mode)
	p, err := Start(context.Background(), bad, Options{StartTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	led, err := ledger.Open(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = led.Close() })
	return &Runner{Ledger: led, Plugins: Plugins{p}}, led
}

func history(t *testing.T, led *ledger.Ledger) []ledger.Run {
	t.Helper()
	runs, err := led.History(context.Background(), fakeHandle().Hash)
	require.NoError(t, err)
	return runs
}

var zcdpGrant = privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}

// TestRunnerChargesTheVerifiedCost: a well-behaved run is charged the
// composition of its verified steps (ρ = 0.01 of a 0.5 grant), and the
// released guarantee carries the host's numbers.
func TestRunnerChargesTheVerifiedCost(t *testing.T) {
	r, led := runnerFor(t, "ok")
	res, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-ok", Grant: zcdpGrant, Data: fakeHandle()})
	require.NoError(t, err)
	assert.InDelta(t, 0.01, res.Guarantee.Rho, 1e-15)
	require.Len(t, res.Outcome.Steps, 1)
	assert.True(t, res.Check.Supported)
	runs := history(t, led)
	require.Len(t, runs, 1)
	assert.Equal(t, ledger.Succeeded, runs[0].State)
	assert.InDelta(t, 0.01, runs[0].Charge.Rho, 1e-15, "the ledger charges the verified steps, not the grant")
	require.NotNil(t, res.Status)
	assert.InDelta(t, 0.01, res.Status.Spent.Rho, 1e-15)
}

// TestRunnerRefusesHostilePlugins: a plugin whose steps do not verify, do
// not fit the grant, differ between the stream and the result, or that
// releases a public output with no guarantee, is a plugin failure; nothing
// is released and the run stays charged its full grant.
func TestRunnerRefusesHostilePlugins(t *testing.T) {
	cases := []struct {
		mode  string
		grant privacy.Grant
		want  string
	}{
		{"tenfold", zcdpGrant, "do not fit the grant"},
		{"tiny-epsilon", privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, "costs ε = 1"},
		{"none-public", zcdpGrant, "no privacy guarantee"},
		{"rho-mismatch", zcdpGrant, "ρ = Δ²/(2σ²) = 0.5"},
		{"swap-steps", zcdpGrant, "differs from the one announced"},
		{"unannounced-step", zcdpGrant, "1 privacy steps but 0 were announced"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			r, led := runnerFor(t, tc.mode)
			res, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-" + tc.mode, Grant: tc.grant, Data: fakeHandle()})
			require.Error(t, err)
			assert.Nil(t, res, "nothing is released")
			assert.ErrorIs(t, err, ErrPlugin)
			assert.Contains(t, err.Error(), tc.want)
			var fe *FitError
			require.True(t, errors.As(err, &fe))
			assert.True(t, fe.Charged)
			runs := history(t, led)
			require.Len(t, runs, 1)
			assert.Equal(t, ledger.Failed, runs[0].State)
			got := runs[0].Charge
			got.Mu2 = 0 // the reservation's GDP statement, kept for Gaussian-only announced steps (engine/ledger tests it)
			assert.Equal(t, privacy.GrantCharge(tc.grant), got, "charged the full grant")
		})
	}
}

// TestRunnerRefundsWhatNeverStarted: a plugin that dies, or a fit that is
// interrupted, before the first declared privacy step is refunded.
func TestRunnerRefundsWhatNeverStarted(t *testing.T) {
	t.Run("death before the first step", func(t *testing.T) {
		r, led := runnerFor(t, "die-before-step")
		_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-die-before-step", Grant: zcdpGrant, Data: fakeHandle()})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrPlugin)
		var fe *FitError
		require.True(t, errors.As(err, &fe))
		assert.False(t, fe.Charged)
		runs := history(t, led)
		require.Len(t, runs, 1)
		assert.True(t, runs[0].Refunded)
		assert.True(t, runs[0].Charge.IsZero())
	})
	t.Run("interrupted while loading", func(t *testing.T) {
		r, led := runnerFor(t, "hang-before-step")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := r.Fit(ctx, FitRequest{Estimator: "bad-hang-before-step", Grant: zcdpGrant, Data: fakeHandle(),
			Events: Events{Progress: func(sdk.Progress) { cancel() }}})
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		runs := history(t, led)
		require.Len(t, runs, 1)
		assert.True(t, runs[0].Refunded, "Ctrl-C before the first step refunds")
	})
}

// TestRunnerRefusesBeforeReserving: requests refused before any
// reservation leave the ledger untouched.
func TestRunnerRefusesBeforeReserving(t *testing.T) {
	cases := []struct {
		name, mode string
		req        FitRequest
		maxMemory  int64
		want       string
	}{
		{"ε = 1e308", "ok", FitRequest{Grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1e308, Delta: 1e-6}}, 0, "usable range"},
		{"ε = 1e-300", "ok", FitRequest{Grant: privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1e-300}}, 0, "usable range"},
		{"ρ = 1e300", "ok", FitRequest{Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e300}}, 0, "usable range"},
		{"ρ = +Inf", "ok", FitRequest{Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: math.Inf(1)}}, 0, "finite"},
		{"δ = 1", "ok", FitRequest{Grant: privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1}}, 0, "delta"},
		{"negative timeout", "ok", FitRequest{Grant: zcdpGrant, Timeout: -time.Second}, 0, "negative"},
		{"seed as a parameter", "ok", FitRequest{Grant: zcdpGrant, Params: map[string]string{"seed": "1"}}, 0, "--seed"},
		{"unknown parameter", "ok", FitRequest{Grant: zcdpGrant, Params: map[string]string{"clip": "1"}}, 0, "clip"},
		{"pre-flight refusal", "check-refuse", FitRequest{Grant: zcdpGrant}, 0, "no representable noise scale"},
		{"footprint above the limit", "footprint", FitRequest{Grant: zcdpGrant}, 1 << 30, "1 PiB"},
		{"output refused", "ok", FitRequest{Grant: zcdpGrant, BeforeReserve: func() error { return errors.New("out/ is read-only") }}, 0, "read-only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, led := runnerFor(t, tc.mode)
			r.MaxMemory = tc.maxMemory
			req := tc.req
			req.Estimator, req.Data = "bad-"+tc.mode, fakeHandle()
			_, err := r.Fit(context.Background(), req)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrUsage)
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, history(t, led), "nothing was reserved")
		})
	}
	t.Run("a plugin without the pre-flight call still runs", func(t *testing.T) {
		r, led := runnerFor(t, "no-check")
		res, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-no-check", Grant: zcdpGrant, Data: fakeHandle()})
		require.NoError(t, err)
		assert.False(t, res.Check.Supported)
		assert.Len(t, history(t, led), 1)
	})
}

// A plugin that does not answer the pre-flight check is a plugin failure,
// with nothing reserved.
func TestRunnerPreflightTimeout(t *testing.T) {
	r, led := runnerFor(t, "hang-check")
	r.CheckTimeout = 200 * time.Millisecond
	_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-hang-check", Grant: zcdpGrant, Data: fakeHandle()})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPlugin)
	assert.Contains(t, err.Error(), "pre-flight")
	assert.Empty(t, history(t, led))
}

// A fit's process started by the caller (StartFit) runs the fit; one
// given to a refused request, or for other data, is stopped when Fit
// returns, so no process is left behind.
func TestRunnerUsesOrDropsAStartedFitProcess(t *testing.T) {
	r, led := runnerFor(t, "ok")
	p := r.Plugins.(Plugins)[0]
	if !p.Sandboxed {
		t.Skip("fits run in the plugin's own process without a sandbox")
	}
	fp := p.StartFit(fakeHandle())
	_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-ok", Grant: zcdpGrant, Data: fakeHandle(), Process: fp})
	require.NoError(t, err)
	assert.True(t, fp.taken, "the fit ran in the started process")
	require.Len(t, history(t, led), 1)

	refused := p.StartFit(fakeHandle())
	_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-ok", Grant: zcdpGrant, Data: fakeHandle(), Process: refused,
		BeforeReserve: func() error { return errors.New("refused") }})
	require.ErrorIs(t, err, ErrUsage)
	require.NoError(t, refused.err)
	assert.Eventually(t, refused.pr.run.Exited, 5*time.Second, 10*time.Millisecond, "the refused fit's process is stopped")

	other := fakeHandle()
	other.X.Path = filepath.Join(t.TempDir(), "X.npy")
	require.NoError(t, os.WriteFile(other.X.Path, nil, 0o600))
	elsewhere := p.StartFit(other)
	_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-ok", Grant: zcdpGrant, Data: fakeHandle(), Process: elsewhere})
	require.NoError(t, err)
	require.NoError(t, elsewhere.err)
	assert.Eventually(t, elsewhere.pr.run.Exited, 5*time.Second, 10*time.Millisecond, "a process for other data is not used")
}
