package privacy

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Privacy loss distributions.
//
// For a pair of output distributions (P, Q) of a mechanism on neighbouring
// data sets, the privacy loss of an output o is L(o) = ln(P(o)/Q(o)) and its
// privacy loss distribution (PLD) is the law of L(o) for o ~ P. The exact
// (ε, δ) curve of the pair is the hockey-stick divergence
//
//	δ(ε) = E_P[(1 − e^(ε − L))₊] + P(L = +∞),
//
// and the PLD of an adaptive composition of mechanisms, each dominated by a
// pair (P_i, Q_i), is dominated by the convolution of the pairs' PLDs (Zhu,
// Dong & Wang, "Optimal accounting of differential privacy via
// characteristic function", AISTATS 2022, Theorem 10, building on
// Koskela, Jälkö & Honkela 2020 and Meiser & Mohammadi 2018).
//
// Discretisation. A PLD here lives on the grid hℤ: every loss is rounded
// UP to the next multiple of h. δ(ε) is increasing in every loss value, so
// rounding up can only raise δ, and the sum of rounded losses is at least
// the rounded sum: the discretised composition never reports an ε below the
// truth. It reports at most h per composed factor too much: if k
// discretised PLDs were convolved, the reported curve satisfies
//
//	δ_true(ε) ≤ δ_PLD(ε) ≤ δ_true(ε − k·h) + τ,
//
// where τ is the probability mass moved to +∞ by truncating upper tails
// (below 1e-20 for the Gaussian PLDs built here). Lower tails are folded
// into the lowest kept bucket (rounded up: pessimistic). This is the
// "privacy buckets" pessimistic estimate; Doroshenko et al. (PETS 2022)
// tighten it by "connecting the dots" on the (ε, δ) curve, which dplr does
// not do yet: the bound above is what is stated.
//
// Dominating pairs used: a Gaussian step with Δ/σ = μ has L ~ N(μ²/2, μ²)
// (symmetric in the pair order); a Laplace step with Δ/b = ε has an atom
// ½ at ε, an atom ½e^(−ε) at −ε and density ¼e^(−(ε−t)/2) on (−ε, ε); any
// pure ε-DP step (the exponential mechanism included) is dominated by
// randomized response, with atoms e^ε/(1+e^ε) at ε and 1/(1+e^ε) at −ε
// (Kairouz, Oh & Viswanath 2015). All three are symmetric, so one order of
// the pair suffices.

// DefaultPLDGrid is the loss grid width h used when a caller gives none:
// a composition of k discretised factors overstates ε by at most k·1e-3.
const DefaultPLDGrid = 1e-3

// maxPLDBuckets bounds a PLD's length (memory ≈ 8 bytes a bucket, the FFT
// a few times that).
const maxPLDBuckets = 1 << 24

// PLD is a privacy loss distribution discretised on the grid hℤ: Mass[i]
// is the probability that the loss equals (Offset+i)·h, and Inf the
// probability that it is +∞. Masses are never negative; they sum to at most
// one (mass at −∞ is dropped: it never contributes to δ).
type PLD struct {
	H      float64
	Offset int
	Mass   []float64
	Inf    float64
	// Factors counts the discretised PLDs composed into this one (the k of
	// the discretisation bound).
	Factors int
}

func checkGrid(h float64) error {
	if !(h > 0) || h > 1 || math.IsInf(h, 0) {
		return fmt.Errorf("PLD grid h = %v must lie in (0, 1]: %w", h, ErrInvalidBudget)
	}
	return nil
}

