package pass

import (
	"context"
	"fmt"
	"math"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// The rows pass kinds: the aggregates of the rows estimators (pca, orbit
// and the example plugin), each one kernel of package engine/kernel over
// every row. Each kind has a typed request (MomentRequest, …) whose
// Request method builds the wire data.PassRequest and whose Decode
// function reads one back; estimators, the reference implementations and
// the Beam pipelines use the typed requests only.
const (
	// RowsMoment is Σ w_i x_i (output "sum", 1×p) and Σ w_i² x_i x_iᵀ
	// ("moment", p×p, not divided by n) with w_i = min(1, clip/‖x_i‖)
	// (clip 0: w_i = 1): the clipped second moment estimators start from.
	RowsMoment = "rows.moment"
	// RowsNormHistogram counts the norms ‖x_i − center‖ in the cells of a
	// public grid g_0 < … < g_{G−1} (kernel.NormCounts, output "counts",
	// G+1 of them): what the private norm quantile reads.
	RowsNormHistogram = "rows.norm_histogram"
	// RowsClippedSum is Σ_i min(1, clip/‖x_i‖)·x_i ("sum", 1×p;
	// kernel.ClippedSum; clip 0: the plain sum): what a private mean noises.
	RowsClippedSum = "rows.clipped_sum"
	// RowsCentredMoment is Σ_i w_i² (x_i − center)(x_i − center)ᵀ
	// ("moment", p×p, not divided by n) with w_i = min(1, clip/‖x_i −
	// center‖) (kernel.SecondMoment; clip 0: w_i = 1), and the scalar
	// "clipped", the number of rows the clip shrank (evaluation only).
	RowsCentredMoment = "rows.centred_moment"
)

// MaxGridCells bounds the grid of a RowsNormHistogram request.
const MaxGridCells = 100000

// The wire names of the rows kinds' parameters and inputs (used only by
// the requests' Request and Decode functions below, and the Specs).
const (
	keyClip   = "clip"
	keyCells  = "cells"
	keyGrid   = "grid"
	keyCenter = "center"
)

// MomentRequest is a RowsMoment request.
type MomentRequest struct {
	// Clip is the row-norm bound (0: none).
	Clip float64
}

// Request returns the wire request.
func (r MomentRequest) Request() data.PassRequest {
	return data.PassRequest{Kind: RowsMoment, Params: map[string]float64{keyClip: r.Clip}}
}

// DecodeMoment reads a RowsMoment request.
func DecodeMoment(req data.PassRequest) MomentRequest {
	return MomentRequest{Clip: req.Params[keyClip]}
}

// NormHistogramRequest is a RowsNormHistogram request.
type NormHistogramRequest struct {
	// Grid is the public grid, positive and strictly increasing.
	Grid []float64
	// Center is subtracted from every row (nil: zeros).
	Center []float64
}

// Request returns the wire request for rows of p columns.
func (r NormHistogramRequest) Request(p int) data.PassRequest {
	return data.PassRequest{Kind: RowsNormHistogram, Params: map[string]float64{keyCells: float64(len(r.Grid))},
		Inputs: []data.Array{{Name: keyGrid, Rows: 1, Cols: len(r.Grid), Data: append([]float64(nil), r.Grid...)}, centerArray(r.Center, p)}}
}

// DecodeNormHistogram reads a RowsNormHistogram request (Center nil when
// it is all zeros).
func DecodeNormHistogram(req data.PassRequest) NormHistogramRequest {
	g, _ := req.Input(keyGrid)
	return NormHistogramRequest{Grid: g.Data, Center: centerOf(req)}
}

// ClippedSumRequest is a RowsClippedSum request.
type ClippedSumRequest struct {
	// Clip is the row-norm bound (0: none).
	Clip float64
}

// Request returns the wire request.
func (r ClippedSumRequest) Request() data.PassRequest {
	return data.PassRequest{Kind: RowsClippedSum, Params: map[string]float64{keyClip: r.Clip}}
}

// DecodeClippedSum reads a RowsClippedSum request.
func DecodeClippedSum(req data.PassRequest) ClippedSumRequest {
	return ClippedSumRequest{Clip: req.Params[keyClip]}
}

// CentredMomentRequest is a RowsCentredMoment request.
type CentredMomentRequest struct {
	// Clip is the bound on the centred rows' norms (0: none).
	Clip float64
	// Center is subtracted from every row (nil: zeros).
	Center []float64
}

// Request returns the wire request for rows of p columns.
func (r CentredMomentRequest) Request(p int) data.PassRequest {
	return data.PassRequest{Kind: RowsCentredMoment, Params: map[string]float64{keyClip: r.Clip},
		Inputs: []data.Array{centerArray(r.Center, p)}}
}

// DecodeCentredMoment reads a RowsCentredMoment request (Center nil when
// it is all zeros).
func DecodeCentredMoment(req data.PassRequest) CentredMomentRequest {
	return CentredMomentRequest{Clip: req.Params[keyClip], Center: centerOf(req)}
}

// gridIn is the input "grid" of a counts request with params: cells
// points (none when cells is out of range, which checkGrid refuses).
func gridIn(params map[string]float64) ArraySpec {
	g := int(params[keyCells])
	if g < 1 || g > MaxGridCells {
		g = 0
	}
	return ArraySpec{Name: keyGrid, Rows: 1, Cols: g, Doc: "the public grid, increasing"}
}

// gridCounts is the output "counts" of a counts request: one count per
// cell of the grid and one above its top.
func gridCounts(_ *data.Remote, req data.PassRequest) []ArraySpec {
	return []ArraySpec{{Name: "counts", Rows: 1, Cols: int(req.Params[keyCells]) + 1}}
}

// checkGrid checks a counts request's cells and grid: an integer number
// of points in [1, MaxGridCells], positive and strictly increasing.
func checkGrid(req data.PassRequest) error {
	if g := req.Params[keyCells]; g != math.Trunc(g) || g < 1 || g > MaxGridCells {
		return fmt.Errorf("cells = %v: want an integer in [1, %d]", g, MaxGridCells)
	}
	grid, _ := req.Input(keyGrid)
	for k, v := range grid.Data {
		if !(v > 0) || (k > 0 && !(v > grid.Data[k-1])) {
			return fmt.Errorf("grid point %d = %v: the grid must be positive and strictly increasing", k, v)
		}
	}
	return nil
}

// checkCounts checks a counts result: non-negative integers adding up to
// the records.
func checkCounts(_ *data.Remote, _ data.PassRequest, res *data.PassResult) error {
	counts, _ := res.Output("counts")
	return kernel.CheckNormCounts(counts.Data, res.Records)
}

// centerArray is the input "center": c, or zeros.
func centerArray(c []float64, p int) data.Array {
	d := make([]float64, p)
	copy(d, c)
	return data.Array{Name: keyCenter, Rows: 1, Cols: p, Data: d}
}

// centerOf returns the request's input "center", nil when absent or all
// zeros (subtracting zero changes nothing, and the kernels skip it).
func centerOf(req data.PassRequest) []float64 {
	c, _ := req.Input(keyCenter)
	for _, v := range c.Data {
		if v != 0 {
			return c.Data
		}
	}
	return nil
}

// nonNegativeClip is the CheckRequest of the kinds with a clip.
func nonNegativeClip(_ *data.Remote, req data.PassRequest) error {
	if c := req.Params[keyClip]; c < 0 {
		return fmt.Errorf("clip %v is negative", c)
	}
	return nil
}

// allRows is the Records of every rows kind: each aggregates every row.
func allRows(sh *data.Remote) int64 { return int64(sh.N) }

func init() {
	centerIn := func(sh *data.Remote) ArraySpec {
		return ArraySpec{Name: keyCenter, Rows: 1, Cols: sh.P, Doc: "the public centre subtracted from every row (zeros: none)"}
	}
	register(Spec{
		Kind: RowsMoment, Data: data.Rows,
		Doc:    "clipped sum Σ w_i x_i and second moment Σ w_i² x_i x_iᵀ, w_i = min(1, clip/‖x_i‖) (clip 0: none)",
		Params: []string{keyClip},
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P}, {Name: "moment", Rows: sh.P, Cols: sh.P}}
		},
		Records:      allRows,
		CheckRequest: nonNegativeClip,
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			sum, _ := res.Output("sum")
			mom, _ := res.Output("moment")
			st := &data.Statistics{N: int(res.Records), P: sh.P, Clip: DecodeMoment(req).Clip, Sum: sum.Data, Moment: symOf(sh.P, mom.Data)}
			if st.Moment == nil {
				return fmt.Errorf("the second moment is not symmetric")
			}
			return st.Check()
		},
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			r := DecodeMoment(req)
			sum, err := kernel.ClippedSum(ctx, ds.X, r.Clip)
			if err != nil {
				return nil, err
			}
			return centredMoment(ctx, ds, CentredMomentRequest{Clip: r.Clip}, data.Array{Name: "sum", Rows: 1, Cols: len(sum), Data: sum})
		},
	})
	register(Spec{
		Kind: RowsNormHistogram, Data: data.Rows,
		Doc:    "counts of the row norms ‖x_i − center‖ in the cells (g_{k−1}, g_k] of the public grid g (and above its top)",
		Params: []string{keyCells},
		Inputs: func(sh *data.Remote, params map[string]float64) []ArraySpec {
			return []ArraySpec{gridIn(params), centerIn(sh)}
		},
		Outputs:      gridCounts,
		Records:      allRows,
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error { return checkGrid(req) },
		CheckResult:  checkCounts,
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			r := DecodeNormHistogram(req)
			counts, err := kernel.NormCounts(ctx, ds.X, r.Center, r.Grid)
			if err != nil {
				return nil, err
			}
			return &data.PassResult{Records: int64(ds.N()), Outputs: []data.Array{{Name: "counts", Rows: 1, Cols: len(counts), Data: counts}}}, nil
		},
	})
	register(Spec{
		Kind: RowsClippedSum, Data: data.Rows,
		Doc:    "clipped sum Σ_i min(1, clip/‖x_i‖)·x_i (clip 0: none)",
		Params: []string{keyClip},
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P}}
		},
		Records:      allRows,
		CheckRequest: nonNegativeClip,
		CheckResult: func(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
			sum, _ := res.Output("sum")
			return kernel.CheckClippedSum(sum.Data, res.Records, DecodeClippedSum(req).Clip)
		},
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			sum, err := kernel.ClippedSum(ctx, ds.X, DecodeClippedSum(req).Clip)
			if err != nil {
				return nil, err
			}
			return &data.PassResult{Records: int64(ds.N()), Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: len(sum), Data: sum}}}, nil
		},
	})
	register(Spec{
		Kind: RowsCentredMoment, Data: data.Rows,
		Doc:    "clipped second moment Σ w_i² (x_i − center)(x_i − center)ᵀ, w_i = min(1, clip/‖x_i − center‖) (clip 0: none), and the number of rows clipped",
		Params: []string{keyClip},
		Inputs: func(sh *data.Remote, _ map[string]float64) []ArraySpec { return []ArraySpec{centerIn(sh)} },
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "moment", Rows: sh.P, Cols: sh.P}}
		},
		Scalars:      []string{"clipped"},
		Records:      allRows,
		CheckRequest: nonNegativeClip,
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			mom, _ := res.Output("moment")
			if err := kernel.CheckMoment(sh.P, mom.Data, res.Records, DecodeCentredMoment(req).Clip); err != nil {
				return err
			}
			if k := res.Scalars["clipped"]; k < 0 || k != math.Trunc(k) || k > float64(res.Records) {
				return fmt.Errorf("clipped = %v is not a count of at most %d records", k, res.Records)
			}
			return nil
		},
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			return centredMoment(ctx, ds, DecodeCentredMoment(req))
		},
	})
}

// centredMoment runs kernel.SecondMoment on ds's rows for r (on the
// default backend's BLAS threads) and returns it as the output "moment"
// after the given outputs, with the scalar "clipped" when no output is
// given (RowsCentredMoment).
func centredMoment(ctx context.Context, ds *data.Dataset, r CentredMomentRequest, before ...data.Array) (*data.PassResult, error) {
	m, clipped, err := kernel.SecondMoment(ctx, ds.X, r.Center, r.Clip, 1, backend.Default())
	if err != nil {
		return nil, err
	}
	p := m.SymmetricDim()
	full := make([]float64, p*p)
	raw := m.RawSymmetric().Data
	for a := 0; a < p; a++ {
		for b := a; b < p; b++ {
			full[a*p+b], full[b*p+a] = raw[a*p+b], raw[a*p+b]
		}
	}
	res := &data.PassResult{Records: int64(ds.N()), Outputs: append(before, data.Array{Name: "moment", Rows: p, Cols: p, Data: full})}
	if len(before) == 0 {
		res.Scalars = map[string]float64{"clipped": float64(clipped)}
	}
	return res, nil
}
