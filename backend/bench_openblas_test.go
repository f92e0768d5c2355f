//go:build openblas

package backend

import (
	"fmt"
	"testing"

	"github.com/dplr/dplr/backend/internal/lapacke"
)

// BenchmarkRawLAPACKE times the LAPACKE routines behind the OpenBLAS
// backend called directly on column-major buffers, as the baseline of the
// backend's overhead. Each iteration restores the (destroyed) input with a
// plain copy, as any caller must.
func BenchmarkRawLAPACKE(b *testing.B) {
	for _, n := range benchSizes {
		rng := newRNG(uint64(n))
		sym := symFull(randSym(rng, n, 1))          // symmetric: its own column-major image
		sq := randDense(rng, n, n).RawMatrix().Data // any square matrix
		tall := randDense(rng, 2*n, n).RawMatrix().Data
		spiked := symFull(benchSpiked(n))
		work := make([]float64, len(tall))
		w := make([]float64, n)
		z := make([]float64, n*n)
		u := make([]float64, n*n)
		tau := make([]float64, n)
		cases := []struct {
			name string
			run  func() error
		}{
			{"dsyevd", func() error {
				copy(work, sym)
				_, err := lapacke.Dsyevd(true, 'U', n, work, n, w)
				return err
			}},
			{"dsyevr-top10", func() error {
				copy(work, spiked)
				_, _, err := lapacke.DsyevrIndex('U', n, work, n, n-benchTopK+1, n, w, z, n)
				return err
			}},
			{"dgesdd", func() error {
				copy(work, sq)
				_, err := lapacke.Dgesdd(n, n, work, n, w, u, n, z, n)
				return err
			}},
			{"dgeqrf+dorgqr", func() error {
				copy(work, tall)
				if err := lapacke.Dgeqrf(2*n, n, work, 2*n, tau); err != nil {
					return err
				}
				return lapacke.Dorgqr(2*n, n, n, work, 2*n, tau)
			}},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					if err := c.run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTopEigRange times LAPACK's exact top-10 route (dsyevr over an
// index range) on the DP-noised spiked matrix, next to BenchmarkTopEig.
func BenchmarkTopEigRange(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		a := benchSpiked(n)
		b.Run(fmt.Sprintf("openblas/dsyevr-range/n=%d", n), func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				if _, _, err := (OpenBLAS{}).EigSymRange(a, benchTopK); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
