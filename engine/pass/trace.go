package pass

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"gonum.org/v1/gonum/floats"
)

// The trace passes are the five aggregates the trace-regression estimators
// (plugins/rgrad) read their data through, whether the data set is a file
// (Local) or shards (a Beam pipeline). A sample is a d1×d2 matrix X_i,
// flattened row-major to x_i (length p = d1·d2), and a response y_i. Every
// output "sum" is a 1×p row (the flattened d1×d2 matrix), a sum over the
// n samples, not divided by n. The per-sample terms, their bounds and the
// checks of a result are package kernel's trace kernels; each kind has a
// typed request (TraceMomentRequest, …) that encodes to the wire request.
const (
	// TraceMoment is Σ_i y_i x_i (kernel.Moment): the unbiased moment
	// matrix before 1/n and Λ⁻¹ (the non-private and model-calibrated
	// initialisations).
	TraceMoment = "trace.moment"
	// TraceClippedMoment is Σ_i clip(y_i, cy)·clip(x_i, cx)
	// (kernel.ClippedMoment); scalar "clipped" counts the samples where
	// either clip was active. Every term has norm ≤ cx·cy (rgrad-strict's
	// initialisation).
	TraceClippedMoment = "trace.clipped_moment"
	// TraceGradient is Σ_i res_i x_i with res_i = <x_i, m> − y_i at the
	// iterate m (kernel.Gradient); scalar "loss" is Σ_i res_i² (the
	// non-private gradient iteration).
	TraceGradient = "trace.gradient"
	// TraceClippedGradient is Σ_i w_i x_i with w_i = res_i·min(1,
	// τ/(|res_i|·‖P_T(X_i)‖_F)), P_T the orthogonal projection onto the
	// tangent space of the rank-r manifold at column space U (input "u",
	// d1×r) and row space V (input "vt", r×d2 = Vᵀ), both with orthonormal
	// columns (kernel.ProjectedGradient): every projected term has
	// Frobenius norm ≤ τ (param "tau"; "rank" is r). Scalars: "loss"
	// Σ_i res_i² and "clipped" the number of samples whose weight was
	// shrunk (the private gradient iterations).
	TraceClippedGradient = "trace.clipped_gradient"
	// TraceResponseCounts counts the responses |y_i| in the cells
	// (g_{k−1}, g_k] of a public grid g (kernel.ResponseCounts, output
	// "counts", G+1 of them, the last above the grid's top): what the
	// private quantile of the responses' scale reads (rgrad's parameter
	// estimate).
	TraceResponseCounts = "trace.response_counts"
)

// TraceMomentRequest is a TraceMoment request.
type TraceMomentRequest struct{}

// TraceClippedMomentRequest is a TraceClippedMoment request: the bounds
// ‖x_i‖₂ ≤ ClipX and |y_i| ≤ ClipY.
type TraceClippedMomentRequest struct {
	ClipX float64 `pass:"cx"`
	ClipY float64 `pass:"cy"`
}

// ClippedSumResult is the result of the kinds whose outputs are the sum
// and the count of records the clip shrank.
type ClippedSumResult struct {
	Records int64
	Sum     []float64 `pass:"sum"`
	Clipped int64     `pass:"clipped"`
}

// TraceGradientRequest is a TraceGradient request at the iterate M
// (flattened d1×d2).
type TraceGradientRequest struct {
	M []float64 `pass:"m"`
}

// GradientResult is a TraceGradient result.
type GradientResult struct {
	Records int64
	Sum     []float64 `pass:"sum"`
	Loss    float64   `pass:"loss"` // Σ_i res_i²
}

// TraceClippedGradientRequest is a TraceClippedGradient request at the
// iterate M (flattened d1×d2) with the tangent space T there (of rank Rank:
// U d1×Rank, Vt Rank×d2) and the per-sample bound Tau.
type TraceClippedGradientRequest struct {
	Tau  float64   `pass:"tau"`
	Rank int       `pass:"rank"`
	M    []float64 `pass:"m"`
	U    []float64 `pass:"u"`
	Vt   []float64 `pass:"vt"`
}

// Tangent returns the tangent space of q for data of shape sh.
func (q *TraceClippedGradientRequest) Tangent(sh *data.Remote) kernel.Tangent {
	return kernel.Tangent{D1: sh.D1, D2: sh.D2, R: q.Rank, U: q.U, Vt: q.Vt}
}

// ClippedGradientResult is a TraceClippedGradient result.
type ClippedGradientResult struct {
	Records int64
	Sum     []float64 `pass:"sum"`
	Loss    float64   `pass:"loss"`    // Σ_i res_i²
	Clipped int64     `pass:"clipped"` // samples whose weight was shrunk
}

// TraceResponseCountsRequest is a TraceResponseCounts request on the
// public grid Grid (positive, strictly increasing).
type TraceResponseCountsRequest struct {
	Grid []float64 `pass:"grid"`
}

