package fedrep

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/sdk"
)

// TestQuantileGrid: the users' histogram grid is 2^(j/4), j = −160 … 160,
// bit for bit (DERIVATIONS.md §12), so the passes bin as they always did.
func TestQuantileGrid(t *testing.T) {
	g := quantileGrid()
	require.Len(t, g, 321)
	for k, v := range g {
		require.Equal(t, math.Exp2(float64(k-160)/4), v, "point %d", k)
	}
}

// TestPrivateClipDefaults: with neither clip given, fedrep-private declares
// two quantile releases from the tune share, states the chosen values and
// matches the step to the clip.
func TestPrivateClipDefaults(t *testing.T) {
	g := genUsers(t, 400, 10, 10, 2, 0.01, 3)
	res, acct := fit(t, PrivateFedRep{}, g.Data, map[string]string{"iterations": "3"}, approx(2), 1)
	steps := acct.Steps()
	require.Len(t, steps, 6) // 2 quantiles, the start, 3 rounds
	assert.Contains(t, steps[0].Name, "init_clip")
	assert.Contains(t, steps[1].Name, "init:")
	assert.Contains(t, steps[2].Name, "clip:")
	assert.InEpsilon(t, math.Sqrt2, steps[0].Sensitivity, 1e-6) // plus the grid allowance
	psi := scalar(t, res, "clip")
	assert.InDelta(t, 1/psi, scalar(t, res, "step"), 1e-12/psi)
	assert.InEpsilon(t, 2*psi/400, steps[3].Sensitivity, 1e-6)
	assert.Greater(t, scalar(t, res, "init_clip"), 0.0)
	// Given clips spend nothing on quantiles.
	_, acct = fit(t, PrivateFedRep{}, g.Data, map[string]string{"iterations": "3", "clip": "1", "init_clip": "5"}, approx(2), 1)
	assert.Len(t, acct.Steps(), 4)
}

// TestValidationScoreNeighbours checks the sensitivity 1/n of the
// selection's validation score (DERIVATIONS.md §13): replacing one user's
// rows by adversarial ones moves the mean score by at most 1/n.
func TestValidationScoreNeighbours(t *testing.T) {
	const n = 60
	g := genUsers(t, n, 8, 10, 2, 0.1, 11)
	u := g.Truth["U"]
	for _, acc := range []bool{false, true} {
		base, err := testUsers(t, g.Data, 0.5, 2, math.Inf(1), lossSquared).validationScore(context.Background(), u.RawMatrix().Data, 2, false, acc)
		require.NoError(t, err)
		for _, i := range []int{0, 7, n - 1} {
			for kind := 0; kind < 4; kind++ {
				adv := adversarial(g.Data, i, kind)
				s, err := testUsers(t, adv, 0.5, 2, math.Inf(1), lossSquared).validationScore(context.Background(), u.RawMatrix().Data, 2, false, acc)
				require.NoError(t, err)
				assert.LessOrEqual(t, math.Abs(s-base), 1/float64(n)+1e-12, "user %d, kind %d", i, kind)
			}
		}
	}
}

// TestPrivateSelection: the selection declares every candidate's steps
// (fitted on the 210 users that do not score), one exponential step of
// sensitivity 1/90 (the 30 % of the 300 users that score) and the final
// fit on all 300 users, and states the chosen configuration; every
// declared release is drawn.
func TestPrivateSelection(t *testing.T) {
	g := genUsers(t, 300, 10, 10, 2, 0.01, 5)
	res, acct := fit(t, PrivateFedRep{}, g.Data, map[string]string{"iterations": "2", "select": "rank=1,2;clip_quantile=0.3,0.7", "init_clip": "5"}, approx(4), 1)
	var exp int
	for _, s := range acct.Steps() {
		if strings.HasPrefix(s.Name, "select:") {
			exp++
			assert.InDelta(t, 1.0/90, s.Sensitivity, 1e-12)
		}
		if strings.Contains(s.Name, "init: mean") {
			want := 2 * 5.0 / 300 // the final fit: every user
			if strings.HasPrefix(s.Name, "candidate") {
				want = 2 * 5.0 / 210
			}
			assert.InEpsilon(t, want, s.Sensitivity, 1e-8, s.Name) // the recorded Δ carries the grid allowance
		}
	}
	assert.Equal(t, 1, exp)
	// 4 candidates × (1 quantile + start + 2 rounds) + select + final (4).
	assert.Len(t, acct.Steps(), 4*4+1+4)
	assert.Empty(t, acct.Undrawn())
	r := scalar(t, res, "selected_rank")
	assert.Contains(t, []float64{1, 2}, r)
	assert.Equal(t, int(r), matrix(t, res, "U").M.RawMatrix().Cols)
	// Refusals from public quantities, before any spend.
	_, _, err := sdk.RunLocal(context.Background(), PrivateFedRep{}, g.Data, map[string]string{"select": "rank=2,99"}, approx(1), sdk.LocalOptions{})
	require.Error(t, err)
	_, _, err = sdk.RunLocal(context.Background(), PrivateFedRep{}, g.Data, map[string]string{"select": "clip_quantile=0.5,0.6", "clip": "1"}, approx(1), sdk.LocalOptions{})
	require.Error(t, err)
	// The former names name their replacement.
	for _, old := range []string{"select_rank", "select_clip_quantile", "select_users"} {
		_, _, err = sdk.RunLocal(context.Background(), PrivateFedRep{}, g.Data, map[string]string{old: "1,2"}, approx(1), sdk.LocalOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "select")
		assert.Contains(t, err.Error(), "renamed")
	}
}
