package privacy

import (
	"fmt"
	"math"
)

// Connect-the-dots privacy loss distributions (Doroshenko, Ghazi, Kamath,
// Kumar & Manurangsi, "Connect the dots: tighter discrete approximations
// of privacy loss distributions", PETS 2022). See docs/privacy.md, "Privacy loss
// distributions", for the construction and its error bound.

// profileInflation is the relative amount by which profile values are
// raised before the construction, to cover their floating-point
// evaluation error (a few ulps for the closed forms used here).
const profileInflation = 1e-12

// PLDFromProfile builds the pessimistic connect-the-dots PLD of a privacy
// profile on the grid hℤ ∩ [lo, hi] (lo ≤ 0 ≤ hi, both rounded outwards).
// delta(ε), called for ε ≥ 0 only, must bound the hockey-stick divergence
// H_{e^ε}(M(D) ‖ M(D')) for every neighbouring pair in both orders (it need
// not be exact, convex or smooth); the result is a symmetric pair that
// dominates the mechanism everywhere (docs/privacy.md, "Privacy loss
// distributions"). Mass δ(hi) is put at +∞; choose hi where delta is
// negligible (or zero, for a bounded privacy loss).
func PLDFromProfile(delta func(eps float64) float64, lo, hi, h float64) (*PLD, error) {
	if err := checkGrid(h); err != nil {
		return nil, err
	}
	if !(lo <= 0) || !(hi >= 0) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("PLD from a profile: loss range [%v, %v] must be finite and contain 0: %w", lo, hi, ErrInvalidBudget)
	}
	a, b := int(math.Floor(lo/h)), int(math.Ceil(hi/h))
	if hi == 0 && b == 0 {
		b = 1 // at least one point above 0, so that the top slope is defined
	}
	n := b - a + 1
	if n > maxPLDBuckets {
		return nil, fmt.Errorf("PLD on [%g, %g] with grid %g needs %d buckets (limit %d): use a coarser grid: %w", lo, hi, h, n, maxPLDBuckets, ErrInvalidBudget)
	}
	z := -a // index of the grid point 0
	// d[i] = δ(|ε_i|), raised for rounding and made non-increasing in |ε|
	// (raising values keeps them upper bounds).
	// The grid is symmetric about 0 and |−k·h| = k·h exactly, so δ is
	// evaluated once for each |ε| = k·h.
	at := make([]float64, max(-a, b)+1)
	for k := range at {
		v := delta(float64(k) * h)
		if math.IsNaN(v) || v < 0 {
			return nil, fmt.Errorf("PLD from a profile: δ(%g) = %v: %w", float64(k)*h, v, ErrInvalidBudget)
		}
		at[k] = math.Min(1, v*(1+profileInflation))
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = at[max(a+i, -(a+i))]
	}
	for i := n - 2; i >= z; i-- {
		d[i] = math.Max(d[i], d[i+1])
	}
	for i := 1; i <= z; i++ {
		d[i] = math.Max(d[i], d[i-1])
	}
	// Chords of the profile h(x) = δ(ln x) have slopes −m_k, and the masses
	// are p_k = e^(ε_k)(m_k − m_(k+1)) (docs/privacy.md). For ε ≤ 0,
	// m_k = 1 − G_k with G_k the chord slope of x·δ(−ln x), computed
	// directly so that the tiny masses far below 0 keep their relative
	// precision. em1 = 1 − e^(−h), ep1 = e^h − 1.
	em1, ep1, eh := -math.Expm1(-h), math.Expm1(h), math.Exp(-h)
	// x[k] = e^(ε_k), each computed once.
	x := make([]float64, n)
	for k := range x {
		x[k] = math.Exp(float64(a+k) * h)
	}
	// Chord k joins grid points k−1 and k (k = 1..n−1); chord 0 joins
	// (0, 1) to point 0. Negative-side chords (point k ≤ z) carry G,
	// others m.
	g := make([]float64, z+1)
	m := make([]float64, n+1)
	g[0] = d[0]
	for k := 1; k <= z; k++ {
		g[k] = math.Max(g[k-1], (d[k]-eh*d[k-1])/em1)
	}
	prev := 1 - g[z]
	for k := z + 1; k < n; k++ {
		prev = math.Min(prev, math.Max(0, (d[k-1]-d[k])/(x[k-1]*ep1)))
		m[k] = prev
	}
	p := &PLD{H: h, Offset: a, Mass: make([]float64, n), Factors: 1}
	for k := 0; k < n; k++ {
		var q float64
		switch {
		case k < z:
			q = g[k+1] - g[k]
		case k == z:
			q = 1 - g[z]
			if k+1 < n {
				q -= m[k+1]
			}
		default:
			q = m[k]
			if k+1 < n {
				q -= m[k+1]
			}
		}
		if q > 0 {
			p.Mass[k] = q * x[k]
		}
	}
	p.Inf = d[n-1]
	// Safety net against rounding: check the PLD's δ at every grid point
	// (and its total mass, δ as ε → −∞) against the profile, and move any
	// shortfall beyond half of Delta's rounding allowance to +∞, which
	// raises δ everywhere by that amount. (The check's own sums are
	// compensated, accurate to a few ulps of the mass above each point,
	// which is at most 1/(1 − e^(−h)) times δ there.)
	var short float64
	p.gridDeltas(func(j int, dj float64) {
		want := d[j]
		if j < z {
			want = 1 - x[j]*(1-d[j])
		}
		short = math.Max(short, want*(1-deltaRounding/2)-dj)
	})
	var total kahan
	total.add(p.Inf)
	for _, v := range p.Mass {
		total.add(v)
	}
	short = math.Max(short, (1-deltaRounding/2)-total.sum())
	if short > 0 {
		p.Inf += short
	}
	return p, nil
}

