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

func checkEps(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon = %v must be positive and finite: %w", eps, ErrInvalidBudget)
	}
	return nil
}

func checkEpsDelta(eps, delta float64) error {
	if err := checkEps(eps); err != nil {
		return err
	}
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("delta = %v must lie in (0, 1): %w", delta, ErrInvalidBudget)
	}
	return nil
}

func checkRho(rho float64) error {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return fmt.Errorf("rho = %v must be positive and finite: %w", rho, ErrInvalidBudget)
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
	if err := checkRho(rho); err != nil {
		return 0, err
	}
	return sens / math.Sqrt(2*rho), nil
}

// RhoOfGaussian is the zCDP cost ρ = Δ²/(2σ²) of a Gaussian mechanism (the
// same for the discrete Gaussian on a lattice containing the sensitivity
// vectors; Canonne, Kamath & Steinke 2020).
func RhoOfGaussian(sens, sigma float64) float64 { return sens * sens / (2 * sigma * sigma) }

// LaplaceScale is the pure ε-DP Laplace calibration b = Δ/ε for ℓ1
// sensitivity Δ.
func LaplaceScale(sens, eps float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, err
	}
	if err := checkEps(eps); err != nil {
		return 0, err
	}
	return sens / eps, nil
}

// RhoOfPure is the zCDP cost ε²/2 of a pure ε-DP mechanism (Bun & Steinke
// 2016, Prop. 1.4).
func RhoOfPure(eps float64) float64 { return eps * eps / 2 }

// RhoOfExponential is the zCDP cost ε²/8 of the exponential mechanism with
// privacy parameter ε, from its bounded-range property (Cesar & Rogers
// 2021).
func RhoOfExponential(eps float64) float64 { return eps * eps / 8 }

// ---------------------------------------------------------------------------
// zCDP ↔ (ε, δ) conversions.

// EpsilonFromRhoSimple converts ρ-zCDP to (ε, δ)-DP with the simple bound
// ε = ρ + 2·sqrt(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3). It returns NaN
// for ρ < 0 or δ ∉ (0, 1].
func EpsilonFromRhoSimple(rho, delta float64) float64 {
	if !(rho >= 0) || !(delta > 0 && delta <= 1) {
		return math.NaN()
	}
	return rho + 2*math.Sqrt(rho*math.Log(1/delta))
}

// EpsilonFromRho converts ρ-zCDP to (ε, δ)-DP with the tight conversion of
// Canonne, Kamath & Steinke (2020, Prop. 12, Cor. 13),
// ε = inf_{α>1} αρ + (ln(1/δ) − ln α)/(α−1) + ln(1 − 1/α), its minimiser
// bisected on ρ(α−1)² + ln α = ln(1/δ) (any α is valid; never above the
// simple bound). A negative bound means (0, δ)-DP and gives 0. It returns
// NaN for ρ < 0 or δ ∉ (0, 1], and 0 for ρ = 0.
func EpsilonFromRho(rho, delta float64) float64 {
	if !(rho >= 0) || math.IsInf(rho, 0) || !(delta > 0 && delta <= 1) {
		return math.NaN()
	}
	if rho == 0 || delta == 1 {
		return 0
	}
	l := -math.Log(delta)
	// h(u) = ρu² + ln(1+u) − L is increasing in u = α−1 > 0, negative near
	// 0 and non-negative at u = sqrt(L/ρ).
	h := func(u float64) float64 { return rho*u*u + math.Log1p(u) - l }
	hi := math.Sqrt(l / rho)
	lo := hi
	for h(lo) >= 0 && lo > 1e-300 {
		lo /= 16
	}
	u := bisectGeometric(h, lo, hi)
	e := tightEps(rho, l, u)
	if s := EpsilonFromRhoSimple(rho, delta); s < e {
		e = s
	}
	return math.Max(e, 0)
}

// tightEps evaluates the CKS bound at α = 1+u (valid for every u > 0).
func tightEps(rho, l, u float64) float64 {
	lp := math.Log1p(u)                           // ln α
	return (1+u)*rho + (l-lp)/u - math.Log1p(1/u) // ln(1−1/α) = −ln(1+1/u)
}

