package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// MaxStatsP bounds the dimension of a statistics data set (its second
// moment holds p² values: 8 GiB at this bound). The host refuses larger
// statistics before reserving; a plugin refuses them too.
const MaxStatsP = 1 << 15

func statsToProto(s *dataio.StatsRef) *dplrpb.Statistics {
	if s == nil {
		return nil
	}
	return &dplrpb.Statistics{Clip: s.Clip, Sum: refToProto(&s.Sum), Moment: refToProto(&s.Moment)}
}

func statsFromProto(s *dplrpb.Statistics) *dataio.StatsRef {
	if s == nil {
		return nil
	}
	out := &dataio.StatsRef{Clip: s.GetClip()}
	if r := refFromProto(s.GetSum()); r != nil {
		out.Sum = *r
	}
	if r := refFromProto(s.GetMoment()); r != nil {
		out.Moment = *r
	}
	return out
}

// statsFootprint refuses a request on statistics that est cannot serve
// from them (sdk.CheckStatistics on the bound options opts) and returns
// the fit's peak memory: the estimator's own estimate for a data set of
// one row (the rows are never held; its p×p matrices are) plus the
// statistics themselves.
func statsFootprint(est sdk.Estimator, info sdk.Info, raw map[string]string, opts any, shape sdk.Shape) (int64, error) {
	if err := sdk.CheckStatistics(est, opts); err != nil {
		return 0, err
	}
	p := int64(shape.P)
	one := shape
	one.N = 1
	fp := 4 * 8 * p * p
	if _, f, err := sdk.Prepare(info, raw, one); err == nil && f > 0 {
		fp = f
	}
	return fp + 8*(p*p+p), nil
}

// openStats reads the statistics a handle names into a data set holding
// them alone (no rows), and checks them as the host did.
func openStats(h dataio.Handle) (*data.Dataset, io.Closer, error) {
	st := h.Stats
	if h.Kind != data.Rows {
		return nil, nil, fmt.Errorf("statistics of %s data: only rows data have statistics", h.Kind)
	}
	if h.X.Count != 0 || h.Y != nil || h.UserStart != nil || h.Labels != nil {
		return nil, nil, errors.New("statistics handle also names rows or side columns")
	}
	if h.N < 1 || h.P < 1 || h.P > MaxStatsP {
		return nil, nil, fmt.Errorf("statistics of shape n = %d, p = %d (p at most %d)", h.N, h.P, MaxStatsP)
	}
	sum, err := readStatsRef(&st.Sum, int64(h.P))
	if err != nil {
		return nil, nil, fmt.Errorf("statistics: sum: %w", err)
	}
	m, err := readStatsRef(&st.Moment, int64(h.P)*int64(h.P))
	if err != nil {
		return nil, nil, fmt.Errorf("statistics: second moment: %w", err)
	}
	p := h.P
	for i := 0; i < p; i++ {
		for j := i + 1; j < p; j++ {
			if m[i*p+j] != m[j*p+i] {
				return nil, nil, fmt.Errorf("statistics: second moment is not symmetric at (%d, %d)", i, j)
			}
		}
	}
	s := &data.Statistics{N: h.N, P: p, Clip: st.Clip, Sum: sum, Moment: mat.NewSymDense(p, m)}
	ds := &data.Dataset{Kind: data.Rows, Hash: h.Hash, Name: h.Name, Stats: s}
	if err := ds.CheckShape(); err != nil {
		return nil, nil, err
	}
	return ds, io.NopCloser(nil), nil
}

// readStatsRef reads count float64 values at r, checking the reference's
// dtype, count and file size.
func readStatsRef(r *dataio.FileRef, count int64) ([]float64, error) {
	if r.DType != dataio.DTypeFloat64 || r.Count != count {
		return nil, fmt.Errorf("reference holds %d values of %q, want %d of %q", r.Count, r.DType, count, dataio.DTypeFloat64)
	}
	if r.Offset < 0 || r.Offset > r.Size-8*count {
		return nil, fmt.Errorf("reference at offset %d of a %d-byte file cannot hold %d values", r.Offset, r.Size, count)
	}
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != r.Size {
		return nil, fmt.Errorf("%s has %d bytes, want %d", r.Path, fi.Size(), r.Size)
	}
	b := make([]byte, 8*count)
	if _, err := f.ReadAt(b, r.Offset); err != nil {
		return nil, fmt.Errorf("%s: %w", r.Path, err)
	}
	out := make([]float64, count)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}
