package stats

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
)

// The rows pass kinds of package engine/pass on Beam: rows.moment,
// rows.norm_histogram, rows.clipped_sum and rows.centred_moment. Each reads
// the shards as the rows pipeline does (the single-machine reader, then
// ReadOptions.Scale), bounds every row before aggregation with the
// kernels of engine/kernel the reference implementation (pass.Local) runs
// and aggregates with associative combiners, so that its result equals
// the reference's up to floating-point summation order (the norm counts
// exactly): the norm histogram and the clipped sum run the reference on
// each shard (ShardPass), the moments fold kernel.Shrink'd rows with the
// rows combiner (kernel.Fold).

// rowsPasses are the Beam implementations of the rows pass kinds, by kind
// (pass.go's init registers them; RunPass runs them).
var rowsPasses = map[string]PassFunc{
	pass.RowsMoment:        rowsMomentPass,
	pass.RowsCentredMoment: rowsCentredMomentPass,
	pass.RowsClippedSum:    ShardPass,
	pass.RowsNormHistogram: ShardPass,
}

// sameRows refuses a pass that aggregated another number of rows than the
// data set described (the shards changed between the description and the
// pass).
func sameRows(n int64, shape *data.Remote) error {
	if n != int64(shape.N) {
		return fmt.Errorf("the shards hold %d rows, the data set described %d (the data changed)", n, shape.N)
	}
	return nil
}

// scaledRow returns row multiplied by scale (0 or 1: row itself) in buf,
// failing on a value that scaling made non-finite (as NewClippedRow).
func scaledRow(row []float64, scale float64, buf []float64) ([]float64, error) {
	if scale == 0 || scale == 1 {
		return row, nil
	}
	buf = buf[:len(row)]
	for j, v := range row {
		buf[j] = v * scale
		if math.IsNaN(buf[j]) || math.IsInf(buf[j], 0) {
			return nil, fmt.Errorf("column %d: value %v is not finite after scaling by %v", j, buf[j], scale)
		}
	}
	return buf, nil
}

// shardRows reads the rows shard at path (p columns) and calls fn with
// each row after scaling (fn must not keep the slice).
func shardRows(ctx context.Context, path string, p int, ro ReadOptions, fn func(i int, row []float64) error) error {
	sh, err := readShard(ctx, path, data.Rows, ro, 0, 0)
	if err != nil {
		return err
	}
	if sh.p != p {
		return fmt.Errorf("shard %s: %d columns, the data set has %d", path, sh.p, p)
	}
	buf := make([]float64, p)
	for i := range sh.n {
		row, err := scaledRow(sh.row(i), ro.Scale, buf)
		if err != nil {
			return fmt.Errorf("shard %s: row %d: %w", path, i, err)
		}
		if err := fn(i, row); err != nil {
			return fmt.Errorf("shard %s: %w", path, err)
		}
	}
	return nil
}

// centredRowsFn emits one shard's rows centred at Center and shrunk to
// norm Clip (kernel.Shrink) as records of the rows combiner.
type centredRowsFn struct {
	P      int
	Clip   float64
	Center []float64
	Opt    ReadOptions
}

// ProcessElement emits the centred, clipped rows of the shard at path.
func (f *centredRowsFn) ProcessElement(ctx context.Context, path string, emit func(ClippedRow)) error {
	return shardRows(ctx, path, f.P, f.Opt, func(_ int, row []float64) error {
		x := make([]float64, f.P)
		for j, v := range row {
			x[j] = v
			if f.Center != nil {
				x[j] -= f.Center[j]
			}
		}
		emit(ClippedRow{X: x, Shrunk: kernel.Shrink(x, f.Clip)})
		return nil
	})
}

func init() {
	register.DoFn3x1[context.Context, string, func(ClippedRow), error](&centredRowsFn{})
}

// fullMoment returns the p×p row-major matrix whose upper triangle is
// upper's (RowStats.Moment), mirrored.
func fullMoment(p int, upper []float64) []float64 {
	m := make([]float64, p*p)
	for a := 0; a < p; a++ {
		for b := a; b < p; b++ {
			m[a*p+b] = upper[a*p+b]
			m[b*p+a] = upper[a*p+b]
		}
	}
	return m
}

// rowsMomentPass is pass.RowsMoment on Beam: the rows pipeline (Rows).
func rowsMomentPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	initBeam()
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	q, err := pass.RowsMomentKind.DecodeRequest(shape, req)
	if err != nil {
		return nil, err
	}
	p := shape.P
	opt.progress("beam: pass %s over %d shard(s)", req.Kind, len(paths))
	st, err := RunRows(ctx, p, func(s beam.Scope) beam.PCollection {
		return Rows(s, beam.CreateList(s, paths), p, q.Clip, ro)
	}, opt)
	if err != nil {
		return nil, err
	}
	if err := sameRows(st.N, shape); err != nil {
		return nil, err
	}
	return pass.RowsMomentKind.EncodeResult(shape, q, &pass.MomentResult{Records: st.N, Sum: st.Sum, Moment: fullMoment(p, st.Moment)}), nil
}

// rowsCentredMomentPass is pass.RowsCentredMoment on Beam: centred,
// clipped rows folded by the rows combiner.
func rowsCentredMomentPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	initBeam()
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	q, err := pass.RowsCentredMomentKind.DecodeRequest(shape, req)
	if err != nil {
		return nil, err
	}
	p := shape.P
	opt.progress("beam: pass %s over %d shard(s)", req.Kind, len(paths))
	fn := &centredRowsFn{P: p, Clip: q.Clip, Center: q.Center, Opt: ro}
	st, err := RunRows(ctx, p, func(s beam.Scope) beam.PCollection {
		return CombineRows(s, beam.ParDo(s, fn, beam.CreateList(s, paths)), p)
	}, opt)
	if err != nil {
		return nil, err
	}
	if err := sameRows(st.N, shape); err != nil {
		return nil, err
	}
	return pass.RowsCentredMomentKind.EncodeResult(shape, q, &pass.CentredMomentResult{Records: st.N, Moment: fullMoment(p, st.Moment), Clipped: st.Clipped}), nil
}
