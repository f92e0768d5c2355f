package rgrad

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// ClipTail is the tail of |Z|·s·√(C_u χ²_k): checked against a simulation
// of the product (100 000 draws; tolerance four binomial standard errors
// plus 2 % of the value for the quadrature), and ModelClip solves
// n·ClipTail = count.
func TestClipTailAndModelClip(t *testing.T) {
	rng := newRng(61)
	for _, tc := range []struct {
		name           string
		d1, d2, r      int
		sx, rho, cu    float64
		tauOverTypical float64
	}{
		{"at M", 10, 8, 2, 0.5, 0, 1, 1.5},
		{"quarter σr", 10, 8, 2, 0.5, 0.25, 1, 2},
		{"far", 30, 20, 2, 0.5, 2, 1, 1},
		{"correlated design", 10, 8, 1, 0.5, 0.5, 2, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.r * (tc.d1 + tc.d2 - tc.r)
			s := math.Sqrt(tc.sx*tc.sx + tc.cu*tc.rho*tc.rho)
			tau := tc.tauOverTypical * s * math.Sqrt(tc.cu*float64(k))
			const draws = 100000
			hit := 0
			for i := 0; i < draws; i++ {
				var w float64
				for j := 0; j < k; j++ {
					z := rng.NormFloat64()
					w += z * z
				}
				if math.Abs(rng.NormFloat64())*s*math.Sqrt(tc.cu*w) > tau {
					hit++
				}
			}
			emp := float64(hit) / draws
			got := ClipTail(tau, tc.sx, tc.rho, tc.cu, tc.d1, tc.d2, tc.r)
			se := math.Sqrt(got * (1 - got) / draws)
			t.Logf("τ=%.3g: ClipTail %.5f, simulated %.5f", tau, got, emp)
			assert.InDelta(t, emp, got, 4*se+0.02*got)

			n := 4000
			c := ModelClip(n, tc.d1, tc.d2, tc.r, tc.sx, tc.rho, tc.cu, 1)
			assert.InEpsilon(t, 1, float64(n)*ClipTail(c, tc.sx, tc.rho, tc.cu, tc.d1, tc.d2, tc.r), 1e-4)
		})
	}
}
