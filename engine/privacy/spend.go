package privacy

import (
	"fmt"
	"math"
)

// roundUp is the relative allowance added to every calibrated sensitivity
// and noise scale so that float rounding in the calibration arithmetic can
// only increase the noise.
const roundUp = 1 + 0x1p-48

// latticeMargin is the extra relative noise given to Gaussian steps
// calibrated directly to (ε, δ) ("classical", "analytic"). Those formulas
// are proved for the continuous Gaussian; the discrete Gaussian with
// σ/γ ≥ 2^40 grid points per standard deviation has a privacy curve that
// differs from the continuous one by a relative amount of order (γ/σ)²
// (Canonne, Kamath & Steinke 2020, §3); 1e-9 more noise lowers δ by far
// more than that. zCDP steps need no margin: the discrete Gaussian's ρ is
// exactly Δ²/(2σ²).
const latticeMargin = 1 + 1e-9

func checkDim(dim int) error {
	if dim < 1 {
		return fmt.Errorf("dim = %d noised coordinates must be at least 1: %w", dim, ErrInvalidBudget)
	}
	return nil
}

// calibrateOnGrid finds the noise scale for a mechanism whose scale is
// linear in the sensitivity (scale = perUnit·Δ'), where Δ' = Δ + γ·spread
// and γ = Grid(scale) is the grid the noise will be drawn on (spread is
// sqrt(dim) for ℓ2, dim for ℓ1). Because γ is a step function of the scale
// the fixed point is reached in a few iterations.
func calibrateOnGrid(sens, spread, perUnit float64) (scale, sensEff, gamma float64, err error) {
	scale = perUnit * sens * roundUp
	for i := 0; i < 64; i++ {
		gamma = Grid(scale)
		if gamma == 0 {
			return 0, 0, 0, fmt.Errorf("noise scale %v: %w", scale, CheckScale(scale))
		}
		sensEff = (sens + gamma*spread) * roundUp
		if gamma*spread > 0.01*sens {
			return 0, 0, 0, fmt.Errorf("rounding %g coordinates to the noise grid γ = %g would add more than 1%% to the sensitivity %g: %w", spread, gamma, sens, ErrInvalidBudget)
		}
		next := perUnit * sensEff * roundUp
		if Grid(next) == gamma {
			return next, sensEff, gamma, nil
		}
		scale = next
	}
	return 0, 0, 0, fmt.Errorf("noise grid calibration did not settle: %w", ErrInvalidBudget)
}

// gaussianRhoStep calibrates a Gaussian step releasing dim noisy
// coordinates with ℓ2 sensitivity sens at zCDP cost rho. The sensitivity
// is enlarged by γ·sqrt(dim) for rounding the released values to the noise
// grid γ = Grid(σ).
func gaussianRhoStep(name string, sens float64, dim int, rho float64) (Step, error) {
	if err := checkDim(dim); err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	unit, err := GaussianSigmaForRho(1, rho)
	if err == nil {
		err = checkSens(sens)
	}
	if err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	sigma, sensEff, gamma, err := calibrateOnGrid(sens, math.Sqrt(float64(dim)), unit)
	if err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	return Step{Name: name, Mechanism: MechGaussian, Calibration: NoiseZCDP, Sensitivity: sensEff, Scale: sigma, Rho: rho,
		QuerySensitivity: sens, Dim: dim, Grid: gamma,
		Note: fmt.Sprintf("%d coordinates; discrete Gaussian on grid %.3g", dim, gamma)}, nil
}

// gaussianEpsDeltaStep calibrates a Gaussian step directly to (eps, delta)
// with calibration "classical" (ε ≤ 1 only) or "analytic"; σ carries the
// lattice margin and the step records its exact ρ as well.
func gaussianEpsDeltaStep(name string, sens float64, dim int, eps, delta float64, calibration string) (Step, error) {
	if err := checkDim(dim); err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	if err := checkSens(sens); err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	var unit float64
	var err error
	switch calibration {
	case NoiseClassical:
		unit, err = ClassicalGaussianSigma(1, eps, delta)
	case NoiseAnalytic:
		unit, err = AnalyticGaussianSigma(1, eps, delta)
	default:
		err = fmt.Errorf("unknown Gaussian calibration %q (want classical or analytic): %w", calibration, ErrInvalidBudget)
	}
	if err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	sigma, sensEff, gamma, err := calibrateOnGrid(sens, math.Sqrt(float64(dim)), unit*latticeMargin)
	if err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	return Step{Name: name, Mechanism: MechGaussian, Calibration: calibration, Sensitivity: sensEff, Scale: sigma,
		Epsilon: eps, Delta: delta, Rho: RhoOfGaussian(sensEff, sigma) * roundUp,
		QuerySensitivity: sens, Dim: dim, Grid: gamma,
		Note: fmt.Sprintf("%d coordinates; discrete Gaussian on grid %.3g", dim, gamma)}, nil
}

// laplaceStep calibrates a Laplace step releasing dim coordinates with ℓ1
// sensitivity sens at pure cost eps; the ℓ1 sensitivity is enlarged by
// γ·dim for rounding to the noise grid γ = Grid(b).
func laplaceStep(name string, sens float64, dim int, eps float64) (Step, error) {
	if err := checkDim(dim); err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	if _, err := LaplaceScale(sens, eps); err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	b, sensEff, gamma, err := calibrateOnGrid(sens, float64(dim), 1/eps)
	if err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	return Step{Name: name, Mechanism: MechLaplace, Calibration: NoisePure, Sensitivity: sensEff, Scale: b,
		Epsilon: eps, Rho: RhoOfPure(eps), QuerySensitivity: sens, Dim: dim, Grid: gamma,
		Note: fmt.Sprintf("%d coordinates; discrete Laplace on grid %.3g", dim, gamma)}, nil
}

