package privacy

import (
	"math"
)

// exactBoost is the factor by which an exact plan may scale up the zCDP
// split rhoZ of an (ε, δ) grant g: the largest c such that the plan's steps,
// each paid c times its zCDP budget, still meet g under the tightest valid
// accounting.
//
// A Gaussian-only plan composes exactly: its steps are together μ-GDP with
// μ² = 2cρ_Z, so c = μ_g²/(2ρ_Z) with μ_g = GDPMu(ε, δ). The lattice
// allowance (1e-9 on every μ, see RunGDP) is taken off μ_g first.
//
// A plan with pure shares (Laplace, exponential mechanism) is scaled by
// bisection on c: the steps it would declare (Gaussian μ = sqrt(2ρ), Laplace
// ε = sqrt(2ρ), exponential ε = sqrt(8ρ), ρ = c·ρ_Z·weight/steps) are
// composed by RunPLD (connect-the-dots; exponential steps as ε-bounded-
// range factors, so a plan with exponential shares gains most) and the
// largest c whose ε at δ meets the grant is kept, to 1e-4 relative. c = 1,
// the zCDP split itself, is the floor: the PLD of these steps lies below
// the zCDP conversion in every case dplr has met (TestExactNeverMoreNoise-
// ThanZCDP), and c = 1 is kept when it would not.
func exactBoost(g Grant, rhoZ float64, shares []Share) (float64, error) {
	gaussianOnly := true
	for _, s := range shares {
		if s.Mechanism != "" && s.Mechanism != MechGaussian {
			gaussianOnly = false
		}
	}
	if gaussianOnly {
		mu, err := GDPMu(g.Epsilon, g.Delta)
		if err != nil {
			// A grant so large that μ has no finite bracket (ε ≳ 1e11):
			// the zCDP split (c = 1) meets it, and the noise is
			// negligible either way.
			return 1, nil //nolint:nilerr // fallback documented above
		}
		mu /= latticeMargin * latticeMargin
		return math.Max(1, mu*mu/(2*rhoZ)), nil
	}
	fits := func(c float64) bool {
		steps := exactSteps(rhoZ*c, shares)
		p, err := RunPLD(steps, DefaultPLDGrid)
		if err != nil {
			return false
		}
		eps, err := p.Epsilon(g.Delta)
		return err == nil && eps <= g.Epsilon*(1-1e-9)
	}
	lo, hi := 1.0, 2.0
	for fits(hi) && hi < 64 {
		lo, hi = hi, 2*hi
	}
	for i := 0; i < 30 && hi-lo > 1e-4*lo; i++ {
		m := (lo + hi) / 2
		if fits(m) {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}

// exactSteps lists the steps an exact plan with total ρ would declare, at
// unit sensitivity (only the ratios matter).
func exactSteps(rho float64, shares []Share) []Step {
	var steps []Step
	for _, s := range shares {
		n := max(s.Steps, 1)
		r := rho * s.Weight / float64(n)
		for i := 0; i < n; i++ {
			switch s.Mechanism {
			case MechLaplace:
				e := math.Sqrt(2 * r)
				steps = append(steps, Step{Name: s.Name, Mechanism: MechLaplace, Sensitivity: 1, Scale: 1 / e, Epsilon: e})
			case MechExponential:
				e := math.Sqrt(8 * r)
				steps = append(steps, Step{Name: s.Name, Mechanism: MechExponential, Sensitivity: 1, Scale: e / 2, Epsilon: e})
			default:
				steps = append(steps, Step{Name: s.Name, Mechanism: MechGaussian, Sensitivity: 1, Scale: 1 / math.Sqrt(2*r), Rho: r})
			}
		}
	}
	return steps
}