// traceSum is the one output of the trace sum kinds.
func traceSum[Q any](sh *data.Remote, _ *Q) []ArraySpec { return []ArraySpec{sumOut(sh)} }

// iterate is the input "m".
func iterate(sh *data.Remote) ArraySpec { return row("m", sh.P, "the iterate, flattened d1×d2") }

// nonNegativeLoss checks a loss, a sum of squares.
func nonNegativeLoss(loss float64) error {
	if loss < 0 {
		return fmt.Errorf("the loss, a sum of squares, is negative")
	}
	return nil
}

// The trace kinds.
var (
	// TraceMomentKind is the kind TraceMoment.
	TraceMomentKind = register(&Kind[TraceMomentRequest, SumResult]{
		Name: TraceMoment, Data: data.Trace,
		Doc:     "moment sum Σ y_i x_i (1×p, x_i = vec(X_i) row-major; not divided by n)",
		Outputs: traceSum[TraceMomentRequest],
		Local: func(ctx context.Context, ds *data.Dataset, _ *TraceMomentRequest) (*SumResult, error) {
			sum, _, _, err := traceLocal(ctx, ds, func(sum, x []float64, stride int, y []float64) (float64, int) {
				kernel.Moment(sum, x, stride, y)
				return 0, 0
			})
			return &SumResult{Records: int64(ds.N()), Sum: sum}, err
		},
	})
	// TraceClippedMomentKind is the kind TraceClippedMoment.
	TraceClippedMomentKind = register(&Kind[TraceClippedMomentRequest, ClippedSumResult]{
		Name: TraceClippedMoment, Data: data.Trace,
		Doc:     "clipped moment sum Σ clip(y_i, cy)·x_i·min(1, cx/‖x_i‖₂) (1×p); scalar clipped: samples where either clip was active",
		Outputs: traceSum[TraceClippedMomentRequest],
		Check: func(_ *data.Remote, q *TraceClippedMomentRequest) error {
			if !(q.ClipX > 0) {
				return fmt.Errorf("cx = %v must be positive", q.ClipX)
			}
			if !(q.ClipY > 0) {
				return fmt.Errorf("cy = %v must be positive", q.ClipY)
			}
			return nil
		},
		CheckResult: func(_ *data.Remote, q *TraceClippedMomentRequest, r *ClippedSumResult) error {
			if err := checkCount("clipped", r.Clipped, r.Records); err != nil {
				return err
			}
			return kernel.CheckClippedMoment(r.Sum, r.Records, q.ClipX, q.ClipY)
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *TraceClippedMomentRequest) (*ClippedSumResult, error) {
			sum, _, nc, err := traceLocal(ctx, ds, func(sum, x []float64, stride int, y []float64) (float64, int) {
				return 0, kernel.ClippedMoment(sum, x, stride, y, q.ClipX, q.ClipY)
			})
			return &ClippedSumResult{Records: int64(ds.N()), Sum: sum, Clipped: int64(nc)}, err
		},
	})
	// TraceResponseCountsKind is the kind TraceResponseCounts.
	TraceResponseCountsKind = register(&Kind[TraceResponseCountsRequest, CountsResult]{
		Name: TraceResponseCounts, Data: data.Trace,
		Doc:     "counts of the responses |y_i| in the cells (g_{k−1}, g_k] of the public grid g (and above its top)",
		Inputs:  func(_ *data.Remote, q *TraceResponseCountsRequest) []ArraySpec { return []ArraySpec{gridIn(q.Grid)} },
		Outputs: func(_ *data.Remote, q *TraceResponseCountsRequest) []ArraySpec { return gridCounts(q.Grid) },
		Check:   func(_ *data.Remote, q *TraceResponseCountsRequest) error { return checkGrid(q.Grid) },
		CheckResult: func(_ *data.Remote, _ *TraceResponseCountsRequest, r *CountsResult) error {
			return kernel.CheckNormCounts(r.Counts, r.Records)
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *TraceResponseCountsRequest) (*CountsResult, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			counts := make([]float64, len(q.Grid)+1)
			kernel.ResponseCounts(counts, ds.Y, q.Grid)
			return &CountsResult{Records: int64(ds.N()), Counts: counts}, nil
		},
	})
	// TraceGradientKind is the kind TraceGradient.
	TraceGradientKind = register(&Kind[TraceGradientRequest, GradientResult]{
		Name: TraceGradient, Data: data.Trace,
		Doc:         "gradient sum Σ res_i x_i, res_i = <x_i, m> − y_i at the iterate m (1×p); scalar loss: Σ res_i²",
		Inputs:      func(sh *data.Remote, _ *TraceGradientRequest) []ArraySpec { return []ArraySpec{iterate(sh)} },
		Outputs:     traceSum[TraceGradientRequest],
		CheckResult: func(_ *data.Remote, _ *TraceGradientRequest, r *GradientResult) error { return nonNegativeLoss(r.Loss) },
		Local: func(ctx context.Context, ds *data.Dataset, q *TraceGradientRequest) (*GradientResult, error) {
			sum, loss, _, err := traceLocal(ctx, ds, func(sum, x []float64, stride int, y []float64) (float64, int) {
				return kernel.Gradient(sum, x, stride, y, q.M), 0
			})
			return &GradientResult{Records: int64(ds.N()), Sum: sum, Loss: loss}, err
		},
	})
	// TraceClippedGradientKind is the kind TraceClippedGradient.
	TraceClippedGradientKind = register(&Kind[TraceClippedGradientRequest, ClippedGradientResult]{
		Name: TraceClippedGradient, Data: data.Trace,
		Doc: "clipped gradient sum Σ w_i x_i, res_i = <x_i, m> − y_i, w_i = res_i·min(1, τ/(|res_i|·‖P_T(X_i)‖_F)), P_T the tangent projection at (u, vt) (1×p); " +
			"scalars loss: Σ res_i², clipped: samples whose weight was shrunk",
		Inputs: func(sh *data.Remote, q *TraceClippedGradientRequest) []ArraySpec {
			r := q.Rank
			if r < 1 || r > min(sh.D1, sh.D2) {
				r = 0 // the shapes then fail to match
			}
			return []ArraySpec{
				iterate(sh),
				{Name: "u", Rows: sh.D1, Cols: r, Doc: "column space U of the tangent space (orthonormal columns)"},
				{Name: "vt", Rows: r, Cols: sh.D2, Doc: "row space Vᵀ of the tangent space (orthonormal rows)"},
			}
		},
		Outputs: traceSum[TraceClippedGradientRequest],
		Check: func(sh *data.Remote, q *TraceClippedGradientRequest) error {
			if !(q.Tau > 0) {
				return fmt.Errorf("tau = %v must be positive", q.Tau)
			}
			return q.Tangent(sh).Check()
		},
		CheckResult: func(sh *data.Remote, q *TraceClippedGradientRequest, r *ClippedGradientResult) error {
			if err := nonNegativeLoss(r.Loss); err != nil {
				return err
			}
			if err := checkCount("clipped", r.Clipped, r.Records); err != nil {
				return err
			}
			return kernel.CheckProjectedGradient(r.Sum, r.Records, q.Tangent(sh), q.Tau)
		},
		Local: func(ctx context.Context, ds *data.Dataset, q *TraceClippedGradientRequest) (*ClippedGradientResult, error) {
			t := q.Tangent(ShapeOf(ds))
			sum, loss, nc, err := traceLocal(ctx, ds, func(sum, x []float64, stride int, y []float64) (float64, int) {
				return kernel.ProjectedGradient(sum, x, stride, y, q.M, t, q.Tau)
			})
			return &ClippedGradientResult{Records: int64(ds.N()), Sum: sum, Loss: loss, Clipped: int64(nc)}, err
		},
	})
)

