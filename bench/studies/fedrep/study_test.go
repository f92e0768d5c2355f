package fedrepstudy

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// TestAltMinRidgeStudy (DPLR_STUDY=1) is the exploration behind the
// default ridge of Priv-AltMin: it prints dist and MSE at the paper size for
// both group modes and several ridges.
func TestAltMinRidgeStudy(t *testing.T) {
	if os.Getenv("DPLR_STUDY") == "" {
		t.Skip("set DPLR_STUDY=1 to run the Priv-AltMin ridge study")
	}
	m, err := gen.Lookup(gen.UsersLowRankName)
	require.NoError(t, err)
	g, err := gen.Run(m, map[string]string{"users": "20000", "samples": "10", "dim": "50", "rank": "2", "noise": "0.01"}, 1)
	require.NoError(t, err)
	seed := uint64(3)
	for _, groups := range []string{"disjoint", "all"} {
		for _, ridge := range []string{"0", "0.01", "1", "100"} {
			for _, eps := range []float64{1, 8} {
				res, _, err := sdk.RunLocal(context.Background(), fedrep.PrivAltMin{}, g.Data, map[string]string{"ridge": ridge, "groups": groups}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: 1e-6}, sdk.LocalOptions{Seed: &seed})
				require.NoError(t, err)
				u, v := res.Matrices[0].M, res.Matrices[1].M
				dist, _, err := evaluate.SinTheta(u, g.Truth["U"])
				require.NoError(t, err)
				mse, err := fedrep.PopulationMSE(u, v, g.Truth["U"], g.Truth["V"], 0.01)
				require.NoError(t, err)
				t.Logf("%s ridge=%s eps=%g dist=%.4f mse=%.4f", groups, ridge, eps, dist, mse)
			}
		}
	}
}
