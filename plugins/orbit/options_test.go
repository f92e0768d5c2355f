package orbit

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The new names sensitivity= and noise= do what the deprecated calibration=
// did; calibration= still works for one release and says so in the notes;
// a contradiction between the two is refused before any spend.
func TestSensitivityAndNoiseReplaceCalibration(t *testing.T) {
	ds := genData(t, 300, 6, 2, 21)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.8, Delta: 1e-6}
	cases := []struct {
		name      string
		est       sdk.Estimator
		new, old  map[string]string
		grant     privacy.Grant
		wantScale string
	}{
		{"em paper", EM{}, map[string]string{"rank": "1", "sensitivity": "paper"}, map[string]string{"rank": "1", "calibration": "paper"}, pure(1), "beta"},
		{"em add-remove", EM{}, map[string]string{"rank": "1", "sensitivity": "add-remove"}, map[string]string{"rank": "1", "calibration": "add-remove"}, pure(1), "beta"},
		{"rank-k worst-case", RankK{}, map[string]string{"rank": "1", "sensitivity": "worst-case"}, map[string]string{"rank": "1", "calibration": "exact"}, pure(1), "beta"},
		{"gauss classical", Gauss{}, map[string]string{"rank": "2", "noise": "classical"}, map[string]string{"rank": "2", "calibration": "classical"}, approx, "sigma"},
		{"gauss analytic", Gauss{}, map[string]string{"rank": "2", "noise": "analytic"}, map[string]string{"rank": "2", "calibration": "analytic"}, approx, "sigma"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := run(t, tc.est, ds, tc.new, tc.grant, 5)
			b, _ := run(t, tc.est, ds, tc.old, tc.grant, 5)
			assert.Equal(t, scalar(t, a, tc.wantScale), scalar(t, b, tc.wantScale))
			assert.True(t, mat.Equal(matrix(t, a, "U").M, matrix(t, b, "U").M))
			assert.NotContains(t, strings.Join(a.Notes, "\n"), "deprecated")
			assert.Contains(t, strings.Join(b.Notes, "\n"), "calibration= is deprecated")
		})
	}
	for _, raw := range []map[string]string{
		{"rank": "1", "sensitivity": "paper", "calibration": "add-remove"},
	} {
		_, acct, err := sdk.RunLocal(context.Background(), EM{}, ds, pinned(raw), pure(1), sdk.LocalOptions{})
		require.Error(t, err)
		assert.True(t, sdk.IsBadRequest(err), "%v", err)
		if acct != nil {
			assert.Empty(t, acct.Steps())
		}
	}
	_, acct, err := sdk.RunLocal(context.Background(), Gauss{}, ds, pinned(map[string]string{"rank": "2", "noise": "analytic", "calibration": "classical"}), approx, sdk.LocalOptions{})
	require.Error(t, err)
	assert.True(t, sdk.IsBadRequest(err), "%v", err)
	if acct != nil {
		assert.Empty(t, acct.Steps())
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
