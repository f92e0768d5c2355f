package privacy

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidBudget is wrapped by every function given ε ≤ 0, δ ∉ (0, 1),
// ρ ≤ 0, a non-finite value or a non-positive sensitivity.
var ErrInvalidBudget = errors.New("privacy: invalid privacy parameter")

// ErrOverBudget is wrapped when a step would exceed the grant.
var ErrOverBudget = errors.New("privacy: step exceeds the privacy grant")

func checkEpsDelta(eps, delta float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon = %v must be positive and finite: %w", eps, ErrInvalidBudget)
	}
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("delta = %v must lie in (0, 1): %w", delta, ErrInvalidBudget)
	}
	return nil
}

func checkSens(sens float64) error {
	if !(sens > 0) || math.IsInf(sens, 0) {
		return fmt.Errorf("sensitivity = %v must be positive and finite: %w", sens, ErrInvalidBudget)
	}
	return nil
}

// ClassicalGaussianSigma is the textbook calibration
// σ = Δ·sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1). It is only proved
// for ε ≤ 1 and refuses larger ε.
func ClassicalGaussianSigma(sens, eps, delta float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, err
	}
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	if eps > 1 {
		return 0, fmt.Errorf("classical Gaussian calibration holds only for ε ≤ 1, got ε = %v (use the analytic or zCDP calibration): %w", eps, ErrInvalidBudget)
	}
	return sens * math.Sqrt(2*math.Log(1.25/delta)) / eps, nil
}

// GaussianSigmaForRho is the zCDP calibration σ = Δ/sqrt(2ρ) (Bun & Steinke
// 2016, Prop. 1.6).
func GaussianSigmaForRho(sens, rho float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, err
	}
	if !(rho > 0) || math.IsInf(rho, 0) {
		return 0, fmt.Errorf("rho = %v must be positive and finite: %w", rho, ErrInvalidBudget)
	}
	return sens / math.Sqrt(2*rho), nil
}

// RhoOfGaussian is the zCDP cost ρ = Δ²/(2σ²) of a Gaussian mechanism.
func RhoOfGaussian(sens, sigma float64) float64 { return sens * sens / (2 * sigma * sigma) }

// LaplaceScale is the pure ε-DP Laplace calibration b = Δ/ε for ℓ1
// sensitivity Δ.
func LaplaceScale(sens, eps float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, err
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("epsilon = %v must be positive and finite: %w", eps, ErrInvalidBudget)
	}
	return sens / eps, nil
}

// EpsilonFromRho converts ρ-zCDP to (ε, δ)-DP with the simple bound
// ε = ρ + 2·sqrt(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
func EpsilonFromRho(rho, delta float64) float64 {
	return rho + 2*math.Sqrt(rho*math.Log(1/delta))
}

// RhoForEpsDelta returns the largest ρ whose conversion to (ε, δ)-DP meets
// the target.
func RhoForEpsDelta(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	// Inverse of the simple bound: sqrt(ρ) = sqrt(L+ε) − sqrt(L), L = ln(1/δ).
	l := math.Log(1 / delta)
	r := math.Sqrt(l+eps) - math.Sqrt(l)
	return r * r, nil
}

// AnalyticGaussianSigma is the analytic Gaussian mechanism calibration of
// Balle & Wang (2018): the smallest σ for which N(0, σ²) noise on a
// sensitivity-Δ query is (ε, δ)-DP, valid for every ε > 0.
func AnalyticGaussianSigma(sens, eps, delta float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, err
	}
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	// δ(σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) decreases in σ; bisect.
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(s float64) float64 {
		a, b := sens/(2*s), eps*s/sens
		return phi(a-b) - math.Exp(eps)*phi(-a-b)
	}
	lo, hi := 1e-12*sens, sens
	for d(hi) > delta {
		hi *= 2
	}
	for i := 0; i < 200; i++ {
		mid := 0.5 * (lo + hi)
		if d(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
