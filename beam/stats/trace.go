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
	// the sum of the pass's other per-sample terms, see ProjectedGradientSum
	// and ClippedMoment).
	Sum []float64
	// Loss is Σ_i (⟨X_i, Θ⟩ − y_i)² (unclipped, as the single-machine pass
	// reports it; zero for ClippedMoment).
	Loss float64
}

// Gradient is the per-sample gradient of ½(⟨X, Θ⟩ − y)² in Θ (vec,
// row-major), before clipping.
func Gradient(x []float64, y float64, theta []float64) []float64 {
	var r float64
	for j, v := range x {
		r += v * theta[j]
	}
	r -= y
	g := make([]float64, len(x))
	for j, v := range x {
		g[j] = r * v
	}
	return g
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

// ProcessElement emits the clipped gradient of one sample.
func (f *gradFn) ProcessElement(s traceSample, theta func(*[]float64) bool, emit func(GradSum)) {
	var th []float64
	theta(&th)
	g := Gradient(s.X, s.Y, th)
	res := -s.Y
	for j, v := range s.X {
		res += v * th[j]
	}
	out := GradSum{N: 1, Sum: g, Loss: res * res}
	if clipFrob(g, f.Clip) {
		out.Clipped = 1
	}
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
	register.DoFn3x0[traceSample, func(*[]float64) bool, func(GradSum)](&projGradFn{})
	register.DoFn3x0[traceSample, func(*[]float64) bool, func(GradSum)](&momentFn{})
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
// norm clip before aggregation.
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

// TangentIterate is the current point of a Riemannian trace-regression
// iteration: the iterate M (d1×d2, row-major) and the tangent space at it,
// given by its column space U (d1×r) and row space V (d2×r), row-major.
type TangentIterate struct {
	M, U, V []float64
	R       int
}

func (it TangentIterate) pack(d1, d2 int) ([]float64, error) {
	if len(it.M) != d1*d2 || len(it.U) != d1*it.R || len(it.V) != d2*it.R || it.R < 1 {
		return nil, fmt.Errorf("iterate of %d, %d, %d values, want %d×%d, %d×%d, %d×%d (r = %d)",
			len(it.M), len(it.U), len(it.V), d1, d2, d1, it.R, d2, it.R, it.R)
	}
	out := slices.Concat(it.M, it.U, it.V)
	return out, nil
}

// ProjectedGradientSum runs one pass of the rgrad plugin's clipped
// gradient: each sample enters as w_i·vec(X_i) with residual
// res_i = ⟨X_i, M⟩ − y_i and w_i = res_i·min(1, τ/(|res_i|·‖P_T(X_i)‖_F)),
// P_T the projection onto the tangent space at the iterate (a side input),
// so that every projected term w_i·P_T(X_i) has Frobenius norm ≤ τ; the
// sum is not divided by n. Loss is Σ res_i².
func ProjectedGradientSum(ctx context.Context, glob string, to TraceOptions, it TangentIterate, tau float64, opt Options) (*GradSum, error) {
	side, err := it.pack(to.D1, to.D2)
	if err != nil {
		return nil, err
	}
	return tracePass(ctx, glob, to, side, &projGradFn{D1: to.D1, D2: to.D2, R: it.R, Tau: tau}, opt)
}

// projGradFn is one sample's term of ProjectedGradientSum.
type projGradFn struct {
	D1, D2, R int
	Tau       float64
}

// ProcessElement emits w_i·vec(X_i).
func (f *projGradFn) ProcessElement(s traceSample, side func(*[]float64) bool, emit func(GradSum)) {
	var v []float64
	side(&v)
	p := f.D1 * f.D2
	m, u, vv := v[:p], v[p:p+f.D1*f.R], v[p+f.D1*f.R:]
	var res float64
	for j, x := range s.X {
		res += x * m[j]
	}
	res -= s.Y
	w, clipped := res, false
	if g := math.Abs(res) * projectedNorm(s.X, u, vv, f.D1, f.D2, f.R); g > f.Tau {
		w, clipped = res*f.Tau/g, true
	}
	out := GradSum{N: 1, Sum: make([]float64, p), Loss: res * res}
	for j, x := range s.X {
		out.Sum[j] = w * x
	}
	if clipped {
		out.Clipped = 1
	}
	emit(out)
}

// projectedNorm returns ‖P_T(X)‖_F = √(‖UᵀX‖² + ‖XV‖² − ‖UᵀXV‖²) for the
// row-major d1×d2 X, U (d1×r) and V (d2×r).
func projectedNorm(x, u, v []float64, d1, d2, r int) float64 {
	utx := make([]float64, r*d2) // UᵀX
	xv := make([]float64, d1*r)  // XV
	for a := range d1 {
		xa := x[a*d2 : (a+1)*d2]
		for k := range r {
			uak := u[a*r+k]
			for b, xab := range xa {
				utx[k*d2+b] += uak * xab
				xv[a*r+k] += xab * v[b*r+k]
			}
		}
	}
	var n2 float64
	for _, t := range utx {
		n2 += t * t
	}
	for _, t := range xv {
		n2 += t * t
	}
	for k := range r {
		for l := range r {
			var c float64
			for b := range d2 {
				c += utx[k*d2+b] * v[b*r+l]
			}
			n2 -= c * c
		}
	}
	return math.Sqrt(math.Max(n2, 0))
}

// ClippedMoment runs the one pass of the rgrad plugin's initialisation
// statistic: Σ_i clip(y_i, cy)·clip₂(vec(X_i), cx) (|y_i| ≤ cy, ‖X_i‖_F ≤ cx;
// not divided by n); Clipped counts samples where either clip was active.
func ClippedMoment(ctx context.Context, glob string, to TraceOptions, cx, cy float64, opt Options) (*GradSum, error) {
	return tracePass(ctx, glob, to, []float64{cx, cy}, &momentFn{}, opt)
}

// momentFn is one sample's term of ClippedMoment (the side input holds
// cx, cy).
type momentFn struct{}

// ProcessElement emits clip(y, cy)·clip₂(x, cx).
func (f *momentFn) ProcessElement(s traceSample, side func(*[]float64) bool, emit func(GradSum)) {
	var c []float64
	side(&c)
	cx, cy := c[0], c[1]
	var nx float64
	for _, x := range s.X {
		nx += x * x
	}
	nx = math.Sqrt(nx)
	w, clipped := 1.0, false
	if nx > cx {
		w, clipped = cx/nx, true
	}
	y := s.Y
	if math.Abs(y) > cy {
		y, clipped = math.Copysign(cy, y), true
	}
	out := GradSum{N: 1, Sum: make([]float64, len(s.X))}
	for j, x := range s.X {
		out.Sum[j] = w * y * x
	}
	if clipped {
		out.Clipped = 1
	}
	emit(out)
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
