package pca

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
)

// sensitivity= and noise= replaced pca-cxz's calibration= and gaussian= and
// pca-analyze-gauss's calibration=: a request with an old name is refused
// before any step, with an error naming the replacement and its values.
func TestRenamedParameters(t *testing.T) {
	g := spiked(t, 3000, 20, 2, "24,20", "gaussian", 51)
	cxz := map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20"}
	for _, tc := range []struct {
		name string
		est  sdk.Estimator
		raw  map[string]string
		want string
	}{
		{"cxz calibration", CXZ{}, with(cxz, "calibration", "paper"), "calibration= was renamed sensitivity= (values: explicit, paper, diverging, subgaussian, davis-kahan, worst-case)"},
		{"cxz gaussian", CXZ{}, with(cxz, "gaussian", "analytic"), "gaussian= was renamed noise= (values: auto, exact, zcdp, classical, analytic)"},
		{"cxz both names", CXZ{}, with(cxz, "sensitivity", "paper", "calibration", "paper"), "calibration= was renamed sensitivity="},
		{"analyze gauss calibration", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "12", "calibration": "analytic"}, "calibration= was renamed noise= (values: exact, zcdp, classical, analytic)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, approx(1, 1e-5), sdk.LocalOptions{})
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.True(t, sdk.IsBadRequest(err), "%v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}

// Conformance of every pca estimator: typed options, every declared
// release drawn, seeds reproduce, the evaluation option works, a rank above
// p is refused before any spend.
func TestPCAConformance(t *testing.T) {
	g := spiked(t, 2000, 12, 2, "24,20", "gaussian", 52)
	raw := map[string]map[string]string{
		"pca-cxz":           {"rank": "2", "sigma2": "1", "lambda": "24,20", "output_sigma": "true", "evaluate": "true"},
		"pca-analyze-gauss": {"rank": "2", "clip": "12", "center": "private", "evaluate": "true"},
		"pca-amin":          {"rank": "2", "clip": "12", "center": "private", "output_sigma": "true", "evaluate": "true"},
		"pca-nonprivate":    {"rank": "2", "evaluate": "true"},
	}
	for _, est := range Estimators() {
		info := est.Info()
		t.Run(info.Name, func(t *testing.T) {
			require.NotNil(t, info.Options, "typed options")
			grant := approx(1, 1e-5)
			res, acct := fit(t, est, g, raw[info.Name], grant, 4)
			assert.Empty(t, acct.Undrawn(), "declared releases left undrawn")
			res2, _ := fit(t, est, g, raw[info.Name], grant, 4)
			assert.True(t, mat.Equal(matrix(t, res, "U"), matrix(t, res2, "U")), "seed reproduces")
			assert.NotEmpty(t, res.Guarantee.Kind)
			assert.Positive(t, scalar(t, res, "captured_variance_ratio"))
			bad := map[string]string{}
			for k, v := range raw[info.Name] {
				bad[k] = v
			}
			bad["rank"] = "13"
			_, acct, err := sdk.RunLocal(context.Background(), est, g.Data, bad, grant, sdk.LocalOptions{})
			require.Error(t, err)
			assert.True(t, sdk.IsBadRequest(err), "%v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}
