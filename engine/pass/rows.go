package pass

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
)

// The rows pass kinds: the aggregates of the rows estimators (pca, orbit
// and the example plugin), each one kernel of package engine/kernel over
// every row. Each kind (RowsMomentKind, …) has a typed request and result.
const (
	// RowsMoment is Σ w_i x_i (output "sum", 1×p) and Σ w_i² x_i x_iᵀ
	// ("moment", p×p, not divided by n) with w_i = min(1, clip/‖x_i‖)
	// (clip 0: w_i = 1): the clipped second moment estimators start from.
	RowsMoment = "rows.moment"
	// RowsNormHistogram counts the norms ‖x_i − center‖ in the cells of a
	// public grid g_0 < … < g_{G−1} (kernel.NormCounts, output "counts",
	// G+1 of them): what the private norm quantile reads.
	RowsNormHistogram = "rows.norm_histogram"
	// RowsClippedSum is Σ_i min(1, clip/‖x_i − center‖)·(x_i − center)
	// ("sum", 1×p; kernel.ClippedSum; clip 0: the plain sum): what a
	// private mean noises.
	RowsClippedSum = "rows.clipped_sum"
	// RowsCentredMoment is Σ_i w_i² (x_i − center)(x_i − center)ᵀ
	// ("moment", p×p, not divided by n) with w_i = min(1, clip/‖x_i −
	// center‖) (kernel.SecondMoment; clip 0: w_i = 1), and the scalar
	// "clipped", the number of rows the clip shrank (evaluation only).
	RowsCentredMoment = "rows.centred_moment"
)

// MaxGridCells bounds the grid of a counts request.
const MaxGridCells = 100000

// MomentRequest is a RowsMoment request.
type MomentRequest struct {
	// Clip is the row-norm bound (0: none).
	Clip float64 `pass:"clip"`
}

// MomentResult is a RowsMoment result.
type MomentResult struct {
	Records int64
	Sum     []float64 `pass:"sum"`    // 1×p
	Moment  []float64 `pass:"moment"` // p×p, symmetric
}

// NormHistogramRequest is a RowsNormHistogram request.
type NormHistogramRequest struct {
	// Grid is the public grid, positive and strictly increasing.
	Grid []float64 `pass:"grid"`
	// Center is subtracted from every row (nil: zeros).
	Center []float64 `pass:"center"`
}

// CountsResult is the result of the counts kinds: one count per cell of
// the request's grid (or bin of its edges) and one above its top.
type CountsResult struct {
	Records int64
	Counts  []float64 `pass:"counts"`
}

// ClippedSumRequest is a RowsClippedSum request.
type ClippedSumRequest struct {
	// Clip is the bound on the centred rows' norms (0: none).
	Clip float64 `pass:"clip"`
	// Center is subtracted from every row (nil: zeros).
	Center []float64 `pass:"center"`
}

// SumResult is the result of the kinds whose one output is the 1×p sum.
type SumResult struct {
	Records int64
	Sum     []float64 `pass:"sum"`
}

// CentredMomentRequest is a RowsCentredMoment request.
type CentredMomentRequest struct {
	// Clip is the bound on the centred rows' norms (0: none).
	Clip float64 `pass:"clip"`
	// Center is subtracted from every row (nil: zeros).
	Center []float64 `pass:"center"`
}

// CentredMomentResult is a RowsCentredMoment result.
type CentredMomentResult struct {
	Records int64
	Moment  []float64 `pass:"moment"`  // p×p, symmetric
	Clipped int64     `pass:"clipped"` // rows the clip shrank
}

// row is a 1×cols array spec.
func row(name string, cols int, doc string) ArraySpec {
	return ArraySpec{Name: name, Rows: 1, Cols: cols, Doc: doc}
}

// gridIn is the input "grid" of a counts request.
func gridIn(grid []float64) ArraySpec { return row("grid", len(grid), "the public grid, increasing") }

// gridCounts is the output "counts" of a counts request on grid: one
// count per cell of the grid and one above its top.
func gridCounts(grid []float64) []ArraySpec {
	return []ArraySpec{row("counts", len(grid)+1, "records per cell (kernel.Cell): cell 0 ≤ grid[0], cell k ∈ (grid[k−1], grid[k]], the last above the top")}
}

