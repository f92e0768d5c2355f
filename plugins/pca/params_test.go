package pca

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// pca-amin with eigenvalue_share=0 cannot build Sigma: the refusal must come
// before any privacy step, so the host refunds the grant (it used to come
// after the eigenvector draws, and the whole grant stayed charged).
func TestAminOutputSigmaWithoutEigenvaluesSpendsNothing(t *testing.T) {
	g := spiked(t, 2000, 10, 2, "24,20", "gaussian", 41)
	_, acct, err := sdk.RunLocal(context.Background(), Amin{}, g.Data,
		map[string]string{"rank": "2", "clip": "10", "eigenvalue_share": "0", "output_sigma": "true"}, pure(1), sdk.LocalOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "output_sigma needs eigenvalues")
	if acct != nil {
		assert.Empty(t, acct.Steps(), "refused before any step was declared")
	}

	// Without output_sigma, eigenvalue_share=0 still runs and releases no eigenvalues.
	res, acct := fit(t, Amin{}, g, map[string]string{"rank": "2", "clip": "10", "eigenvalue_share": "0"}, pure(1), 1)
	assert.Len(t, acct.Steps(), 2)
	for _, s := range res.Series {
		assert.NotEqual(t, "eigenvalues", s.Name)
	}
}

// pca_only releases no Λ̃: asking for outputs built from it is an error
// before any spend, not a silently smaller result.
func TestCXZPCAOnlyRefusesStageTwoOutputs(t *testing.T) {
	g := spiked(t, 2000, 20, 2, "24,20", "gaussian", 42)
	base := map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "pca_only": "true"}
	for _, name := range []string{"output_sigma", "rotate", "psd"} {
		raw := map[string]string{name: "true"}
		for k, v := range base {
			raw[k] = v
		}
		_, acct, err := sdk.RunLocal(context.Background(), CXZ{}, g.Data, raw, approx(1, 1e-6), sdk.LocalOptions{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name+" needs the eigenvalue stage")
		if acct != nil {
			assert.Empty(t, acct.Steps(), name)
		}
	}
	res, acct := fit(t, CXZ{}, g, base, approx(1, 1e-6), 1)
	assert.Len(t, acct.Steps(), 1)
	assert.Len(t, res.Matrices, 1, "pca_only releases U only")
}

