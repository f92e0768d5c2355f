package privacy

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Privacy loss distributions: the PLD type, its δ(ε) and ε(δ), and
// composition. The theory (dominating pairs, the discretisation and its
// error bound) is in docs/privacy.md, "Privacy loss distributions"; ctd.go
// has the connect-the-dots constructors RunPLD uses.

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
	// Err bounds the floating-point error of the FFT convolutions that
	// made this PLD, as an ℓ1 distance between Mass and the masses exact
	// arithmetic would give; Delta adds it, so that rounding can never
	// lower a reported δ. 0 for a PLD composed without FFT.
	Err float64
}

// deltaRounding is the relative allowance Delta adds, per composed factor,
// for rounding: half for a connect-the-dots factor's shortfall (which
// composes to the same relative shortfall), half for compensated sums and
// direct convolutions (relative error below 1e-12 at these sizes).
const deltaRounding = 1e-10

// allowance is the relative rounding allowance of p's δ.
func (p *PLD) allowance() float64 { return deltaRounding * float64(max(1, p.Factors)) }

func checkGrid(h float64) error {
	if !(h > 0) || h > 1 || math.IsInf(h, 0) {
		return fmt.Errorf("PLD grid h = %v must lie in (0, 1]: %w", h, ErrInvalidBudget)
	}
	return nil
}

// Delta is the δ at which the PLD's pair is (ε, δ)-DP, with the rounding
// allowances (relative deltaRounding per factor, absolute Err) added.
func (p *PLD) Delta(eps float64) float64 {
	var d kahan
	d.add(p.Inf)
	// Only masses above eps contribute.
	start := max(0, int(math.Floor(eps/p.H))-p.Offset)
	for i := start; i < len(p.Mass); i++ {
		l := float64(p.Offset+i) * p.H
		if m := p.Mass[i]; l > eps && m > 0 {
			d.add(-m * math.Expm1(eps-l))
		}
	}
	return math.Min(1, d.sum()*(1+p.allowance())+p.Err)
}

// Epsilon is the smallest ε ≥ 0 at which the PLD's pair is (ε, δ)-DP
// (by Delta, allowances included), to 1e-12 relative on the safe (upper)
// side. It is an error when no finite ε reaches δ (the mass at +∞ exceeds
// δ).
//
// Between grid points δ(ε) = A − e^ε·B with A the mass above the interval
// and B = Σ p_i e^(−ε_i) over it, so the grid interval holding the answer
// is found from one pass of running sums and the ε inside it in closed
// form; the answer is then checked against Delta and nudged up if
// rounding left it short.
func (p *PLD) Epsilon(delta float64) (float64, error) {
	if !(delta > 0) || !(delta < 1) {
		return 0, fmt.Errorf("δ = %v must lie in (0, 1): %w", delta, ErrInvalidBudget)
	}
	if p.Inf*(1+p.allowance())+p.Err >= delta {
		return 0, fmt.Errorf("the loss is infinite with probability %.3g ≥ δ = %v: %w", p.Inf, delta, ErrInvalidBudget)
	}
	if p.Delta(0) <= delta {
		return 0, nil
	}
	// The target for the unallowanced sums.
	target := (delta - p.Err) / (1 + p.allowance())
	// Smallest grid index j with δ(ε_j) ≤ target (δ decreases in ε).
	j := len(p.Mass)
	p.gridDeltas(func(i int, di float64) {
		if di <= target && i+1 == j {
			j = i
		}
	})
	var eps float64
	switch {
	case j == len(p.Mass):
		// Not even the top point: impossible since Inf < target, but
		// guard against rounding.
		eps = float64(p.Offset+len(p.Mass)) * p.H
	case j == 0:
		eps = float64(p.Offset) * p.H
	default:
		// ε in (ε_(j−1), ε_j]: A and B over the masses at index ≥ j.
		a, b := p.Inf, 0.0
		for i := len(p.Mass) - 1; i >= j; i-- {
			a += p.Mass[i]
			b += p.Mass[i] * math.Exp(-float64(p.Offset+i)*p.H)
		}
		eps = float64(p.Offset+j) * p.H
		if b > 0 && a > target {
			eps = math.Min(eps, math.Log((a-target)/b))
		}
	}
	eps = math.Max(eps, 0)
	for step := 1e-12 * math.Max(eps, 1e-3); p.Delta(eps) > delta; step *= 2 {
		eps += step
	}
	return eps, nil
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
	// Errors carried: masses off by ℓ1 distances e_p and e_q (total masses
	// at most 1) give a product off by at most e_p + e_q + e_p·e_q.
	out.Err = p.Err + q.Err + p.Err*q.Err
	// Direct convolution costs (non-zero masses of one) × (length of the
	// other) multiply-adds, the FFT about 12·N·log2(N) for its length N:
	// sparse factors (randomized response, its compositions) are convolved
	// directly, which is exact up to rounding and keeps zero masses zero.
	np, nq := nonZero(p.Mass), nonZero(q.Mass)
	size := 1
	for size < n {
		size <<= 1
	}
	fftCost := 12 * float64(size) * math.Log2(float64(size))
	switch {
	case float64(np)*float64(len(q.Mass)) <= fftCost && np <= nq:
		out.Mass = convolveDirect(p.Mass, q.Mass)
	case float64(nq)*float64(len(p.Mass)) <= fftCost:
		out.Mass = convolveDirect(q.Mass, p.Mass)
	default:
		out.Mass = convolveFFT(p.Mass, q.Mass)
		out.Err += fftError(p.Mass, q.Mass)
	}
	// Under P the loss is never −∞ (P(o) > 0 wherever o can occur), so the
	// composed loss is +∞ exactly when either factor's is.
	out.Inf = p.Inf + q.Inf - p.Inf*q.Inf
	return out, nil
}

func nonZero(x []float64) int {
	n := 0
	for _, v := range x {
		if v != 0 {
			n++
		}
	}
	return n
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

// fftError bounds the ℓ1 error of convolveFFT(a, b) for non-negative a
// and b. Computed FFTs of length N satisfy ‖ŷ − y‖₂ ≤ η·log2(N)·‖y‖₂ with
// η ≈ 5u + (twiddle error) (Higham, "Accuracy and Stability of Numerical
// Algorithms", 2002, Thm 24.2); η = 16u is taken. Propagating through two
// forward transforms, the pointwise product (‖Fa‖_∞ ≤ ‖a‖₁) and the
// inverse with its 1/N gives ‖ĉ − c‖₂ ≤ η·log2(N)·(‖a‖₂‖b‖₁ +
// 2‖a‖₁‖b‖₂)/√N, and ‖·‖₁ ≤ √N‖·‖₂; clipping negative outputs at zero
// only moves them towards the exact (non-negative) values.
func fftError(a, b []float64) float64 {
	n := len(a) + len(b) - 1
	size := 1
	for size < n {
		size <<= 1
	}
	norms := func(x []float64) (l1, l2 float64) {
		for _, v := range x {
			l1 += math.Abs(v)
			l2 += v * v
		}
		return l1, math.Sqrt(l2)
	}
	a1, a2 := norms(a)
	b1, b2 := norms(b)
	const eta = 16 * 0x1p-53
	return eta * math.Log2(float64(size)) * (a2*b1 + 2*a1*b2)
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