// checkGrid checks a counts request's grid: 1 to MaxGridCells points,
// positive and strictly increasing.
func checkGrid(grid []float64) error {
	if g := len(grid); g < 1 || g > MaxGridCells {
		return fmt.Errorf("a grid of %d points: want 1 to %d", g, MaxGridCells)
	}
	for k, v := range grid {
		if !(v > 0) || (k > 0 && !(v > grid[k-1])) {
			return fmt.Errorf("grid point %d = %v: the grid must be positive and strictly increasing", k, v)
		}
	}
	return nil
}

// centerIn is the input "center" of a data set of shape sh.
func centerIn(sh *data.Remote) ArraySpec {
	return row("center", sh.P, "the public centre subtracted from every row (zeros: none)")
}

// CenterOf returns c, or nil when it is all zeros (subtracting zero
// changes nothing, and the kernels skip it).
func CenterOf(c []float64) []float64 {
	for _, v := range c {
		if v != 0 {
			return c
		}
	}
	return nil
}

// nonNegative is the check of a clip bound.
func nonNegative(c float64) error {
	if c < 0 {
		return fmt.Errorf("clip %v is negative", c)
	}
	return nil
}

// sumOut is the output "sum", 1×p.
func sumOut(sh *data.Remote) ArraySpec {
	return row("sum", sh.P, "the sum over the records, not divided by n")
}

// momentOut is the output "moment", p×p.
func momentOut(sh *data.Remote) ArraySpec { return ArraySpec{Name: "moment", Rows: sh.P, Cols: sh.P} }

// The rows kinds.
var (
	// RowsMomentKind is the kind RowsMoment.
	RowsMomentKind = register(&Kind[MomentRequest, MomentResult]{
		Name: RowsMoment, Data: data.Rows,
		Doc: "clipped sum Σ w_i x_i and second moment Σ w_i² x_i x_iᵀ, w_i = min(1, clip/‖x_i‖) (clip 0: none)",
		Outputs: func(sh *data.Remote, _ *MomentRequest) []ArraySpec {
			return []ArraySpec{sumOut(sh), momentOut(sh)}
		},
		Check: func(_ *data.Remote, q *MomentRequest) error { return nonNegative(q.Clip) },
		CheckResult: func(sh *data.Remote, q *MomentRequest, r *MomentResult) error {
			st := &data.Statistics{N: int(r.Records), P: sh.P, Clip: q.Clip, Sum: r.Sum, Moment: symOf(sh.P, r.Moment)}
			if st.Moment == nil {
				return fmt.Errorf("the second moment is not symmetric")
			}
			return st.Check()
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *MomentRequest) (*MomentResult, error) {
			sum, err := kernel.ClippedSum(ctx, RowsMatrix(ds), nil, q.Clip)
			if err != nil {
				return nil, err
			}
			m, err := CentredMomentOf(ctx, RowsMatrix(ds), &CentredMomentRequest{Clip: q.Clip}, nil)
			if err != nil {
				return nil, err
			}
			return &MomentResult{Records: m.Records, Sum: sum, Moment: m.Moment}, nil
		},
	})
	// RowsNormHistogramKind is the kind RowsNormHistogram.
	RowsNormHistogramKind = register(&Kind[NormHistogramRequest, CountsResult]{
		Name: RowsNormHistogram, Data: data.Rows,
		Doc: "counts of the row norms ‖x_i − center‖ in the cells (g_{k−1}, g_k] of the public grid g (and above its top)",
		Inputs: func(sh *data.Remote, q *NormHistogramRequest) []ArraySpec {
			return []ArraySpec{gridIn(q.Grid), centerIn(sh)}
		},
		Outputs: func(_ *data.Remote, q *NormHistogramRequest) []ArraySpec { return gridCounts(q.Grid) },
		Check:   func(_ *data.Remote, q *NormHistogramRequest) error { return checkGrid(q.Grid) },
		CheckResult: func(_ *data.Remote, _ *NormHistogramRequest, r *CountsResult) error {
			return kernel.CheckNormCounts(r.Counts, r.Records)
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *NormHistogramRequest) (*CountsResult, error) {
			return NormHistogramOf(ctx, RowsMatrix(ds), q, nil)
		},
	})
	// RowsClippedSumKind is the kind RowsClippedSum.
	RowsClippedSumKind = register(&Kind[ClippedSumRequest, SumResult]{
		Name: RowsClippedSum, Data: data.Rows,
		Doc:     "clipped sum Σ_i min(1, clip/‖x_i − center‖)·(x_i − center) (clip 0: none)",
		Inputs:  func(sh *data.Remote, _ *ClippedSumRequest) []ArraySpec { return []ArraySpec{centerIn(sh)} },
		Outputs: func(sh *data.Remote, _ *ClippedSumRequest) []ArraySpec { return []ArraySpec{sumOut(sh)} },
		Check:   func(_ *data.Remote, q *ClippedSumRequest) error { return nonNegative(q.Clip) },
		CheckResult: func(_ *data.Remote, q *ClippedSumRequest, r *SumResult) error {
			return kernel.CheckClippedSum(r.Sum, r.Records, q.Clip)
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *ClippedSumRequest) (*SumResult, error) {
			return ClippedSumOf(ctx, RowsMatrix(ds), q, nil)
		},
	})
	// RowsCentredMomentKind is the kind RowsCentredMoment.
	RowsCentredMomentKind = register(&Kind[CentredMomentRequest, CentredMomentResult]{
		Name: RowsCentredMoment, Data: data.Rows,
		Doc:     "clipped second moment Σ w_i² (x_i − center)(x_i − center)ᵀ, w_i = min(1, clip/‖x_i − center‖) (clip 0: none), and the number of rows clipped",
		Inputs:  func(sh *data.Remote, _ *CentredMomentRequest) []ArraySpec { return []ArraySpec{centerIn(sh)} },
		Outputs: func(sh *data.Remote, _ *CentredMomentRequest) []ArraySpec { return []ArraySpec{momentOut(sh)} },
		Check:   func(_ *data.Remote, q *CentredMomentRequest) error { return nonNegative(q.Clip) },
		CheckResult: func(sh *data.Remote, q *CentredMomentRequest, r *CentredMomentResult) error {
			if err := kernel.CheckMoment(sh.P, r.Moment, r.Records, q.Clip); err != nil {
				return err
			}
			return checkCount("clipped", r.Clipped, r.Records)
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *CentredMomentRequest) (*CentredMomentResult, error) {
			return CentredMomentOf(ctx, RowsMatrix(ds), q, nil)
		},
	})
)

