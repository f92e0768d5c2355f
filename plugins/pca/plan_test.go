package pca

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
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
	for _, tc := range []struct {
		est   sdk.Estimator
		grant privacy.Grant
	}{
		{Amin{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}},
		{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}},
	} {
		t.Run(tc.est.Info().Name, func(t *testing.T) {
			raw := map[string]string{"rank": "2"}
			plan, err := sdk.PlanOf(context.Background(), tc.est, raw, tc.grant, sdk.ShapeOf(g.Data), gen.Reference, sdk.PlanFull)
			require.NoError(t, err)
			seed := uint64(3)
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, g.Data, raw, tc.grant, sdk.LocalOptions{Seed: &seed})
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
// is above the dry run's cap (p³ alone is) and says so, without a warning;
// a tall one gets its steps from a run on fewer rows, and no indicator.
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

	fmnist, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "10"}, approx, sdk.Shape{Kind: data.Rows, N: 60000, P: 784}, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	assert.False(t, fmnist.Scored)
	assert.False(t, fmnist.NearRandom)
	assert.Contains(t, fmnist.Note, "not computed")
	assert.Empty(t, fmnist.Steps, "p³ alone is above the dry run's cap: nothing runs")

	tall, err := sdk.PlanOf(ctx, AnalyzeGauss{}, map[string]string{"rank": "3"}, approx, sdk.Shape{Kind: data.Rows, N: 1000000, P: 50}, gen.Reference, sdk.PlanFull)
	require.NoError(t, err)
	assert.False(t, tall.Scored)
	assert.Contains(t, tall.Note, "indicator not computed")
	if assert.NotEmpty(t, tall.Steps, "the steps come from a run on fewer rows") {
		last := tall.Steps[len(tall.Steps)-1]
		assert.Equal(t, privacy.MechGaussian, last.Mechanism)
		assert.Positive(t, last.Multiplier)
		assert.Zero(t, last.Sensitivity, "a sensitivity may depend on n: not shown")
	}
}
