package pca

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// TestPlanStepsAreTheFitsSteps: the plan of a request lists the steps a
// fit of the same request takes on other data: the same names, mechanisms
// and costs, and noise multipliers equal to the fit's scale/sensitivity.
// Sensitivities are reported only where public (the clip quantile's).
func TestPlanStepsAreTheFitsSteps(t *testing.T) {
	g, err := gen.Run(mustModel(t, "spiked"), map[string]string{"n": "3000", "p": "12", "rank": "2"}, 11)
	require.NoError(t, err)
	scaled := *g.Data // divided by the user's column scales: the mean's share grows, in the plan too
	scaled.ColumnScaled = true
	for _, tc := range []struct {
		est   sdk.Estimator
		grant privacy.Grant
		data  *data.Dataset
	}{
		{Amin{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, g.Data},
		{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}, g.Data},
		{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}, &scaled},
	} {
		t.Run(fmt.Sprintf("%s column-scaled=%v", tc.est.Info().Name, tc.data.ColumnScaled), func(t *testing.T) {
			raw := map[string]string{"rank": "2"}
			plan, err := sdk.PlanOf(context.Background(), tc.est, raw, tc.grant, sdk.ShapeOf(tc.data), gen.Reference, sdk.PlanFull)
			require.NoError(t, err)
			seed := uint64(3)
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, tc.data, raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			steps := acct.Steps()
			require.Len(t, plan.Steps, len(steps))
			for i, s := range steps {
				p := plan.Steps[i]
				assert.Equal(t, s.Name, p.Name)
				assert.Equal(t, s.Mechanism, p.Mechanism)
				assert.InDelta(t, s.Epsilon, p.Epsilon, 1e-12*max(1, s.Epsilon))
				assert.InDelta(t, s.Delta, p.Delta, 1e-18)
				assert.InDelta(t, s.Rho, p.Rho, 1e-12*max(1, s.Rho))
				if s.Mechanism == privacy.MechExponential {
					assert.Zero(t, p.Multiplier)
				} else {
					assert.InDelta(t, s.Scale/s.Sensitivity, p.Multiplier, 1e-9*p.Multiplier, s.Name)
				}
				if p.Sensitivity > 0 {
					assert.Equal(t, s.Sensitivity, p.Sensitivity, "%s: a sensitivity the plan reports is public", s.Name)
				}
			}
			assert.Equal(t, acct.Achieved().Composition, plan.Accounting)
			assert.True(t, plan.Scored)
			// The reference's covariance has trace 1 and top-r variance
			// 1/2 + r/(2p): a random subspace captures (r/p)/(1/2 + r/(2p)).
			assert.InDelta(t, (2.0/12)/(0.5+2.0/24), plan.RandomScore, 1e-9)
		})
	}
}

// TestPlanNearRandom: a pure-ε request on a tiny data set is near random;
// a well-powered Analyze Gauss request is not; a Fashion-MNIST-sized one
// is planned from runs on fewer rows, except in a fit's pre-flight, which
// the public screen decides far from random, and a wider one is above every cap and says so, its
// steps those of the declared plan;
// a tall one gets its steps from a run on fewer rows and its indicator
// from runs on fewer rows at a scaled budget, in a fit's pre-flight too.
func TestPlanNearRandom(t *testing.T) {
	ctx := context.Background()
	tiny, err := sdk.PlanOf(ctx, Amin{}, map[string]string{"rank": "3"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.5},
		sdk.Shape{Kind: data.Rows, N: 60, P: 30}, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	assert.True(t, tiny.Scored)
	assert.True(t, tiny.NearRandom, "expected %.3f against random %.3f", tiny.ExpectedScore, tiny.RandomScore)
	assert.NotEmpty(t, tiny.Warning())

	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	big, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "3"}, approx, sdk.Shape{Kind: data.Rows, N: 20000, P: 30}, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	assert.True(t, big.Scored)
	assert.False(t, big.NearRandom)
	assert.Greater(t, big.ExpectedScore, 0.8)
	assert.Empty(t, big.Warning())

	// Fashion-MNIST's shape: dplr plan runs its dry runs on fewer rows (p³
	// is within PlanMaxCube) unless the machine is too slow for the time
	// limit; a fit's pre-flight keeps p³ within PlanMaxWork and runs nothing.
	fmnistShape := sdk.Shape{Kind: data.Rows, N: 60000, P: 784}
	fmnist, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "10"}, approx, fmnistShape, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	if !fmnist.Late() {
		assert.True(t, fmnist.Scored, fmnist.Note)
		assert.False(t, fmnist.NearRandom)
		assert.Greater(t, fmnist.ExpectedScore, 0.8)
		assert.NotEmpty(t, fmnist.Steps, "the steps come from a run on fewer rows")
	}
	// The README's Fashion-MNIST fit (clip=auto, center=private): its
	// pre-flight is decided far from random by the public screen, without
	// a dry run.
	check, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "10"}, approx, fmnistShape, gen.Reference, sdk.PlanIndicator)
	require.NoError(t, err)
	assert.False(t, check.Scored)
	assert.False(t, check.NearRandom)
	assert.True(t, strings.HasPrefix(check.Note, sdk.ScreenDecided+", without a dry run: far from random"), check.Note)
	if !fmnist.Late() {
		assert.Contains(t, fmnist.Note, "the public screen agrees")
	}
	wide, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "10"}, approx, sdk.Shape{Kind: data.Rows, N: 60000, P: 1100}, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	assert.False(t, wide.Scored)
	assert.False(t, wide.NearRandom)
	assert.Contains(t, wide.Note, "not computed")
	assert.Contains(t, wide.Note, "declared plan", "p³ alone is above the dry run's cap: the steps are the plan's")
	if assert.NotEmpty(t, wide.Steps) {
		last := wide.Steps[len(wide.Steps)-1]
		assert.Equal(t, shareMoment, last.Name)
		assert.Equal(t, privacy.MechGaussian, last.Mechanism)
		assert.Positive(t, last.Rho)
		assert.Zero(t, last.Sensitivity)
	}

	tall, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "3"}, approx, sdk.Shape{Kind: data.Rows, N: 1000000, P: 50}, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	assert.True(t, tall.Scored, tall.Note)
	assert.False(t, tall.NearRandom)
	assert.Greater(t, tall.ExpectedScore, 0.8)
	if assert.NotEmpty(t, tall.Steps, "the steps come from a run on fewer rows") {
		last := tall.Steps[len(tall.Steps)-1]
		assert.Equal(t, privacy.MechGaussian, last.Mechanism)
		assert.Positive(t, last.Multiplier)
		assert.Zero(t, last.Sensitivity, "a sensitivity may depend on n: not shown")
	}

	// A fit's pre-flight on a tall data set warns when its budget is far
	// too small, and computes no steps (p = 50 is below the public
	// screen's floor for near random: the scaled dry runs decide).
	hopeless, err := sdk.PlanOf(ctx, Amin{}, map[string]string{"rank": "3"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1e-4},
		sdk.Shape{Kind: data.Rows, N: 1000000, P: 50}, gen.Reference, sdk.PlanIndicator)
	require.NoError(t, err)
	assert.True(t, hopeless.Scored, hopeless.Note)
	assert.True(t, hopeless.NearRandom, "expected %.3f against random %.3f", hopeless.ExpectedScore, hopeless.RandomScore)
	assert.Empty(t, hopeless.Steps)
}

