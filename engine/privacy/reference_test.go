package privacy

import (
	"fmt"
	"math"
)

// Reference discretisations for the tests: the round-up ("privacy
// buckets") PLDs dplr accounted with before connect-the-dots, which also
// dominate their mechanisms but more loosely, and connect-the-dots
// randomized response. The tests compare the accountant with them and
// build certified lower bounds from them (roundDown).

// roundUpRun is the round-up PLD of steps with every exponential step
// accounted as randomized response at its ε: the accounting RunPLD
// replaced, against which it must never be looser.
func roundUpRun(steps []Step, h float64) (*PLD, error) {
	var acc *PLD
	var gauss []Step
	for _, s := range steps {
		if s.Mechanism == MechGaussian {
			gauss = append(gauss, s)
			continue
		}
		eps, err := stepPureEps(s)
		if err != nil {
			return nil, err
		}
		var p *PLD
		if s.Mechanism == MechLaplace {
			p, err = roundUpLaplace(eps*latticeMargin, h)
		} else {
			p, err = roundUpPure(eps, h)
		}
		if err == nil && acc != nil {
			p, err = acc.Compose(p)
		}
		if err != nil {
			return nil, err
		}
		acc = p
	}
	if len(gauss) > 0 {
		mu, _, err := RunGDP(gauss)
		if err != nil {
			return nil, err
		}
		p, err := roundUpGaussian(mu, h)
		if err == nil && acc != nil {
			p, err = acc.Compose(p)
		}
		if err != nil {
			return nil, err
		}
		acc = p
	}
	return acc, nil
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

// roundUpGaussian is the round-up discretised PLD of a μ-GDP Gaussian step
// (Δ/σ = μ); the accountant uses the tighter connect-the-dots CTDGaussian.
func roundUpGaussian(mu, h float64) (*PLD, error) {
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

// roundUpLaplace is the round-up discretised PLD of a Laplace step with
// Δ/b = ε; the accountant uses the tighter connect-the-dots CTDLaplace.
func roundUpLaplace(eps, h float64) (*PLD, error) {
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

// roundUpPure is the round-up discretised PLD of randomized response at ε,
// which dominates every pure ε-DP mechanism (CTDRandomizedResponse is the
// connect-the-dots one; CTDBoundedRange is much tighter for the
// exponential mechanism).
func roundUpPure(eps, h float64) (*PLD, error) {
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

// CTDRandomizedResponse is the connect-the-dots PLD of randomized response
// at eps on grid h: exact when eps is a multiple of h.
func CTDRandomizedResponse(eps, h float64) (*PLD, error) {
	if err := checkEps(eps); err != nil {
		return nil, err
	}
	return PLDFromProfile(func(e float64) float64 { return RandomizedResponseDelta(eps, e) }, -eps, eps, h)
}
