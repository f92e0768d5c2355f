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
