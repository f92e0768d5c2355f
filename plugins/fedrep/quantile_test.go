package fedrep

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/clip"
)

// TestPrivateClipDefaults: with neither clip given, fedrep-private declares
// two exponential-mechanism quantiles from the tune share, states the
// chosen values and matches the step to the clip.
func TestPrivateClipDefaults(t *testing.T) {
	g := genUsers(t, 400, 10, 10, 2, 0.01, 3)
	res, acct := fit(t, PrivateFedRep{}, g.Data, map[string]string{"iterations": "3"}, approx(2), 1)
	steps := acct.Steps()
	require.Len(t, steps, 6) // 2 quantiles, the start, 3 rounds
	assert.Contains(t, steps[0].Name, "init_clip")
	assert.Contains(t, steps[1].Name, "init:")
	assert.Contains(t, steps[2].Name, "clip:")
	for _, s := range []privacy.Step{steps[0], steps[2]} {
		assert.Equal(t, privacy.MechExponential, s.Mechanism, s.Name)
		assert.Equal(t, 1.0, s.Sensitivity, "a replaced user moves each count, and each utility, by at most one")
	}
	psi := scalar(t, res, "clip")
	assert.InDelta(t, 1/psi, scalar(t, res, "step"), 1e-12/psi)
	assert.InEpsilon(t, 2*psi/400, steps[3].Sensitivity, 1e-6)
	assert.Greater(t, scalar(t, res, "init_clip"), 0.0)
	// Given clips spend nothing on quantiles.
	_, acct = fit(t, PrivateFedRep{}, g.Data, map[string]string{"iterations": "3", "clip": "1", "init_clip": "5"}, approx(2), 1)
	assert.Len(t, acct.Steps(), 4)
}

// TestPrivateClipFewUsers: at the budget a default fit at (1, 1e-6) gives
// one clip quantile (half of tune_share 0.04 of the grant's ρ), the
// private median of the users' U-statistic norms, 200 draws per size.
// Measured (octaves from the true median: median / 90th percentile /
// worst draw): 400 users 0.19 / 2.3 / 20.9, 2000 users 0.06 / 0.13 / 0.31.
// The Gaussian histogram it replaced (DERIVATIONS.md §12), at the same ρ:
// 400 users 32.8 / 39.8 / 41, 2000 users 0.5 / 1.75 / 25.5. At 400 users
// about one draw in ten still lands far from the data (the exponential
// mechanism's weight on the grid's ~640 empty cells).
func TestPrivateClipFewUsers(t *testing.T) {
	rho, err := privacy.RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	b := privacy.Budget{Noise: privacy.NoiseZCDP, Rho: 0.02 * rho, Mechanism: privacy.MechExponential}
	grid := kernel.DefaultGrid()
	for _, n := range []int{400, 2000} {
		g := genUsers(t, n, 10, 10, 2, 0.01, 7)
		h, err := testUsers(t, g.Data, 0.5, 2, math.Inf(1), lossSquared).ustatHist(context.Background())
		require.NoError(t, err)
		var cum float64
		var median float64
		for k, c := range h[:len(grid)] {
			if cum += c; cum >= 0.5*float64(n) {
				median = grid[k]
				break
			}
		}
		require.Positive(t, median)
		acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1})
		require.NoError(t, err)
		run := &sdk.Run{Acct: acct, Rand: privacy.NewSeededSource(uint64(n))}
		var off []float64
		for i := 0; i < 200; i++ {
			q, err := clip.PrivateNorm(run.Acct, run.Rand, "median", b, h, 0.5)
			require.NoError(t, err)
			off = append(off, math.Abs(math.Log2(q/median)))
		}
		sort.Float64s(off)
		t.Logf("%d users: octaves from the true median, median %.2f, 75th %.2f, 90th %.2f, worst %.2f", n, off[100], off[150], off[180], off[199])
		assert.Less(t, off[100], 0.5, "%d users: half the draws within half an octave", n)
		if n >= 2000 {
			assert.Less(t, off[199], 1.0, "%d users: every draw within an octave", n)
		}
	}
}
