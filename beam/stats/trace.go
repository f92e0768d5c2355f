package stats

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// GradSum is the aggregate of a pass that sums per-record terms: for
// trace data the sum of the per-sample clipped gradients of the squared
// loss at the iterate Θ (pass_trace.go); the rows passes' clipped sums
// and norm counts use it too (pass_rows.go).
type GradSum struct {
	// N is the number of samples; Clipped how many the clip shrank.
	N, Clipped int64
	// Sum is the sum of the per-record terms, e.g. for a trace gradient
	// pass Σ_i clip₂((⟨X_i, Θ⟩ − y_i)·vec(X_i), c), length d1·d2.
	Sum []float64
	// Loss is Σ_i (⟨X_i, Θ⟩ − y_i)² (unclipped, as the single-machine pass
	// reports it).
	Loss float64
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

func init() {
	beam.RegisterCoder(reflect.TypeOf(GradSum{}), encodeGradSum, decodeGradSum)
	register.Emitter1[GradSum]()
	register.Combiner1[GradSum](&sumGradFn{})
	register.DoFn2x1[context.Context, GradSum, error](&writeGradFn{})
}

func encodeGradSum(v GradSum) ([]byte, error) { return encodeGob(v) }
func decodeGradSum(b []byte) (GradSum, error) { return decodeGob[GradSum](b) }

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

// addInto adds b to a elementwise (b nil: nothing to add); the combiners'
// shared merge step.
func addInto(a, b []float64) {
	for i := range b {
		a[i] += b[i]
	}
}
