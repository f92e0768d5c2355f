package sdk

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// An estimator shaped like orbit-deflation at rank 25: 25 exponential draws
// sharing ε, declared pure. Under the grant (1, 1e-6) the SDK states pure
// 1-DP and (0.43, 1e-6)-DP, never pure 0.43-DP; a Gaussian step under a
// declared pure guarantee is an estimator error.
func TestRunLocalStatesGuaranteeFromComposition(t *testing.T) {
	rows := &data.Dataset{Kind: data.Rows, X: mat.NewDense(2, 2, []float64{1, 0, 0, 1})}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	info := Info{Name: "deflation", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}}
	deflation := func(_ context.Context, run *Run) (*Result, error) {
		plan, err := privacy.NewPlan(run.Acct, privacy.NoisePure, privacy.Share{Name: "vectors", Weight: 1, Steps: 25})
		if err != nil {
			return nil, err
		}
		b, err := plan.Budget("vectors")
		if err != nil {
			return nil, err
		}
		for i := 0; i < 25; i++ {
			rel, err := run.Acct.Exponential(fmt.Sprintf("vector %d", i+1), 1, b)
			if err != nil {
				return nil, err
			}
			if err := rel.Sample(func(float64) error { return nil }); err != nil {
				return nil, err
			}
		}
		return &Result{Guarantee: privacy.Guarantee{Kind: privacy.Pure, Neighbours: "one row replaced"}}, nil
	}
	seed := uint64(1)
	res, _, err := RunLocal(context.Background(), fakeEst{info: info, fit: deflation}, rows, nil, grant, LocalOptions{Seed: &seed})
	require.NoError(t, err)
	g := res.Guarantee
	assert.Equal(t, privacy.Pure, g.Kind)
	assert.InDelta(t, 1, g.Epsilon, 1e-12)
	eps, delta, ok := g.Tighter()
	require.True(t, ok)
	assert.InDelta(t, 0.43, eps, 0.005)
	assert.Equal(t, 1e-6, delta)
	assert.NotContains(t, g.String(), "pure ε-differential privacy with ε = 0.43")
	assert.True(t, g.Seeded)

	gaussianButPure := func(_ context.Context, run *Run) (*Result, error) {
		rel, err := run.Acct.Gaussian("mean", 1, 1, privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.01})
		if err != nil {
			return nil, err
		}
		if err := rel.Add(run.Rand, []float64{0}); err != nil {
			return nil, err
		}
		return &Result{Guarantee: privacy.Guarantee{Kind: privacy.Pure}}, nil
	}
	_, _, err = RunLocal(context.Background(), fakeEst{info: info, fit: gaussianButPure}, rows, nil, grant, LocalOptions{Seed: &seed})
	assert.ErrorIs(t, err, privacy.ErrGuarantee)
	assert.False(t, IsBadRequest(err), "an estimator's false claim is its failure, not the user's")
}
