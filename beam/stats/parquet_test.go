package stats

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xitongsys/parquet-go-source/local"
	"github.com/xitongsys/parquet-go/writer"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// pqLayout is how a test writes a Parquet shard's features.
type pqLayout int

const (
	pqScalars  pqLayout = iota // one DOUBLE column per feature
	pqList                     // a LIST<DOUBLE> column
	pqRepeated                 // a repeated DOUBLE field
)

type listRow struct {
	X    []float64 `parquet:"name=x, type=LIST, valuetype=DOUBLE"`
	User int64     `parquet:"name=user, type=INT64"`
	Y    float64   `parquet:"name=y, type=DOUBLE"`
}

type repeatedRow struct {
	X    []float64 `parquet:"name=x, type=DOUBLE, repetitiontype=REPEATED"`
	User int64     `parquet:"name=user, type=INT64"`
	Y    float64   `parquet:"name=y, type=DOUBLE"`
}

// writeParquet writes m rows of p features (x row-major), with user ids
// and responses when given, in the given layout.
func writeParquet(t *testing.T, path string, x []float64, p int, users []int64, y []float64, lay pqLayout) {
	t.Helper()
	m := len(x) / p
	fw, err := local.NewLocalFileWriter(path)
	require.NoError(t, err)
	defer fw.Close()
	switch lay {
	case pqScalars:
		var md []string
		if users != nil {
			md = append(md, "name=user, type=INT64")
		}
		for j := range p {
			md = append(md, fmt.Sprintf("name=f%d, type=DOUBLE", j))
		}
		if y != nil {
			md = append(md, "name=y, type=DOUBLE")
		}
		pw, err := writer.NewCSVWriter(md, fw, 1)
		require.NoError(t, err)
		for i := range m {
			var rec []any
			if users != nil {
				rec = append(rec, users[i])
			}
			for _, v := range x[i*p : (i+1)*p] {
				rec = append(rec, v)
			}
			if y != nil {
				rec = append(rec, y[i])
			}
			require.NoError(t, pw.Write(rec))
		}
		require.NoError(t, pw.WriteStop())
	default:
		var obj any = new(listRow)
		if lay == pqRepeated {
			obj = new(repeatedRow)
		}
		pw, err := writer.NewParquetWriter(fw, obj, 1)
		require.NoError(t, err)
		for i := range m {
			var u int64
			var yi float64
			if users != nil {
				u = users[i]
			}
			if y != nil {
				yi = y[i]
			}
			row := x[i*p : (i+1)*p]
			if lay == pqRepeated {
				require.NoError(t, pw.Write(repeatedRow{X: row, User: u, Y: yi}))
			} else {
				require.NoError(t, pw.Write(listRow{X: row, User: u, Y: yi}))
			}
		}
		require.NoError(t, pw.WriteStop())
	}
}

// TestParquetRowsMatchesSingleMachine: Parquet shards (one column per
// feature, a LIST column, a repeated field), alone or mixed with .npy
// shards, give the statistics and source identity of the single-machine
// path on the one .npy file holding the same rows.
func TestParquetRowsMatchesSingleMachine(t *testing.T) {
	const n, p, c = 600, 6, 3.0
	x := synth(n, p, 11)
	whole := filepath.Join(t.TempDir(), "whole.npy")
	require.NoError(t, dataio.SaveNPYFloat64(whole, []int{n, p}, x))
	_, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	wn, wsum, wm := reference(x, p, c)
	for _, tc := range []struct {
		name  string
		lay   pqLayout
		mixed bool
		opt   ParquetSchema
	}{
		{"scalar columns", pqScalars, false, ParquetSchema{}},
		{"named scalar columns", pqScalars, false, ParquetSchema{Features: []string{"f0", "f1", "f2", "f3", "f4", "f5"}}},
		{"list column", pqList, false, ParquetSchema{List: "x"}},
		{"repeated field, mixed with npy", pqRepeated, true, ParquetSchema{List: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for k := range 3 {
				part := x[k*200*p : (k+1)*200*p]
				if tc.mixed && k == 1 {
					require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "s1.npy"), []int{200, p}, part))
					continue
				}
				writeParquet(t, filepath.Join(dir, fmt.Sprintf("s%d.parquet", k)), part, p, nil, nil, tc.lay)
			}
			ro := ReadOptions{Parquet: tc.opt}
			gotN, gotSum, gotM, err := momentOf(filepath.Join(dir, "s*"), n, p, c, ro)
			require.NoError(t, err)
			require.EqualValues(t, wn, gotN)
			assert.Less(t, relErr(mat.NewVecDense(p, gotSum), mat.NewVecDense(p, wsum)), 1e-12)
			assert.Less(t, relErr(gotM, wm), 1e-12)
			desc, err := Describe(context.Background(), filepath.Join(dir, "s*"), data.Rows, 0, 0, Options{Read: ro})
			require.NoError(t, err)
			assert.Equal(t, id, desc.Identity.Identity(), "source identity")
		})
	}
}