// exponentialStep calibrates an exponential-mechanism step whose utility
// has sensitivity sens at pure cost eps: β = ε/(2Δ), zCDP cost ε²/8.
func exponentialStep(name string, sens, eps float64) (Step, error) {
	if _, err := LaplaceScale(sens, eps); err != nil {
		return Step{}, fmt.Errorf("step %q: %w", name, err)
	}
	return Step{Name: name, Mechanism: MechExponential, Calibration: NoisePure, Sensitivity: sens, Scale: eps / (2 * sens),
		Epsilon: eps, Rho: RhoOfExponential(eps), QuerySensitivity: sens}, nil
}

// spendGaussianRho declares a Gaussian step that releases dim noisy
// coordinates with ℓ2 sensitivity sens at zCDP cost rho, and returns the
// noise standard deviation to draw with (pass it unchanged to AddGaussian
// and friends). The sensitivity is enlarged by γ·sqrt(dim) for rounding the
// released values to the noise grid γ = Grid(σ). The step is refused (no
// noise may be drawn) if it does not fit the grant.
// It stays until every estimator has moved to Gaussian, whose release
// draws the noise itself.
func (a *Accountant) spendGaussianRho(name string, sens float64, dim int, rho float64) (float64, error) {
	st, err := gaussianRhoStep(name, sens, dim, rho)
	if err != nil {
		return 0, err
	}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return st.Scale, nil
}

// spendGaussianEpsDelta declares a Gaussian step calibrated directly to
// (eps, delta) with calibration "classical" (ε ≤ 1 only) or "analytic", and
// returns σ. The sensitivity is enlarged for the noise grid as in
// spendGaussianRho, and σ carries a 1e-9 relative margin for the lattice
// (see docs/privacy.md). Its zCDP cost Δ²/(2σ²) is recorded too,
// so the step can also be accounted by zCDP.
// It stays until every estimator has moved to Gaussian.
func (a *Accountant) spendGaussianEpsDelta(name string, sens float64, dim int, eps, delta float64, calibration string) (float64, error) {
	st, err := gaussianEpsDeltaStep(name, sens, dim, eps, delta, calibration)
	if err != nil {
		return 0, err
	}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return st.Scale, nil
}

// spendLaplace declares a Laplace step releasing dim coordinates with ℓ1
// sensitivity sens at pure cost eps, and returns the scale b (pass it
// unchanged to AddLaplace). The ℓ1 sensitivity is enlarged by γ·dim for
// rounding to the noise grid γ = Grid(b).
// It stays until every estimator has moved to Laplace.
func (a *Accountant) spendLaplace(name string, sens float64, dim int, eps float64) (float64, error) {
	st, err := laplaceStep(name, sens, dim, eps)
	if err != nil {
		return 0, err
	}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return st.Scale, nil
}

// spendExponential declares an exponential-mechanism step whose utility has
// sensitivity sens, at pure cost eps, and returns the inverse temperature
// β = ε/(2Δ) to sample exp(β·u) with. Its zCDP cost is ε²/8 (bounded range,
// Cesar & Rogers 2021). Sampling is the caller's: an inexact sampler
// (e.g. MCMC) makes the result's guarantee Nominal.
// It stays until every estimator has moved to Exponential.
func (a *Accountant) spendExponential(name string, sens, eps float64) (float64, error) {
	st, err := exponentialStep(name, sens, eps)
	if err != nil {
		return 0, err
	}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return st.Scale, nil
}

// EpsDelta is an (ε, δ) pair.
type EpsDelta struct {
	Epsilon, Delta float64
}

// SplitEpsDelta splits (eps, delta) evenly into k parts by basic
// composition (each part (ε/k, δ/k)), the split most papers use; for
// "paper" calibration modes. It validates its input.
func SplitEpsDelta(eps, delta float64, k int) (EpsDelta, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return EpsDelta{}, err
	}
	if k < 1 {
		return EpsDelta{}, fmt.Errorf("cannot split a budget into k = %d parts: %w", k, ErrInvalidBudget)
	}
	return EpsDelta{Epsilon: eps / float64(k), Delta: delta / float64(k)}, nil
}

// SplitWeighted splits total (ε, δ, or ρ: any additive budget) in
// proportion to the positive weights. The parts add up to total up to
// float rounding, which the accountant's boundary slack absorbs.
func SplitWeighted(total float64, weights ...float64) ([]float64, error) {
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, fmt.Errorf("budget %v must be positive and finite: %w", total, ErrInvalidBudget)
	}
	if len(weights) == 0 {
		return nil, fmt.Errorf("no weights to split by: %w", ErrInvalidBudget)
	}
	var sum float64
	for _, w := range weights {
		if !(w > 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("weight %v must be positive and finite: %w", w, ErrInvalidBudget)
		}
		sum += w
	}
	out := make([]float64, len(weights))
	for i, w := range weights {
		out[i] = total * (w / sum)
	}
	return out, nil
}
