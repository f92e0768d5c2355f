package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/pass"
)

// beamData returns the host's view of the shards matching glob, with this
// test binary as dplr-beam.
func beamData(t *testing.T, glob string, kind data.Kind, d1, d2 int) (host.BeamData, *bytes.Buffer) {
	t.Helper()
	t.Setenv(asMain, "1")
	var progress bytes.Buffer
	return host.BeamData{Binary: os.Args[0], Data: glob, Kind: kind, D1: d1, D2: d2, Stderr: &progress, Work: t.TempDir()}, &progress
}

// TestPassThroughHost: the host describes the shards with `dplr-beam
// describe` (shape and the one file's source identity) and runs
// rows.moment through `dplr-beam pass`; the result equals the reference
// pass over the one file to 1e-12 relative, and a pass after a shard
// changed is refused.
func TestPassThroughHost(t *testing.T) {
	const n, p = 300, 6
	glob, whole, _ := shards(t, n, p)
	ds, wantID, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	b, progress := beamData(t, glob, data.Rows, 0, 0)
	ctx := context.Background()
	sh, id, err := host.DescribeBeam(ctx, b)
	require.NoError(t, err, progress.String())
	assert.Equal(t, wantID, id.Identity)
	require.Len(t, id.Files, 2, "the .npy shards' states are recorded")
	assert.Equal(t, filepath.Join(filepath.Dir(glob), "a.npy"), id.Files[0].Path)
	assert.Equal(t, &data.Remote{N: n, P: p}, sh)

	passer := b.Passer(sh, id)
	req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 2}}
	got, err := passer.Pass(ctx, req)
	require.NoError(t, err, progress.String())
	want, err := pass.Local(ds).Pass(ctx, req)
	require.NoError(t, err)
	require.Equal(t, want.Records, got.Records)
	for i, w := range want.Outputs {
		g := got.Outputs[i]
		e := relErr(mat.NewDense(g.Rows, g.Cols, g.Data), mat.NewDense(w.Rows, w.Cols, w.Data))
		t.Logf("%s: relative difference %.2g", w.Name, e)
		assert.Less(t, e, 1e-12, w.Name)
	}
	assert.Contains(t, progress.String(), "beam: pass rows.moment")

	// One value of one shard changes: the next pass is refused.
	dir := filepath.Dir(glob)
	a, err := dataio.Load(filepath.Join(dir, "a.npy"), dataio.LoadOptions{})
	require.NoError(t, err)
	a.X.Set(0, 0, a.X.At(0, 0)+1)
	r, c := a.X.Dims()
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "a.npy"), []int{r, c}, a.X.RawMatrix().Data))
	_, err = passer.Pass(ctx, req)
	require.Error(t, err)
	assert.ErrorIs(t, err, host.ErrDataChanged)

	// A shard added: refused too (another shape).
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "c.npy"), []int{1, p}, make([]float64, p)))
	_, err = b.Passer(sh, id).Pass(ctx, req)
	assert.Error(t, err)
}