// TestPlanReducedIndicatorMatchesFull: above the dry run's cap the
// indicator comes from runs on fewer rows at a budget scaled to the same
// noise per row. On a shape where the noise matters (scores 0.1–0.6), it
// agrees with the mean score of fits on the full-size reference, for a
// Gaussian and a pure-ε estimator. Single fits here spread by about 0.08
// (sd), so the indicator's 8-run mean and the 4 fits' mean differ by
// about 0.05 (sd) from noise alone: the tolerance is 0.15.
func TestPlanReducedIndicatorMatchesFull(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a 200000-row reference")
	}
	ctx := context.Background()
	shape := sdk.Shape{Kind: data.Rows, N: 200000, P: 40}
	raw := map[string]string{"rank": "3"}
	for _, tc := range []struct {
		est   sdk.Estimator
		grant privacy.Grant
	}{
		{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.003, Delta: 1e-6}},
		{Amin{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.02}},
	} {
		t.Run(tc.est.Info().Name, func(t *testing.T) {
			p, err := sdk.PlanOf(ctx, tc.est, raw, tc.grant, shape, gen.Reference, sdk.PlanIndicator)
			require.NoError(t, err)
			require.True(t, p.Scored, p.Note)
			assert.Contains(t, p.Note, "scaled")
			var full float64
			for i := range 4 {
				ref, err := gen.Reference(shape, 3, 1, uint64(7+i))
				require.NoError(t, err)
				seed := uint64(100 + i)
				res, _, err := sdk.RunLocal(ctx, tc.est, ref.Data, raw, tc.grant, sdk.LocalOptions{Seed: &seed})
				require.NoError(t, err)
				full += capturedRatio(t, res, ref) / 4
			}
			t.Logf("reduced indicator %.4f, full-size fits %.4f, random %.4f", p.ExpectedScore, full, p.RandomScore)
			assert.InDelta(t, full, p.ExpectedScore, 0.15)
			assert.Greater(t, full-p.RandomScore, 0.05, "a regime where the noise matters but the result is not random")
		})
	}
}

// capturedRatio is the plan's rows score of a fit's U against a reference:
// the captured share of the centred covariance over the best rank-r share.
func capturedRatio(t *testing.T, res *sdk.Result, ref sdk.ReferenceData) float64 {
	t.Helper()
	p, _ := ref.Sigma.Dims()
	sigma := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			sigma.SetSym(i, j, ref.Sigma.At(i, j))
		}
	}
	var qr mat.QR
	qr.Factorize(matrix(t, res, "U"))
	var q mat.Dense
	qr.QTo(&q)
	_, k := matrix(t, res, "U").Dims()
	return evaluate.CapturedVariance(sigma, q.Slice(0, p, 0, k)) / evaluate.CapturedVariance(sigma, ref.U)
}
