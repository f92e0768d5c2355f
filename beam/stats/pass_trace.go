package stats

import (
	"context"
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// tracePassFunc is the signature of a pass implementation (PassFunc in
// pass.go once the pass registry is on main).
type tracePassFunc = func(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error)

// tracePassFuncs are the Beam implementations of the trace pass kinds of
// engine/pass (plugins/rgrad reads its data through them), by kind. Each
// runs one pipeline of tracePass over the trace shards matching glob, with
// the request's iterate as a side input, and returns what pass.Local
// returns on the same samples up to the order of the sums.
//
// Registration: the pass registry (RegisterPass in pass.go) is not on main
// yet; when it is, an init function registers these:
//
//	func init() {
//		for kind, fn := range tracePassFuncs {
//			RegisterPass(kind, fn)
//		}
//	}
var tracePassFuncs = map[string]tracePassFunc{
	pass.TraceMoment:          TracePass,
	pass.TraceClippedMoment:   TracePass,
	pass.TraceGradient:        TracePass,
	pass.TraceClippedGradient: TracePass,
}

// TracePass runs one trace aggregation pass (trace.moment,
// trace.clipped_moment, trace.gradient or trace.clipped_gradient; see
// engine/pass) over the trace shards matching glob, of public shape shape,
// read with ro. The request is validated against its kind before the
// pipeline is built and the result checked against the kind's bounds
// before it is returned. Per-sample clipping happens in the pipeline's
// DoFns, before the combiner adds the samples' terms.
func TracePass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	spec, err := pass.Validate(data.Trace, shape, req)
	if err != nil {
		return nil, err
	}
	opt.Read = ro
	to := TraceOptions{D1: shape.D1, D2: shape.D2}
	inf := math.Inf(1)
	var g *GradSum
	var scalars func(*GradSum) map[string]float64
	switch req.Kind {
	case pass.TraceMoment:
		// The clipped moment with infinite bounds (a side input): each term
		// is 1·y_i·x_i.
		g, err = tracePass(ctx, glob, to, []float64{inf, inf}, &momentFn{}, opt)
	case pass.TraceClippedMoment:
		g, err = ClippedMoment(ctx, glob, to, req.Params["cx"], req.Params["cy"], opt)
		scalars = func(g *GradSum) map[string]float64 { return map[string]float64{"clipped": float64(g.Clipped)} }
	case pass.TraceGradient:
		m, _ := req.Input("m")
		// Clip 0: no clipping (an infinite clip cannot travel in the DoFn's
		// serialised fields).
		g, err = GradientSum(ctx, glob, to, m.Data, 0, opt)
		scalars = func(g *GradSum) map[string]float64 { return map[string]float64{"loss": g.Loss} }
	case pass.TraceClippedGradient:
		m, _ := req.Input("m")
		u, _ := req.Input("u")
		vt, _ := req.Input("vt")
		r := vt.Rows
		v := make([]float64, shape.D2*r) // V (d2×r) from Vᵀ
		for k := 0; k < r; k++ {
			for j := 0; j < shape.D2; j++ {
				v[j*r+k] = vt.Data[k*shape.D2+j]
			}
		}
		g, err = ProjectedGradientSum(ctx, glob, to, TangentIterate{M: m.Data, U: u.Data, V: v, R: r}, req.Params["tau"], opt)
		scalars = func(g *GradSum) map[string]float64 {
			return map[string]float64{"loss": g.Loss, "clipped": float64(g.Clipped)}
		}
	default:
		return nil, fmt.Errorf("pass %s: no Beam implementation", req.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	res := &data.PassResult{Records: g.N, Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: shape.P, Data: g.Sum}}}
	if scalars != nil {
		res.Scalars = scalars(g)
	}
	if err := pass.CheckResult(spec, shape, req, res); err != nil {
		return nil, err
	}
	opt.progress("beam: pass %s: %d samples aggregated", req.Kind, g.N)
	return res, nil
}
