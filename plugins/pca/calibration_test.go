package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

// pca-amin's eigenvalue release: the top eigenvalue alone has replace-one
// ℓ1 sensitivity γ²/n (it was charged 2γ²/n); r ≥ 2 keeps 2γ²/n.
func TestAminEigenvalueSensitivity(t *testing.T) {
	g := spiked(t, 800, 10, 2, "24,20", "gaussian", 41)
	const clip = 6.0
	for _, tc := range []struct {
		rank string
		want float64
	}{{"1", clip * clip / 800}, {"2", 2 * clip * clip / 800}} {
		res, acct := fit(t, Amin{}, g, map[string]string{"rank": tc.rank, "clip": "6"}, pure(1), 1)
		var found bool
		for _, s := range acct.Steps() {
			if s.Name == "eigenvalues" {
				found = true
				assert.InEpsilon(t, tc.want, s.QuerySensitivity, 1e-12, "rank %s", tc.rank)
			}
		}
		assert.True(t, found)
		assert.Contains(t, strings.Join(res.Guarantee.Assumptions, "; "), "float64", "the sampler's arithmetic caveat")
	}

	// Empirical neighbour check: the top eigenvalue of the clipped second
	// moment never moves by more than γ²/n, and adversarial pairs come close.
	rng := rand.New(rand.NewPCG(5, 6))
	n, p := 60, 4
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	top := func(m *mat.Dense) float64 {
		s, _, err := Gram(context.Background(), backend.Gonum{}, m, nil, 1)
		require.NoError(t, err)
		v, _, err := topEigen(context.Background(), backend.Gonum{}, s, 1)
		require.NoError(t, err)
		return v[0]
	}
	base := top(x)
	bound := EigenvalueSensitivity(1, n, 1)
	var worst float64
	for trial := 0; trial < 300; trial++ {
		y := mat.DenseCopyOf(x)
		i := rng.IntN(n)
		for j := 0; j < p; j++ {
			y.Set(i, j, 5*rng.NormFloat64())
		}
		worst = math.Max(worst, math.Abs(top(y)-base)/bound)
	}
	t.Logf("max |Δλ1| / (γ²/n) = %.3f", worst)
	assert.LessOrEqual(t, worst, 1+1e-9)
	assert.Greater(t, worst, 0.3)
}

// pca-amin's eigenvalue release with its tail (2 ≤ r < p): the vector
// (λ_1, …, λ_r, Σ_{k>r} λ_k) of the clipped second moment moves by at most
// 2γ²/n in ℓ1 under replace-one neighbours (the same bound as the top r
// alone), and the explained-variance ratios come out of the release.
func TestAminEigenvalueTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n, p, r := 50, 5, 2
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, rng.NormFloat64()*float64(p-j))
		}
	}
	grouped := func(m *mat.Dense) []float64 {
		s, _, err := Gram(context.Background(), backend.Gonum{}, m, nil, 1)
		require.NoError(t, err)
		v, _, err := topEigen(context.Background(), backend.Gonum{}, s, r)
		require.NoError(t, err)
		rest := mat.Trace(s)
		for _, a := range v {
			rest -= a
		}
		return append(v, rest)
	}
	base := grouped(x)
	bound := EigenvalueSensitivity(1, n, r)
	var worst float64
	for trial := 0; trial < 300; trial++ {
		y := mat.DenseCopyOf(x)
		i := rng.IntN(n)
		for j := 0; j < p; j++ {
			y.Set(i, j, 5*rng.NormFloat64())
		}
		var l1 float64
		for k, v := range grouped(y) {
			l1 += math.Abs(v - base[k])
		}
		worst = math.Max(worst, l1/bound)
	}
	t.Logf("max ℓ1 change of (top %d, tail) / (2γ²/n) = %.3f", r, worst)
	assert.LessOrEqual(t, worst, 1+1e-9)
	assert.Greater(t, worst, 0.3)

	g := spiked(t, 4000, 10, 2, "24,20", "gaussian", 43)
	for _, tc := range []struct {
		rank string
		eps  float64
		evr  bool
	}{{"1", 1, false}, {"3", 50, true}, {"10", 1, true}} {
		res, acct := fit(t, Amin{}, g, map[string]string{"rank": tc.rank, "clip": "8"}, approx(tc.eps, 1e-6), 2)
		var dims int
		for _, s := range acct.Steps() {
			if s.Name == "eigenvalues" {
				dims = s.Dim
			}
		}
		var evr []float64
		for _, s := range res.Series {
			if s.Name == "explained_variance_ratio" {
				evr = s.Values
			}
		}
		if !tc.evr {
			assert.Nil(t, evr, "rank 1: no tail, no ratio")
			assert.Equal(t, 1, dims)
			continue
		}
		require.NotNil(t, evr, "rank %s", tc.rank)
		var sum float64
		for _, v := range evr {
			assert.GreaterOrEqual(t, v, 0.0)
			sum += v
		}
		assert.LessOrEqual(t, sum, 1+1e-12)
		if tc.rank == "3" {
			assert.Equal(t, 4, dims, "top 3 and the tail in one release")
			// Large ε: close to the clipped data's own ratios.
			ref, _ := fit(t, NonPrivate{}, g, map[string]string{"rank": "3", "clip": "8"}, approx(1, 1e-6), 0)
			ev := series(t, ref, "eigenvalues")
			tr := scalar(t, ref, "trace")
			for k := range evr {
				assert.InDelta(t, ev[k]/tr, evr[k], 0.01)
			}
		} else {
			assert.Equal(t, 10, dims, "r = p: no tail")
			assert.InDelta(t, 1, sum, 1e-12)
		}
	}
}