// gridDeltas calls f(j, δ(ε_j)) for every grid point of p, from the top,
// without the rounding allowance of Delta: δ(ε_j) = S_j − T_j with S_j the
// mass above ε_j (and at +∞) and T_j = Σ_{i>j} p_i e^(−(ε_i − ε_j)), both
// accumulated downwards from the top with non-negative terms.
func (p *PLD) gridDeltas(f func(j int, dj float64)) {
	eh := math.Exp(-p.H)
	var s, t kahan
	s.add(p.Inf)
	for j := len(p.Mass) - 1; j >= 0; j-- {
		f(j, math.Max(0, s.sum()-t.sum()))
		s.add(p.Mass[j])
		t.add(p.Mass[j])
		t.scale(eh)
	}
}

// kahan is a compensated (Neumaier) sum.
type kahan struct{ s, c float64 }

func (k *kahan) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k *kahan) scale(f float64) { k.s *= f; k.c *= f }

func (k *kahan) sum() float64 { return k.s + k.c }

// gaussianProfile is the privacy profile δ(ε) = GDPDelta(μ, ε) of a μ-GDP
// mechanism (the Gaussian mechanism with Δ/σ = μ).
func gaussianProfile(mu float64) func(float64) float64 {
	return func(e float64) float64 { return GDPDelta(mu, e) }
}

// LaplaceDelta is the privacy profile of the Laplace mechanism with
// Δ/b = eps at ε' ≥ 0: δ = 1 − e^((ε'−ε)/2) for ε' < ε, 0 beyond.
func LaplaceDelta(eps, e float64) float64 {
	if e >= eps {
		return 0
	}
	return -math.Expm1((e - eps) / 2)
}

// RandomizedResponseDelta is the privacy profile of binary randomized
// response at eps (which dominates every pure eps-DP mechanism) at
// ε' ≥ 0: δ = (e^ε − e^ε')/(1 + e^ε) for ε' < ε, 0 beyond.
func RandomizedResponseDelta(eps, e float64) float64 {
	if e >= eps {
		return 0
	}
	return -math.Expm1(e-eps) / (1 + math.Exp(-eps))
}

// BoundedRangeDelta is the least upper bound on the privacy profile of
// every eps-bounded-range mechanism at ε' ≥ 0 (see docs/privacy.md, "The
// exponential mechanism as bounded range"):
//
//	δ(ε') = (e^(ε/2) − e^(ε'/2))² / (e^ε − 1)   for 0 ≤ ε' < ε, 0 beyond,
//
// the supremum over t ∈ [0, 1] of the profiles of the binary pairs with
// privacy losses (1−t)ε and −tε, attained at t = (ε − ε')/(2ε).
func BoundedRangeDelta(eps, e float64) float64 {
	if e >= eps {
		return 0
	}
	x := math.Expm1((eps - e) / 2)
	return math.Exp(e) * x * x / math.Expm1(eps)
}

// CTDGaussian is the connect-the-dots PLD of a μ-GDP step on grid h, on
// the loss range μ²/2 ± 10μ (the mass put at +∞ is below 1e-23).
func CTDGaussian(mu, h float64) (*PLD, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return nil, fmt.Errorf("Gaussian PLD: μ = %v must be positive and finite: %w", mu, ErrInvalidBudget)
	}
	m := mu * mu / 2
	return PLDFromProfile(gaussianProfile(mu), math.Min(0, m-10*mu), m+10*mu, h)
}

// CTDLaplace is the connect-the-dots PLD of a Laplace step with Δ/b = eps
// on grid h.
func CTDLaplace(eps, h float64) (*PLD, error) {
	if err := checkEps(eps); err != nil {
		return nil, err
	}
	return PLDFromProfile(func(e float64) float64 { return LaplaceDelta(eps, e) }, -eps, eps, h)
}

// CTDBoundedRange is the connect-the-dots PLD of the supremum profile
// BoundedRangeDelta of eps-bounded-range mechanisms (the exponential
// mechanism among them) on grid h.
func CTDBoundedRange(eps, h float64) (*PLD, error) {
	if err := checkEps(eps); err != nil {
		return nil, err
	}
	return PLDFromProfile(func(e float64) float64 { return BoundedRangeDelta(eps, e) }, -eps, eps, h)
}
