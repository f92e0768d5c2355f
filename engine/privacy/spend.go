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
// calibrated directly to (ε, δ) ("classical", "analytic"), whose proofs are
// for the continuous Gaussian; zCDP steps need none (docs/privacy.md,
// "Release noise and the floating-point attack").
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
