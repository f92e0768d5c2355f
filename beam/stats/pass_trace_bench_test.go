package stats

import (
	"context"
	"fmt"
	"math"
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
		want, err := pass.Local(g.Data).Pass(ctx, req)
		require.NoError(t, err)
		ws, _ := want.Output("sum")
		for _, v := range []struct {
			name string
			fn   tracePassFunc
		}{{"beam-shard", TracePass}, {"beam-element", traceElementPass}} {
			if os.Getenv("DPLR_PASS_BENCH_ONLY") != "" && os.Getenv("DPLR_PASS_BENCH_ONLY") != v.name {
				continue
			}
			t0 := time.Now()
			res, err := v.fn(ctx, glob, shape, ro, req, Options{})
			sec := time.Since(t0).Seconds()
			require.NoError(t, err)
			require.Equal(t, int64(n), res.Records)
			gs, _ := res.Output("sum")
			fmt.Printf("PASSBENCH variant=%s%s n=%d kind=%s seconds=%.6f rel=%.2g\n", v.name, suffix, n, req.Kind, sec, relVec(gs.Data, ws.Data))
		}
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

// traceElementPass is the trace pass with trace.go's per-sample DoFns:
// one element per sample from the shard reader to the per-sample term and
// the combiner. The benchmark compares it with TracePass (one partial sum
// per shard).
func traceElementPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	spec, err := pass.Validate(data.Trace, shape, req)
	if err != nil {
		return nil, err
	}
	opt.Read = ro
	to := TraceOptions{D1: shape.D1, D2: shape.D2}
	inf := math.Inf(1)
	var g *GradSum
	var scalars func(*GradSum) map[string]float64
	switch req.Kind {
	case pass.TraceMoment:
		// The clipped moment with infinite bounds (a side input): each term
		// is 1·y_i·x_i.
		g, err = tracePass(ctx, glob, to, []float64{inf, inf}, &momentFn{}, opt)
	case pass.TraceClippedMoment:
		g, err = ClippedMoment(ctx, glob, to, req.Params["cx"], req.Params["cy"], opt)
		scalars = func(g *GradSum) map[string]float64 { return map[string]float64{"clipped": float64(g.Clipped)} }
	case pass.TraceGradient:
		m, _ := req.Input("m")
		// Clip 0: no clipping (an infinite clip cannot travel in the DoFn's
		// serialised fields).
		g, err = GradientSum(ctx, glob, to, m.Data, 0, opt)
		scalars = func(g *GradSum) map[string]float64 { return map[string]float64{"loss": g.Loss} }
	case pass.TraceClippedGradient:
		m, _ := req.Input("m")
		u, _ := req.Input("u")
		vt, _ := req.Input("vt")
		r := vt.Rows
		v := make([]float64, shape.D2*r) // V (d2×r) from Vᵀ
		for k := 0; k < r; k++ {
			for j := 0; j < shape.D2; j++ {
				v[j*r+k] = vt.Data[k*shape.D2+j]
			}
		}
		g, err = ProjectedGradientSum(ctx, glob, to, TangentIterate{M: m.Data, U: u.Data, V: v, R: r}, req.Params["tau"], opt)
		scalars = func(g *GradSum) map[string]float64 {
			return map[string]float64{"loss": g.Loss, "clipped": float64(g.Clipped)}
		}
	default:
		return nil, fmt.Errorf("pass %s: no Beam implementation", req.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	res := &data.PassResult{Records: g.N, Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: shape.P, Data: g.Sum}}}
	if scalars != nil {
		res.Scalars = scalars(g)
	}
	if err := pass.CheckResult(spec, shape, req, res); err != nil {
		return nil, err
	}
	opt.progress("beam: pass %s: %d samples aggregated", req.Kind, g.N)
	return res, nil
}

// benchPasser runs every pass with TracePass over the benchmark shards.
type benchPasser struct {
	glob  string
	shape *data.Remote
	ro    ReadOptions
}

func (b benchPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return TracePass(ctx, b.glob, b.shape, b.ro, req, Options{})
}
