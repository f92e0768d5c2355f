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

// passCase is one pass to compare on Beam and on one machine
// (checkPassMatchesLocal).
type passCase struct {
	// Glob names the shards, Whole the one file holding their rows.
	Glob, Whole string
	// Kind, D1, D2 and Read say how both are read (Read.Format and Header
	// apply to the shards; Load to the whole file, whose Kind, D1, D2 are
	// set from these).
	Kind   data.Kind
	D1, D2 int
	Read   ReadOptions
	Load   dataio.LoadOptions
	// Requests are the passes to run.
	Requests []data.PassRequest
}

// checkPassMatchesLocal describes the shards (their identity must be the
// whole file's and their shape its shape), runs every request with RunPass
// and checks that the result equals pass.Local on the whole file: the
// same record count, outputs within 1e-12 relative (Frobenius norm of the
// difference over that of the reference), scalars within 1e-12 relative.
// Helpers writing pass kinds call it from their tests.
func checkPassMatchesLocal(t *testing.T, c passCase) {
	t.Helper()
	ctx := context.Background()
	lo := c.Load
	lo.Kind, lo.D1, lo.D2 = c.Kind, c.D1, c.D2
	ds, wantID, err := dataio.LoadIdentity(c.Whole, lo)
	require.NoError(t, err)
	desc, err := Describe(ctx, c.Glob, c.Kind, c.D1, c.D2, Options{Read: c.Read})
	require.NoError(t, err)
	require.Equal(t, wantID, desc.Identity.Identity(), "source identity")
	require.Equal(t, pass.ShapeOf(ds), desc.Remote(), "shape")
	for _, req := range c.Requests {
		got, err := RunPass(ctx, c.Glob, desc.Remote(), c.Read, req, Options{})
		require.NoError(t, err, req.Kind)
		want, err := pass.Local(ds).Pass(ctx, req)
		require.NoError(t, err, req.Kind)
		require.Equal(t, want.Records, got.Records, req.Kind)
		require.Len(t, got.Outputs, len(want.Outputs))
		for i, w := range want.Outputs {
			g := got.Outputs[i]
			require.Equal(t, []any{w.Name, w.Rows, w.Cols}, []any{g.Name, g.Rows, g.Cols})
			d := relDiff(g.Data, w.Data)
			t.Logf("%s %v: %s relative difference %.2g", req.Kind, req.Params, w.Name, d)
			assert.Less(t, d, 1e-12, "%s: %s", req.Kind, w.Name)
		}
		require.Len(t, got.Scalars, len(want.Scalars))
		for name, w := range want.Scalars {
			d := relDiff([]float64{got.Scalars[name]}, []float64{w})
			assert.Less(t, d, 1e-12, "%s: scalar %s = %v, want %v", req.Kind, name, got.Scalars[name], w)
		}
	}
}

// TestRunPassRowsMoment: rows.moment on Beam equals the reference pass
// over the one file holding the same rows, and the description's identity
// is that file's.
func TestRunPassRowsMoment(t *testing.T) {
	const p = 6
	x := synth(500, p, 11)
	dir := t.TempDir()
	whole := writeShards(t, dir, x, p, []int{130, 1, 200, 169}, true)
	c := passCase{Glob: filepath.Join(dir, "shard-*"), Whole: whole, Kind: data.Rows}
	for _, clip := range []float64{0, 1.5} {
		c.Requests = append(c.Requests, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": clip}})
	}
	checkPassMatchesLocal(t, c)
}

// TestEveryPassKindOnBeam: every pass kind has a Beam implementation.
func TestEveryPassKindOnBeam(t *testing.T) {
	for _, k := range pass.Kinds() {
		assert.Contains(t, PassKinds(), k, "pass kind %s has no Beam implementation (RegisterPass)", k)
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
			Inputs: []data.Array{{Name: "x", Rows: 1, Cols: 1, Data: []float64{1}}}}, `unknown input "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RunPass(ctx, "/nonexistent/*.npy", sh, ReadOptions{}, tc.req, Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Contains(t, PassKinds(), pass.RowsMoment)
	assert.Panics(t, func() { RegisterPass(pass.RowsMoment, ShardPass) })
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
// fail the description (and the rows.moment pass) with the single-machine
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
				if kind == data.Rows {
					// The pass pipeline fails with the same message.
					req := data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1}}
					_, err := RunPass(context.Background(), filepath.Join(dir, "s*"), &data.Remote{N: 4, P: 6}, ReadOptions{}, req, Options{})
					require.Error(t, err)
					assert.Contains(t, err.Error(), "shard "+bad+": "+want.Error())
				}
			})
		}
	}
}

// TestDescribeParquetIdentity: Parquet shards of users and trace data
// have the identity the single-machine reader gives the same rows as
// arrays (features .npy, response and user id files), in any shard order.
func TestDescribeParquetIdentity(t *testing.T) {
	const d = 4
	recs := usersData(10, d, 31)
	var x, y []float64
	var u []int64
	for _, r := range recs {
		x = append(x, r.x...)
		y = append(y, r.y)
		u = append(u, r.id)
	}
	n := len(recs)
	adir := t.TempDir()
	xs, ys, us := filepath.Join(adir, "x.npy"), filepath.Join(adir, "y.npy"), filepath.Join(adir, "u.npy")
	require.NoError(t, dataio.SaveNPYFloat64(xs, []int{n, d}, x))
	require.NoError(t, dataio.SaveNPYFloat64(ys, []int{n}, y))
	require.NoError(t, dataio.SaveNPYInt64(us, u))
	dir := t.TempDir()
	cut := n / 3
	writeParquet(t, filepath.Join(dir, "p1.parquet"), x[:cut*d], d, u[:cut], y[:cut], pqList)
	writeParquet(t, filepath.Join(dir, "p0.parquet"), x[cut*d:], d, u[cut:], y[cut:], pqList)
	ctx := context.Background()
	ro := ReadOptions{Parquet: ParquetSchema{List: "x"}}

	ds, want, err := dataio.LoadIdentity(xs, dataio.LoadOptions{Kind: data.Users, ResponsePath: ys, UsersPath: us})
	require.NoError(t, err)
	desc, err := Describe(ctx, filepath.Join(dir, "*.parquet"), data.Users, 0, 0, Options{Read: ro})
	require.NoError(t, err)
	assert.Equal(t, want, desc.Identity.Identity())
	assert.Equal(t, pass.ShapeOf(ds), desc.Remote())

	ds, want, err = dataio.LoadIdentity(xs, dataio.LoadOptions{Kind: data.Trace, D1: 2, D2: 2, ResponsePath: ys})
	require.NoError(t, err)
	desc, err = Describe(ctx, filepath.Join(dir, "*.parquet"), data.Trace, 2, 2, Options{Read: ro})
	require.NoError(t, err)
	assert.Equal(t, want, desc.Identity.Identity())
	assert.Equal(t, pass.ShapeOf(ds), desc.Remote())
}