// fromCDF discretises a loss with CDF F and survival function S = 1 − F
// (both given, so that each tail is computed without cancellation) on
// [lo, hi]: losses below lo are folded into lo's bucket, those above hi go
// to +∞, and every loss is rounded up to hℤ. Bucket masses are differences
// of F below the median mid and of S above it.
func fromCDF(F, S func(float64) float64, mid, lo, hi, h float64) (*PLD, error) {
	a, b := int(math.Floor(lo/h)), int(math.Ceil(hi/h))
	if b-a+1 > maxPLDBuckets {
		return nil, fmt.Errorf("PLD on [%g, %g] with grid %g needs %d buckets (limit %d): use a coarser grid: %w", lo, hi, h, b-a+1, maxPLDBuckets, ErrInvalidBudget)
	}
	p := &PLD{H: h, Offset: a, Mass: make([]float64, b-a+1), Factors: 1}
	// Bucket i holds the losses in ((a+i−1)h, (a+i)h]; bucket 0 everything
	// at or below a·h.
	p.Mass[0] = F(float64(a) * h)
	for i := 1; i < len(p.Mass); i++ {
		l, r := float64(a+i-1)*h, float64(a+i)*h
		if r <= mid {
			p.Mass[i] = math.Max(0, F(r)-F(l))
		} else {
			p.Mass[i] = math.Max(0, S(l)-S(r))
		}
	}
	p.Inf = S(float64(b) * h)
	return p, nil
}

// GaussianPLD is the discretised PLD of a μ-GDP Gaussian step (Δ/σ = μ).
func GaussianPLD(mu, h float64) (*PLD, error) {
	if err := checkGrid(h); err != nil {
		return nil, err
	}
	if !(mu > 0) || math.IsInf(mu, 0) {
		return nil, fmt.Errorf("Gaussian PLD: μ = %v must be positive and finite: %w", mu, ErrInvalidBudget)
	}
	m := mu * mu / 2
	// ±10 standard deviations: the upper tail sent to +∞ is below 1e-23.
	lo, hi := m-10*mu, m+10*mu
	F := func(t float64) float64 { return math.Exp(logNormCDF((t - m) / mu)) }
	S := func(t float64) float64 { return math.Exp(logNormCDF((m - t) / mu)) }
	return fromCDF(F, S, m, lo, hi, h)
}

// LaplacePLD is the discretised PLD of a Laplace step with Δ/b = ε.
func LaplacePLD(eps, h float64) (*PLD, error) {
	if err := checkGrid(h); err != nil {
		return nil, err
	}
	if err := checkEps(eps); err != nil {
		return nil, err
	}
	F := func(t float64) float64 {
		switch {
		case t < -eps:
			return 0
		case t >= eps:
			return 1
		}
		// P(L ≤ t) = ½e^(−ε) + ∫_{−ε}^{t} ¼e^(−(ε−s)/2) ds.
		return 0.5*math.Exp(-eps) + 0.5*(math.Exp(-(eps-t)/2)-math.Exp(-eps))
	}
	// S(t) for t < ε: the atom ½ at ε plus the density's mass above t.
	S := func(t float64) float64 {
		switch {
		case t < -eps:
			return 1
		case t >= eps:
			return 0
		}
		return 0.5 - 0.5*math.Expm1(-(eps-t)/2)
	}
	return fromCDF(F, S, eps, -eps, eps, h)
}

// PurePLD is the discretised PLD of randomized response at ε, which
// dominates every pure ε-DP mechanism.
func PurePLD(eps, h float64) (*PLD, error) {
	if err := checkGrid(h); err != nil {
		return nil, err
	}
	if err := checkEps(eps); err != nil {
		return nil, err
	}
	a, b := int(math.Ceil(-eps/h)), int(math.Ceil(eps/h))
	if b-a+1 > maxPLDBuckets {
		return nil, fmt.Errorf("pure PLD at ε = %g with grid %g is too long: %w", eps, h, ErrInvalidBudget)
	}
	p := &PLD{H: h, Offset: a, Mass: make([]float64, b-a+1), Factors: 1}
	p.Mass[0] = 1 / (1 + math.Exp(eps))
	p.Mass[b-a] += 1 / (1 + math.Exp(-eps))
	return p, nil
}

// Delta is the δ at which the PLD's pair is (ε, δ)-DP.
func (p *PLD) Delta(eps float64) float64 {
	d := p.Inf
	for i, m := range p.Mass {
		l := float64(p.Offset+i) * p.H
		if l > eps && m > 0 {
			d -= m * math.Expm1(eps-l)
		}
	}
	return math.Min(1, d)
}

