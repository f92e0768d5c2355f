package privacy

import (
	"fmt"
	"math"
)

// Tight accounting of a run's steps.
//
// TightEpsilon is the smallest ε at a given δ that dplr can certify for a
// list of steps without any model assumption:
//
//   - all steps Gaussian: exactly, through Gaussian differential privacy
//     (μ² = Σ (Δ_i/σ_i)², then the analytic Gaussian curve);
//   - otherwise: the Gaussian steps are first composed exactly into one
//     μ-GDP factor, the Laplace steps and the remaining pure steps (the
//     exponential mechanism among them, dominated by randomized response)
//     each become a discretised PLD, identical ones composed by repeated
//     squaring, and the convolution of all factors gives the curve, on the
//     safe side by construction (see PLD).
//
// The Gaussian noise is drawn on a lattice (the discrete Gaussian); its
// privacy curve differs from the continuous one by a relative amount of
// order (γ/σ)² ≈ 1e-24, which the 1e-9 relative allowance on μ (as on σ for
// the analytic calibration) covers with a wide margin.

// Accounting methods reported by TightEpsilon.
const (
	MethodGDP = "gdp" // exact Gaussian composition
	MethodPLD = "pld" // discretised privacy loss distributions
)

// stepMu is a Gaussian step's GDP parameter Δ/σ with the lattice allowance.
func stepMu(s Step) (float64, error) {
	if !(s.Scale > 0) || !(s.Sensitivity > 0) {
		return 0, fmt.Errorf("step %q: Gaussian step needs a positive sensitivity and scale: %w", s.Name, ErrInvalidBudget)
	}
	return s.Sensitivity / s.Scale * latticeMargin, nil
}

// stepPureEps is a Laplace or exponential step's pure ε.
func stepPureEps(s Step) (float64, error) {
	switch s.Mechanism {
	case MechLaplace:
		if !(s.Scale > 0) || !(s.Sensitivity > 0) {
			return 0, fmt.Errorf("step %q: Laplace step needs a positive sensitivity and scale: %w", s.Name, ErrInvalidBudget)
		}
		return math.Max(s.Sensitivity/s.Scale, s.Epsilon), nil
	case MechExponential:
		if !(s.Epsilon > 0) {
			return 0, fmt.Errorf("step %q: exponential step needs a positive ε: %w", s.Name, ErrInvalidBudget)
		}
		return s.Epsilon, nil
	}
	return 0, fmt.Errorf("step %q: unknown mechanism %q: %w", s.Name, s.Mechanism, ErrInvalidBudget)
}

// RunGDP returns the exact GDP parameter of a Gaussian-only list of steps,
// and false when some step is not Gaussian.
func RunGDP(steps []Step) (float64, bool, error) {
	var sum float64
	for _, s := range steps {
		if s.Mechanism != MechGaussian {
			return 0, false, nil
		}
		mu, err := stepMu(s)
		if err != nil {
			return 0, false, err
		}
		sum += mu * mu
	}
	return math.Sqrt(sum), true, nil
}

// RunPLD returns the discretised PLD of a list of steps on grid h.
func RunPLD(steps []Step, h float64) (*PLD, error) {
	var gauss []Step
	type key struct {
		mech Mechanism
		eps  float64
	}
	counts := map[key]int{}
	var order []key
	for _, s := range steps {
		if s.Mechanism == MechGaussian {
			gauss = append(gauss, s)
			continue
		}
		eps, err := stepPureEps(s)
		if err != nil {
			return nil, err
		}
		k := key{s.Mechanism, eps}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var acc *PLD
	add := func(p *PLD) error {
		if acc == nil {
			acc = p
			return nil
		}
		var err error
		acc, err = acc.Compose(p)
		return err
	}
	if len(gauss) > 0 {
		mu, _, err := RunGDP(gauss)
		if err != nil {
			return nil, err
		}
		p, err := GaussianPLD(mu, h)
		if err != nil {
			return nil, err
		}
		if err := add(p); err != nil {
			return nil, err
		}
	}
	for _, k := range order {
		var p *PLD
		var err error
		if k.mech == MechLaplace {
			p, err = LaplacePLD(k.eps, h)
		} else {
			p, err = PurePLD(k.eps, h)
		}
		if err == nil {
			p, err = p.SelfCompose(counts[k])
		}
		if err == nil {
			err = add(p)
		}
		if err != nil {
			return nil, err
		}
	}
	if acc == nil {
		return nil, fmt.Errorf("no steps to account: %w", ErrInvalidBudget)
	}
	return acc, nil
}

// TightEpsilon is the smallest ε at δ certified for steps, with the method
// that produced it (MethodGDP or MethodPLD).
func TightEpsilon(steps []Step, delta float64) (float64, string, error) {
	mu, gaussian, err := RunGDP(steps)
	if err != nil {
		return 0, "", err
	}
	if gaussian && len(steps) > 0 {
		eps, err := GDPEpsilon(mu, delta)
		return eps, MethodGDP, err
	}
	p, err := RunPLD(steps, DefaultPLDGrid)
	if err != nil {
		return 0, "", err
	}
	eps, err := p.Epsilon(delta)
	return eps, MethodPLD, err
}
