// Package quantile releases a quantile of non-negative per-record scores
// (row or user norms, in practice) on a public logarithmic grid: how the
// plugins choose a clip without the user looking at the data. The
// mechanism reads the scores only through their cell counts on the grid
// (kernel.Counts, one cell per score by kernel.Cell: the cells are
// (g_{k−1}, g_k] with g_{−1} = −∞, and one more above the top), so the
// counts can come from a local count or from an aggregation pass.
//
// The grid is data-independent (kernel.Grid): geometric with a fixed
// number of points per octave between public bounds. Replacing one score
// by any other moves at most one unit of count from one cell to another;
// n is public under the replace-one relation. A score above the grid's
// top lies in no cell at or below a grid point, so the top of the grid is
// the largest clip the mechanism can choose.
//
// Exponential mechanism (ReleaseCounts; pca, orbit, rgrad, fedrep). With
// c_k = #{i : s_i ≤ g_k} (c_{−1} = 0) the candidate g_k stands for the
// cell (g_{k−1}, g_k] and has utility u_k = −dist(q·n, [c_{k−1}, c_k]):
// zero when the target rank q·n falls in the cell, so that a point mass
// (every row of norm 1, say) still has a cell of utility 0. Each c_k moves
// by at most one under a replacement, and dist(t, [a, b]) =
// max(0, a − t, t − b) is 1-Lipschitz in (a, b) under the max norm, so
// every utility moves by at most Δu = 1. Sampling k with probability
// ∝ exp(β·u_k) with β = ε/(2Δu) is ε-DP (McSherry & Talwar 2007); the
// caller declares that step with its accountant and hands β over.
//
// The derivations are in plugins/pca/DERIVATIONS.md §6.
package quantile

import (
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/kernel"
)

// Utilities returns u_k = −dist(q·n, [c_{k−1}, c_k]) for every grid point,
// with c_k the number of scores ≤ g_k and c_{−1} = 0. scores is not
// modified. Each u_k has sensitivity 1 under replacing one score.
func Utilities(scores []float64, q float64, grid []float64) []float64 {
	u, _ := CountUtilities(kernel.Counts(scores, grid), q)
	return u
}

// CountUtilities is Utilities from the cell counts of the scores
// (kernel.Counts: len(grid)+1 non-negative counts, the last one above the grid):
// n = Σ counts, c_k = Σ_{j ≤ k} counts_j. It fails on a negative count.
func CountUtilities(counts []int64, q float64) ([]float64, error) {
	if len(counts) < 2 {
		return nil, fmt.Errorf("quantile: %d cell counts, want at least 2", len(counts))
	}
	var n int64
	for k, c := range counts {
		if c < 0 {
			return nil, fmt.Errorf("quantile: cell count %d = %d is negative", k, c)
		}
		n += c
	}
	target := q * float64(n)
	u := make([]float64, len(counts)-1)
	prev, cum := 0.0, int64(0)
	for k := range u {
		cum += counts[k]
		c := float64(cum) // #{s_i ≤ g_k}
		u[k] = -math.Max(0, math.Max(prev-target, target-c))
		prev = c
	}
	return u, nil
}

// Uniform is the source of uniform variates in [0, 1) the sampler uses.
type Uniform interface{ Float64() float64 }

// Sample draws index k with probability ∝ exp(β·u_k) by inverting the
// cumulative distribution (computed stably from the maximum utility).
func Sample(u []float64, beta float64, rnd Uniform) (int, error) {
	if len(u) == 0 {
		return 0, fmt.Errorf("quantile: empty grid")
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return 0, fmt.Errorf("quantile: inverse temperature β = %v must be positive and finite", beta)
	}
	top := math.Inf(-1)
	for _, v := range u {
		top = math.Max(top, v)
	}
	w := make([]float64, len(u))
	var total float64
	for k, v := range u {
		w[k] = math.Exp(beta * (v - top))
		total += w[k]
	}
	t := rnd.Float64() * total
	for k, v := range w {
		if t < v {
			return k, nil
		}
		t -= v
	}
	return len(w) - 1, nil
}

// LocatingBeta is the inverse temperature at which the exponential
// mechanism finds the q-quantile of n scores on a grid of gridSize points
// rather than an empty stretch of the grid. A cell that holds no score
// and lies below (above) all of them has utility −q·n (−(1−q)·n), so all
// such cells together weigh at most gridSize·exp(−β·min(q, 1−q)·n)
// against one cell of utility 0; at β = ln(20·gridSize)/(min(q, 1−q)·n)
// that is at most 1/20. It is a function of public quantities only (n is
// public under replace-one). plugins/pca/DERIVATIONS.md §6.
func LocatingBeta(q float64, n, gridSize int) float64 {
	m := math.Min(q, 1-q) * float64(max(n, 1))
	return math.Log(20*float64(max(gridSize, 1))) / m
}

// ReleaseCounts draws the private q-quantile of the scores whose cell
// counts on grid (kernel.Counts) are counts, at inverse temperature β
// (see the package doc for the privacy argument).
func ReleaseCounts(counts []int64, q float64, grid []float64, beta float64, rnd Uniform) (float64, error) {
	if !(q > 0 && q < 1) {
		return 0, fmt.Errorf("quantile: q = %v must lie in (0, 1)", q)
	}
	if len(counts) != len(grid)+1 {
		return 0, fmt.Errorf("quantile: %d cell counts for a grid of %d points, want %d", len(counts), len(grid), len(grid)+1)
	}
	u, err := CountUtilities(counts, q)
	if err != nil {
		return 0, err
	}
	k, err := Sample(u, beta, rnd)
	if err != nil {
		return 0, err
	}
	return grid[k], nil
}
