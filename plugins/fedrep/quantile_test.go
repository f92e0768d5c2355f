package fedrep

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuantileHistogramNeighbours checks the sensitivity √2 of the clip
// quantile's histogram (DERIVATIONS.md §12) on replace-one neighbours,
// including values that are zero, not finite or outside the grid.
func TestQuantileHistogramNeighbours(t *testing.T) {
	edges := quantileEdges()
	base := []float64{1e-3, 0.5, 0.5, 2, 3, 7, 1e5}
	repl := []float64{0, math.NaN(), math.Inf(1), 1e-300, 1e300, 0.5, 2.0001, -4}
	h0 := quantileHistogram(base, edges)
	worst := 0.0
	for i := range base {
		for _, r := range repl {
			nb := append([]float64(nil), base...)
			nb[i] = r
			h1 := quantileHistogram(nb, edges)
			var s float64
			for j := range h0 {
				s += (h0[j] - h1[j]) * (h0[j] - h1[j])
			}
			worst = math.Max(worst, math.Sqrt(s))
		}
	}
	assert.LessOrEqual(t, worst, quantileSensitivity)
	assert.InDelta(t, quantileSensitivity, worst, 1e-12, "the bound is met")
}

// TestQuantileFromCounts checks the post-processing: without noise it
// returns the smallest grid edge at or above the q-quantile.
func TestQuantileFromCounts(t *testing.T) {
	edges := quantileEdges()
	vals := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	h := quantileHistogram(vals, edges)
	q := quantileFromCounts(h, edges, 0.5, len(vals))
	assert.GreaterOrEqual(t, q, 5.0)
	assert.Less(t, q, 5*math.Exp2(0.25)+1e-12)
	assert.Equal(t, edges[len(edges)-1], quantileFromCounts(make([]float64, len(h)), edges, 0.5, 10))
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
