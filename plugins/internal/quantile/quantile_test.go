package quantile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/kernel"
)

// Each utility moves by at most one when one score is replaced by any
// other: the sensitivity the mechanism is calibrated to (exhaustive over
// replacements at and between grid points).
func TestUtilitySensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	grid, err := kernel.Grid(0.01, 100, 4)
	require.NoError(t, err)
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(40)
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Exp(rng.NormFloat64() * 2)
		}
		q := rng.Float64()*0.98 + 0.01
		u := Utilities(s, q, grid)
		i := rng.IntN(n)
		for _, repl := range []float64{0, 1e9, grid[rng.IntN(len(grid))], math.Exp(rng.NormFloat64() * 3)} {
			t2 := append([]float64(nil), s...)
			t2[i] = repl
			v := Utilities(t2, q, grid)
			for k := range u {
				assert.LessOrEqual(t, math.Abs(u[k]-v[k]), 1.0+1e-12)
			}
		}
	}
}

type seq struct{ r *rand.Rand }

func (s seq) Float64() float64 { return s.r.Float64() }

// The sampled probabilities follow exp(β·u) (checked on a small grid), and
// a large β returns the true quantile's grid point.
func TestSampleDistribution(t *testing.T) {
	u := []float64{-2, 0, -1}
	beta := 0.7
	counts := make([]float64, 3)
	src := seq{rand.New(rand.NewPCG(3, 4))}
	const draws = 200000
	for i := 0; i < draws; i++ {
		k, err := Sample(u, beta, src)
		require.NoError(t, err)
		counts[k]++
	}
	var z float64
	for _, v := range u {
		z += math.Exp(beta * v)
	}
	for k, v := range u {
		p := math.Exp(beta*v) / z
		assert.InDelta(t, p, counts[k]/draws, 5*math.Sqrt(p*(1-p)/draws))
	}
	grid, err := kernel.Grid(0.5, 64, 8)
	require.NoError(t, err)
	scores := make([]float64, 1001)
	for i := range scores {
		scores[i] = 1 + float64(i)*0.01 // median 6
	}
	c, err := Release(scores, 0.5, grid, 50, src)
	require.NoError(t, err)
	assert.InDelta(t, 6, c, 6*0.1, "within a grid step of the median")
	_, err = Release(scores, 1, grid, 1, src)
	assert.Error(t, err)
	_, err = Release([]float64{-1}, 0.5, grid, 1, src)
	assert.Error(t, err)
	_, err = Sample(u, 0, src)
	assert.Error(t, err)
}

// Empirical neighbour test: on neighbouring score sets the output
// distributions' log-ratio stays within ε = 2β·Δu for every grid point
// (computed exactly from the utilities).
func TestNeighbourRatio(t *testing.T) {
	grid, err := kernel.Grid(0.1, 1000, 8)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	beta := 0.3
	for trial := 0; trial < 100; trial++ {
		s := make([]float64, 50)
		for i := range s {
			s[i] = math.Exp(rng.NormFloat64())
		}
		t2 := append([]float64(nil), s...)
		t2[rng.IntN(len(s))] = 1e6
		p, q := probs(Utilities(s, 0.3, grid), beta), probs(Utilities(t2, 0.3, grid), beta)
		for k := range p {
			assert.LessOrEqual(t, math.Abs(math.Log(p[k]/q[k])), 2*beta+1e-9)
		}
	}
}

func probs(u []float64, beta float64) []float64 {
	out := make([]float64, len(u))
	var z float64
	for k, v := range u {
		out[k] = math.Exp(beta * v)
		z += out[k]
	}
	for k := range out {
		out[k] /= z
	}
	return out
}

