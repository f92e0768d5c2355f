package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/pass"
)

// TestTimeTracePassesBeam times one prism pipeline per trace pass kind
// (reading four Parquet shards, a LIST column of d1·d2 = 400 features and
// the response) on the data plugins/rgrad TestTimeTracePassesLocal times
// in memory (the same generator and seed), for bench/results/rgrad-beam.md.
// It runs only with DPLR_PASS_BENCH_N set (the sample count); the shards
// are written once under DPLR_PASS_BENCH_DIR (default a temporary
// directory) and reused by later runs. It prints one PASSBENCH line per
// kind.
func TestTimeTracePassesBeam(t *testing.T) {
	nStr := os.Getenv("DPLR_PASS_BENCH_N")
	if nStr == "" {
		t.Skip("set DPLR_PASS_BENCH_N to time the passes")
	}
	n, err := strconv.Atoi(nStr)
	require.NoError(t, err)
	const d1, d2, r, shards = 20, 20, 2, 4
	model, err := gen.Lookup(gen.TraceModelName)
	require.NoError(t, err)
	g, err := gen.Run(model, map[string]string{"n": nStr, "d1": "20", "d2": "20", "rank": "2",
		"sigma1": "2", "sigmar": "1", "sigma_xi": "0.5"}, 77)
	require.NoError(t, err)
	dir := os.Getenv("DPLR_PASS_BENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("trace-n%d", n))
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := d1 * d2
		x := g.Data.X.RawMatrix().Data
		for k := range shards {
			lo, hi := k*n/shards, (k+1)*n/shards
			writeParquet(t, filepath.Join(dir, fmt.Sprintf("s%d.parquet", k)), x[lo*p:hi*p], p, nil, g.Data.Y[lo:hi], pqList)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644))
	}
	glob := filepath.Join(dir, "s*.parquet")
	ro := ReadOptions{Parquet: ParquetSchema{List: "x"}}
	shape := pass.ShapeOf(g.Data)

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
	arr := func(name string, rows, cols int, v []float64) data.Array {
		return data.Array{Name: name, Rows: rows, Cols: cols, Data: v}
	}
	ctx := context.Background()
	for _, req := range []data.PassRequest{
		{Kind: pass.TraceMoment},
		{Kind: pass.TraceClippedMoment, Params: map[string]float64{"cx": cx, "cy": cy}},
		{Kind: pass.TraceGradient, Inputs: []data.Array{arr("m", 1, p, m)}},
		{Kind: pass.TraceClippedGradient, Params: map[string]float64{"tau": tau, "rank": r},
			Inputs: []data.Array{arr("m", 1, p, m), arr("u", d1, r, u), arr("vt", r, d2, vt)}},
	} {
		t0 := time.Now()
		res, err := TracePass(ctx, glob, shape, ro, req, Options{})
		sec := time.Since(t0).Seconds()
		require.NoError(t, err)
		require.Equal(t, int64(n), res.Records)
		want, err := pass.Local(g.Data).Pass(ctx, req)
		require.NoError(t, err)
		ws, _ := want.Output("sum")
		gs, _ := res.Output("sum")
		fmt.Printf("PASSBENCH variant=beam n=%d kind=%s seconds=%.6f rel=%.2g\n", n, req.Kind, sec, relVec(gs.Data, ws.Data))
	}
}
