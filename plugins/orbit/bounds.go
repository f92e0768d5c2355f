package orbit

import (
	"math"
)

// TauStar is the explicit high-probability loss bound of the orbit
// exponential mechanism with a public spectrum (DERIVATIONS.md §8, re-derived from
// Mangoubi et al. Thm 2.2 / Lemma 6.5 with the tail constant corrected):
// the smallest τ ≥ λ_1 with
//
//	exp(ξ − βτ/2 + m·log(1 + 16λ_1Γ/τ)) ≤ β_f,
//
// where β is the inverse temperature, Γ = tr(A), m = dk (real orbit) and ξ
// the sampler's ∞-distance error (0 for an exact sampler). It is found by
// bisection.
func TauStar(beta, lambda1, trace float64, m int, xi, betaF float64) float64 {
	f := func(tau float64) float64 {
		return xi - beta*tau/2 + float64(m)*math.Log1p(16*lambda1*trace/tau) - math.Log(betaF)
	}
	lo := lambda1
	if f(lo) <= 0 {
		return lo
	}
	hi := 2 * lo
	for f(hi) > 0 {
		hi *= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := (lo + hi) / 2
		if f(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// UB23 is the benchmark form of Mangoubi et al. Thm 2.3 (DERIVATIONS.md §8) for
// Algorithm 2 with exact calibration: with probability ≥ 1 − β_f,
// ‖A − H‖_F² ≤ Σ_{ℓ>k} γ_ℓ² + k·(b·log(2k/β_f))² + 2τ*, where b = 4/ε,
// and τ* is TauStar with λ_1 := γ_1 + b·log(2k/β_f), budget ε/2 (β =
// ε/(4λ_1)), m = dk and failure β_f/2. gamma is A's full spectrum
// (descending), trace = tr(A).
func UB23(gamma []float64, k int, eps, trace, betaF float64) float64 {
	d := len(gamma)
	b := 4 / eps
	t := b * math.Log(2*float64(k)/betaF)
	var tail float64
	for _, g := range gamma[k:] {
		tail += g * g
	}
	l1 := gamma[0] + t
	tau := TauStar(eps/(4*l1), l1, trace, d*k, 0, betaF/2)
	return tail + float64(k)*t*t + 2*tau
}

// LB24 is the order-of-magnitude lower bound of Mangoubi et al. Thm 2.4 /
// Cor 2.5 (DERIVATIONS.md §8) with the unknown universal constant set to c:
// Σ_{ℓ>k} λ_ℓ² + c·d/max(λ_1²ε, d)·max_{1≤i≤d/2} i·(λ_i − λ_{d−i+1})².
// lambda is the spectrum (padded with zeros to length d); k is the output
// rank.
func LB24(lambda []float64, d, k int, eps, c float64) float64 {
	l := padded(lambda, d)
	var tail float64
	for _, v := range l[min(k, d):] {
		tail += v * v
	}
	var best float64
	for i := 1; i <= d/2; i++ {
		g := l[i-1] - l[d-i]
		best = math.Max(best, float64(i)*g*g)
	}
	return tail + c*float64(d)/math.Max(l[0]*l[0]*eps, float64(d))*best
}

// PredictedEMLoss is the high-signal prediction E[L] ≈ D/(2β) (DERIVATIONS.md §8),
// D the orbit's real dimension.
func PredictedEMLoss(lambda []float64, d int, beta float64) float64 {
	return float64(OrbitDim(lambda, d)) / (2 * beta)
}

// PredictedGaussLoss is the first-order prediction
// E[L] ≈ σ² Σ_{i<j, λ_i≠λ_j} (λ_i − λ_j)/(γ_i − γ_j) for the Gaussian
// mechanism with large eigen-gaps (DERIVATIONS.md §8); +Inf if a gap vanishes.
func PredictedGaussLoss(lambda, gamma []float64, sigma float64) float64 {
	d := len(gamma)
	l := padded(lambda, d)
	var s float64
	for _, p := range OrbitPairs(lambda, d) {
		i, j := p[0], p[1]
		s += (l[i] - l[j]) / (gamma[i] - gamma[j])
	}
	return sigma * sigma * s
}

// PredictedDeflationLoss is the high-signal prediction for deflation with
// equal split ε_i = ε/k on the PCA task, Σ_{i=1}^k (d−i)·k/ε (DERIVATIONS.md §8).
func PredictedDeflationLoss(d, k int, eps float64) float64 {
	var s float64
	for i := 1; i <= k; i++ {
		s += float64(d-i) * float64(k) / eps
	}
	return s
}
