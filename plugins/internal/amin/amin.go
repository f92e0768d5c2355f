// Package amin is the iterative eigenvector sampler of Amin, Dick, Kulesza,
// Muñoz Medina and Vassilvitskii (2019) shared by pca-amin and
// orbit-deflation (plugins/pca/DERIVATIONS.md §3.1): r exact vector-Bingham
// draws, each in the complement of the vectors already drawn. The caller
// declares each draw's privacy cost through Config.Declare.
package amin

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/bingham"
)

// Exponential is a declared exponential-mechanism step
// (*privacy.ExponentialRelease): Sample calls its argument once with the
// step's inverse temperature.
type Exponential interface {
	Sample(sample func(beta float64) error) error
}

// Config configures one run of the sampler.
type Config struct {
	// Rank is the number r of vectors to return (1 ≤ r ≤ p).
	Rank int
	// Declare declares sampled draw k (0-based, k < Draws(r, p)) and
	// returns its release, which hands the inverse temperature β_k to the
	// sampler exactly once. It is called before the draw.
	Declare func(k int) (Exponential, error)
	// Backend runs the samplers' eigendecompositions (nil: default).
	Backend backend.Backend
	// Progress, if set, is called before each vector and once at the end.
	Progress func(done, total int)
}

// Draws returns how many of r vectors in dimension p are sampled: r, or
// p − 1 when r = p, since the last vector is then the one-dimensional
// complement of the others (every unit vector in it scores the same), so it
// is taken as is and costs nothing.
func Draws(r, p int) int {
	if r >= p {
		return p - 1
	}
	return r
}

// Sample draws the p×r frame. c is not modified.
func Sample(ctx context.Context, rnd *privacy.Source, c *mat.SymDense, cfg Config) (*mat.Dense, bingham.Diagnostics, error) {
	p := c.SymmetricDim()
	r := cfg.Rank
	var total bingham.Diagnostics
	if r < 1 || r > p {
		return nil, total, fmt.Errorf("amin: rank %d outside [1, %d]", r, p)
	}
	be := cfg.Backend
	if be == nil {
		be = backend.Default()
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(int, int) {}
	}
	sampled := Draws(r, p)
	// cur is the m×m compressed matrix Qᵀ c Q; q the p×m basis of the
	// current complement.
	st := &state{m: p, cur: mat.DenseCopyOf(c), q: identity(p)}
	out := mat.NewDense(p, r, nil)
	for k := 0; k < r; k++ {
		if err := ctx.Err(); err != nil {
			return nil, total, fmt.Errorf("vector %d: %w", k+1, err)
		}
		progress(k, r)
		uh := []float64{1}
		if k < sampled {
			rel, err := cfg.Declare(k)
			if err != nil {
				return nil, total, err
			}
			err = rel.Sample(func(beta float64) error {
				var d bingham.Diagnostics
				var err error
				uh, d, err = draw(ctx, rnd, st, beta, be)
				total.Proposals += d.Proposals
				total.Draws += d.Draws
				return err
			})
			if err != nil {
				return nil, total, fmt.Errorf("vector %d: %w", k+1, err)
			}
		}
		out.SetCol(k, st.lift(uh))
		if k == r-1 || st.m == 1 {
			break
		}
		st.deflate(uh)
	}
	progress(r, r)
	if total.Proposals > 0 {
		total.AcceptanceRate = float64(total.Draws) / float64(total.Proposals)
	}
	total.Dim = p
	return out, total, nil
}

// state is the current complement: its basis q (p×m) and the compressed
// matrix cur = qᵀ c q (m×m).
type state struct {
	m   int
	cur *mat.Dense
	q   *mat.Dense
}

// draw samples û on the unit sphere of ℝ^m with density ∝ exp(β ûᵀ cur û).
func draw(ctx context.Context, rnd *privacy.Source, st *state, beta float64, be backend.Backend) ([]float64, bingham.Diagnostics, error) {
	m := st.m
	sym := mat.NewSymDense(m, nil)
	for i := 0; i < m; i++ {
		row := st.cur.RawRowView(i)
		for j := i; j < m; j++ {
			sym.SetSym(i, j, row[j])
		}
	}
	smp, err := bingham.New(sym, beta, be)
	if err != nil {
		return nil, bingham.Diagnostics{}, err
	}
	return smp.Sample(ctx, rnd)
}

// lift returns the unit vector u = q·û in ℝ^p.
func (st *state) lift(uh []float64) []float64 {
	p, _ := st.q.Dims()
	u := make([]float64, p)
	for i := 0; i < p; i++ {
		row := st.q.RawRowView(i)[:st.m]
		var s float64
		for j, v := range row {
			s += v * uh[j]
		}
		u[i] = s
	}
	normalize(u)
	return u
}

// deflate restricts the state to the complement of û with the Householder
// reflection H = I − 2vvᵀ, H·û ∝ e_1: columns 2..m of H span that
// complement, so cur ← (H cur H)[1:,1:] and q ← (q H)[:,1:].
func (st *state) deflate(uh []float64) {
	m := st.m
	p, _ := st.q.Dims()
	v := append([]float64(nil), uh...)
	sgn := 1.0
	if v[0] < 0 {
		sgn = -1
	}
	v[0] += sgn * kernel.Norm(v)
	normalize(v)
	w := make([]float64, m)
	for i := 0; i < m; i++ {
		var s float64
		for j, a := range st.cur.RawRowView(i)[:m] {
			s += a * v[j]
		}
		w[i] = s
	}
	var vw float64
	for i := range v {
		vw += v[i] * w[i]
	}
	next := mat.NewDense(m-1, m-1, nil)
	for i := 1; i < m; i++ {
		row := st.cur.RawRowView(i)
		dst := next.RawRowView(i - 1)
		for j := 1; j < m; j++ {
			dst[j-1] = row[j] - 2*v[i]*w[j] - 2*w[i]*v[j] + 4*vw*v[i]*v[j]
		}
	}
	// Exact symmetry.
	for i := 0; i < m-1; i++ {
		for j := i + 1; j < m-1; j++ {
			a := 0.5 * (next.At(i, j) + next.At(j, i))
			next.Set(i, j, a)
			next.Set(j, i, a)
		}
	}
	nq := mat.NewDense(p, m-1, nil)
	for i := 0; i < p; i++ {
		row := st.q.RawRowView(i)[:m]
		var qv float64
		for j, a := range row {
			qv += a * v[j]
		}
		dst := nq.RawRowView(i)
		for j := 1; j < m; j++ {
			dst[j-1] = row[j] - 2*qv*v[j]
		}
	}
	st.cur, st.q, st.m = next, nq, m-1
}

func identity(p int) *mat.Dense {
	q := mat.NewDense(p, p, nil)
	for i := 0; i < p; i++ {
		q.Set(i, i, 1)
	}
	return q
}

func normalize(v []float64) {
	if s := kernel.Norm(v); s > 0 {
		for i := range v {
			v[i] /= s
		}
	}
}
