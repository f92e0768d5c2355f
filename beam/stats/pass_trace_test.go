package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/rgrad"
)

// traceShards writes the trace data set g as CSV shards of the given sizes
// under a temporary directory and returns their glob and the data set
// loaded back from one whole file (the single-machine path).
func traceShards(t *testing.T, g *gen.Generated, sizes ...int) (string, *data.Dataset) {
	t.Helper()
	ds := g.Data
	x := make([][]float64, ds.N())
	for i := range x {
		x[i] = ds.X.RawRowView(i)
	}
	dir := t.TempDir()
	lo := 0
	for k, sz := range sizes {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("t-%d.csv", k)), []byte(traceCSV(x[lo:lo+sz], ds.Y[lo:lo+sz])), 0o644))
		lo += sz
	}
	require.Equal(t, ds.N(), lo)
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(traceCSV(x, ds.Y)), 0o644))
	loaded, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Trace, D1: ds.D1, D2: ds.D2})
	require.NoError(t, err)
	return filepath.Join(dir, "t-*.csv"), loaded
}

func genTraceData(t *testing.T, n, d1, d2 int) *gen.Generated {
	t.Helper()
	m, err := gen.Lookup(gen.TraceModelName)
	require.NoError(t, err)
	g, err := gen.Run(m, map[string]string{"n": fmt.Sprint(n), "d1": fmt.Sprint(d1), "d2": fmt.Sprint(d2), "rank": "2",
		"sigma1": "2", "sigmar": "1", "sigma_xi": "0.5"}, 11)
	require.NoError(t, err)
	return g
}

// TestTracePassesMatchLocal: each trace pass kind run as a Beam pipeline
// on prism over three shards (ShardPass, one partial sum per shard)
// returns what pass.Local, the in-process runner of the same kernels,
// returns on the one file: the same record count and clipped counts, sums
// (and response counts) and losses equal to 1e-12 relative (only the order
// of the sums differs).
func TestTracePassesMatchLocal(t *testing.T) {
	const d1, d2, r = 5, 4, 2
	g := genTraceData(t, 900, d1, d2)
	glob, ds := traceShards(t, g, 300, 400, 200)
	shape := pass.ShapeOf(ds)
	p := d1 * d2

	// A rank-r iterate near the truth and its tangent space.
	truth := g.Truth["M"]
	var svd mat.SVD
	require.True(t, svd.Factorize(truth, mat.SVDThin))
	var uu, vv mat.Dense
	svd.UTo(&uu)
	svd.VTo(&vv)
	u := mat.DenseCopyOf(uu.Slice(0, d1, 0, r)).RawMatrix().Data
	vt := mat.DenseCopyOf(vv.Slice(0, d2, 0, r).T()).RawMatrix().Data
	m := make([]float64, p)
	for j, v := range mat.DenseCopyOf(truth).RawMatrix().Data {
		m[j] = 0.8 * v
	}
	reqs := []data.PassRequest{
		pass.TraceMomentKind.EncodeRequest(shape, pass.TraceMomentRequest{}),
		pass.TraceClippedMomentKind.EncodeRequest(shape, pass.TraceClippedMomentRequest{ClipX: 4.5, ClipY: 2}),
		pass.TraceGradientKind.EncodeRequest(shape, pass.TraceGradientRequest{M: m}),
		pass.TraceClippedGradientKind.EncodeRequest(shape, pass.TraceClippedGradientRequest{Tau: 2, Rank: r, M: m, U: u, Vt: vt}),
		pass.TraceResponseCountsKind.EncodeRequest(shape, pass.TraceResponseCountsRequest{Grid: kernel.DefaultGrid()}),
	}
	ctx := context.Background()
	require.Len(t, tracePassFuncs, len(reqs))
	for _, req := range reqs {
		t.Run(req.Kind, func(t *testing.T) {
			want, err := pass.Local(ds).Pass(ctx, req)
			require.NoError(t, err)
			fn, ok := tracePassFuncs[req.Kind]
			require.True(t, ok)
			got, err := fn(ctx, glob, shape, ReadOptions{}, req, Options{})
			require.NoError(t, err)
			assert.Equal(t, want.Records, got.Records)
			ws := want.Outputs[0] // the sum, or the counts
			gs, ok := got.Output(ws.Name)
			require.True(t, ok)
			d := relVec(gs.Data, ws.Data)
			t.Logf("%s: relative difference of the %s %.2g", req.Kind, ws.Name, d)
			assert.Less(t, d, 1e-12)
			require.Len(t, got.Scalars, len(want.Scalars))
			for k, v := range want.Scalars {
				if k == "clipped" {
					assert.Equal(t, v, got.Scalars[k])
					assert.Positive(t, v, "the clip bites")
				} else {
					assert.InEpsilon(t, v, got.Scalars[k], 1e-12, k)
				}
			}
		})
	}

	// A request outside its kind is refused before any pipeline runs.
	bad := reqs[3]
	bad.Params = map[string]float64{"tau": -1, "rank": r}
	_, err := ShardPass(ctx, glob, shape, ReadOptions{}, bad, Options{})
	assert.ErrorContains(t, err, "tau = -1")
}