// Parameters the estimators need strictly positive advertise a positive
// minimum, so 0 is refused by the catalogue check (a usage error, nothing
// reserved) instead of being listed as valid ("≥ 0") and refused later, or,
// for pca-nonprivate's clip, silently read as "no clip".
func TestPositiveParametersHavePositiveMinimum(t *testing.T) {
	valid := map[string]map[string]string{
		"pca-cxz":           {"rank": "2", "sigma2": "1", "lambda": "24,20"},
		"pca-analyze-gauss": {"rank": "2", "clip": "5"},
		"pca-amin":          {"rank": "2", "clip": "5"},
		"pca-nonprivate":    {"rank": "2"},
	}
	want := map[string][]string{
		"pca-cxz":           {"sigma2"},
		"pca-analyze-gauss": {"mean_clip"},
		"pca-amin":          {"mean_clip"},
		"pca-nonprivate":    {"clip"},
	}
	g := spiked(t, 500, 10, 2, "24,20", "gaussian", 43)
	for _, est := range Estimators() {
		info, err := sdk.InfoOf(est)
		require.NoError(t, err)
		for _, name := range want[info.Name] {
			var spec *sdk.ParamSpec
			for i := range info.Params {
				if info.Params[i].Name == name {
					spec = &info.Params[i]
				}
			}
			require.NotNil(t, spec, "%s.%s", info.Name, name)
			positive := (spec.Min != nil && *spec.Min > 0) || (spec.ExclusiveMin != nil && *spec.ExclusiveMin >= 0)
			assert.True(t, positive, "%s.%s: catalogue minimum must exclude 0", info.Name, name)
			raw := map[string]string{name: "0"}
			for k, v := range valid[info.Name] {
				if k != name {
					raw[k] = v
				}
			}
			_, err := sdk.ValidateParams(info.Params, raw)
			require.Error(t, err, "%s.%s", info.Name, name)
		}
	}
	_, _, err := sdk.RunLocal(context.Background(), NonPrivate{}, g.Data, map[string]string{"rank": "2", "clip": "0"}, approx(1, 1e-6), sdk.LocalOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clip")
}

// pca-cxz has no clip for mean_clip to default to: center=private without
// mean_clip (mean_clip=auto) draws a private median of the raw row
// norms from a fifth of mean_share before the mean (DERIVATIONS.md §12.3),
// releases it as mean_clip, and the two steps cost exactly mean_share
// between them; a given mean_clip draws no quantile.
func TestCXZPrivateCentringMeanClipAuto(t *testing.T) {
	g := spiked(t, 2000, 20, 2, "24,20", "gaussian", 44)
	raw := map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "center": "private", "noise": "zcdp"}
	res, acct := fit(t, CXZ{}, g, raw, approx(1, 1e-6), 1)
	steps := acct.Steps()
	require.Len(t, steps, 4, "quantile + mean + two stages")
	assert.Equal(t, []string{"clip quantile (mean)", "mean"}, []string{steps[0].Name, steps[1].Name})
	rho, err := privacy.RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	// The exponential step's ε under zCDP is √(8ρ_q) (bounded range ε²/8).
	assert.InEpsilon(t, 0.1*0.2*rho, steps[0].Epsilon*steps[0].Epsilon/8, 1e-9)
	assert.InEpsilon(t, 0.1*0.8*rho, steps[1].Rho, 1e-9)
	mc := scalar(t, res, "mean_clip")
	norms := make([]float64, 2000)
	for i := range norms {
		norms[i] = mat.Norm(g.Data.X.RowView(i), 2)
	}
	sort.Float64s(norms)
	// At this budget (ε ≈ 0.07 for the quantile) the exponential mechanism
	// lands within a few hundred rows of the median (its grid cell holds
	// the norms up to it, one grid step 2^(1/16) wide).
	assert.Greater(t, mc, norms[600])
	assert.Less(t, mc, norms[1400]*math.Pow(2, 1.0/16))
	assert.NotNil(t, matrix(t, res, "mean"))
	raw["mean_clip"] = "12"
	res, acct = fit(t, CXZ{}, g, raw, approx(1, 1e-6), 1)
	assert.Len(t, acct.Steps(), 3, "mean + two stages")
	assert.Equal(t, 12.0, scalar(t, res, "mean_clip"))
}

// Requests the estimators refuse as such (conflicting parameters, a rank
// the data cannot support, a calibration the budget's form does not allow)
// are marked sdk.BadRequest, so the host reports a usage error, and are
// refused before any privacy step.
func TestRefusedRequestsAreBadRequests(t *testing.T) {
	g := spiked(t, 2000, 10, 2, "24,20", "gaussian", 43)
	cases := []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant func() privacy.Grant
	}{
		{"cxz lambda not a number", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "abc"}, func() privacy.Grant { return approx(1, 1e-6) }},
		{"cxz lambda ascending", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "20,24"}, func() privacy.Grant { return approx(1, 1e-6) }},
		{"cxz lambda count", CXZ{}, map[string]string{"rank": "3", "sigma2": "1", "lambda": "24,20"}, func() privacy.Grant { return approx(1, 1e-6) }},
		{"cxz rank vs 2r < p", CXZ{}, map[string]string{"rank": "5", "sigma2": "1", "lambda": "24"}, func() privacy.Grant { return approx(1, 1e-6) }},
		{"cxz unknown calibration constants", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "sensitivity": "paper", "c2": "0"}, func() privacy.Grant { return approx(1, 1e-6) }},
		{"analyze gauss classical under ρ", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "10", "noise": "classical"}, func() privacy.Grant { return privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.1} }},
		{"analyze gauss classical above ε = 1", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "10", "noise": "classical"}, func() privacy.Grant { return approx(4, 1e-6) }},
		{"amin rank above p", Amin{}, map[string]string{"rank": "11", "clip": "10"}, func() privacy.Grant { return pure(1) }},
		{"cxz mean_clip 0", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20", "center": "private", "mean_clip": "0"}, func() privacy.Grant { return approx(1, 1e-6) }},
		{"cxz rank=auto with lambda", CXZ{}, map[string]string{"rank": "auto", "lambda": "24"}, func() privacy.Grant { return approx(1, 1e-6) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, tc.grant(), sdk.LocalOptions{})
			require.Error(t, err)
			assert.True(t, sdk.IsBadRequest(err), "refusal not marked: %v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps(), "refused before any step")
			}
		})
	}
}
