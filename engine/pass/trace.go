package pass

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
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

// Request encodes r for the wire.
func (TraceMomentRequest) Request() data.PassRequest { return data.PassRequest{Kind: TraceMoment} }

// TraceClippedMomentRequest is a TraceClippedMoment request: the bounds
// ‖x_i‖₂ ≤ ClipX and |y_i| ≤ ClipY.
type TraceClippedMomentRequest struct{ ClipX, ClipY float64 }

// Request encodes r for the wire.
func (r TraceClippedMomentRequest) Request() data.PassRequest {
	return data.PassRequest{Kind: TraceClippedMoment, Params: map[string]float64{"cx": r.ClipX, "cy": r.ClipY}}
}

func decodeClippedMoment(req data.PassRequest) TraceClippedMomentRequest {
	return TraceClippedMomentRequest{ClipX: req.Params["cx"], ClipY: req.Params["cy"]}
}

// TraceGradientRequest is a TraceGradient request at the iterate M
// (flattened d1×d2).
type TraceGradientRequest struct{ M []float64 }

// Request encodes r for the wire.
func (r TraceGradientRequest) Request() data.PassRequest {
	return data.PassRequest{Kind: TraceGradient, Inputs: []data.Array{rowArray("m", r.M)}}
}

func decodeGradient(req data.PassRequest) TraceGradientRequest {
	m, _ := req.Input("m")
	return TraceGradientRequest{M: m.Data}
}

// TraceClippedGradientRequest is a TraceClippedGradient request at the
// iterate M (flattened d1×d2) with the tangent space T there and the
// per-sample bound Tau.
type TraceClippedGradientRequest struct {
	Tau     float64
	M       []float64
	Tangent kernel.Tangent
}

// Request encodes r for the wire.
func (r TraceClippedGradientRequest) Request() data.PassRequest {
	t := r.Tangent
	return data.PassRequest{Kind: TraceClippedGradient, Params: map[string]float64{"tau": r.Tau, "rank": float64(t.R)},
		Inputs: []data.Array{rowArray("m", r.M),
			{Name: "u", Rows: t.D1, Cols: t.R, Data: t.U}, {Name: "vt", Rows: t.R, Cols: t.D2, Data: t.Vt}}}
}

func decodeClippedGradient(sh *data.Remote, req data.PassRequest) TraceClippedGradientRequest {
	m, _ := req.Input("m")
	u, _ := req.Input("u")
	vt, _ := req.Input("vt")
	return TraceClippedGradientRequest{Tau: req.Params["tau"], M: m.Data,
		Tangent: kernel.Tangent{D1: sh.D1, D2: sh.D2, R: rankOf(sh, req.Params), U: u.Data, Vt: vt.Data}}
}

// TraceResponseCountsRequest is a TraceResponseCounts request on the
// public grid Grid (positive, strictly increasing).
type TraceResponseCountsRequest struct{ Grid []float64 }

// Request encodes r for the wire.
func (r TraceResponseCountsRequest) Request() data.PassRequest {
	return data.PassRequest{Kind: TraceResponseCounts, Params: map[string]float64{keyCells: float64(len(r.Grid))},
		Inputs: []data.Array{{Name: keyGrid, Rows: 1, Cols: len(r.Grid), Data: append([]float64(nil), r.Grid...)}}}
}

func rowArray(name string, v []float64) data.Array {
	return data.Array{Name: name, Rows: 1, Cols: len(v), Data: v}
}

func traceSum(sh *data.Remote, _ data.PassRequest) []ArraySpec {
	return []ArraySpec{{Name: "sum", Rows: 1, Cols: sh.P, Doc: "the flattened d1×d2 sum, not divided by n"}}
}

func allRecords(sh *data.Remote) int64 { return int64(sh.N) }

func nonNegativeLoss(_ *data.Remote, _ data.PassRequest, res *data.PassResult) error {
	if res.Scalars["loss"] < 0 {
		return fmt.Errorf("the loss, a sum of squares, is negative")
	}
	return nil
}

