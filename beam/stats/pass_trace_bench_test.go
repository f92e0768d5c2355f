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
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/rgrad"
)

// TestTimeTracePassesBeam times one prism pipeline per trace pass kind
// (reading four Parquet shards, a LIST column of d1·d2 = 400 features and
// the response, or four CSV shards with DPLR_PASS_BENCH_FORMAT=csv) on the data plugins/rgrad TestTimeTracePassesLocal times
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
	csv := os.Getenv("DPLR_PASS_BENCH_FORMAT") == "csv"
	if csv {
		dir = filepath.Join(dir, fmt.Sprintf("trace-n%d-csv", n))
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("trace-n%d", n))
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := d1 * d2
		x := g.Data.X.RawMatrix().Data
		for k := range shards {
			lo, hi := k*n/shards, (k+1)*n/shards
			if csv {
				rows := make([][]float64, hi-lo)
				for i := range rows {
					rows[i] = x[(lo+i)*p : (lo+i+1)*p]
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.csv", k)), []byte(traceCSV(rows, g.Data.Y[lo:hi])), 0o644))
			} else {
				writeParquet(t, filepath.Join(dir, fmt.Sprintf("s%d.parquet", k)), x[lo*p:hi*p], p, nil, g.Data.Y[lo:hi], pqList)
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644))
	}
	glob := filepath.Join(dir, "s*.parquet")
	ro := ReadOptions{Parquet: ParquetSchema{List: "x"}}
	if csv {
		glob, ro = filepath.Join(dir, "s*.csv"), ReadOptions{}
	}
	shape := pass.ShapeOf(g.Data)
	suffix := ""
	if csv {
		suffix = "-csv"
	}

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
	ctx := context.Background()
	for _, req := range []data.PassRequest{
		pass.TraceMomentKind.EncodeRequest(shape, pass.TraceMomentRequest{}),
		pass.TraceClippedMomentKind.EncodeRequest(shape, pass.TraceClippedMomentRequest{ClipX: cx, ClipY: cy}),
		pass.TraceGradientKind.EncodeRequest(shape, pass.TraceGradientRequest{M: m}),
		pass.TraceClippedGradientKind.EncodeRequest(shape, pass.TraceClippedGradientRequest{Tau: tau, Rank: r, M: m, U: u, Vt: vt}),
	} {
		want, err := pass.Local(g.Data).Pass(ctx, req)
		require.NoError(t, err)
		ws, _ := want.Output("sum")
		t0 := time.Now()
		res, err := ShardPass(ctx, glob, shape, ro, req, Options{})
		sec := time.Since(t0).Seconds()
		require.NoError(t, err)
		require.Equal(t, int64(n), res.Records)
		gs, _ := res.Output("sum")
		fmt.Printf("PASSBENCH variant=beam-shard%s n=%d kind=%s seconds=%.6f rel=%.2g\n", suffix, n, req.Kind, sec, relVec(gs.Data, ws.Data))
	}
	if os.Getenv("DPLR_PASS_BENCH_FIT") == "" {
		return
	}
	// One rgrad-strict fit (T = 5: 6 passes) in memory and through the
	// prism pipelines, same seed; the fit's variant names carry the format.
	var est sdk.Estimator
	for _, e := range rgrad.Estimators() {
		if e.Info().Name == "rgrad-strict" {
			est = e
		}
	}
	params := map[string]string{"rank": "2", "clip_y": "6", "clip": "20", "iterations": "5"}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 2, Delta: 1e-6}
	sh := pass.ShapeOf(g.Data)
	sh.Passer = benchPasser{glob: glob, shape: pass.ShapeOf(g.Data), ro: ro}
	remote := &data.Dataset{Kind: data.Trace, D1: d1, D2: d2, Remote: sh}
	seed := uint64(3)
	t0 := time.Now()
	loc, _, err := sdk.RunLocal(ctx, est, g.Data, params, grant, sdk.LocalOptions{Seed: &seed})
	tl := time.Since(t0).Seconds()
	require.NoError(t, err)
	t0 = time.Now()
	rem, _, err := sdk.RunLocal(ctx, est, remote, params, grant, sdk.LocalOptions{Seed: &seed})
	tb := time.Since(t0).Seconds()
	require.NoError(t, err)
	fmt.Printf("PASSBENCH variant=fit-memory n=%d kind=rgrad-strict seconds=%.6f\n", n, tl)
	fmt.Printf("PASSBENCH variant=fit-beam%s n=%d kind=rgrad-strict seconds=%.6f rel=%.2g\n", suffix, n, tb,
		relVec(rem.Matrices[0].M.RawMatrix().Data, loc.Matrices[0].M.RawMatrix().Data))
}

// benchPasser runs every pass with ShardPass over the benchmark shards.
type benchPasser struct {
	glob  string
	shape *data.Remote
	ro    ReadOptions
}

func (b benchPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return ShardPass(ctx, b.glob, b.shape, b.ro, req, Options{})
}
