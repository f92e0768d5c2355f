package stats

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// relDiff returns ‖a − b‖/‖b‖ (‖a − b‖ when b is zero).
func relDiff(a, b []float64) float64 {
	var d, n float64
	for i := range b {
		d += (a[i] - b[i]) * (a[i] - b[i])
		n += b[i] * b[i]
	}
	if n == 0 {
		return math.Sqrt(d)
	}
	return math.Sqrt(d / n)
}

// TestRunPassRowsMoment: rows.moment on Beam equals the reference pass
// over the one file holding the same rows, and the description's identity
// is that file's.
func TestRunPassRowsMoment(t *testing.T) {
	const p = 6
	x := synth(500, p, 11)
	dir := t.TempDir()
	whole := writeShards(t, dir, x, p, []int{130, 1, 200, 169}, true)
	ds, wantID, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	glob := filepath.Join(dir, "shard-*")
	desc, err := Describe(ctx, glob, data.Rows, 0, 0, Options{})
	require.NoError(t, err)
	assert.Equal(t, wantID, desc.Identity.Identity())
	assert.Equal(t, &data.Remote{N: 500, P: p}, desc.Remote())
	assert.Equal(t, 4, desc.Shards)
	for _, clip := range []float64{0, 1.5} {
		req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": clip}}
		got, err := RunPass(ctx, glob, desc.Remote(), ReadOptions{}, req, Options{})
		require.NoError(t, err)
		want, err := pass.Local(ds).Pass(ctx, req)
		require.NoError(t, err)
		require.Equal(t, want.Records, got.Records)
		require.Len(t, got.Outputs, len(want.Outputs))
		for i, w := range want.Outputs {
			g := got.Outputs[i]
			require.Equal(t, []any{w.Name, w.Rows, w.Cols}, []any{g.Name, g.Rows, g.Cols})
			d := relDiff(g.Data, w.Data)
			t.Logf("clip %v: %s relative difference %.2g", clip, w.Name, d)
			assert.Less(t, d, 1e-12, w.Name)
		}
	}
}

// TestRunPassRefusals: a request its kind refuses never starts a
// pipeline, and a kind without a Beam implementation is named.
func TestRunPassRefusals(t *testing.T) {
	ctx := context.Background()
	sh := &data.Remote{N: 10, P: 3}
	for _, tc := range []struct {
		name string
		kind data.Kind
		req  data.PassRequest
		want string
	}{
		{"unknown kind", data.Rows, data.PassRequest{Kind: "rows.nothing"}, "unknown kind"},
		{"missing parameter", data.Rows, data.PassRequest{Kind: pass.RowsMoment}, "parameter clip missing"},
		{"negative clip", data.Rows, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": -1}}, "negative"},
		{"NaN clip", data.Rows, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": math.NaN()}}, "not finite"},
		{"extra input", data.Rows, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1},
			Inputs: []data.Array{{Name: "x", Rows: 1, Cols: 1, Data: []float64{1}}}}, "inputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RunPass(ctx, "/nonexistent/*.npy", sh, ReadOptions{}, tc.req, Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Contains(t, PassKinds(), pass.RowsMoment)
	assert.Panics(t, func() { RegisterPass(pass.RowsMoment, rowsMomentPass) })
}

// TestDescribeIdentity: for every data kind, the description of CSV
// shards (named so that their order differs from the records' order) has
// the shape and the source identity the single-machine reader gives the
// one file holding their records.
func TestDescribeIdentity(t *testing.T) {
	const d = 4
	recs := usersData(12, d, 21)
	dir := t.TempDir()
	cuts := []int{0, 40, 41, 200, len(recs)}
	for k := 0; k+1 < len(cuts); k++ {
		name := filepath.Join(dir, fmt.Sprintf("s%d.csv", 9-k)) // reverse name order
		require.NoError(t, os.WriteFile(name, []byte(usersCSV(recs[cuts[k]:cuts[k+1]], d)), 0o644))
	}
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(usersCSV(recs, d)), 0o644))
	ctx := context.Background()
	for _, tc := range []struct {
		kind   data.Kind
		d1, d2 int
	}{{data.Rows, 0, 0}, {data.Trace, 1, d + 1}, {data.Users, 0, 0}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			ds, want, err := dataio.LoadIdentity(whole, dataio.LoadOptions{Kind: tc.kind, D1: tc.d1, D2: tc.d2})
			require.NoError(t, err)
			desc, err := Describe(ctx, filepath.Join(dir, "s*.csv"), tc.kind, tc.d1, tc.d2, Options{})
			require.NoError(t, err)
			assert.Equal(t, want, desc.Identity.Identity())
			sh := pass.ShapeOf(ds)
			assert.Equal(t, sh, desc.Remote())
		})
	}
}

// TestDescribeReaderErrors: an empty shard, a corrupt shard and a NaN row
// fail the description (and so every pass) with the single-machine
// reader's message for that file.
func TestDescribeReaderErrors(t *testing.T) {
	good := "user,x0,x1,x2,x3,y\n1,1,2,3,4,5\n2,2,3,4,5,6\n"
	for _, kind := range []data.Kind{data.Rows, data.Trace, data.Users} {
		for _, tc := range []struct {
			name, file, content string
		}{
			{"empty shard", "s1.csv", ""},
			{"empty npy shard", "s1.npy", ""},
			{"corrupt shard", "s1.csv", "user,x0,x1,x2,x3,y\n1,2,\"3\n"},
			{"corrupt npy shard", "s1.npy", "\x93NUMPY\x01\x00garbage"},
			{"NaN row", "s1.csv", "user,x0,x1,x2,x3,y\n3,1,2,3,4,5\n4,1,NaN,3,4,5\n"},
		} {
			t.Run(fmt.Sprint(kind, " ", tc.name), func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "s0.csv"), []byte(good), 0o644))
				bad := filepath.Join(dir, tc.file)
				require.NoError(t, os.WriteFile(bad, []byte(tc.content), 0o644))
				opt := dataio.LoadOptions{Kind: kind}
				d1, d2 := 0, 0
				if kind == data.Trace {
					d1, d2 = 1, 5
					opt.D1, opt.D2 = d1, d2
				}
				_, want := dataio.Load(bad, opt)
				require.Error(t, want)
				_, err := Describe(context.Background(), filepath.Join(dir, "s*"), kind, d1, d2, Options{})
				require.Error(t, err)
				assert.Contains(t, err.Error(), "shard "+bad+": "+want.Error())
			})
		}
	}
}
