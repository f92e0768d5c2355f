package pca

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

func TestCapturedVarianceEvaluation(t *testing.T) {
	g, err := gen.Run(mustModel(t, "spiked"), map[string]string{"n": "4000", "p": "20"}, 3)
	require.NoError(t, err)
	seed := uint64(5)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	ratio := func(est sdk.Estimator, raw map[string]string, eps float64) float64 {
		raw["evaluate"] = "true"
		gr := grant
		gr.Epsilon = eps
		res, _, err := sdk.RunLocal(context.Background(), est, g.Data, raw, gr, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		for _, s := range res.Scalars {
			if s.Name == "captured_variance_ratio" {
				assert.Equal(t, sdk.Evaluation, s.Release, "computed from raw data: never public")
				return s.Value
			}
		}
		t.Fatal("no captured_variance_ratio")
		return 0
	}
	ests := map[string]sdk.Estimator{}
	for _, e := range Estimators() {
		ests[e.Info().Name] = e
	}
	// The non-private subspace captures exactly the best rank-r share.
	assert.InDelta(t, 1, ratio(ests["pca-nonprivate"], map[string]string{"rank": "2"}, 1), 1e-6)
	// A private subspace captures at most that, and more as ε grows.
	lo := ratio(ests["pca-analyze-gauss"], map[string]string{"rank": "2", "clip": "8"}, 0.05)
	hi := ratio(ests["pca-analyze-gauss"], map[string]string{"rank": "2", "clip": "8"}, 50)
	assert.LessOrEqual(t, lo, 1+1e-12)
	assert.LessOrEqual(t, hi, 1+1e-12)
	assert.Less(t, lo, hi)
	assert.Greater(t, hi, 0.99)
}

// The evaluation respects the estimator's centring: a centring estimator
// (a private mean, or the reference's empirical centring) is scored on the
// centred ratio alone; one on the uncentred second moment also gets that
// objective's ratio, named as uncentred. Both are evaluation-only.
func TestEvaluationRespectsCentring(t *testing.T) {
	g := spiked(t, 3000, 12, 2, "24,20", "gaussian", 17)
	for _, tc := range []struct {
		est       sdk.Estimator
		raw       map[string]string
		uncentred bool
	}{
		{AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "12"}, true},
		{AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "12", "center": "private"}, false},
		{Amin{}, map[string]string{"rank": "2", "clip": "12", "center": "private"}, false},
		{CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "center": "private", "mean_clip": "12"}, false},
		{NonPrivate{}, map[string]string{"rank": "2", "center": "empirical"}, false},
		{NonPrivate{}, map[string]string{"rank": "2"}, true},
	} {
		raw := with(tc.raw, "evaluate", "true")
		res, _ := fit(t, tc.est, g, raw, approx(2, 1e-6), 3)
		names := map[string]sdk.Release{}
		for _, s := range res.Scalars {
			names[s.Name] = s.Release
		}
		require.Contains(t, names, "captured_variance_ratio", "%s %v", tc.est.Info().Name, tc.raw)
		assert.Equal(t, sdk.Evaluation, names["captured_variance_ratio"])
		_, has := names["captured_variance_ratio_uncentred"]
		assert.Equal(t, tc.uncentred, has, "%s %v", tc.est.Info().Name, tc.raw)
	}
}

func mustModel(t *testing.T, name string) gen.Model {
	m, err := gen.Lookup(name)
	require.NoError(t, err)
	return m
}
