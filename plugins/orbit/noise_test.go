package orbit

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The default calibration (noise=exact) never needs more noise than the
// comparison calibrations: orbit-gauss's σ is at most zCDP's (0.932 of it
// at (1, 1e-6) with a public clip), the pure estimators' per-step ε is at
// least the pure split's and at least zCDP's; the results name the
// accountant and the guarantee stays within the grant.
func TestExactDefaultNeverMoreNoise(t *testing.T) {
	ds := genData(t, 400, 8, 2, 91)
	approx := func(eps float64) privacy.Grant {
		return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: 1e-6}
	}
	steps := func(est sdk.Estimator, raw map[string]string, g privacy.Grant) ([]privacy.Step, *sdk.Result) {
		seed := uint64(3)
		res, acct, err := sdk.RunLocal(context.Background(), est, ds, raw, g, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		return acct.Steps(), res
	}
	cases := []struct {
		name    string
		est     sdk.Estimator
		raw     map[string]string
		grant   privacy.Grant
		against []string
	}{
		{"gauss", Gauss{}, map[string]string{"rank": "2", "clip": "1"}, approx(1), []string{"zcdp"}},
		{"gauss clip=auto", Gauss{}, map[string]string{"rank": "2"}, approx(1), []string{"zcdp"}},
		{"em k = 1", EM{}, map[string]string{"rank": "1", "clip": "1"}, approx(1), []string{"pure", "zcdp"}},
		{"em clip=auto", EM{}, map[string]string{"rank": "1"}, approx(4), []string{"pure", "zcdp"}},
		{"rank-k", RankK{}, map[string]string{"rank": "1", "clip": "1"}, approx(1), []string{"pure", "zcdp"}},
		{"deflation k = d", Deflation{}, map[string]string{"rank": "8", "clip": "1"}, approx(1), []string{"pure", "zcdp"}},
		{"deflation pure grant", Deflation{}, map[string]string{"rank": "3", "clip": "1"}, pure(1), []string{"pure"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, res := steps(tc.est, tc.raw, tc.grant)
			for _, noise := range tc.against {
				o := map[string]string{"noise": noise}
				for k, v := range tc.raw {
					o[k] = v
				}
				other, _ := steps(tc.est, o, tc.grant)
				require.Len(t, other, len(ex))
				for i := range ex {
					if ex[i].Mechanism == privacy.MechGaussian {
						r := ex[i].Scale / other[i].Scale
						assert.LessOrEqual(t, r, 1.0, ex[i].Name)
						if tc.raw["clip"] == "1" && tc.grant.Epsilon == 1 {
							assert.InDelta(t, 0.932, r, 0.001, "Gaussian-only at (1, 1e-6)")
						}
						continue
					}
					assert.GreaterOrEqual(t, ex[i].Epsilon, other[i].Epsilon*(1-1e-12), "%s against %s", ex[i].Name, noise)
				}
			}
			eps := res.Guarantee.Epsilon
			if e, _, ok := res.Guarantee.Tighter(); ok {
				eps = e
			}
			assert.LessOrEqual(t, eps, tc.grant.Epsilon*(1+1e-9))
			assert.NotEmpty(t, res.Guarantee.Accounting)
			assert.Contains(t, strings.Join(res.Notes, "\n"), "noise=")
		})
	}
}

// orbit-rank-k (k ≥ 2) releases the tail of the spectrum with its Laplace
// eigenvalues (one release, k + 1 values, sensitivity 2) and orbit-gauss
// releases A + E: both report explained_variance_ratio by post-processing;
// the estimators that release no eigenvalue (orbit-em, orbit-deflation)
// report none.
func TestExplainedVarianceRatio(t *testing.T) {
	ds := genData(t, 2000, 8, 2, 93)
	g := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 20, Delta: 1e-6}
	for _, tc := range []struct {
		est  sdk.Estimator
		raw  map[string]string
		want bool
	}{
		{RankK{}, map[string]string{"rank": "2", "clip": "1", "iterations": "5"}, true},
		{RankK{}, map[string]string{"rank": "1", "clip": "1"}, false},
		{Gauss{}, map[string]string{"rank": "2", "clip": "1"}, true},
		{EM{}, map[string]string{"rank": "1", "clip": "1"}, false},
		{Deflation{}, map[string]string{"rank": "2", "clip": "1"}, false},
	} {
		seed := uint64(4)
		res, acct, err := sdk.RunLocal(context.Background(), tc.est, ds, tc.raw, g, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		var evr []float64
		for _, s := range res.Series {
			if s.Name == "explained_variance_ratio" {
				evr = s.Values
				assert.Equal(t, sdk.Public, s.Release)
			}
		}
		name := tc.est.Info().Name + " rank " + tc.raw["rank"]
		if !tc.want {
			assert.Nil(t, evr, name)
			continue
		}
		require.Len(t, evr, 2, name)
		var sum float64
		for _, v := range evr {
			assert.GreaterOrEqual(t, v, 0.0)
			sum += v
		}
		assert.LessOrEqual(t, sum, 1+1e-12, name)
		assert.Greater(t, sum, 0.1, name)
		if _, ok := tc.est.(RankK); ok {
			for _, s := range acct.Steps() {
				if s.Mechanism == privacy.MechLaplace {
					assert.Equal(t, 3, s.Dim, "top 2 and the tail in one release")
					assert.InDelta(t, 2, s.QuerySensitivity, 1e-12)
				}
			}
		}
	}
}
