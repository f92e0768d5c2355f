package pass

import (
	"context"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/engine/data"
)

// RowsMoment is the rows pass behind the second-moment estimators: with
// w_i = min(1, clip/‖x_i‖) (w_i = 1 when clip is 0), it returns
// sum = Σ w_i x_i (1×p) and moment = Σ w_i² x_i x_iᵀ (p×p, not divided by
// n): the statistics dplr-beam stats writes, as a pass.
const RowsMoment = "rows.moment"

func init() {
	register(Spec{
		Kind: RowsMoment, Data: data.Rows,
		Doc:    "clipped sum Σ w_i x_i and second moment Σ w_i² x_i x_iᵀ, w_i = min(1, clip/‖x_i‖) (clip 0: none)",
		Params: []string{"clip"},
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P}, {Name: "moment", Rows: sh.P, Cols: sh.P}}
		},
		Records: func(sh *data.Remote) int64 { return int64(sh.N) },
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			if c := req.Params["clip"]; c < 0 {
				return fmt.Errorf("clip %v is negative", c)
			}
			return nil
		},
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			sum, _ := res.Output("sum")
			mom, _ := res.Output("moment")
			st := &data.Statistics{N: int(res.Records), P: sh.P, Clip: req.Params["clip"], Sum: sum.Data, Moment: symOf(sh.P, mom.Data)}
			if st.Moment == nil {
				return fmt.Errorf("the second moment is not symmetric")
			}
			return st.Check()
		},
		Local: rowsMomentLocal,
	})
}

// rowsMomentLocal is RowsMoment over in-memory rows.
func rowsMomentLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	clip := req.Params["clip"]
	sum := make([]float64, p)
	mom := make([]float64, p*p)
	w := make([]float64, p)
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		copy(w, ds.X.RawRowView(i))
		if clip > 0 {
			if nx := floats.Norm(w, 2); nx > clip {
				floats.Scale(clip/nx, w)
			}
		}
		floats.Add(sum, w)
		for a, va := range w {
			if va == 0 {
				continue
			}
			floats.AddScaled(mom[a*p:(a+1)*p], va, w)
		}
	}
	return &data.PassResult{Records: int64(n), Outputs: []data.Array{
		{Name: "sum", Rows: 1, Cols: p, Data: sum}, {Name: "moment", Rows: p, Cols: p, Data: mom}}}, nil
}

// The rows passes behind the private preprocessing of the pca and orbit
// estimators (clip=auto, center=private): a histogram of the row norms on
// a public grid (what the private norm quantile reads), the clipped sum of
// the rows (what the private mean noises) and the clipped second moment of
// the rows centred at a public vector (the released private mean).
const (
	// RowsNormHistogram counts the norms ‖x_i − center‖ in the cells of a
	// public grid g_0 < … < g_{G−1} (input "grid", G = parameter "cells"):
	// counts_k = #{i : g_{k−1} < ‖x_i − center‖ ≤ g_k} (g_{−1} = −∞) for
	// k < G and counts_G = #{i : ‖x_i − center‖ > g_{G−1}}. The private
	// quantile of the norms on that grid is a function of these counts.
	RowsNormHistogram = "rows.norm_histogram"
	// RowsClippedSum is Σ_i min(1, clip/‖x_i‖)·x_i (1×p), clip > 0.
	RowsClippedSum = "rows.clipped_sum"
	// RowsCentredMoment is Σ_i w_i² (x_i − center)(x_i − center)ᵀ (p×p,
	// not divided by n) with w_i = min(1, clip/‖x_i − center‖) (clip 0:
	// w_i = 1), and the scalar "clipped", the number of rows the clip
	// shrank by more than rounding (evaluation only: never public).
	RowsCentredMoment = "rows.centred_moment"
)

// MaxGridCells bounds the grid of a RowsNormHistogram request.
const MaxGridCells = 100000

// clipSlack is the relative slack of the host's clipping checks (the sum
// and the trace are computed in floating point).
const clipSlack = 1 + 1e-9

// countSlack keeps rows whose norm exceeds the clip only by rounding (unit
// rows clipped to 1, say) out of RowsCentredMoment's count of clipped rows,
// as the single-machine second moment counts them.
const countSlack = 1 + 2e-9

