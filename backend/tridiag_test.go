package backend

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// The tridiagonal top-k path returns the full decomposition's top k
// eigenvalues (to 1e-12 of the norm), orthonormal vectors with residuals
// at rounding level, and the same subspace wherever the k-th eigenvalue
// is separated from the next: on a random matrix, a noise-dominated one
// (the case the Krylov solver gives up on), a spectrum with a repeated
// top eigenvalue and one with a near tie.
func TestEigSymTopTridiag(t *testing.T) {
	const n = 150
	r := rand.New(rand.NewPCG(3, 3))
	wigner := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			wigner.SetSym(i, j, r.NormFloat64())
		}
	}
	spec := func(top ...float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(i) / n
		}
		copy(s[n-len(top):], top)
		return s
	}
	for _, tc := range []struct {
		name string
		a    *mat.SymDense
		k    int
	}{
		{"wigner", wigner, 3},
		{"separated", symWithSpectrum(rand.New(rand.NewPCG(1, 1)), spec(3, 5, 9)), 3},
		{"repeated top", symWithSpectrum(rand.New(rand.NewPCG(2, 1)), spec(4, 7, 7)), 2},
		{"near tie", symWithSpectrum(rand.New(rand.NewPCG(3, 1)), spec(2, 6, 6+1e-9)), 3},
		{"one", symWithSpectrum(rand.New(rand.NewPCG(4, 1)), spec(5)), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, vecs, err := eigSymTopTridiag(tc.a, tc.k)
			require.NoError(t, err)
			full, fvecs, err := Gonum{}.EigSym(tc.a)
			require.NoError(t, err)
			norm := math.Max(math.Abs(full[0]), math.Abs(full[n-1]))
			for j := range tc.k {
				assert.InDelta(t, full[j], vals[j], 1e-12*norm, "eigenvalue %d", j)
				var av mat.VecDense
				av.MulVec(tc.a, vecs.ColView(j))
				av.AddScaledVec(&av, -vals[j], vecs.ColView(j))
				assert.Less(t, av.Norm(2), 1e-10*norm, "residual %d", j)
			}
			var g mat.Dense
			g.Mul(vecs.T(), vecs)
			for i := range tc.k {
				for j := range tc.k {
					assert.InDelta(t, b2f(i == j), g.At(i, j), 1e-10, "orthonormal (%d, %d)", i, j)
				}
			}
			if full[tc.k-1]-full[tc.k] > 1e-3*norm {
				// The same subspace: ‖P_full − P‖ small.
				var c mat.Dense
				c.Mul(fvecs.Slice(0, n, 0, tc.k).T(), vecs)
				var s float64
				for i := range tc.k {
					for j := range tc.k {
						s += c.At(i, j) * c.At(i, j)
					}
				}
				assert.InDelta(t, float64(tc.k), s, 1e-9, "subspace overlap")
			}
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