// bisectGeometric returns the root of an increasing f on [lo, hi] with
// f(lo) < 0 ≤ f(hi), bisecting in log scale to 1e-15 relative width; it
// returns the upper end of the final bracket.
func bisectGeometric(f func(float64) float64, lo, hi float64) float64 {
	for i := 0; i < 400 && hi > lo*(1+1e-15); i++ {
		mid := math.Sqrt(lo * hi)
		if mid <= lo || mid >= hi {
			break
		}
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// RhoForEpsDelta returns the largest ρ whose tight conversion
// (EpsilonFromRho) meets the target (ε, δ), found by a bracketed geometric
// bisection to 1e-14 relative; the returned ρ always satisfies
// EpsilonFromRho(ρ, δ) ≤ ε.
func RhoForEpsDelta(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	lo, _ := RhoForEpsDeltaSimple(eps, delta)
	for lo > 0 && EpsilonFromRho(lo, delta) > eps {
		lo *= 1 - 1e-12 // float rounding in the simple inverse
	}
	if !(lo > 0) {
		return 0, fmt.Errorf("no ρ > 0 meets (ε=%v, δ=%v): %w", eps, delta, ErrInvalidBudget)
	}
	hi := lo * 2
	for EpsilonFromRho(hi, delta) <= eps {
		lo, hi = hi, hi*2
		if math.IsInf(hi, 0) {
			return lo, nil
		}
	}
	for i := 0; i < 200 && hi > lo*(1+1e-14); i++ {
		mid := math.Sqrt(lo * hi)
		if mid <= lo || mid >= hi {
			break
		}
		if EpsilonFromRho(mid, delta) <= eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// RhoForEpsDeltaSimple inverts the simple bound: the ρ with
// ρ + 2·sqrt(ρ ln(1/δ)) = ε, i.e. (sqrt(L+ε) − sqrt(L))², L = ln(1/δ).
func RhoForEpsDeltaSimple(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	l := -math.Log(delta)
	// sqrt(L+ε) − sqrt(L) = ε/(sqrt(L+ε) + sqrt(L)) avoids cancellation.
	r := eps / (math.Sqrt(l+eps) + math.Sqrt(l))
	return r * r, nil
}

// ---------------------------------------------------------------------------
// Analytic Gaussian mechanism.

// logNormCDF returns ln Φ(x) accurately for all x.
func logNormCDF(x float64) float64 {
	if x > -36 {
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	// Asymptotic (Mills ratio) series; at x ≤ −36 the truncation error is
	// below 1e-16 relative.
	x2 := 1 / (x * x)
	series := 1 + x2*(-1+x2*(3+x2*(-15+x2*(105+x2*(-945+x2*10395)))))
	return -0.5*x*x - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}

// AnalyticGaussianDelta is the exact δ at which Gaussian noise N(0, σ²) on a
// query of ℓ2 sensitivity Δ is (ε, δ)-DP (Balle & Wang 2018, Thm 8):
// Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space so that
// large ε and tiny δ neither overflow nor cancel.
func AnalyticGaussianDelta(sens, sigma, eps float64) float64 {
	a, b := sens/(2*sigma), eps*sigma/sens
	t1 := logNormCDF(a - b)
	t2 := eps + logNormCDF(-a-b)
	if t2 >= t1 {
		return 0
	}
	return -math.Exp(t1) * math.Expm1(t2-t1)
}

// AnalyticGaussianSigma is the analytic Gaussian mechanism calibration of
// Balle & Wang (2018): the smallest σ for which N(0, σ²) noise on a
// sensitivity-Δ query is (ε, δ)-DP, valid for every ε > 0. δ(σ) decreases
// in σ; the root is bracketed and bisected in log scale to 1e-15 relative,
// and the upper end (which satisfies the constraint) is returned.
func AnalyticGaussianSigma(sens, eps, delta float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, err
	}
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	// Work at unit sensitivity: δ depends on σ/Δ only.
	ld := math.Log(delta)
	f := func(s float64) float64 { // decreasing → negate for bisectGeometric
		d := AnalyticGaussianDelta(1, s, eps)
		if d <= 0 {
			return 1
		}
		return ld - math.Log(d)
	}
	hi := math.Sqrt(2*math.Log(1.25/delta))/eps + 1
	for f(hi) < 0 {
		hi *= 2
		if math.IsInf(hi, 0) {
			return 0, fmt.Errorf("analytic Gaussian calibration did not bracket (ε=%v, δ=%v): %w", eps, delta, ErrInvalidBudget)
		}
	}
	lo := hi
	for f(lo) >= 0 {
		lo /= 2
		if lo < 1e-300 {
			return 0, fmt.Errorf("analytic Gaussian calibration did not bracket (ε=%v, δ=%v): %w", eps, delta, ErrInvalidBudget)
		}
	}
	return sens * bisectGeometric(f, lo, hi), nil
}