// The mechanism reads the scores only through their cell counts:
// Utilities on the scores equals CountUtilities on Counts, bit for bit,
// and Release equals ReleaseCounts with the same uniform variates, with
// scores on grid points, below the grid and above its top.
func TestCountsCarryTheRelease(t *testing.T) {
	grid, err := kernel.Grid(0.1, 10, 4)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 100; trial++ {
		n := 1 + rng.IntN(60)
		s := make([]float64, n)
		for i := range s {
			switch rng.IntN(4) {
			case 0:
				s[i] = grid[rng.IntN(len(grid))]
			case 1:
				s[i] = 0
			case 2:
				s[i] = 100
			default:
				s[i] = math.Exp(rng.NormFloat64())
			}
		}
		q := 0.05 + 0.9*rng.Float64()
		counts := kernel.Counts(s, grid)
		var total int64
		for _, c := range counts {
			total += c
		}
		require.EqualValues(t, n, total)
		cu, err := CountUtilities(counts, q)
		require.NoError(t, err)
		// The utilities from sorted scores, as the mechanism defines them.
		sorted := append([]float64(nil), s...)
		slices.Sort(sorted)
		prev := 0.0
		for k, g := range grid {
			c := 0.0
			for _, v := range sorted {
				if v <= g {
					c++
				}
			}
			want := -math.Max(0, math.Max(prev-q*float64(n), q*float64(n)-c))
			require.Equal(t, want, cu[k], "cell %d", k)
			prev = c
		}
		assert.Equal(t, Utilities(s, q, grid), cu)
		seed := rng.Uint64()
		a, err := Release(s, q, grid, 2, rand.New(rand.NewPCG(seed, 1)))
		require.NoError(t, err)
		b, err := ReleaseCounts(counts, q, grid, 2, rand.New(rand.NewPCG(seed, 1)))
		require.NoError(t, err)
		assert.Equal(t, a, b)
	}
	_, err = CountUtilities([]int64{1, -1, 2}, 0.5)
	assert.ErrorContains(t, err, "negative")
	_, err = ReleaseCounts([]int64{1, 2}, 0.5, grid, 1, rand.New(rand.NewPCG(1, 1)))
	assert.ErrorContains(t, err, "cell counts")
}

// Release is ReleaseCounts on the scores themselves, the reference the
// tests compare the counted draw with.
func Release(scores []float64, q float64, grid []float64, beta float64, rnd Uniform) (float64, error) {
	if !(q > 0 && q < 1) {
		return 0, fmt.Errorf("quantile: q = %v must lie in (0, 1)", q)
	}
	for i, s := range scores {
		if math.IsNaN(s) || s < 0 {
			return 0, fmt.Errorf("quantile: score %d = %v is not a non-negative number", i, s)
		}
	}
	return ReleaseCounts(kernel.Counts(scores, grid), q, grid, beta, rnd)
}

// At LocatingBeta every cell of the grid's empty stretches together weighs
// at most 1/20 of the whole, for point masses anywhere on the grid and for
// q on either side of the median (the bound LocatingBeta is derived from).
func TestLocatingBetaBoundsTheEmptyCells(t *testing.T) {
	grid := kernel.DefaultGrid()
	for _, c := range []struct {
		n     int
		q     float64
		score float64
	}{{50, 0.5, 1}, {200, 0.5, 1e-5}, {200, 0.9, 3e5}, {400, 0.1, 20}, {5000, 0.5, 0.7}} {
		scores := make([]float64, c.n)
		for i := range scores {
			scores[i] = c.score * (1 + 0.01*float64(i%7))
		}
		slices.Sort(scores)
		u := Utilities(scores, c.q, grid)
		beta := LocatingBeta(c.q, c.n, len(grid))
		var empty, total float64
		for k, v := range u {
			w := math.Exp(beta * v)
			total += w
			lo := 0.0
			if k > 0 {
				lo = grid[k-1]
			}
			if scores[0] > grid[k] || scores[len(scores)-1] <= lo { // no score in (g_{k−1}, g_k]
				empty += w
			}
		}
		assert.LessOrEqual(t, empty/total, 1.0/20, "n=%d q=%v at %v", c.n, c.q, c.score)
		assert.InDelta(t, math.Log(20*float64(len(grid)))/(math.Min(c.q, 1-c.q)*float64(c.n)), beta, 1e-15)
	}
}
