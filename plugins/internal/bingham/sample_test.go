package bingham

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

// The batch and one-shot draws and the unchecked proposal the tests use.

func (d *Diagnostics) add(o Diagnostics) {
	d.Draws += o.Draws
	d.Proposals += o.Proposals
	if d.Proposals > 0 {
		d.AcceptanceRate = float64(d.Draws) / float64(d.Proposals)
	}
}

// SampleVector draws one unit vector x ∈ ℝ^d with density proportional to
// exp(beta·xᵀ a x) on the unit sphere. It eigendecomposes a with gonum; see
// the package documentation for the reusable Sampler.
func SampleVector(ctx context.Context, rnd *privacy.Source, a *mat.SymDense, beta float64) ([]float64, Diagnostics, error) {
	if a == nil {
		return nil, Diagnostics{}, fmt.Errorf("nil matrix: %w", ErrInput)
	}
	s, err := New(a, beta, backend.Gonum{})
	if err != nil {
		return nil, Diagnostics{}, err
	}
	return s.Sample(ctx, rnd)
}

// Dim returns the dimension of the ambient space.
func (s *Sampler) Dim() int { return s.dim }

// SampleN draws n independent unit vectors, returned as the rows of an n×d
// matrix, with the batch's cumulative diagnostics.
func (s *Sampler) SampleN(ctx context.Context, rnd *privacy.Source, n int) (*mat.Dense, Diagnostics, error) {
	if rnd == nil {
		return nil, Diagnostics{}, fmt.Errorf("nil random source: %w", ErrInput)
	}
	if n < 1 {
		return nil, Diagnostics{}, fmt.Errorf("sample count %d must be positive: %w", n, ErrInput)
	}
	out := mat.NewDense(n, s.dim, nil)
	y := make([]float64, s.dim)
	r := rnd.Rand()
	total := s.diagBase()
	for i := 0; i < n; i++ {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, total, fmt.Errorf("bingham: after %d draws: %w", i, err)
			}
		}
		d, err := s.sampleInto(ctx, r, out.RawRowView(i), y)
		total.add(d)
		if err != nil {
			return nil, total, fmt.Errorf("draw %d: %w", i, err)
		}
	}
	return out, total, nil
}

// rawProposal returns one ACG proposal without the accept step. It exists
// only so the tests can show that their goodness-of-fit checks reject a
// sampler that skips rejection.
func (s *Sampler) rawProposal(r *rand.Rand, out []float64) {
	d := s.dim
	y := make([]float64, d)
	var nrm2 float64
	for i := range y {
		y[i] = s.sd[i] * r.NormFloat64()
		nrm2 += y[i] * y[i]
	}
	inv := 1 / math.Sqrt(nrm2)
	for i := 0; i < d; i++ {
		var v float64
		for j, yj := range y {
			v += s.w[i*d+j] * yj
		}
		out[i] = v * inv
	}
}