// checkCount checks that the scalar name is a count in [0, records].
func checkCount(name string, v, records int64) error {
	if v < 0 || v > records {
		return fmt.Errorf("%s = %d is not a count of at most %d records", name, v, records)
	}
	return nil
}

// RowsMatrix is the X of a rows data set as the kernels read it: held as
// float64, or as bytes decoded block by block (data.Dataset.XBytes).
func RowsMatrix(ds *data.Dataset) kernel.Matrix {
	if ds.X == nil && ds.XBytes != nil {
		return ds.XBytes
	}
	return ds.X
}

// NormHistogramOf, ClippedSumOf and CentredMomentOf are the work of the
// rows kinds' Local over the rows m held in memory (their requests as
// DecodeRequest returns them), given the rows' squared norms about the
// request's centre when sq is not nil (kernel.SqNorms), which the kernels
// then do not compute again: a caller that keeps the norms of one pass
// hands them to the next about the same centre.
func NormHistogramOf(ctx context.Context, m kernel.Matrix, q *NormHistogramRequest, sq []float64) (*CountsResult, error) {
	n, _ := m.Dims()
	counts, err := kernel.NormCounts(ctx, m, CenterOf(q.Center), q.Grid, sq...)
	return &CountsResult{Records: int64(n), Counts: counts}, err
}

// ClippedSumOf: see NormHistogramOf.
func ClippedSumOf(ctx context.Context, m kernel.Matrix, q *ClippedSumRequest, sq []float64) (*SumResult, error) {
	n, _ := m.Dims()
	sum, err := kernel.ClippedSum(ctx, m, CenterOf(q.Center), q.Clip, sq...)
	return &SumResult{Records: int64(n), Sum: sum}, err
}

// CentredMomentOf (see NormHistogramOf) runs kernel.SecondMoment on the
// default backend's BLAS threads and returns the moment p×p row-major (its
// storage, the lower triangle filled) with the number of rows the clip
// shrank.
func CentredMomentOf(ctx context.Context, m kernel.Matrix, q *CentredMomentRequest, sq []float64) (*CentredMomentResult, error) {
	n, _ := m.Dims()
	g, clipped, err := kernel.SecondMoment(ctx, m, CenterOf(q.Center), q.Clip, 1, backend.Default(), sq...)
	if err != nil {
		return nil, err
	}
	p, raw := g.SymmetricDim(), g.RawSymmetric().Data // stride p; the lower triangle is free
	for a := 0; a < p; a++ {
		for b := a + 1; b < p; b++ {
			raw[b*p+a] = raw[a*p+b]
		}
	}
	return &CentredMomentResult{Records: int64(n), Moment: raw, Clipped: int64(clipped)}, nil
}
