package orbit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// sensitivity= and noise= replaced calibration=: a request with the old
// name is refused before any step, with an error naming the replacement
// and its values.
func TestCalibrationRenamed(t *testing.T) {
	ds := genData(t, 300, 6, 2, 21)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.8, Delta: 1e-6}
	for _, tc := range []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
		want  string
	}{
		{"em", EM{}, map[string]string{"rank": "1", "calibration": "paper"}, pure(1), "calibration= was renamed sensitivity= (values: worst-case, paper, add-remove)"},
		{"rank-k", RankK{}, map[string]string{"rank": "1", "calibration": "exact"}, pure(1), "calibration= was renamed sensitivity= (values: worst-case, paper, add-remove)"},
		{"em with the new name too", EM{}, map[string]string{"rank": "1", "sensitivity": "paper", "calibration": "paper"}, pure(1), "calibration= was renamed sensitivity="},
		{"gauss", Gauss{}, map[string]string{"rank": "2", "calibration": "classical"}, approx, "calibration= was renamed noise= (values: exact, zcdp, classical, analytic)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, ds, pinned(tc.raw), tc.grant, sdk.LocalOptions{})
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.True(t, sdk.IsBadRequest(err), "%v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}

// Conformance of every orbit estimator: the catalogue comes from typed
// options, every declared release is drawn, seeds reproduce, a rank above
// d is refused before any spend.
func TestOrbitConformance(t *testing.T) {
	ds := genData(t, 300, 6, 2, 22)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	for _, est := range Estimators() {
		info := est.Info()
		t.Run(info.Name, func(t *testing.T) {
			require.NotNil(t, info.Options, "typed options")
			resolved, err := sdk.InfoOf(est)
			require.NoError(t, err)
			assert.NotEmpty(t, resolved.Params)
			for _, k := range []string{"1", "3"} {
				raw := map[string]string{"rank": k}
				res, acct := run(t, est, ds, raw, approx, 9)
				assert.Empty(t, acct.Undrawn(), "declared releases left undrawn")
				res2, _ := run(t, est, ds, raw, approx, 9)
				assert.True(t, mat.Equal(matrix(t, res, "U").M, matrix(t, res2, "U").M), "seed reproduces")
				assert.NotEmpty(t, res.Guarantee.Kind)
				for _, m := range res.Matrices {
					assert.NotEmpty(t, m.Release, m.Name)
				}
			}
			_, acct, err := sdk.RunLocal(context.Background(), est, ds, pinned(map[string]string{"rank": "7"}), approx, sdk.LocalOptions{})
			require.Error(t, err)
			assert.True(t, sdk.IsBadRequest(err), "%v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}
