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

// TestTimeTracePassesLocal times (median of 3 after a warm-up), per kind,
// the in-process passes a fit on a file makes (pass.Local, parallel over
// GOMAXPROCS row blocks), on the benchmark data of
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
	ref := pass.Local(g.Data)
	ctx := context.Background()
	sh := pass.ShapeOf(g.Data)
	for _, req := range []data.PassRequest{
		pass.TraceMomentKind.EncodeRequest(sh, pass.TraceMomentRequest{}),
		pass.TraceClippedMomentKind.EncodeRequest(sh, pass.TraceClippedMomentRequest{ClipX: cx, ClipY: cy}),
		pass.TraceGradientKind.EncodeRequest(sh, pass.TraceGradientRequest{M: m}),
		pass.TraceClippedGradientKind.EncodeRequest(sh, pass.TraceClippedGradientRequest{Tau: tau, Rank: r, M: m, U: u, Vt: vt}),
	} {
		_, err := ref.Pass(ctx, req) // warm up
		require.NoError(t, err)
		var ts []float64
		for range 3 {
			t0 := time.Now()
			_, err := ref.Pass(ctx, req)
			ts = append(ts, time.Since(t0).Seconds())
			require.NoError(t, err)
		}
		fmt.Printf("PASSBENCH variant=local n=%d kind=%s seconds=%.6f\n", n, req.Kind, median3(ts))
	}
}

func median3(v []float64) float64 {
	a, b, c := v[0], v[1], v[2]
	return max(min(a, b), min(max(a, b), c))
}
