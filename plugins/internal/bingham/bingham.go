// Package bingham draws exact samples from the vector Bingham distribution
// on the unit sphere, the law with density proportional to exp(β·xᵀAx) with
// respect to the uniform measure on S^{d−1}, and from the von Mises law on
// the circle, its d = 2 special case.
//
// The vector sampler is the rejection sampler of Kent, Ganeiber and Mardia
// (2018, JCGS 27(2)) with an angular central Gaussian envelope: every draw
// has a real accept/reject step, so the law is exactly Bingham's in exact
// arithmetic and the exponential mechanism built on it keeps its pure ε-DP
// guarantee (plugins/orbit/DERIVATIONS.md §7.1). A Sampler is built once
// with New or FromEigen; Sample then draws with the randomness of the
// privacy.Source passed in.
package bingham

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

// MaxProposals caps the proposals of a single draw. Expected proposal
// counts are small (a handful up to a few dozen for d ≤ 1000), so the cap is
// reached only with negligible probability; reaching it is an error wrapping
// ErrTooManyProposals rather than a silently inexact draw.
const MaxProposals = 1_000_000

// ErrTooManyProposals is wrapped when a draw exceeds MaxProposals.
var ErrTooManyProposals = errors.New("bingham: proposal cap reached")

// ErrInput is wrapped for invalid matrices or inverse temperatures.
var ErrInput = errors.New("bingham: invalid input")

// Diagnostics describes the work a draw (or a batch of draws) took.
type Diagnostics struct {
	// Draws is the number of accepted vectors.
	Draws int
	// Proposals is the number of ACG proposals made (≥ Draws).
	Proposals int
	// AcceptanceRate is Draws/Proposals.
	AcceptanceRate float64
	// B is the envelope parameter b ∈ (0, d] (Kent et al. 2018, eq. 3.6's
	// optimum: Σ 1/(b + 2a_i) = 1).
	B float64
	// LogBound is log M, the log of the envelope constant; the expected
	// number of proposals per draw is M·c_ACG/c_Bingham.
	LogBound float64
	// Dim is the dimension d of the sphere's ambient space.
	Dim int
}

// Sampler draws from one fixed vector Bingham law. It is immutable after
// construction and safe for concurrent use with distinct Sources.
type Sampler struct {
	dim   int
	w     []float64 // d×d row-major: columns are the eigenvectors of βA, eigenvalues descending
	a     []float64 // a_i = m_1 − m_i ≥ 0, where m are the eigenvalues of βA (descending)
	sd    []float64 // proposal standard deviations 1/sqrt(Ω_i)
	omega []float64 // Ω_i = 1 + 2a_i/b
	b     float64
	logM  float64
}

// New prepares a sampler for the density ∝ exp(beta·xᵀax) on the unit
// sphere, eigendecomposing a with be (nil: backend.Default()).
func New(a mat.Symmetric, beta float64, be backend.Backend) (*Sampler, error) {
	if a == nil {
		return nil, fmt.Errorf("nil matrix: %w", ErrInput)
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("inverse temperature %v is not finite: %w", beta, ErrInput)
	}
	d := a.SymmetricDim()
	if d < 1 {
		return nil, fmt.Errorf("empty matrix: %w", ErrInput)
	}
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			if v := a.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("matrix entry (%d,%d) = %v is not finite: %w", i, j, v, ErrInput)
			}
		}
	}
	if be == nil {
		be = backend.Default()
	}
	vals, vecs, err := be.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("bingham: eigendecomposition: %w", err)
	}
	return FromEigen(vals, vecs, beta)
}

