package privacy

import (
	"fmt"
	"math"
	"sync"
)

// Gaussian differential privacy (Dong, Roth & Su, JRSS B 2022): Gaussian
// steps compose exactly as μ² = Σ (Δ_i/σ_i)², and a μ-GDP mechanism's
// (ε, δ) curve is the analytic Gaussian one; docs/privacy.md, "Accounting".

// GDPDelta is the smallest δ for which a μ-GDP mechanism is (ε, δ)-DP, for
// μ > 0 and ε ≥ 0.
func GDPDelta(mu, eps float64) float64 {
	if !(mu > 0) {
		return 0
	}
	if math.IsInf(mu, 1) {
		return 1
	}
	return AnalyticGaussianDelta(mu, 1, eps)
}

// GDPEpsilon is the smallest ε ≥ 0 for which a μ-GDP mechanism is
// (ε, δ)-DP. δ(ε) decreases in ε, so the root is bisected; the returned ε
// is the upper end of the final bracket (it satisfies δ(ε) ≤ δ) and lies
// within 1e-12 relative of the exact value.
func GDPEpsilon(mu, delta float64) (float64, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("GDP parameter μ = %v must be positive and finite: %w", mu, ErrInvalidBudget)
	}
	if !(delta > 0) || !(delta < 1) {
		return 0, fmt.Errorf("δ = %v must lie in (0, 1): %w", delta, ErrInvalidBudget)
	}
	if GDPDelta(mu, 0) <= delta {
		return 0, nil
	}
	hi := mu*mu/2 + mu*math.Sqrt(2*math.Log(1/delta)) + 1
	for GDPDelta(mu, hi) > delta {
		hi *= 2
	}
	lo := 0.0
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		m := (lo + hi) / 2
		if GDPDelta(mu, m) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return hi, nil
}

// GDPMu is the largest μ for which μ-GDP implies (ε, δ)-DP: the μ an
// (ε, δ) grant allows a Gaussian-only run to spend. δ(ε; μ) increases in
// μ; the returned μ is the lower end of the final bracket (it satisfies the
// constraint) and lies within 1e-12 relative of the exact value.
// It is memoised (a bisection of about 2 ms, which budget admission and
// its headroom search call for the same few totals).
func GDPMu(eps, delta float64) (float64, error) {
	k := [2]float64{eps, delta}
	if v, ok := gdpMuCache.Load(k); ok {
		return v.(float64), nil
	}
	mu, err := gdpMu(eps, delta)
	if err == nil {
		gdpMuCache.Store(k, mu)
	}
	return mu, err
}

// gdpMuCache memoises GDPMu: [2]float64{ε, δ} → μ.
var gdpMuCache sync.Map

func gdpMu(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	lo, hi := 0.0, 1.0
	for GDPDelta(hi, eps) <= delta {
		lo = hi
		hi *= 2
		if hi > 1e6 {
			return 0, fmt.Errorf("(ε = %v, δ = %v) allows an unbounded μ: %w", eps, delta, ErrInvalidBudget)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		m := (lo + hi) / 2
		if GDPDelta(m, eps) <= delta {
			lo = m
		} else {
			hi = m
		}
	}
	if !(lo > 0) {
		return 0, fmt.Errorf("(ε = %v, δ = %v) allows no Gaussian step: %w", eps, delta, ErrInvalidBudget)
	}
	return lo, nil
}
