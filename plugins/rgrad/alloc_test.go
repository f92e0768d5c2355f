package rgrad

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/alloctest"
)

// The passes over the n×(d1·d2) design (pass.Local in process) allocate
// nothing that grows with n: each call's heap allocation (the request, the
// per-worker d1·d2 sums, the result) is the same at every n.
func TestPassAllocationsIndependentOfN(t *testing.T) {
	const d1, d2, r, reps = 20, 15, 2, 20
	pt := randPoint(t, newRng(4), d1, d2, r)
	m := pt.Dense().RawMatrix().Data
	tg := tangentOf(pt.U, pt.V)
	ctx := context.Background()
	perCall := map[string][]float64{}
	ns := []int{500, 8000} // 8n = 64000 B at the larger n
	for _, n := range ns {
		g := genTrace(t, 21, map[string]string{"n": itoa(n)})
		ps := newPasses(g.Data)
		out := make([]float64, d1*d2)
		for _, tc := range []struct {
			name string
			pass func()
		}{
			{"moment", func() { require.NoError(t, ps.moment(ctx, out)) }},
			{"clipped moment", func() { _, err := ps.clippedMoment(ctx, out, 10, 3); require.NoError(t, err) }},
			{"gradient", func() { _, err := ps.gradient(ctx, out, m); require.NoError(t, err) }},
			{"clipped gradient", func() { _, _, err := ps.clippedGradient(ctx, out, m, tg, 2); require.NoError(t, err) }},
		} {
			tc.pass() // warm up
			b := alloctest.HeapBytes(func() {
				for i := 0; i < reps; i++ {
					tc.pass()
				}
			}) / reps
			t.Logf("n=%d %s: %.0f B per pass", n, tc.name, b)
			perCall[tc.name] = append(perCall[tc.name], b)
			// Measured 6.4–15.2 kB (the most for the clipped gradient: its
			// request and the two checks of its result, in this package and
			// in pass.Local); one n-vector at n = 8000 is 64 kB.
			assert.Less(t, b, 32768.0, "n=%d %s allocates %.0f B per pass", n, tc.name, b)
		}
	}
	for name, b := range perCall {
		assert.Less(t, b[1]-b[0], 512.0, "%s: allocation grows with n (%.0f B at n=%d, %.0f B at n=%d)", name, b[0], ns[0], b[1], ns[1])
	}
}

// A whole fit allocates per iteration only d1×d2- and r-sized temporaries:
// the extra heap of 8 more iterations, per iteration, stays far below one
// n-vector, for every estimator.
func TestFitAllocationPerIterationIndependentOfN(t *testing.T) {
	const n = 16000
	g := genTrace(t, 22, map[string]string{"n": itoa(n)})
	for _, name := range []string{"rgrad-dp", "rgrad-weak", "rgrad-strict", "rgrad-nonprivate"} {
		t.Run(name, func(t *testing.T) {
			params := func(iters int) map[string]string {
				p := map[string]string{"rank": "2", "iterations": itoa(iters)}
				switch name {
				case "rgrad-strict":
					p["clip_y"], p["clip"] = "10", "8"
				case "rgrad-nonprivate":
				default:
					p = modelParamsFor(g, map[string]string{"iterations": itoa(iters)})
				}
				return p
			}
			grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 4, Delta: 1e-5}
			run := func(iters int) float64 {
				return alloctest.HeapBytes(func() {
					res, _ := fitOK(t, name, g, params(iters), grant, 1)
					require.NotNil(t, res)
				})
			}
			run(2) // warm up
			b2, b10 := run(2), run(10)
			per := (b10 - b2) / 8
			t.Logf("%s: %.0f B per iteration (one n-vector is %d B)", name, per, 8*n)
			// Measured 35–53 kB per iteration alone and up to 84 kB inside
			// the whole suite (d1×d2 temporaries of the pass, its checks,
			// the step and the retraction, and the heap sampling's noise
			// under load); an n-sized float64 temporary alone would be
			// 128 kB on top of them.
			assert.Less(t, per, float64(8*n), "per-iteration allocation %.0f B", per)
		})
	}
}
