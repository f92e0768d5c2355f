package stats

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/kernel"
)

// GradSum is one pass's aggregate for trace regression: the sum of the
// per-sample clipped gradients of the squared loss at the iterate Θ.
type GradSum struct {
	// N is the number of samples; Clipped how many the clip shrank.
	N, Clipped int64
	// Sum is Σ_i clip₂((⟨X_i, Θ⟩ − y_i)·vec(X_i), c), length d1·d2 (or
	// the sum of a trace pass kind's per-sample terms, see TracePass).
	Sum []float64
	// Loss is Σ_i (⟨X_i, Θ⟩ − y_i)² (unclipped, as the single-machine pass
	// reports it).
	Loss float64
}

// traceSample is one sample of trace data: vec(X_i) and y_i.
type traceSample struct {
	X []float64
	Y float64
}

// readTraceFn reads one trace shard and emits its samples.
type readTraceFn struct {
	D1, D2 int
	Opt    ReadOptions
}

// ProcessElement reads the shard at path.
func (f *readTraceFn) ProcessElement(ctx context.Context, path string, emit func(traceSample)) error {
	sh, err := readShard(ctx, path, data.Trace, f.Opt, f.D1, f.D2)
	if err != nil {
		return err
	}
	for i := range sh.n {
		emit(traceSample{X: slices.Clone(sh.row(i)), Y: sh.y[i]})
	}
	return nil
}

// gradFn clips each sample's gradient at Θ (a side input) to norm Clip.
type gradFn struct {
	Clip float64
}

// ProcessElement emits the clipped gradient of one sample
// (kernel.ClippedGradient on a block of one).
func (f *gradFn) ProcessElement(s traceSample, theta func(*[]float64) bool, emit func(GradSum)) {
	var th []float64
	theta(&th)
	out := GradSum{N: 1, Sum: make([]float64, len(s.X))}
	loss, c := kernel.ClippedGradient(out.Sum, s.X, len(s.X), []float64{s.Y}, th, f.Clip)
	out.Loss, out.Clipped = loss, int64(c)
	emit(out)
}

// sumGradFn adds clipped gradients.
type sumGradFn struct{}

// MergeAccumulators adds b to a.
func (sumGradFn) MergeAccumulators(a, b GradSum) GradSum {
	if a.Sum == nil {
		return b
	}
	addInto(a.Sum, b.Sum)
	a.N += b.N
	a.Clipped += b.Clipped
	a.Loss += b.Loss
	return a
}

// augFn emits a sample as the row [vec(X_i), y_i] clipped to norm Clip,
// for the one-pass sufficient statistics.
type augFn struct {
	Clip float64
}

// ProcessElement emits the clipped augmented row.
func (f *augFn) ProcessElement(s traceSample, emit func(ClippedRow)) {
	row := append(slices.Clone(s.X), s.Y)
	var id dataio.IdentityParts
	shrunk := kernel.Shrink(row, f.Clip)
	emit(ClippedRow{X: row, Shrunk: shrunk, ID: id})
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(traceSample{}), encodeTraceSample, decodeTraceSample)
	beam.RegisterCoder(reflect.TypeOf(GradSum{}), encodeGradSum, decodeGradSum)
	register.DoFn3x1[context.Context, string, func(traceSample), error](&readTraceFn{})
	register.Emitter1[traceSample]()
	register.DoFn3x0[traceSample, func(*[]float64) bool, func(GradSum)](&gradFn{})
	register.Emitter1[GradSum]()
	register.Combiner1[GradSum](&sumGradFn{})
	register.DoFn2x0[traceSample, func(ClippedRow)](&augFn{})
	register.DoFn2x1[context.Context, GradSum, error](&writeGradFn{})
}

func encodeTraceSample(v traceSample) ([]byte, error) { return encodeGob(v) }
func decodeTraceSample(b []byte) (traceSample, error) { return decodeGob[traceSample](b) }
func encodeGradSum(v GradSum) ([]byte, error)         { return encodeGob(v) }
func decodeGradSum(b []byte) (GradSum, error)         { return decodeGob[GradSum](b) }

// writeGradFn writes the one aggregate to Path.
type writeGradFn struct{ Path string }

// ProcessElement writes g.
func (f *writeGradFn) ProcessElement(ctx context.Context, g GradSum) error {
	b, err := encodeGob(g)
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, b)
}

// TraceOptions describe trace shards.
type TraceOptions struct {
	D1, D2 int
}