func init() {
	register(Spec{
		Kind: TraceMoment, Data: data.Trace,
		Doc:     "moment sum Σ y_i x_i (1×p, x_i = vec(X_i) row-major; not divided by n)",
		Outputs: traceSum,
		Records: allRecords,
		Local: func(ctx context.Context, ds *data.Dataset, _ data.PassRequest) (*data.PassResult, error) {
			return traceLocal(ctx, ds, nil, func(sum, x []float64, stride int, y []float64) (float64, int) {
				kernel.Moment(sum, x, stride, y)
				return 0, 0
			})
		},
	})
	register(Spec{
		Kind: TraceClippedMoment, Data: data.Trace,
		Doc:     "clipped moment sum Σ clip(y_i, cy)·x_i·min(1, cx/‖x_i‖₂) (1×p); scalar clipped: samples where either clip was active",
		Params:  []string{"cx", "cy"},
		Outputs: traceSum,
		Scalars: []string{"clipped"},
		Records: allRecords,
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error {
			r := decodeClippedMoment(req)
			if !(r.ClipX > 0) {
				return fmt.Errorf("cx = %v must be positive", r.ClipX)
			}
			if !(r.ClipY > 0) {
				return fmt.Errorf("cy = %v must be positive", r.ClipY)
			}
			return nil
		},
		CheckResult: func(_ *data.Remote, req data.PassRequest, res *data.PassResult) error {
			if err := checkCount(res, "clipped"); err != nil {
				return err
			}
			r := decodeClippedMoment(req)
			sum, _ := res.Output("sum")
			return kernel.CheckClippedMoment(sum.Data, res.Records, r.ClipX, r.ClipY)
		},
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			r := decodeClippedMoment(req)
			return traceLocal(ctx, ds, []string{"clipped"}, func(sum, x []float64, stride int, y []float64) (float64, int) {
				return 0, kernel.ClippedMoment(sum, x, stride, y, r.ClipX, r.ClipY)
			})
		},
	})
	register(Spec{
		Kind: TraceResponseCounts, Data: data.Trace,
		Doc:    "counts of the responses |y_i| in the cells (g_{k−1}, g_k] of the public grid g (and above its top)",
		Params: []string{keyCells},
		Inputs: func(_ *data.Remote, params map[string]float64) []ArraySpec {
			return []ArraySpec{gridIn(params)}
		},
		Outputs:      gridCounts,
		Records:      allRecords,
		CheckRequest: func(_ *data.Remote, req data.PassRequest) error { return checkGrid(req) },
		CheckResult:  checkCounts,
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			grid, _ := req.Input(keyGrid)
			counts := make([]float64, len(grid.Data)+1)
			kernel.ResponseCounts(counts, ds.Y, grid.Data)
			return &data.PassResult{Records: int64(ds.N()), Outputs: []data.Array{{Name: "counts", Rows: 1, Cols: len(counts), Data: counts}}}, nil
		},
	})
	register(Spec{
		Kind: TraceGradient, Data: data.Trace,
		Doc: "gradient sum Σ res_i x_i, res_i = <x_i, m> − y_i at the iterate m (1×p); scalar loss: Σ res_i²",
		Inputs: func(sh *data.Remote, _ map[string]float64) []ArraySpec {
			return []ArraySpec{{Name: "m", Rows: 1, Cols: sh.P, Doc: "the iterate, flattened d1×d2"}}
		},
		Outputs:     traceSum,
		Scalars:     []string{"loss"},
		Records:     allRecords,
		CheckResult: nonNegativeLoss,
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			r := decodeGradient(req)
			return traceLocal(ctx, ds, []string{"loss"}, func(sum, x []float64, stride int, y []float64) (float64, int) {
				return kernel.Gradient(sum, x, stride, y, r.M), 0
			})
		},
	})
	register(Spec{
		Kind: TraceClippedGradient, Data: data.Trace,
		Doc: "clipped gradient sum Σ w_i x_i, res_i = <x_i, m> − y_i, w_i = res_i·min(1, τ/(|res_i|·‖P_T(X_i)‖_F)), P_T the tangent projection at (u, vt) (1×p); " +
			"scalars loss: Σ res_i², clipped: samples whose weight was shrunk",
		Params: []string{"tau", "rank"},
		Inputs: func(sh *data.Remote, params map[string]float64) []ArraySpec {
			r := rankOf(sh, params) // 0 for a bad rank: the shapes then fail to match
			return []ArraySpec{
				{Name: "m", Rows: 1, Cols: sh.P, Doc: "the iterate, flattened d1×d2"},
				{Name: "u", Rows: sh.D1, Cols: r, Doc: "column space U of the tangent space (orthonormal columns)"},
				{Name: "vt", Rows: r, Cols: sh.D2, Doc: "row space Vᵀ of the tangent space (orthonormal rows)"},
			}
		},
		Outputs: traceSum,
		Scalars: []string{"loss", "clipped"},
		Records: allRecords,
		CheckRequest: func(sh *data.Remote, req data.PassRequest) error {
			r := decodeClippedGradient(sh, req)
			if !(r.Tau > 0) {
				return fmt.Errorf("tau = %v must be positive", r.Tau)
			}
			if r.Tangent.R == 0 {
				return fmt.Errorf("rank %v must be an integer in [1, min(d1, d2) = %d]", req.Params["rank"], min(sh.D1, sh.D2))
			}
			return r.Tangent.Check()
		},
		CheckResult: func(sh *data.Remote, req data.PassRequest, res *data.PassResult) error {
			if err := nonNegativeLoss(sh, req, res); err != nil {
				return err
			}
			if err := checkCount(res, "clipped"); err != nil {
				return err
			}
			r := decodeClippedGradient(sh, req)
			sum, _ := res.Output("sum")
			return kernel.CheckProjectedGradient(sum.Data, res.Records, r.Tangent, r.Tau)
		},
		Local: func(ctx context.Context, ds *data.Dataset, req data.PassRequest) (*data.PassResult, error) {
			r := decodeClippedGradient(ShapeOf(ds), req)
			return traceLocal(ctx, ds, []string{"loss", "clipped"}, func(sum, x []float64, stride int, y []float64) (float64, int) {
				return kernel.ProjectedGradient(sum, x, stride, y, r.M, r.Tangent, r.Tau)
			})
		},
	})
}

