package privacy

import (
	"fmt"
	"math"
	"sync"
)

// Gaussian differential privacy (Dong, Roth & Su, "Gaussian Differential
// Privacy", JRSS B 2022).
//
// A mechanism is μ-GDP when telling neighbouring data sets apart from its
// output is no easier than telling N(0, 1) from N(μ, 1). A Gaussian step
// with ℓ2 sensitivity Δ and noise N(0, σ²) is exactly (Δ/σ)-GDP, and k such
// steps, chosen adaptively, are together μ-GDP with μ² = Σ μ_i² (their
// Corollary 3.3): for Gaussian-only runs this is the exact composition, no
// slack at all. The (ε, δ) curve of a μ-GDP mechanism is the analytic
// Gaussian one (Balle & Wang 2018):
//
//	δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2),
//
// which is AnalyticGaussianDelta with Δ/σ = μ. zCDP sees the same steps as
// ρ = μ²/2 and converts to (ε, δ) with the Canonne–Kamath–Steinke bound, which
// lies above this curve: at (1, 1e-6) the zCDP route needs σ/Δ = 4.53 where
// the GDP curve needs 4.22.

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
