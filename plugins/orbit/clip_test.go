package orbit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// With the default clip=auto every private orbit estimator first declares
// the clip quantile, releases the clip it used, spends the whole grant and
// reports no evaluation figure unless evaluate=true; rank is required.
func TestClipAutoOrbit(t *testing.T) {
	ds := genData(t, 400, 6, 2, 3)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	for _, tc := range []struct {
		est   sdk.Estimator
		grant privacy.Grant
	}{{EM{}, pure(1)}, {RankK{}, pure(2)}, {Deflation{}, pure(1)}, {Gauss{}, approx}} {
		seed := uint64(4)
		raw := map[string]string{"rank": "2"}
		if _, ok := tc.est.(EM); ok {
			raw["iterations"] = "5"
		}
		res, acct, err := sdk.RunLocal(context.Background(), tc.est, ds, raw, tc.grant, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err, tc.est.Info().Name)
		steps := acct.Steps()
		require.NotEmpty(t, steps)
		assert.Equal(t, "clip quantile", steps[0].Name)
		assert.Empty(t, acct.Undrawn())
		c := scalar(t, res, "clip")
		assert.InDelta(t, 1, c, 0.1, "unit-norm rows: the median norm is 1 within a grid step")
		for _, s := range res.Scalars {
			assert.NotEqual(t, "loss", s.Name, "evaluation is opt-in")
		}
	}
	_, _, err := sdk.RunLocal(context.Background(), EM{}, ds, map[string]string{}, pure(1), sdk.LocalOptions{})
	assert.Error(t, err, "rank is required, as in the pca plugin")
}
