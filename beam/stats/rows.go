// Package stats holds dplr's aggregation passes on Apache Beam (the pass
// kinds of engine/pass, RunPass) and the description of sharded data
// (Describe: public shape and source identity): each pipeline reads
// sharded files, bounds every record's (or user's) contribution before
// any aggregation, and aggregates with associative combiners, so that the
// same pipeline runs on the embedded prism runner or on a Flink, Spark or
// Dataflow cluster. What leaves a pipeline is the few aggregates a pass
// returns (or the data set's shape and source identity), never a row.
//
// Inputs are shards matched by a glob on any filesystem Beam knows: .npy,
// IDX and CSV files are read by the single-machine reader (engine/dataio),
// so a bad shard fails with its message; Parquet files (.parquet, or
// ReadOptions.Format "parquet") are read with the Parquet library Beam's
// parquetio uses, with the columns described by ParquetSchema. A user's
// rows are grouped across shards by the text of their id under the
// single-machine loader's rules (UserKey), so that the grouping does not
// depend on the sharding.
package stats

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/kernel"
)

// RowStats are the aggregates of rows data: the row count, the clipped
// sum and the clipped second moment (the rows.moment pass).
type RowStats struct {
	// P is the number of columns.
	P int
	// N is the number of rows.
	N int64
	// Clipped is the number of rows the clip shrank.
	Clipped int64
	// Sum is Σ w_i x_i with w_i = min(1, clip/‖x_i‖).
	Sum []float64
	// Moment is the upper triangle (row-major, full p×p storage) of
	// Σ w_i² x_i x_iᵀ; divide by N for the second moment Σ̂.
	Moment []float64
	// buf holds up to blockRows clipped rows not yet folded into Moment.
	buf []float64
}

// blockRows is the number of rows folded into the second moment at once
// (one rank-k update instead of k rank-1 updates).
const blockRows = 128

// rowsAcc is the combiner's accumulator.
type rowsAcc = *RowStats

func (s *RowStats) flush() {
	k := len(s.buf) / max(s.P, 1)
	if k == 0 {
		return
	}
	kernel.Fold(s.Moment, s.P, blas64.General{Rows: k, Cols: s.P, Stride: s.P, Data: s.buf}, 1)
	s.buf = s.buf[:0]
}

// rowsCombineFn folds clipped rows into RowStats (associative and
// commutative up to floating-point rounding).
type rowsCombineFn struct {
	// P is the number of columns.
	P int
}

// CreateAccumulator returns empty statistics.
func (f *rowsCombineFn) CreateAccumulator() rowsAcc {
	return &RowStats{P: f.P, Sum: make([]float64, f.P), Moment: make([]float64, f.P*f.P)}
}

// AddInput folds one clipped row.
func (f *rowsCombineFn) AddInput(a rowsAcc, r ClippedRow) rowsAcc {
	if len(r.X) != a.P {
		panic(fmt.Sprintf("dplr: row of %d values, want %d", len(r.X), a.P)) // checked by the reader
	}
	a.N++
	if r.Shrunk {
		a.Clipped++
	}
	for j, v := range r.X {
		a.Sum[j] += v
	}
	a.buf = append(a.buf, r.X...)
	if len(a.buf) >= blockRows*a.P {
		a.flush()
	}
	return a
}

// MergeAccumulators adds b into a.
func (f *rowsCombineFn) MergeAccumulators(a, b rowsAcc) rowsAcc {
	a.flush()
	b.flush()
	a.N += b.N
	a.Clipped += b.Clipped
	for j := range a.Sum {
		a.Sum[j] += b.Sum[j]
	}
	for j := range a.Moment {
		a.Moment[j] += b.Moment[j]
	}
	return a
}

// ExtractOutput returns the statistics with every row folded in.
func (f *rowsCombineFn) ExtractOutput(a rowsAcc) *RowStats {
	a.flush()
	return a
}

// ClippedRow is one row after contribution bounding.
type ClippedRow struct {
	X      []float64
	Shrunk bool
}

// gob coders for the accumulator and rows (Beam's default coders do not
// cover fixed-size arrays).
func encodeGob[T any](v T) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decodeGob[T any](b []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return v, err
}

type wireStats struct {
	P          int
	N, Clipped int64
	Sum        []float64
	Moment     []float64
	Buf        []float64
}

func encodeStats(s *RowStats) ([]byte, error) {
	return encodeGob(wireStats{s.P, s.N, s.Clipped, s.Sum, s.Moment, s.buf})
}

func decodeStats(b []byte) (*RowStats, error) {
	w, err := decodeGob[wireStats](b)
	if err != nil {
		return nil, err
	}
	return &RowStats{P: w.P, N: w.N, Clipped: w.Clipped, Sum: w.Sum, Moment: w.Moment, buf: w.Buf}, nil
}