// Epsilon is the smallest ε ≥ 0 at which the PLD's pair is (ε, δ)-DP,
// bisected to 1e-12 relative on the safe (upper) side. It is an error when
// no finite ε reaches δ (the mass at +∞ exceeds δ).
func (p *PLD) Epsilon(delta float64) (float64, error) {
	if !(delta > 0) || !(delta < 1) {
		return 0, fmt.Errorf("δ = %v must lie in (0, 1): %w", delta, ErrInvalidBudget)
	}
	if p.Inf >= delta {
		return 0, fmt.Errorf("the loss is infinite with probability %.3g ≥ δ = %v: %w", p.Inf, delta, ErrInvalidBudget)
	}
	if p.Delta(0) <= delta {
		return 0, nil
	}
	hi := float64(p.Offset+len(p.Mass)) * p.H
	lo := 0.0
	for i := 0; i < 200 && hi-lo > 1e-13*math.Max(hi, 1e-300); i++ {
		m := (lo + hi) / 2
		if p.Delta(m) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return hi, nil
}

// Compose returns the PLD of the composition of p and q (both on the same
// grid): the convolution of their masses. Small factors are convolved
// directly, large ones by FFT, whose rounding noise (relative 1e-16 of the
// largest mass) is clipped at zero.
func (p *PLD) Compose(q *PLD) (*PLD, error) {
	if p.H != q.H {
		return nil, errors.New("privacy: PLDs on different grids cannot be composed")
	}
	n := len(p.Mass) + len(q.Mass) - 1
	if n > maxPLDBuckets {
		return nil, fmt.Errorf("composed PLD would need %d buckets (limit %d): use a coarser grid: %w", n, maxPLDBuckets, ErrInvalidBudget)
	}
	out := &PLD{H: p.H, Offset: p.Offset + q.Offset, Factors: p.Factors + q.Factors}
	small := min(len(p.Mass), len(q.Mass))
	if small <= 64 || float64(len(p.Mass))*float64(len(q.Mass)) < 1e7 {
		out.Mass = convolveDirect(p.Mass, q.Mass)
	} else {
		out.Mass = convolveFFT(p.Mass, q.Mass)
	}
	// Under P the loss is never −∞ (P(o) > 0 wherever o can occur), so the
	// composed loss is +∞ exactly when either factor's is.
	out.Inf = p.Inf + q.Inf - p.Inf*q.Inf
	return out, nil
}

func convolveDirect(a, b []float64) []float64 {
	out := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		if x == 0 {
			continue
		}
		for j, y := range b {
			out[i+j] += x * y
		}
	}
	return out
}

func convolveFFT(a, b []float64) []float64 {
	n := len(a) + len(b) - 1
	size := 1
	for size < n {
		size <<= 1
	}
	fft := fourier.NewFFT(size)
	pa := make([]float64, size)
	copy(pa, a)
	pb := make([]float64, size)
	copy(pb, b)
	ca := fft.Coefficients(nil, pa)
	cb := fft.Coefficients(nil, pb)
	for i := range ca {
		ca[i] *= cb[i]
	}
	seq := fft.Sequence(nil, ca)
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Max(0, seq[i]/float64(size))
	}
	return out
}

// SelfCompose returns the k-fold composition of p with itself, by repeated
// squaring.
func (p *PLD) SelfCompose(k int) (*PLD, error) {
	if k < 1 {
		return nil, fmt.Errorf("cannot compose a PLD %d times: %w", k, ErrInvalidBudget)
	}
	var acc *PLD
	base := p
	for {
		if k&1 == 1 {
			if acc == nil {
				acc = base
			} else {
				var err error
				if acc, err = acc.Compose(base); err != nil {
					return nil, err
				}
			}
		}
		k >>= 1
		if k == 0 {
			return acc, nil
		}
		var err error
		if base, err = base.Compose(base); err != nil {
			return nil, err
		}
	}
}