func init() {
	centerIn := func(sh *data.Remote) ArraySpec {
		return ArraySpec{Name: "center", Rows: 1, Cols: sh.P, Doc: "the public centre subtracted from every row (zeros: none)"}
	}
	register(Spec{
		Kind: RowsNormHistogram, Data: data.Rows,
		Doc:    "counts of the row norms ‖x_i − center‖ in the cells (g_{k−1}, g_k] of the public grid g (and above its top)",
		Params: []string{"cells"},
		Inputs: func(sh *data.Remote, params map[string]float64) []ArraySpec {
			g := int(params["cells"])
			if g < 1 || g > MaxGridCells {
				g = 0 // refused by CheckRequest
			}
			return []ArraySpec{{Name: "grid", Rows: 1, Cols: g, Doc: "the public grid, increasing"}, centerIn(sh)}
		},
		Outputs: func(sh *data.Remote, req data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "counts", Rows: 1, Cols: int(req.Params["cells"]) + 1}}
		},
		Records: func(sh *data.Remote) int64 { return int64(sh.N) },
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			g := req.Params["cells"]
			if g != math.Trunc(g) || g < 1 || g > MaxGridCells {
				return fmt.Errorf("cells = %v: want an integer in [1, %d]", g, MaxGridCells)
			}
			grid, _ := req.Input("grid")
			for k, v := range grid.Data {
				if !(v > 0) || (k > 0 && !(v > grid.Data[k-1])) {
					return fmt.Errorf("grid point %d = %v: the grid must be positive and strictly increasing", k, v)
				}
			}
			return nil
		},
		CheckResult: func(_ *data.Remote, _ data.PassRequest, res *data.PassResult) error {
			counts, _ := res.Output("counts")
			var total float64
			for k, c := range counts.Data {
				if c < 0 || c != math.Trunc(c) {
					return fmt.Errorf("count %d = %v is not a non-negative integer", k, c)
				}
				total += c
			}
			if total != float64(res.Records) {
				return fmt.Errorf("the counts sum to %v, not to the %d records", total, res.Records)
			}
			return nil
		},
		Local: rowsNormHistogramLocal,
	})
	register(Spec{
		Kind: RowsClippedSum, Data: data.Rows,
		Doc:    "clipped sum Σ_i min(1, clip/‖x_i‖)·x_i, clip > 0",
		Params: []string{"clip"},
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P}}
		},
		Records: func(sh *data.Remote) int64 { return int64(sh.N) },
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			if c := req.Params["clip"]; !(c > 0) {
				return fmt.Errorf("clip %v is not positive", c)
			}
			return nil
		},
		CheckResult: func(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
			sum, _ := res.Output("sum")
			if Norm(sum.Data) > float64(res.Records)*req.Params["clip"]*clipSlack {
				return fmt.Errorf("the sum's norm exceeds records·clip: the rows were not clipped to %g", req.Params["clip"])
			}
			return nil
		},
		Local: rowsClippedSumLocal,
	})
	register(Spec{
		Kind: RowsCentredMoment, Data: data.Rows,
		Doc:    "clipped second moment Σ w_i² (x_i − center)(x_i − center)ᵀ, w_i = min(1, clip/‖x_i − center‖) (clip 0: none), and the number of rows clipped",
		Params: []string{"clip"},
		Inputs: func(sh *data.Remote, _ map[string]float64) []ArraySpec { return []ArraySpec{centerIn(sh)} },
		Outputs: func(sh *data.Remote, _ data.PassRequest) []ArraySpec {
			return []ArraySpec{{Name: "moment", Rows: sh.P, Cols: sh.P}}
		},
		Scalars: []string{"clipped"},
		Records: func(sh *data.Remote) int64 { return int64(sh.N) },
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			if c := req.Params["clip"]; c < 0 {
				return fmt.Errorf("clip %v is negative", c)
			}
			return nil
		},
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			mom, _ := res.Output("moment")
			if symOf(sh.P, mom.Data) == nil {
				return fmt.Errorf("the second moment is not symmetric")
			}
			var trace float64
			for j := 0; j < sh.P; j++ {
				d := mom.Data[j*sh.P+j]
				if d < 0 {
					return fmt.Errorf("second-moment diagonal entry %d is negative (a sum of squares cannot be)", j)
				}
				trace += d
			}
			if c := req.Params["clip"]; c > 0 && trace > float64(res.Records)*c*c*clipSlack {
				return fmt.Errorf("the second moment's trace exceeds records·clip²: the rows were not clipped to %g", c)
			}
			if k := res.Scalars["clipped"]; k < 0 || k != math.Trunc(k) || k > float64(res.Records) {
				return fmt.Errorf("clipped = %v is not a count of at most %d records", k, res.Records)
			}
			return nil
		},
		Local: rowsCentredMomentLocal,
	})
}