// TestDescribeKinds: describe's shape and identity for trace and users CSV
// shards (in any order) equal the single-machine reader's for the one
// file; a bad shard fails describe with the reader's message on stderr
// and ErrPipeline for the host.
func TestDescribeKinds(t *testing.T) {
	const d = 3
	r := rand.New(rand.NewPCG(12, 13))
	var recs []string
	for range 150 {
		f := []string{fmt.Sprint(r.IntN(20))}
		for range d + 1 {
			f = append(f, fmt.Sprint(r.NormFloat64()))
		}
		recs = append(recs, strings.Join(f, ","))
	}
	head := "user,x0,x1,x2,y\n"
	dir := t.TempDir()
	for k, cut := range [][2]int{{0, 70}, {70, 71}, {71, 150}} {
		name := filepath.Join(dir, fmt.Sprintf("s%d.csv", 5-k))
		require.NoError(t, os.WriteFile(name, []byte(head+strings.Join(recs[cut[0]:cut[1]], "\n")+"\n"), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(head+strings.Join(recs, "\n")+"\n"), 0o644))
	ctx := context.Background()
	for _, c := range []struct {
		kind   data.Kind
		d1, d2 int
	}{{data.Rows, 0, 0}, {data.Trace, 2, 2}, {data.Users, 0, 0}} {
		t.Run(string(c.kind), func(t *testing.T) {
			ds, want, err := dataio.LoadIdentity(whole, dataio.LoadOptions{Kind: c.kind, D1: c.d1, D2: c.d2})
			require.NoError(t, err)
			b, progress := beamData(t, filepath.Join(dir, "*.csv"), c.kind, c.d1, c.d2)
			sh, id, err := host.DescribeBeam(ctx, b)
			require.NoError(t, err, progress.String())
			assert.Equal(t, want, id.Identity)
			assert.Empty(t, id.Files, "CSV shards: no state recorded, the passes hash again")
			assert.Equal(t, pass.ShapeOf(ds), sh)
		})
	}
	t.Run("NaN row", func(t *testing.T) {
		bad := filepath.Join(dir, "s9.csv")
		require.NoError(t, os.WriteFile(bad, []byte(head+"1,2,NaN,3,4\n"), 0o644))
		defer os.Remove(bad)
		_, msg := dataio.Load(bad, dataio.LoadOptions{Kind: data.Users})
		require.Error(t, msg)
		b, progress := beamData(t, filepath.Join(dir, "*.csv"), data.Users, 0, 0)
		_, _, err := host.DescribeBeam(ctx, b)
		assert.ErrorIs(t, err, host.ErrPipeline)
		assert.NotContains(t, err.Error(), "NaN", "the reader's message stays on stderr")
		assert.Contains(t, progress.String(), msg.Error())
	})
}

// TestPassCommandRefusals: usage errors exit 2 before any pipeline.
func TestPassCommandRefusals(t *testing.T) {
	dir := t.TempDir()
	reqPath := filepath.Join(dir, "req.json")
	require.NoError(t, os.WriteFile(reqPath, []byte(`{"format":"dplr-pass/2","kind":"rows","shape":{"n":3,"p":2,"d1":0,"d2":0,"users":0},"pass":"rows.moment","params":{"clip":1},"inputs":[]}`), 0o644))
	for name, args := range map[string][]string{
		"no data":       {"describe", "--kind", "rows"},
		"bad kind":      {"describe", "--data", "x", "--kind", "matrix"},
		"no request":    {"pass", "--data", "x", "--out", dir},
		"kind mismatch": {"pass", "--data", "x", "--kind", "users", "--request", reqPath, "--out", dir},
		"bad request":   {"pass", "--data", "x", "--request", filepath.Join(dir, "none.json"), "--out", dir},
		"beam flags":    {"describe", "--data", "x", "--project", "p"},
	} {
		assert.Equal(t, 2, run(args), name)
	}
}

// TestPassOverhead measures, when DPLR_BEAM_PASS_BENCH is set to "n,p,rounds"
// (e.g. "100000,784,3"), the time of one rows.moment pass through the host
// (dplr-beam pass: the pass pipeline, then the identity pipeline), of
// describe, of the two pipelines in-process, and of the single-machine
// load and reference pass on the one file; rounds interleave the variants
// and the medians are logged (bench/results/beampass.md).
func TestPassOverhead(t *testing.T) {
	spec := os.Getenv("DPLR_BEAM_PASS_BENCH")
	if spec == "" {
		t.Skip("set DPLR_BEAM_PASS_BENCH=n,p,rounds")
	}
	var n, p, rounds int
	_, err := fmt.Sscanf(spec, "%d,%d,%d", &n, &p, &rounds)
	require.NoError(t, err)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	const shardsN = 4
	x := make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for k := range shardsN {
		lo, hi := k*n/shardsN, (k+1)*n/shardsN
		require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, fmt.Sprintf("s%d.npy", k)), []int{hi - lo, p}, x[lo*p:hi*p]))
	}
	whole := filepath.Join(t.TempDir(), "whole.npy")
	require.NoError(t, dataio.SaveNPYFloat64(whole, []int{n, p}, x))
	x = nil
	glob := filepath.Join(dir, "*.npy")
	b, progress := beamData(t, glob, data.Rows, 0, 0)
	ctx := context.Background()
	req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 30}}
	times := map[string][]float64{}
	clock := func(name string, f func()) {
		t0 := time.Now()
		f()
		times[name] = append(times[name], time.Since(t0).Seconds())
	}
	for range rounds {
		var sh *data.Remote
		var id host.BeamSource
		clock("host describe (dplr-beam describe)", func() {
			sh, id, err = host.DescribeBeam(ctx, b)
			require.NoError(t, err, progress.String())
		})
		clock("host pass (dplr-beam pass: pass + identity pipelines)", func() {
			_, err = b.Passer(sh, id).Pass(ctx, req)
			require.NoError(t, err, progress.String())
		})
		clock("in-process stats.RunPass (pass pipeline only)", func() {
			_, err = stats.RunPass(ctx, glob, sh, stats.ReadOptions{}, req, stats.Options{})
			require.NoError(t, err)
		})
		clock("in-process stats.Describe (identity pipeline only)", func() {
			_, err = stats.Describe(ctx, glob, data.Rows, 0, 0, stats.Options{})
			require.NoError(t, err)
		})
		var ds *data.Dataset
		clock("single machine: dataio.LoadIdentity of the one file", func() {
			ds, _, err = dataio.LoadIdentity(whole, dataio.LoadOptions{})
			require.NoError(t, err)
		})
		clock("single machine: pass.Local on the loaded rows", func() {
			_, err = pass.Local(ds).Pass(ctx, req)
			require.NoError(t, err)
		})
		ds = nil
	}
	names := make([]string, 0, len(times))
	for k := range times {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := slices.Sorted(slices.Values(times[k]))
		t.Logf("n = %d, p = %d: %-58s median %.2f s (of %d: %v)", n, p, k, v[len(v)/2], len(v), v)
	}
}
