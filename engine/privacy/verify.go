package privacy

import (
	"errors"
	"fmt"
	"math"
)

// ErrUnverifiable is wrapped by VerifyStep when a step's declared cost does
// not follow from its mechanism, sensitivity and scale, or when the step
// names a mechanism whose cost cannot be derived.
var ErrUnverifiable = errors.New("privacy cost does not follow from the mechanism")

// VerifyStep checks that the cost a step declares is implied by its
// mechanism, its sensitivity Δ and its noise scale, so that a plugin cannot
// declare a cheaper cost than the noise it describes: Gaussian ρ ≥ Δ²/2σ²
// and δ on the exact Gaussian curve (never pure), Laplace ε ≥ Δ/b, the
// exponential mechanism ε ≥ 2Δβ (Δβ when monotone) with ρ ≥ ε²/8. Costs may
// be overstated, never understated; docs/privacy.md, "Verifying a step's
// cost", gives the rules. Errors wrap ErrUnverifiable.
func VerifyStep(s Step) error {
	if err := checkStep(s); err != nil {
		return fmt.Errorf("step %q: %w: %w", s.Name, err, ErrUnverifiable)
	}
	if !positiveFinite(s.Sensitivity) || !positiveFinite(s.Scale) {
		return fmt.Errorf("step %q: sensitivity %v and scale %v must be positive and finite: %w", s.Name, s.Sensitivity, s.Scale, ErrUnverifiable)
	}
	if s.QuerySensitivity > 0 && !within(s.QuerySensitivity, s.Sensitivity) {
		return fmt.Errorf("step %q: noise calibrated to sensitivity %v below the query's %v: %w", s.Name, s.Sensitivity, s.QuerySensitivity, ErrUnverifiable)
	}
	var err error
	switch s.Mechanism {
	case MechGaussian:
		err = verifyGaussian(s)
	case MechLaplace:
		err = verifyPure(s, s.Sensitivity/s.Scale, RhoOfPure)
	case MechExponential:
		eps := 2 * s.Sensitivity * s.Scale
		if s.Calibration == CalibMonotone {
			eps = s.Sensitivity * s.Scale
		}
		err = verifyPure(s, eps, RhoOfExponential)
	default:
		err = fmt.Errorf("unknown mechanism %q", s.Mechanism)
	}
	if err != nil {
		return fmt.Errorf("step %q: %w: %w", s.Name, err, ErrUnverifiable)
	}
	return nil
}

func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// atLeast reports whether a declared cost covers the implied one, up to
// the rounding slack the accountant allows at a grant's boundary.
func atLeast(declared, implied float64) bool { return within(implied, declared) }

func verifyGaussian(s Step) error {
	if s.Rho > 0 {
		if implied := RhoOfGaussian(s.Sensitivity, s.Scale); !atLeast(s.Rho, implied) {
			return fmt.Errorf("declares ρ = %.6g but Gaussian noise σ = %.6g on sensitivity Δ = %.6g costs ρ = Δ²/(2σ²) = %.6g",
				s.Rho, s.Scale, s.Sensitivity, implied)
		}
	}
	if s.Epsilon > 0 {
		if s.Delta == 0 {
			return errors.New("a Gaussian step cannot be pure ε-DP: it declares ε without δ")
		}
		if implied := AnalyticGaussianDelta(s.Sensitivity, s.Scale, s.Epsilon); math.IsNaN(implied) || !atLeast(s.Delta, implied) {
			return fmt.Errorf("declares (ε = %.6g, δ = %.3g) but Gaussian noise σ = %.6g on sensitivity Δ = %.6g is (ε, δ)-DP at that ε only for δ ≥ %.3g",
				s.Epsilon, s.Delta, s.Scale, s.Sensitivity, implied)
		}
	}
	return nil
}

// verifyPure checks a pure mechanism whose ε follows from (Δ, scale) as
// eps, and whose zCDP cost is rhoOf(ε).
func verifyPure(s Step, eps float64, rhoOf func(float64) float64) error {
	if !atLeast(s.Epsilon, eps) {
		return fmt.Errorf("declares ε = %.6g but a %s mechanism with sensitivity Δ = %.6g and scale %.6g costs ε = %.6g",
			s.Epsilon, s.Mechanism, s.Sensitivity, s.Scale, eps)
	}
	if s.Rho > 0 && !atLeast(s.Rho, rhoOf(eps)) {
		return fmt.Errorf("declares ρ = %.6g but a %s mechanism at ε = %.6g costs ρ = %.6g", s.Rho, s.Mechanism, eps, rhoOf(eps))
	}
	return nil
}
