package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// TestImplementation checks the BLAS routines against gonum's own on
// every transpose, triangle and kind of beta (zero over NaN, one, other).
func TestImplementation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	fill := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		return s
	}
	near := func(t *testing.T, want, got []float64) {
		t.Helper()
		for i := range want {
			if math.IsNaN(want[i]) {
				require.True(t, math.IsNaN(got[i]), "element %d", i)
				continue
			}
			require.InDelta(t, want[i], got[i], 1e-12*(1+math.Abs(want[i])), "element %d", i)
		}
	}
	var ref gonum.Implementation
	var im Implementation
	m, n, k, pad := 37, 29, 71, 3
	for _, beta := range []float64{0, 1, -0.5} {
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				t.Run(fmt.Sprintf("Dgemm/beta=%v/%c%c", beta, tA, tB), func(t *testing.T) {
					ra, ca, rb, cb := m, k, k, n
					if tA == blas.Trans {
						ra, ca = ca, ra
					}
					if tB == blas.Trans {
						rb, cb = cb, rb
					}
					a, b := fill(ra*(ca+pad)), fill(rb*(cb+pad))
					c := fill(m * (n + pad))
					if beta == 0 {
						c[0] = math.NaN()
					}
					want := append([]float64(nil), c...)
					ref.Dgemm(tA, tB, m, n, k, 1.5, a, ca+pad, b, cb+pad, beta, want, n+pad)
					im.Dgemm(tA, tB, m, n, k, 1.5, a, ca+pad, b, cb+pad, beta, c, n+pad)
					near(t, want, c)
				})
			}
			for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
				t.Run(fmt.Sprintf("Dsyrk+Dsyr2k/beta=%v/%c%c", beta, tA, ul), func(t *testing.T) {
					ra, ca := n, k
					if tA == blas.Trans {
						ra, ca = ca, ra
					}
					a, b := fill(ra*(ca+pad)), fill(ra*(ca+pad))
					c := fill(n * (n + pad))
					want := append([]float64(nil), c...)
					ref.Dsyrk(ul, tA, n, k, 0.5, a, ca+pad, beta, want, n+pad)
					im.Dsyrk(ul, tA, n, k, 0.5, a, ca+pad, beta, c, n+pad)
					near(t, want, c)
					ref.Dsyr2k(ul, tA, n, k, 0.5, a, ca+pad, b, ca+pad, beta, want, n+pad)
					im.Dsyr2k(ul, tA, n, k, 0.5, a, ca+pad, b, ca+pad, beta, c, n+pad)
					near(t, want, c)
				})
			}
		}
	}
	// Invalid arguments raise gonum's panics.
	require.Panics(t, func() {
		im.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, make([]float64, 3), 2, make([]float64, 4), 2, 0, make([]float64, 4), 2)
	})
	require.Panics(t, func() { im.Dsyrk(blas.Upper, blas.NoTrans, 3, 2, 1, make([]float64, 6), 1, 0, make([]float64, 9), 3) })
}
