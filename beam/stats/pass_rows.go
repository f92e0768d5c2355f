package stats

import (
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// The rows pass kinds of package engine/pass on Beam: rows.moment,
// rows.norm_histogram, rows.clipped_sum and rows.centred_moment. Each reads
// the data as splits (ranges of rows of a large .npy or IDX file, whole
// shards otherwise) with the single-machine reader, then ReadOptions.Scale,
// and runs the reference implementation (pass.Local, with the kernels of
// engine/kernel: every row bounded before it is aggregated) on each split
// (ShardPass); the partial results are added, so the result equals the
// reference's up to floating-point summation order (the norm counts
// exactly).

// rowsPasses are the Beam implementations of the rows pass kinds, by kind
// (pass.go's init registers them; RunPass runs them).
var rowsPasses = map[string]PassFunc{
	pass.RowsMoment:        ShardPass,
	pass.RowsCentredMoment: ShardPass,
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
// failing on a value that scaling made non-finite.
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