// traceChunk is the number of rows a worker aggregates between two looks
// at the context.
const traceChunk = 4096

// traceKernel is a trace kernel over a block of rows: it adds the block's
// terms to sum and returns its loss and clipped count.
type traceKernel func(sum, x []float64, stride int, y []float64) (float64, int)

// traceLocal runs f over the in-memory samples of ds, in parallel over
// contiguous row blocks (one per worker, GOMAXPROCS of them), and returns
// the sum, the loss and the clipped count. The blocks' sums are added in
// block order, so the result depends only on the data and the number of
// workers.
func traceLocal(ctx context.Context, ds *data.Dataset, f traceKernel) ([]float64, float64, int, error) {
	raw := ds.X.RawMatrix()
	n, p := raw.Rows, raw.Cols
	blocks := kernel.Workers(n)
	sums := make([][]float64, blocks)
	losses := make([]float64, blocks)
	clipped := make([]int, blocks)
	err := kernel.ParallelChunks(ctx, blocks, func(_, w int) {
		sums[w] = make([]float64, p)
		for a, hi := w*n/blocks, (w+1)*n/blocks; a < hi && ctx.Err() == nil; a += traceChunk {
			l, c := f(sums[w], raw.Data[a*raw.Stride:], raw.Stride, ds.Y[a:min(a+traceChunk, hi)])
			losses[w] += l
			clipped[w] += c
		}
	})
	if err != nil {
		return nil, 0, 0, err
	}
	sum, loss, nc := sums[0], losses[0], clipped[0]
	for w := 1; w < blocks; w++ {
		floats.Add(sum, sums[w])
		loss += losses[w]
		nc += clipped[w]
	}
	return sum, loss, nc, nil
}