// traceBeamPasser runs every pass as a prism pipeline over the shards, what
// the host's Beam path does.
type traceBeamPasser struct {
	glob  string
	shape *data.Remote
}

func (b traceBeamPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return ShardPass(ctx, b.glob, b.shape, ReadOptions{}, req, Options{})
}

// TestRgradThroughBeam: each trace estimator fitted on shards it reaches
// only through prism pipelines declares the privacy steps of the fit on
// the one file (served in process by pass.Local) and, with the same seed,
// releases the same estimate.
func TestRgradThroughBeam(t *testing.T) {
	const d1, d2 = 6, 5
	g := genTraceData(t, 1200, d1, d2)
	glob, ds := traceShards(t, g, 500, 700)
	sh := pass.ShapeOf(ds)
	sh.Passer = traceBeamPasser{glob: glob, shape: pass.ShapeOf(ds)}
	remote := &data.Dataset{Kind: data.Trace, D1: d1, D2: d2, Hash: ds.Hash, Remote: sh}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 2, Delta: 1e-6}
	for _, tc := range []struct {
		name   string
		params map[string]string
	}{
		{"rgrad-strict", map[string]string{"rank": "2", "clip_y": "4", "clip": "5", "iterations": "2"}},
		{"rgrad-dp", map[string]string{"rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5", "iterations": "2"}},
		{"rgrad-weak", map[string]string{"rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5", "iterations": "2", "noise": "zcdp"}},
		{"rgrad-nonprivate", map[string]string{"rank": "2", "iterations": "2"}},
		// Rank only: the private estimate of the model parameters or clips
		// reads trace.response_counts through the pipelines too.
		{"rgrad-dp", map[string]string{"rank": "2", "iterations": "2"}},
		{"rgrad-strict", map[string]string{"rank": "2", "iterations": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var est sdk.Estimator
			for _, e := range rgrad.Estimators() {
				if e.Info().Name == tc.name {
					est = e
				}
			}
			require.NotNil(t, est)
			seed := uint64(9)
			loc, la, err := sdk.RunLocal(context.Background(), est, ds, tc.params, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			rem, ra, err := sdk.RunLocal(context.Background(), est, remote, tc.params, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			require.Equal(t, la.Steps(), ra.Steps())
			for k, m := range loc.Matrices {
				d := relVec(rem.Matrices[k].M.RawMatrix().Data, m.M.RawMatrix().Data)
				assert.Less(t, d, 1e-12, m.Name)
				if m.Name == "M" {
					t.Logf("%s: relative difference of the released M %.2g", tc.name, d)
				}
			}
			assert.Equal(t, loc.Guarantee, rem.Guarantee)
		})
	}
}
