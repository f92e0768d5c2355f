package rgrad

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// TestTimeTracePassesLocal times (median of 3 after a warm-up), per kind, the in-memory passes a
// fit makes (designPass, parallel over GOMAXPROCS row blocks) and the
// serial reference pass.Local, on the benchmark data of
// bench/results/rgrad-beam.md. It runs only with DPLR_PASS_BENCH_N set
// (the sample count; d1 = d2 = 20, r = 2) and prints one PASSBENCH line
// per timing; the Beam side is beam/stats TestTimeTracePassesBeam.
func TestTimeTracePassesLocal(t *testing.T) {
	nStr := os.Getenv("DPLR_PASS_BENCH_N")
	if nStr == "" {
		t.Skip("set DPLR_PASS_BENCH_N to time the passes")
	}
	n, err := strconv.Atoi(nStr)
	require.NoError(t, err)
	const d1, d2, r = 20, 20, 2
	g := genTrace(t, 77, map[string]string{"n": itoa(n), "d1": itoa(d1), "d2": itoa(d2)})
	truth := g.Truth["M"]
	var svd mat.SVD
	require.True(t, svd.Factorize(truth, mat.SVDThin))
	var uu, vv mat.Dense
	svd.UTo(&uu)
	svd.VTo(&vv)
	u := mat.DenseCopyOf(uu.Slice(0, d1, 0, r)).RawMatrix().Data
	vt := mat.DenseCopyOf(vv.Slice(0, d2, 0, r).T()).RawMatrix().Data
	m := mat.DenseCopyOf(truth).RawMatrix().Data
	for j := range m {
		m[j] *= 0.9
	}
	const cx, cy, tau = 25.0, 3.0, 5.0
	p := d1 * d2
	dp := newDesignPass(g.Data.X, g.Data.Y, d1, d2)
	out := make([]float64, p)
	ref := pass.Local(g.Data)
	ctx := context.Background()
	arr := func(name string, rows, cols int, v []float64) data.Array {
		return data.Array{Name: name, Rows: rows, Cols: cols, Data: v}
	}
	for _, tc := range []struct {
		kind   string
		design func()
		req    data.PassRequest
	}{
		{pass.TraceMoment, func() { dp.moment(out) }, data.PassRequest{Kind: pass.TraceMoment}},
		{pass.TraceClippedMoment, func() { dp.clippedMoment(out, cx, cy) },
			data.PassRequest{Kind: pass.TraceClippedMoment, Params: map[string]float64{"cx": cx, "cy": cy}}},
		{pass.TraceGradient, func() { dp.gradient(out, m) },
			data.PassRequest{Kind: pass.TraceGradient, Inputs: []data.Array{arr("m", 1, p, m)}}},
		{pass.TraceClippedGradient, func() { dp.clippedGradient(out, m, u, vt, r, tau) },
			data.PassRequest{Kind: pass.TraceClippedGradient, Params: map[string]float64{"tau": tau, "rank": r},
				Inputs: []data.Array{arr("m", 1, p, m), arr("u", d1, r, u), arr("vt", r, d2, vt)}}},
	} {
		tc.design() // warm up
		_, err := ref.Pass(ctx, tc.req)
		require.NoError(t, err)
		var tds, trs []float64
		for range 3 {
			t0 := time.Now()
			tc.design()
			tds = append(tds, time.Since(t0).Seconds())
			t0 = time.Now()
			_, err := ref.Pass(ctx, tc.req)
			trs = append(trs, time.Since(t0).Seconds())
			require.NoError(t, err)
		}
		td, tr := median3(tds), median3(trs)
		fmt.Printf("PASSBENCH variant=design n=%d kind=%s seconds=%.6f\n", n, tc.kind, td)
		fmt.Printf("PASSBENCH variant=reference n=%d kind=%s seconds=%.6f\n", n, tc.kind, tr)
	}
}

func median3(v []float64) float64 {
	a, b, c := v[0], v[1], v[2]
	return max(min(a, b), min(max(a, b), c))
}
