package stats

import (
	"bytes"
	"context"
	"fmt"
	"reflect"

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
	pass.TraceMoment:          ShardPass,
	pass.TraceClippedMoment:   ShardPass,
	pass.TraceGradient:        ShardPass,
	pass.TraceClippedGradient: ShardPass,
	pass.TraceResponseCounts:  ShardPass,
}

// ShardPass runs one aggregation pass whose result is a sum over records
// (the rows and trace kinds; see
// engine/pass) over the shards matching glob, of public shape shape, read
// with ro. The request is validated against its kind before the pipeline
// is built and the result checked against the kind's bounds before it is
// returned.
//
// The pipeline reads each split (a whole shard, or a range of rows of a
// large .npy or IDX file: splitShards) in one DoFn and runs the kind's
// in-process runner (engine/pass, Spec.Local, which calls the kernels of
// engine/kernel) over its records: every record is bounded as the kind
// says before it enters the split's partial result, and the combiner adds
// one partial result per split (pass.AddResults). So the result is
// exactly pass.Local's on the whole data set up to the order of the sums,
// and no per-record element crosses a stage boundary (2–4× faster on
// prism than one element per sample at n = 10⁵, p = 400,
// bench/results/rgrad-beam.md).
func ShardPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	res, _, err := globPass(ctx, glob, shape, ro, req, false, opt)
	return res, err
}

// globPass is shardPass over the splits of the shards matching glob.
func globPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, describe bool, opt Options) (*data.PassResult, *Description, error) {
	spec, ok := pass.Lookup(req.Kind)
	if !ok {
		return nil, nil, fmt.Errorf("pass %q: unknown kind", req.Kind)
	}
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, nil, err
	}
	return shardPass(ctx, splitShards(paths, spec.Data, ro), shape, ro, req, describe, opt)
}

// shardPass runs req over splits, returning with describe the
// description of the records it read (Describe's, for rows and trace
// data), taken in the same read: each split's source identity is hashed
// as its records are read, so a pass and its identity check read the data
// once.
func shardPass(ctx context.Context, splits []split, shape *data.Remote, ro ReadOptions, req data.PassRequest, describe bool, opt Options) (*data.PassResult, *Description, error) {
	spec, ok := pass.Lookup(req.Kind)
	if !ok {
		return nil, nil, fmt.Errorf("pass %q: unknown kind", req.Kind)
	}
	if _, err := pass.Validate(spec.Data, shape, req); err != nil {
		return nil, nil, err
	}
	initBeam()
	shards := 0
	for _, sp := range splits {
		if !sp.Ranged || sp.Lo == 0 {
			shards++
		}
	}
	out, done, err := opt.tempPath("pass.stats")
	if err != nil {
		return nil, nil, err
	}
	defer done()
	pl, s := beam.NewPipelineWithRoot()
	parts := beam.ParDo(s, &shardPassFn{Req: req, Kind: spec.Data, P: shape.P, D1: shape.D1, D2: shape.D2, Opt: ro, Describe: describe}, splitsOf(s, splits))
	beam.ParDo0(s, &writeResultFn{Path: out}, beam.Combine(s, &sumPartsFn{}, parts))
	opt.progress("beam: pass %s over %d shard(s), runner %s", req.Kind, shards, orDefault(opt.Runner))
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, nil, fmt.Errorf("pass %s: beam pipeline failed: %w", req.Kind, err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, nil, fmt.Errorf("pass %s: beam pipeline output: %w", req.Kind, err)
	}
	part, err := decodeGob[passPart](bytes.Clone(b))
	if err != nil {
		return nil, nil, fmt.Errorf("pass %s: beam pipeline output: %w", req.Kind, err)
	}
	res := &part.Res
	if res.Records == 0 {
		return nil, nil, fmt.Errorf("pass %s: beam pipeline: no records", req.Kind)
	}
	if err := sameRows(res.Records, shape); err != nil {
		return nil, nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if err := pass.CheckResult(spec, shape, req, res); err != nil {
		return nil, nil, err
	}
	opt.progress("beam: pass %s: %d records aggregated", req.Kind, res.Records)
	if !describe {
		return res, nil, nil
	}
	desc, err := part.D.description(spec.Data, 0, shards)
	if err != nil {
		return nil, nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	return res, desc, nil
}

// shardPassFn reads one split (a shard, or a range of a rows file) of data
// kind Kind (P columns; rows scaled by Opt.Scale) and emits the partial
// result of the request Req over its records (the kind's reference
// implementation on the split), with their description if Describe.
type shardPassFn struct {
	Req       data.PassRequest
	Kind      data.Kind
	P, D1, D2 int
	Opt       ReadOptions
	Describe  bool
}

// passPart is the partial result of one split, or of several added, and
// their description.
type passPart struct {
	Res data.PassResult
	D   shardDesc
}

// ProcessElement reads sp and emits its partial result.
func (f *shardPassFn) ProcessElement(ctx context.Context, sp split, emit func(passPart)) error {
	path := sp.Path
	var d shardDesc
	var sh *shard
	var err error
	if f.Describe {
		d, sh, _, err = describeSplit(ctx, sp, f.Kind, f.Opt, f.D1, f.D2)
	} else {
		sh, err = readSplit(ctx, sp, f.Kind, f.Opt, f.D1, f.D2, nil)
	}
	if err != nil {
		return err
	}
	defer sh.release()
	if sh.n == 0 {
		return nil
	}
	if sh.p != f.P {
		return fmt.Errorf("shard %s: %d columns, the data set has %d", path, sh.p, f.P)
	}
	if f.Kind == data.Rows {
		for i := range sh.n {
			if _, err := scaledRow(sh.row(i), f.Opt.Scale, sh.row(i)); err != nil {
				return fmt.Errorf("shard %s: row %d: %w", path, sp.Lo+i, err)
			}
		}
	}
	spec, ok := pass.Lookup(f.Req.Kind)
	if !ok {
		return fmt.Errorf("pass %s: unknown kind", f.Req.Kind)
	}
	ds := &data.Dataset{Kind: f.Kind, X: mat.NewDense(sh.n, sh.p, sh.x), Y: sh.y, D1: f.D1, D2: f.D2}
	res, err := spec.Local(ctx, ds, f.Req)
	if err != nil {
		return fmt.Errorf("pass %s: shard %s: %w", f.Req.Kind, path, err)
	}
	emit(passPart{Res: *res, D: d})
	return nil
}

// sumPartsFn adds the splits' partial results and merges their
// descriptions.
type sumPartsFn struct{}

// MergeAccumulators adds b to a.
func (sumPartsFn) MergeAccumulators(a, b passPart) passPart {
	pass.AddResults(&a.Res, b.Res)
	a.D = mergeDescFn{}.MergeAccumulators(a.D, b.D)
	return a
}

// writeResultFn writes the one combined result to Path.
type writeResultFn struct{ Path string }

// ProcessElement writes r.
func (f *writeResultFn) ProcessElement(ctx context.Context, r passPart) error {
	b, err := encodeGob(r)
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, b)
}

func encodePassPart(v passPart) ([]byte, error) { return encodeGob(v) }
func decodePassPart(b []byte) (passPart, error) { return decodeGob[passPart](b) }

func init() {
	beam.RegisterCoder(reflect.TypeOf(passPart{}), encodePassPart, decodePassPart)
	register.Emitter1[passPart]()
	register.Combiner1[passPart](&sumPartsFn{})
	register.DoFn3x1[context.Context, split, func(passPart), error](&shardPassFn{})
	register.DoFn2x1[context.Context, passPart, error](&writeResultFn{})
}
