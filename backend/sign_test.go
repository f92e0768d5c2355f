package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestCanonicalSigns(t *testing.T) {
	cases := []struct {
		name string
		in   []float64 // 3×2, row-major
		want []float64
	}{
		{"already positive", []float64{0.1, 0.9, 0.8, -0.1, -0.2, 0.3}, []float64{0.1, 0.9, 0.8, -0.1, -0.2, 0.3}},
		{"largest negative flips", []float64{0.1, -0.9, -0.8, 0.1, 0.2, 0.3}, []float64{-0.1, 0.9, 0.8, -0.1, -0.2, -0.3}},
		{"tie: the first wins", []float64{-0.5, 0, 0.5, 1, 0, 0}, []float64{0.5, 0, -0.5, 1, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mat.NewDense(3, 2, append([]float64(nil), c.in...))
			canonicalSigns(m)
			assert.Equal(t, c.want, m.RawMatrix().Data)
		})
	}
}

// The top-k solvers release the same vectors (not just the same subspace)
// for a matrix and a rounding-level perturbation of it, on both paths
// (Krylov at large dimension, exact at small).
func TestEigSymTopSignsStable(t *testing.T) {
	rng := newRNG(11)
	for _, n := range []int{40, 400} {
		a := spikedNoisy(rng, n, linspace(8, 3, 6), 1)
		b := mat.NewSymDense(n, nil)
		b.CopySym(a)
		for i := 0; i < n; i++ {
			b.SetSym(i, i, b.At(i, i)*(1+1e-13))
		}
		for _, be := range backendsUnderTest() {
			_, va, err := be.EigSymTop(a, 6)
			require.NoError(t, err)
			_, vb, err := be.EigSymTop(b, 6)
			require.NoError(t, err)
			for j := 0; j < 6; j++ {
				d := 0.0
				for i := 0; i < n; i++ {
					d += va.At(i, j) * vb.At(i, j)
				}
				assert.Greater(t, d, 0.99, "n=%d column %d flipped", n, j)
			}
		}
	}
}