// GradientSum runs one pass over the trace shards matching glob: the sum
// of the per-sample gradients at theta (a side input), each clipped to
// norm clip before aggregation (kernel.ClippedGradient; clip 0: none).
func GradientSum(ctx context.Context, glob string, to TraceOptions, theta []float64, clip float64, opt Options) (*GradSum, error) {
	if len(theta) != to.D1*to.D2 {
		return nil, fmt.Errorf("iterate of %d values, want %d×%d", len(theta), to.D1, to.D2)
	}
	return tracePass(ctx, glob, to, theta, &gradFn{Clip: clip}, opt)
}

// tracePass runs one pass of fn (a DoFn of a sample and the side input,
// emitting one GradSum per sample) over the trace shards and sums.
func tracePass(ctx context.Context, glob string, to TraceOptions, side []float64, fn any, opt Options) (*GradSum, error) {
	initBeam()
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	out, done, err := opt.tempPath("grad.stats")
	if err != nil {
		return nil, err
	}
	defer done()
	pl, s := beam.NewPipelineWithRoot()
	samples := beam.ParDo(s, &readTraceFn{D1: to.D1, D2: to.D2, Opt: opt.Read}, beam.CreateList(s, paths))
	sideIn := beam.Create(s, side)
	grads := beam.ParDo(s, fn, samples, beam.SideInput{Input: sideIn})
	beam.ParDo0(s, &writeGradFn{Path: out}, beam.Combine(s, &sumGradFn{}, grads))
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, fmt.Errorf("beam pipeline failed: %w", err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	g, err := decodeGob[GradSum](bytes.Clone(b))
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	if g.N == 0 {
		return nil, errors.New("beam pipeline: no samples")
	}
	return &g, nil
}

// Update turns pass t's gradient sum into the next iterate; a private
// driver adds its noise here (through its plan's releases) before the
// step.
type Update func(t int, theta []float64, g *GradSum) ([]float64, error)

// GradientLoop is the driver loop of T passes: pass t computes the clipped
// gradient sum at the current iterate (broadcast to the workers as a side
// input) and update produces the next iterate.
func GradientLoop(ctx context.Context, glob string, to TraceOptions, theta0 []float64, clip float64, passes int, update Update, opt Options) ([]float64, error) {
	theta := slices.Clone(theta0)
	for t := range passes {
		g, err := GradientSum(ctx, glob, to, theta, clip, opt)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", t+1, err)
		}
		opt.progress("beam: trace pass %d/%d: %d samples", t+1, passes, g.N)
		if theta, err = update(t, theta, g); err != nil {
			return nil, err
		}
	}
	return theta, nil
}

// MaxSufficientDim is the largest d1·d2 for which the one-pass sufficient
// statistics (a (d1·d2+1)² matrix) are offered.
const MaxSufficientDim = 4096

// SufficientStats computes, in one pass, the clipped Gram matrix of the
// augmented samples z_i = clip₂([vec(X_i), y_i], clip): its leading block
// is Σ vec(X_i)vec(X_i)ᵀ, its last column Σ y_i vec(X_i), its corner
// Σ y_i² — everything a least-squares trace regression needs when d1·d2
// is small. (RowStats.ID is not the trace source identity.)
func SufficientStats(ctx context.Context, glob string, to TraceOptions, clip float64, opt Options) (*RowStats, error) {
	initBeam()
	if to.D1*to.D2 > MaxSufficientDim {
		return nil, fmt.Errorf("d1·d2 = %d: above %d, use the gradient passes", to.D1*to.D2, MaxSufficientDim)
	}
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	out, done, err := opt.tempPath("suff.stats")
	if err != nil {
		return nil, err
	}
	defer done()
	p := to.D1*to.D2 + 1
	pl, s := beam.NewPipelineWithRoot()
	samples := beam.ParDo(s, &readTraceFn{D1: to.D1, D2: to.D2, Opt: opt.Read}, beam.CreateList(s, paths))
	rows := beam.ParDo(s, &augFn{Clip: clip}, samples)
	beam.ParDo0(s, &writeStatsFn{Path: out}, beam.Combine(s, &rowsCombineFn{P: p}, rows))
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, fmt.Errorf("beam pipeline failed: %w", err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	st, err := decodeStats(b)
	if err != nil {
		return nil, err
	}
	if st.N == 0 || math.IsNaN(st.Moment[0]) {
		return nil, errors.New("beam pipeline: no samples")
	}
	return st, nil
}

// addInto adds b to a elementwise (b nil: nothing to add); the combiners'
// shared merge step.
func addInto(a, b []float64) {
	for i := range b {
		a[i] += b[i]
	}
}
