package client

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

// A claim at or above the audit's reach is reported as not tested, with
// the run count that would reach it; below the reach the verdict says how
// far the audit could see.
func TestAuditSaysWhatItCannotSee(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	o := &auditOutputs{name: "x"}
	for i := 0; i < 120; i++ {
		o.a = append(o.a, []float64{r.NormFloat64(), r.NormFloat64()})
		o.b = append(o.b, []float64{r.NormFloat64() + 0.1, r.NormFloat64()})
	}
	for _, tc := range []struct {
		eps  float64
		want string
	}{
		{10, "not tested: with 120 runs this audit can refute only ε below"},
		{1, "this audit could have seen ε up to"},
	} {
		rep, err := auditReport(AuditRequest{Runs: 120, Alpha: 0.05, Estimator: "e"}, o, privacy.Guarantee{Kind: privacy.Pure, Epsilon: tc.eps}, 1, "d")
		require.NoError(t, err)
		assert.False(t, rep.Violation)
		assert.Contains(t, rep.Verdict, tc.want)
		assert.Greater(t, rep.Bound.Reach, 1.0)
		assert.Less(t, rep.Bound.Reach, 10.0)
	}
}

// A failure after the run was charged never gets the data class (exit 5,
// "nothing spent"): a pass that fails, or data that changed between
// passes, once a privacy step was announced is an estimator failure
// (exit 6), and says charged.
func TestChargedFailuresAreNeverDataErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		charged bool
		want    error
	}{
		{"pass failure before any step", host.ErrPass, false, ErrData},
		{"pass failure after a step", host.ErrPass, true, ErrEstimator},
		{"data changed after a step", fmt.Errorf("%w: %w", host.ErrPass, host.ErrDataChanged), true, ErrEstimator},
		{"damaged ledger before", fmt.Errorf("%w: %w", host.ErrLedger, ledger.ErrDamaged), false, ErrData},
		{"damaged ledger after", fmt.Errorf("%w: %w", host.ErrLedger, ledger.ErrDamaged), true, ErrRuntime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := fitErr(&host.FitError{Err: tc.err, RunID: 7, Charged: tc.charged})
			assert.ErrorIs(t, e, tc.want)
			assert.Equal(t, tc.charged, e.Charged)
		})
	}
}

// An audit request with too few runs, no workers, an alpha outside
// (0, 0.5) or an unusable canary is a usage error before any plugin is
// looked up or any fit runs (a Go caller gets the CLI's checks).
func TestAuditRefusesBadRequests(t *testing.T) {
	ok := AuditRequest{Estimator: "no-such-estimator", Runs: 60, Workers: 1, Alpha: 0.05}
	for _, tc := range []struct {
		name string
		edit func(*AuditRequest)
		want string
	}{
		{"few runs", func(r *AuditRequest) { r.Runs = 59 }, "at least 60 runs"},
		{"no workers", func(r *AuditRequest) { r.Workers = 0 }, "workers 0"},
		{"alpha 0", func(r *AuditRequest) { r.Alpha = 0 }, "alpha 0"},
		{"alpha 0.5", func(r *AuditRequest) { r.Alpha = 0.5 }, "alpha 0.5"},
		{"negative canary", func(r *AuditRequest) { r.Canary = -1 }, "canary -1"},
		{"NaN canary", func(r *AuditRequest) { r.Canary = math.NaN() }, "canary NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := ok
			tc.edit(&req)
			_, err := (&Client{}).Audit(context.Background(), req)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrUsage)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