// rankOf returns the "rank" parameter when it is an integer in [1,
// min(d1, d2)], else 0.
func rankOf(sh *data.Remote, params map[string]float64) int {
	v := params["rank"]
	if v != math.Trunc(v) || v < 1 || v > float64(min(sh.D1, sh.D2)) {
		return 0
	}
	return int(v)
}

// checkCount checks that scalar name is an integer count in [0, Records].
func checkCount(res *data.PassResult, name string) error {
	v := res.Scalars[name]
	if v != math.Trunc(v) || v < 0 || v > float64(res.Records) {
		return fmt.Errorf("scalar %s is not a count of records in [0, %d]", name, res.Records)
	}
	return nil
}

// traceChunk is the number of rows a worker aggregates between two looks
// at the context.
const traceChunk = 4096

// traceKernel is a trace kernel over a block of rows: it adds the block's
// terms to sum and returns its loss and clipped count.
type traceKernel func(sum, x []float64, stride int, y []float64) (float64, int)

// traceLocal runs f over the in-memory samples of ds, in parallel over
// contiguous row blocks (one per worker, GOMAXPROCS of them), and returns
// the sum, with the scalars named (loss, clipped). The workers' sums are
// added in block order, so the result depends only on the data and the
// number of workers.
func traceLocal(ctx context.Context, ds *data.Dataset, scalars []string, f traceKernel) (*data.PassResult, error) {
	raw := ds.X.RawMatrix()
	n, p := raw.Rows, raw.Cols
	workers := max(1, min(runtime.GOMAXPROCS(0), n))
	sums := make([][]float64, workers)
	losses := make([]float64, workers)
	clipped := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		sums[w] = make([]float64, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := lo; a < hi; a += traceChunk {
				if errs[w] = ctx.Err(); errs[w] != nil {
					return
				}
				b := min(a+traceChunk, hi)
				l, c := f(sums[w], raw.Data[a*raw.Stride:], raw.Stride, ds.Y[a:b])
				losses[w] += l
				clipped[w] += c
			}
		}()
	}
	wg.Wait()
	sum := sums[0]
	var loss float64
	var nc int
	for w := range workers {
		if errs[w] != nil {
			return nil, errs[w]
		}
		if w > 0 {
			for j, v := range sums[w] {
				sum[j] += v
			}
		}
		loss += losses[w]
		nc += clipped[w]
	}
	res := &data.PassResult{Records: int64(n), Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: p, Data: sum}}}
	for _, name := range scalars {
		if res.Scalars == nil {
			res.Scalars = map[string]float64{}
		}
		res.Scalars[name] = map[string]float64{"loss": loss, "clipped": float64(nc)}[name]
	}
	return res, nil
}