func init() {
	beam.RegisterCoder(reflect.TypeOf((*RowStats)(nil)), encodeStats, decodeStats)
	beam.RegisterCoder(reflect.TypeOf(ClippedRow{}), encodeClippedRow, decodeClippedRow)
	register.Combiner3[rowsAcc, ClippedRow, *RowStats](&rowsCombineFn{})
	register.DoFn3x1[context.Context, string, func(ClippedRow), error](&readRowsFn{})
	register.Emitter1[ClippedRow]()
	register.DoFn2x1[context.Context, *RowStats, error](&writeStatsFn{})
}

// Rows adds to s the rows statistics of the files named by shards (a
// PCollection of paths): each shard is read as the single-machine reader
// reads one file, each row is clipped to norm clip (the per-record
// contribution bound) and the clipped rows are combined globally.
func Rows(s beam.Scope, shards beam.PCollection, p int, clip float64, opt ReadOptions) beam.PCollection {
	s = s.Scope("dplr.Rows")
	rows := beam.ParDo(s, &readRowsFn{P: p, Clip: clip, Opt: opt}, shards)
	return CombineRows(s, rows, p)
}

// CombineRows adds to s the global combine of rows, a PCollection of
// ClippedRow of p values each (made by NewClippedRow), into one *RowStats:
// the aggregation step of Rows for a caller with its own source.
func CombineRows(s beam.Scope, rows beam.PCollection, p int) beam.PCollection {
	return beam.Combine(s, &rowsCombineFn{P: p}, rows)
}

// NewClippedRow returns x (source values, before any scaling) as a record
// of the rows pipeline: x multiplied by scale (0: 1) and clipped to norm
// clip (≤ 0 or +Inf: unclipped). x is not modified. It fails on a value
// that scaling made non-finite.
func NewClippedRow(x []float64, scale, clip float64) (ClippedRow, error) {
	cx, err := scaledRow(x, scale, make([]float64, len(x)))
	if err != nil {
		return ClippedRow{}, err
	}
	if kernel.ClipFactor(cx, clip) == 1 {
		return ClippedRow{X: cx}, nil // x itself when unscaled
	}
	cx = append([]float64(nil), cx...) // x is not modified
	return ClippedRow{X: cx, Shrunk: kernel.Shrink(cx, clip)}, nil
}

// ReadOptions says how a shard is read (a subset of dataio.LoadOptions
// that is serialisable).
type ReadOptions struct {
	// Format forces the shard format ("npy", "csv", ...); empty: detected.
	Format string
	// Header is "auto", "yes" or "no" for CSV shards.
	Header string
	// Scale multiplies every feature value after the source identity is
	// taken (as dplr fit's --scale); 0 means 1.
	Scale float64
	// Parquet names the columns of Parquet shards, and its User, Response
	// and Features those of CSV shards (see ParquetSchema).
	Parquet ParquetSchema
}

func (o ReadOptions) load() (dataio.LoadOptions, error) {
	lo := dataio.LoadOptions{SkipHash: true}
	if o.Format != "" {
		f, err := dataio.ParseFormat(o.Format)
		if err != nil {
			return lo, err
		}
		lo.Format = f
	}
	switch o.Header {
	case "", "auto":
	case "yes":
		lo.Header = dataio.HeaderYes
	case "no":
		lo.Header = dataio.HeaderNo
	default:
		return lo, fmt.Errorf("header %q: want auto, yes or no", o.Header)
	}
	return lo, nil
}

// readRowsFn reads one shard and emits its rows, clipped.
type readRowsFn struct {
	P    int
	Clip float64
	Opt  ReadOptions
}

// ProcessElement reads the shard at path.
func (f *readRowsFn) ProcessElement(ctx context.Context, path string, emit func(ClippedRow)) error {
	sh, err := readShard(ctx, path, data.Rows, f.Opt, 0, 0, nil)
	if err != nil {
		return err
	}
	if sh.p != f.P {
		return fmt.Errorf("shard %s: %d columns, the data set has %d", path, sh.p, f.P)
	}
	for i := range sh.n {
		r, err := NewClippedRow(sh.row(i), f.Opt.Scale, f.Clip)
		if err != nil {
			return fmt.Errorf("shard %s: row %d: %w", path, i, err)
		}
		emit(r)
	}
	return nil
}

func encodeClippedRow(v ClippedRow) ([]byte, error) { return encodeGob(v) }
func decodeClippedRow(b []byte) (ClippedRow, error) { return decodeGob[ClippedRow](b) }