// CentredNorm returns ‖x − center‖ = √(Σ_j (x_j − center_j)²), summed in
// column order: the row norm every implementation of RowsNormHistogram
// must compute, so that a norm on a grid point falls in the same cell.
func CentredNorm(x, center []float64) float64 {
	var s float64
	for j, v := range x {
		v -= center[j]
		s += v * v
	}
	return math.Sqrt(s)
}

// NormCell returns the cell of norm s on the increasing grid: the first k
// with s ≤ grid[k], or len(grid) above the top.
func NormCell(grid []float64, s float64) int { return sort.SearchFloat64s(grid, s) }

// ClipFactor returns min(1, clip/‖x‖) for clip > 0 (1 for clip ≤ 0):
// the weight of row x in RowsClippedSum.
func ClipFactor(x []float64, clip float64) float64 {
	if !(clip > 0) {
		return 1
	}
	var s float64
	for _, v := range x {
		s += v * v
	}
	if s > clip*clip {
		return clip / math.Sqrt(s)
	}
	return 1
}

// ShrinkRow scales row in place to norm clip when it is longer (clip ≤ 0:
// unchanged) and reports whether it was longer by more than rounding: the
// per-row step of RowsCentredMoment.
func ShrinkRow(row []float64, clip float64) bool {
	if !(clip > 0) {
		return false
	}
	var s float64
	for _, v := range row {
		s += v * v
	}
	if s <= clip*clip {
		return false
	}
	f := clip / math.Sqrt(s)
	for j := range row {
		row[j] *= f
	}
	return s > clip*clip*countSlack
}

// rowError names a row whose norm is not finite: its first non-finite
// entry, or an overflow.
func rowError(i int, row []float64) error {
	for j, v := range row {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("data row %d, column %d: value %v is not finite", i, j, v)
		}
	}
	return fmt.Errorf("data row %d: its norm overflows float64 (entries near 1e154 or larger)", i)
}

// rowsNormHistogramLocal is RowsNormHistogram over in-memory rows.
func rowsNormHistogramLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	grid, _ := req.Input("grid")
	center, _ := req.Input("center")
	counts := make([]float64, len(grid.Data)+1)
	for i := 0; i < n; i++ {
		if i%8192 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row := ds.X.RawRowView(i)[:p]
		s := CentredNorm(row, center.Data)
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, rowError(i, row)
		}
		counts[NormCell(grid.Data, s)]++
	}
	return &data.PassResult{Records: int64(n), Outputs: []data.Array{{Name: "counts", Rows: 1, Cols: len(counts), Data: counts}}}, nil
}

// rowsClippedSumLocal is RowsClippedSum over in-memory rows.
func rowsClippedSumLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	clip := req.Params["clip"]
	sum := make([]float64, p)
	for i := 0; i < n; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row := ds.X.RawRowView(i)[:p]
		f := ClipFactor(row, clip)
		for j, v := range row {
			sum[j] += f * v
		}
	}
	return &data.PassResult{Records: int64(n), Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: p, Data: sum}}}, nil
}

// momentBlock is the number of rows folded into RowsCentredMoment's
// reference at once (one rank-k update).
const momentBlock = 256

// rowsCentredMomentLocal is RowsCentredMoment over in-memory rows: rows
// centred and shrunk in blocks, each block folded in by a rank-k update
// of the upper triangle, mirrored at the end.
func rowsCentredMomentLocal(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
	n, p := ds.X.Dims()
	clip := req.Params["clip"]
	center, _ := req.Input("center")
	mom := make([]float64, p*p)
	buf := make([]float64, momentBlock*p)
	var clipped int64
	for start := 0; start < n; start += momentBlock {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m := min(momentBlock, n-start)
		for i := 0; i < m; i++ {
			row := buf[i*p : (i+1)*p]
			for j, v := range ds.X.RawRowView(start + i)[:p] {
				row[j] = v - center.Data[j]
			}
			if ShrinkRow(row, clip) {
				clipped++
			}
		}
		blas64.Syrk(blas.Trans, 1, blas64.General{Rows: m, Cols: p, Stride: p, Data: buf[:m*p]},
			1, blas64.Symmetric{Uplo: blas.Upper, N: p, Stride: p, Data: mom})
	}
	for a := 0; a < p; a++ {
		for b := a + 1; b < p; b++ {
			mom[b*p+a] = mom[a*p+b]
		}
	}
	return &data.PassResult{Records: int64(n), Outputs: []data.Array{{Name: "moment", Rows: p, Cols: p, Data: mom}},
		Scalars: map[string]float64{"clipped": float64(clipped)}}, nil
}