// FromEigen prepares a sampler for exp(beta·xᵀAx) from an eigendecomposition
// A = V diag(vals) Vᵀ (vals in any order, V's columns orthonormal and matching
// vals). The sampler keeps its own copy of V.
func FromEigen(vals []float64, vecs mat.Matrix, beta float64) (*Sampler, error) {
	if math.IsNaN(beta) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("inverse temperature %v is not finite: %w", beta, ErrInput)
	}
	d := len(vals)
	if d < 1 {
		return nil, fmt.Errorf("no eigenvalues: %w", ErrInput)
	}
	if r, c := vecs.Dims(); r != d || c != d {
		return nil, fmt.Errorf("%d eigenvalues but a %d×%d eigenvector matrix: %w", d, r, c, ErrInput)
	}
	// Eigenvalues of βA, ordered descending.
	order := make([]int, d)
	m := make([]float64, d)
	for i := range order {
		order[i] = i
		m[i] = beta * vals[i]
		if math.IsNaN(m[i]) || math.IsInf(m[i], 0) {
			return nil, fmt.Errorf("eigenvalue %d: β·λ = %v is not finite: %w", i, m[i], ErrInput)
		}
	}
	sortDesc(order, m)
	s := &Sampler{dim: d, w: make([]float64, d*d), a: make([]float64, d), sd: make([]float64, d), omega: make([]float64, d)}
	top := m[order[0]]
	for j, src := range order {
		s.a[j] = top - m[src]
		for i := 0; i < d; i++ {
			s.w[i*d+j] = vecs.At(i, src)
		}
	}
	s.b = solveB(s.a)
	for i, ai := range s.a {
		s.omega[i] = 1 + 2*ai/s.b
		s.sd[i] = 1 / math.Sqrt(s.omega[i])
	}
	fd := float64(d)
	s.logM = -(fd-s.b)/2 + fd/2*math.Log(fd/s.b)
	return s, nil
}

// sortDesc sorts order so that m[order[·]] is descending (insertion sort:
// d is small and the input is usually nearly sorted).
func sortDesc(order []int, m []float64) {
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && m[order[j]] > m[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
}

// solveB returns the b ∈ (0, d] with Σ 1/(b + 2a_i) = 1, which minimises the
// envelope constant (any b in (0, d] gives a valid envelope).
func solveB(a []float64) float64 {
	d := float64(len(a))
	f := func(b float64) float64 {
		var s float64
		for _, ai := range a {
			s += 1 / (b + 2*ai)
		}
		return s - 1
	}
	// f decreases in b; f(0+) = +∞ (a_1 = 0), f(d) ≤ 0.
	lo, hi := 0.0, d
	if f(hi) >= 0 {
		return hi
	}
	for it := 0; it < 200 && hi-lo > 1e-14*hi; it++ {
		mid := 0.5 * (lo + hi)
		if f(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// Sample draws one unit vector.
func (s *Sampler) Sample(ctx context.Context, rnd *privacy.Source) ([]float64, Diagnostics, error) {
	if rnd == nil {
		return nil, Diagnostics{}, fmt.Errorf("nil random source: %w", ErrInput)
	}
	out := make([]float64, s.dim)
	y := make([]float64, s.dim)
	diag, err := s.sampleInto(ctx, rnd.Rand(), out, y)
	if err != nil {
		return nil, diag, err
	}
	return out, diag, nil
}

func (s *Sampler) diagBase() Diagnostics {
	return Diagnostics{B: s.b, LogBound: s.logM, Dim: s.dim}
}

// sampleInto writes one accepted draw to out, using y as scratch.
func (s *Sampler) sampleInto(ctx context.Context, r *rand.Rand, out, y []float64) (Diagnostics, error) {
	diag := s.diagBase()
	d := s.dim
	half := float64(d) / 2
	for p := 1; p <= MaxProposals; p++ {
		if p&1023 == 0 {
			if err := ctx.Err(); err != nil {
				diag.Proposals = p - 1
				return diag, fmt.Errorf("bingham: %w", err)
			}
		}
		// Angular central Gaussian proposal in the eigenbasis.
		var nrm2 float64
		for i := range y {
			y[i] = s.sd[i] * r.NormFloat64()
			nrm2 += y[i] * y[i]
		}
		if nrm2 == 0 {
			continue
		}
		var q, w float64
		for i, yi := range y {
			t := yi * yi / nrm2
			q += s.a[i] * t
			w += s.omega[i] * t
		}
		// log f*/(M g*) with f* = exp(−q), g* = (yᵀΩy)^{−d/2}; ≤ 0 by construction.
		logr := -q + half*math.Log(w) - s.logM
		u := r.Float64()
		if u == 0 || math.Log(u) >= logr {
			continue
		}
		inv := 1 / math.Sqrt(nrm2)
		for i := 0; i < d; i++ {
			var v float64
			row := s.w[i*d : (i+1)*d]
			for j, yj := range y {
				v += row[j] * yj
			}
			out[i] = v * inv
		}
		diag.Draws = 1
		diag.Proposals = p
		diag.AcceptanceRate = 1 / float64(p)
		return diag, nil
	}
	diag.Proposals = MaxProposals
	return diag, fmt.Errorf("%d proposals without acceptance: %w", MaxProposals, ErrTooManyProposals)
}