// TestParquetUsersAndTrace: users and trace data in Parquet shards give
// the statistics of the same records read from one CSV file.
func TestParquetUsersAndTrace(t *testing.T) {
	const d = 4
	recs := usersData(12, d, 21)
	whole := filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(usersCSV(recs, d)), 0o644))
	for _, lay := range []pqLayout{pqScalars, pqList} {
		t.Run(fmt.Sprint("layout ", lay), func(t *testing.T) {
			dir := t.TempDir()
			half := len(recs) / 2
			for k, part := range [][]urec{recs[:half], recs[half:]} {
				var x, y []float64
				var u []int64
				for _, r := range part {
					x = append(x, r.x...)
					y = append(y, r.y)
					u = append(u, r.id)
				}
				writeParquet(t, filepath.Join(dir, fmt.Sprintf("u%d.parquet", k)), x, d, u, y, lay)
			}
			usersMatch(t, filepath.Join(dir, "u*.parquet"), whole, ustatRequest(2))

			// The same files as trace data (d1·d2 = 2×2; the user column
			// is ignored when the features are named): the trace.moment
			// pass equals pass.Local on the one file's samples.
			ro := ReadOptions{Parquet: ParquetSchema{List: "x"}}
			if lay == pqScalars {
				ro.Parquet = ParquetSchema{Features: []string{"f0", "f1", "f2", "f3"}}
			}
			us, err := dataio.Load(whole, dataio.LoadOptions{Kind: data.Users})
			require.NoError(t, err)
			tr := &data.Dataset{Kind: data.Trace, X: us.X, Y: us.Y, D1: 2, D2: 2}
			req := pass.TraceMomentKind.EncodeRequest(pass.ShapeOf(tr), pass.TraceMomentRequest{})
			want, err := pass.Local(tr).Pass(context.Background(), req)
			require.NoError(t, err)
			got, err := RunPass(context.Background(), filepath.Join(dir, "u*.parquet"), pass.ShapeOf(tr), ro, req, Options{})
			require.NoError(t, err)
			assert.Equal(t, want.Records, got.Records)
			ws, _ := want.Output("sum")
			gs, ok := got.Output("sum")
			require.True(t, ok)
			assert.Less(t, relVec(gs.Data, ws.Data), 1e-12)

		})
	}
}

// TestParquetReaderErrors: an empty, a corrupt and a NaN Parquet shard
// fail the pipeline with the single-machine readers' message for the same
// fault (the text after the file name: "<format>: empty file", the row and
// column of the non-finite value), naming the shard.
func TestParquetReaderErrors(t *testing.T) {
	const p = 4
	nan := []float64{1, 2, 3, 4, 1, math.NaN(), 3, 4}
	for _, tc := range []struct {
		name string
		// write writes the bad Parquet shard into dir and returns the
		// single-machine reader's error on the same fault in another format.
		write func(t *testing.T, dir, bad string) error
		want  string
	}{
		{"empty shard", func(t *testing.T, dir, bad string) error {
			require.NoError(t, os.WriteFile(bad, nil, 0o644))
			f := filepath.Join(t.TempDir(), "e.csv")
			require.NoError(t, os.WriteFile(f, nil, 0o644))
			_, err := dataio.Load(f, dataio.LoadOptions{})
			return err
		}, "parquet: empty file"},
		{"corrupt shard", func(t *testing.T, dir, bad string) error {
			require.NoError(t, os.WriteFile(bad, []byte("PAR1 this is not a footer PAR1"), 0o644))
			return nil
		}, "parquet: corrupt file"},
		{"truncated shard", func(t *testing.T, dir, bad string) error {
			writeParquet(t, bad, nan[:4], p, nil, nil, pqScalars)
			b, err := os.ReadFile(bad)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(bad, b[:len(b)/2], 0o644))
			return nil
		}, "parquet: not a Parquet file"},
		{"NaN row", func(t *testing.T, dir, bad string) error {
			writeParquet(t, bad, nan, p, nil, nil, pqScalars)
			f := filepath.Join(t.TempDir(), "n.npy")
			require.NoError(t, dataio.SaveNPYFloat64(f, []int{2, p}, nan))
			_, err := dataio.Load(f, dataio.LoadOptions{})
			return err
		}, "row 1, column 1: value NaN is not finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeParquet(t, filepath.Join(dir, "s0.parquet"), synth(20, p, 3), p, nil, nil, pqScalars)
			bad := filepath.Join(dir, "s1.parquet")
			single := tc.write(t, dir, bad)
			if single != nil {
				// The single-machine reader says the same after the file name
				// (up to the format's name).
				_, after, ok := strings.Cut(single.Error(), ": ")
				require.True(t, ok)
				_, wantAfter, _ := strings.Cut(tc.want, "parquet: ")
				if wantAfter == "" {
					wantAfter = tc.want
				}
				assert.Contains(t, after, wantAfter, "single-machine message")
			}
			_, _, _, err := momentOf(filepath.Join(dir, "s*.parquet"), 22, p, 1, ReadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "shard "+bad+": "+bad+": "+tc.want)
		})
	}
}
