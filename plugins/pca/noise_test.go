package pca

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// stepScales fits est and returns its steps.
func stepsOf(t *testing.T, est sdk.Estimator, raw map[string]string, grant privacy.Grant) ([]privacy.Step, *sdk.Result) {
	t.Helper()
	g := spiked(t, 3000, 20, 2, "24,20", "gaussian", 81)
	seed := uint64(5)
	res, acct, err := sdk.RunLocal(context.Background(), est, g.Data, raw, grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	return acct.Steps(), res
}

// The default calibration (noise=exact) never needs more noise than zCDP:
// every Gaussian σ is at most the zCDP one, every pure step's ε at least,
// and a Gaussian-only plan at (1, 1e-6) saves the GDP/zCDP ratio 0.932
// (σ/Δ = 4.22 against 4.53). The result names the accountant.
func TestExactDefaultNeverMoreNoiseThanZCDP(t *testing.T) {
	base := map[string]string{"rank": "2", "clip": "12"}
	cases := []struct {
		name         string
		est          sdk.Estimator
		raw          map[string]string
		grant        privacy.Grant
		gaussianOnly bool
	}{
		{"analyze gauss (1, 1e-6)", AnalyzeGauss{}, base, approx(1, 1e-6), true},
		{"analyze gauss centred (1, 1e-6)", AnalyzeGauss{}, with(base, "center", "private"), approx(1, 1e-6), true},
		{"analyze gauss (4, 1e-6)", AnalyzeGauss{}, base, approx(4, 1e-6), true},
		{"analyze gauss clip=auto", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "auto", "center": "private"}, approx(1, 1e-6), false},
		{"cxz explicit", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "center": "none"}, approx(1, 1e-6), true},
		{"amin clip=auto", Amin{}, map[string]string{"rank": "2", "clip": "auto"}, approx(1, 1e-6), false},
		{"amin full rank", Amin{}, map[string]string{"rank": "10", "clip": "12"}, approx(1, 1e-6), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, res := stepsOf(t, tc.est, tc.raw, tc.grant)
			zc, _ := stepsOf(t, tc.est, with(tc.raw, "noise", "zcdp"), tc.grant)
			require.Equal(t, len(zc), len(ex))
			for i := range ex {
				require.Equal(t, zc[i].Name, ex[i].Name)
				switch ex[i].Mechanism {
				case privacy.MechGaussian:
					r := ex[i].Scale / zc[i].Scale
					assert.LessOrEqual(t, r, 1.0, ex[i].Name)
					if tc.gaussianOnly && tc.grant.Epsilon == 1 {
						assert.InDelta(t, 0.932, r, 0.001, ex[i].Name)
					}
				default:
					assert.GreaterOrEqual(t, ex[i].Epsilon, zc[i].Epsilon*(1-1e-12), ex[i].Name)
				}
			}
			eps := res.Guarantee.Epsilon
			if e, _, ok := res.Guarantee.Tighter(); ok {
				eps = e // a pure guarantee's (ε, δ) statement at the grant's δ
			}
			assert.LessOrEqual(t, eps, tc.grant.Epsilon*(1+1e-9))
			assert.NotEmpty(t, res.Guarantee.Accounting, "the result names the accountant")
			if _, ok := tc.est.(CXZ); !ok {
				assert.Contains(t, strings.Join(res.Notes, "\n"), "noise=")
			}
		})
	}
}

// pca-amin under an (ε, δ) grant never gives a step less ε than the pure
// split (ε/(r+1) each by default), and under a pure grant keeps it.
func TestAminExactNeverBelowPure(t *testing.T) {
	for _, tc := range []struct {
		rank  string
		grant privacy.Grant
	}{{"1", approx(1, 1e-6)}, {"2", approx(0.5, 1e-6)}, {"10", approx(1, 1e-6)}, {"10", approx(4, 1e-6)}, {"3", pure(1)}} {
		raw := map[string]string{"rank": tc.rank, "clip": "12"}
		ex, res := stepsOf(t, Amin{}, raw, tc.grant)
		pu, _ := stepsOf(t, Amin{}, with(raw, "noise", "pure"), tc.grant)
		require.Equal(t, len(pu), len(ex))
		factor := ex[0].Epsilon / pu[0].Epsilon
		assert.GreaterOrEqual(t, factor, 1.0)
		for i := range ex {
			assert.InEpsilon(t, factor, ex[i].Epsilon/pu[i].Epsilon, 1e-9, "one common factor")
		}
		t.Logf("rank %s, %+v: factor %.4f", tc.rank, tc.grant, factor)
		if tc.rank == "10" && tc.grant.Kind == privacy.GrantApprox {
			assert.Greater(t, factor, 1.1, "many steps: zCDP's bounded-range accounting certifies more")
		}
		if tc.grant.Kind == privacy.GrantPure {
			assert.InDelta(t, 1, factor, 1e-12)
		}
		if tc.grant.Kind == privacy.GrantApprox {
			eps, delta, ok := res.Guarantee.Tighter()
			if factor > 1 {
				require.True(t, ok)
				assert.LessOrEqual(t, eps, tc.grant.Epsilon*(1+1e-9))
				assert.Equal(t, tc.grant.Delta, delta)
			}
		}
	}
}

// pca-amin reports the ε each eigenvector draw spends, whatever the plan's
// currency (a pure ε, or the ε of an exact/zCDP budget's ρ).
func TestAminEpsilonPerVector(t *testing.T) {
	for _, noise := range []string{"exact", "pure", "zcdp"} {
		steps, res := stepsOf(t, Amin{}, map[string]string{"rank": "10", "clip": "12", "noise": noise}, approx(1, 1e-6))
		var want float64
		for _, s := range steps {
			if s.Mechanism == privacy.MechExponential {
				want = s.Epsilon
			}
		}
		require.Greater(t, want, 0.0)
		assert.InEpsilon(t, want, scalar(t, res, "epsilon_per_vector"), 1e-9, noise)
	}
}

// pca-cxz derives explained_variance_ratio from its released Λ̃ and σ²
// (post-processing): on spiked data at a large ε it is close to the
// model's (λ_k + σ²)/(Σλ + pσ²).
func TestCXZExplainedVarianceRatio(t *testing.T) {
	g := spiked(t, 20000, 20, 2, "24,20", "gaussian", 83)
	res, _ := fit(t, CXZ{}, g, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20"}, approx(50, 1e-6), 3)
	evr := series(t, res, "explained_variance_ratio")
	require.Len(t, evr, 2)
	total := 24.0 + 20 + 20*1
	assert.InDelta(t, 25/total, evr[0], 0.03)
	assert.InDelta(t, 21/total, evr[1], 0.03)
}
