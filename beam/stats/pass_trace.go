package stats

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// tracePassFuncs are the Beam implementations of the trace pass kinds of
// engine/pass (plugins/rgrad reads its data through them), by kind; init
// in pass.go registers them.
var tracePassFuncs = map[string]PassFunc{
	pass.TraceMoment:          TracePass,
	pass.TraceClippedMoment:   TracePass,
	pass.TraceGradient:        TracePass,
	pass.TraceClippedGradient: TracePass,
	pass.TraceResponseCounts:  TracePass,
}

// TracePass runs one trace aggregation pass (trace.moment, trace.response_counts,
// trace.clipped_moment, trace.gradient or trace.clipped_gradient; see
// engine/pass) over the trace shards matching glob, of public shape shape,
// read with ro. The request is validated against its kind before the
// pipeline is built and the result checked against the kind's bounds
// before it is returned.
//
// The pipeline reads each shard in one DoFn and runs the kind's
// in-process runner (engine/pass, Spec.Local, which calls the trace
// kernels of engine/kernel) over the shard's samples, with the request's
// iterate as a side input:
// every sample is bounded as the kind says before it enters the shard's
// partial sum, and the combiner adds one partial sum per shard. So the
// result is exactly pass.Local's on the whole data set up to the order of
// the sums, and no per-sample element crosses a stage boundary (2–4×
// faster on prism than one element per sample at n = 10⁵, p = 400,
// bench/results/rgrad-beam.md).
func TracePass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	spec, err := pass.Validate(data.Trace, shape, req)
	if err != nil {
		return nil, err
	}
	initBeam()
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	out, done, err := opt.tempPath("pass.stats")
	if err != nil {
		return nil, err
	}
	defer done()
	var side []float64
	for _, a := range req.Inputs {
		side = append(side, a.Data...)
	}
	pl, s := beam.NewPipelineWithRoot()
	fn := &shardPassFn{Kind: req.Kind, Params: req.Params, D1: shape.D1, D2: shape.D2, Opt: ro}
	sums := beam.ParDo(s, fn, beam.CreateList(s, paths), beam.SideInput{Input: beam.Create(s, side)})
	beam.ParDo0(s, &writeGradFn{Path: out}, beam.Combine(s, &sumGradFn{}, sums))
	opt.progress("beam: pass %s over %d shard(s), runner %s", req.Kind, len(paths), orDefault(opt.Runner))
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, fmt.Errorf("pass %s: beam pipeline failed: %w", req.Kind, err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("pass %s: beam pipeline output: %w", req.Kind, err)
	}
	g, err := decodeGob[GradSum](bytes.Clone(b))
	if err != nil {
		return nil, fmt.Errorf("pass %s: beam pipeline output: %w", req.Kind, err)
	}
	if g.N == 0 {
		return nil, fmt.Errorf("pass %s: beam pipeline: no samples", req.Kind)
	}
	res := gradResult(spec, shape, req, g)
	if err := pass.CheckResult(spec, shape, req, res); err != nil {
		return nil, err
	}
	opt.progress("beam: pass %s: %d samples aggregated", req.Kind, g.N)
	return res, nil
}

// gradResult turns a combined GradSum into the kind's result: its one
// output (the sum, or the counts) and the scalars the kind lists (loss,
// clipped).
func gradResult(spec pass.Spec, shape *data.Remote, req data.PassRequest, g GradSum) *data.PassResult {
	out := spec.Outputs(shape, req)[0]
	res := &data.PassResult{Records: g.N, Outputs: []data.Array{{Name: out.Name, Rows: 1, Cols: out.Cols, Data: g.Sum}}}
	for _, name := range spec.Scalars {
		if res.Scalars == nil {
			res.Scalars = map[string]float64{}
		}
		switch name {
		case "loss":
			res.Scalars[name] = g.Loss
		case "clipped":
			res.Scalars[name] = float64(g.Clipped)
		}
	}
	return res
}

// shardPassFn reads one trace shard and emits the partial sum of the pass
// Kind over its samples (the kind's reference implementation on the
// shard); the side input holds the request's inputs, concatenated in the
// kind's order.
type shardPassFn struct {
	Kind   string
	Params map[string]float64
	D1, D2 int
	Opt    ReadOptions
}

// ProcessElement reads the shard at path and emits its partial sum.
func (f *shardPassFn) ProcessElement(ctx context.Context, path string, side func(*[]float64) bool, emit func(GradSum)) error {
	var in []float64
	side(&in)
	sh, err := readShard(ctx, path, data.Trace, f.Opt, f.D1, f.D2)
	if err != nil {
		return err
	}
	if sh.n == 0 {
		return nil
	}
	shape := &data.Remote{N: sh.n, P: sh.p, D1: f.D1, D2: f.D2}
	req := data.PassRequest{Kind: f.Kind, Params: f.Params}
	spec, ok := pass.Lookup(f.Kind)
	if !ok {
		return fmt.Errorf("pass %s: unknown kind", f.Kind)
	}
	if spec.Inputs != nil {
		for _, a := range spec.Inputs(shape, f.Params) {
			k := a.Rows * a.Cols
			if len(in) < k {
				return fmt.Errorf("pass %s: side input too short for %s", f.Kind, a.Name)
			}
			req.Inputs = append(req.Inputs, data.Array{Name: a.Name, Rows: a.Rows, Cols: a.Cols, Data: in[:k]})
			in = in[k:]
		}
	}
	if spec, err = pass.Validate(data.Trace, shape, req); err != nil {
		return err
	}
	ds := &data.Dataset{Kind: data.Trace, X: mat.NewDense(sh.n, sh.p, sh.x), Y: sh.y, D1: f.D1, D2: f.D2}
	res, err := spec.Local(ctx, ds, req)
	if err != nil {
		return fmt.Errorf("pass %s: shard %s: %w", f.Kind, path, err)
	}
	sum := res.Outputs[0] // the kind's one output: the sum, or the counts
	emit(GradSum{N: res.Records, Sum: sum.Data, Loss: res.Scalars["loss"], Clipped: int64(res.Scalars["clipped"])})
	return nil
}

func init() {
	register.DoFn4x1[context.Context, string, func(*[]float64) bool, func(GradSum), error](&shardPassFn{})
}
