package privacy

import "fmt"

// SpendGaussianRho declares a Gaussian step that releases dim noisy
// coordinates with ℓ2 sensitivity sens at zCDP cost rho, and returns the
// noise standard deviation to draw with. The step is refused (no noise may
// be drawn) if it does not fit the grant.
func (a *Accountant) SpendGaussianRho(name string, sens float64, dim int, rho float64) (float64, error) {
	sigma, err := GaussianSigmaForRho(sens, rho)
	if err != nil {
		return 0, fmt.Errorf("step %q: %w", name, err)
	}
	st := Step{Name: name, Mechanism: MechGaussian, Calibration: "zcdp", Sensitivity: sens, Scale: sigma, Rho: rho,
		Note: fmt.Sprintf("%d coordinates", dim)}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return sigma, nil
}

// SpendGaussianEpsDelta declares a Gaussian step calibrated directly to
// (eps, delta) with calibration "classical" (ε ≤ 1 only) or "analytic", and
// returns σ. Its zCDP cost Δ²/(2σ²) is recorded too.
func (a *Accountant) SpendGaussianEpsDelta(name string, sens float64, dim int, eps, delta float64, calibration string) (float64, error) {
	var sigma float64
	var err error
	switch calibration {
	case "classical":
		sigma, err = ClassicalGaussianSigma(sens, eps, delta)
	case "analytic":
		sigma, err = AnalyticGaussianSigma(sens, eps, delta)
	default:
		err = fmt.Errorf("unknown Gaussian calibration %q: %w", calibration, ErrInvalidBudget)
	}
	if err != nil {
		return 0, fmt.Errorf("step %q: %w", name, err)
	}
	st := Step{Name: name, Mechanism: MechGaussian, Calibration: calibration, Sensitivity: sens, Scale: sigma,
		Epsilon: eps, Delta: delta, Rho: RhoOfGaussian(sens, sigma), Note: fmt.Sprintf("%d coordinates", dim)}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return sigma, nil
}

// SpendLaplace declares a Laplace step releasing dim coordinates with ℓ1
// sensitivity sens at pure cost eps, and returns the scale b.
func (a *Accountant) SpendLaplace(name string, sens float64, dim int, eps float64) (float64, error) {
	b, err := LaplaceScale(sens, eps)
	if err != nil {
		return 0, fmt.Errorf("step %q: %w", name, err)
	}
	st := Step{Name: name, Mechanism: MechLaplace, Calibration: "pure", Sensitivity: sens, Scale: b,
		Epsilon: eps, Rho: eps * eps / 2, Note: fmt.Sprintf("%d coordinates", dim)}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return b, nil
}

// SpendExponential declares an exponential-mechanism step whose utility has
// sensitivity sens, at pure cost eps, and returns the inverse temperature
// β = ε/(2Δ) to sample exp(β·u) with. Its zCDP cost is ε²/8 (bounded range,
// Cesar & Rogers 2021).
func (a *Accountant) SpendExponential(name string, sens, eps float64) (float64, error) {
	if err := checkSens(sens); err != nil {
		return 0, fmt.Errorf("step %q: %w", name, err)
	}
	if _, err := LaplaceScale(sens, eps); err != nil {
		return 0, fmt.Errorf("step %q: %w", name, err)
	}
	beta := eps / (2 * sens)
	st := Step{Name: name, Mechanism: MechExponential, Calibration: "pure", Sensitivity: sens, Scale: beta,
		Epsilon: eps, Rho: eps * eps / 8}
	if err := a.Spend(st); err != nil {
		return 0, err
	}
	return beta, nil
}
