package privacy

import (
	"math"
)

// exactBoost is the factor by which an exact plan may scale up the zCDP
// split rhoZ of an (ε, δ) grant g: the largest c ≥ 1 such that the plan's
// steps, each paid c times its zCDP budget, still meet g under the tightest
// valid accounting; closed form through GDP for a Gaussian-only plan, else
// RunPLD and largestFitting to 1e-4 (docs/privacy.md, "Pure plans and exact
// scaling").
func exactBoost(g Grant, rhoZ float64, shares []Share) float64 {
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
			return 1
		}
		mu /= latticeMargin * latticeMargin
		return math.Max(1, mu*mu/(2*rhoZ))
	}
	// gap(c) is the ε the steps paid c times their zCDP budget reach at δ,
	// less the grant's (with a 1e-9 relative allowance): increasing in c,
	// +Inf when the PLD cannot be built.
	target := g.Epsilon * (1 - 1e-9)
	gap := func(c float64) float64 {
		eps, err := pldEpsilon(exactSteps(rhoZ*c, shares), g.Delta)
		if err != nil {
			return math.Inf(1)
		}
		return eps - target
	}
	return largestFitting(gap, 64, 1e-4)
}

// largestFitting returns the largest c in [1, max] with gap(c) ≤ 0, to a
// relative tolerance tol (1 when no larger c fits; gap(1) is not
// evaluated: 1 is the floor). gap must increase in c. The bracket is
// found by doubling and narrowed by the Illinois variant of false
// position, which keeps the bracket [fitting, not fitting], with a
// bisection step whenever two steps did not halve the bracket; a step is
// kept at least tol/2 from either end, so that once false position is
// within the tolerance of the root one more step closes the bracket.
func largestFitting(gap func(float64) float64, max, tol float64) float64 {
	lo, hi := 1.0, 2.0
	flo, fhi := math.NaN(), gap(hi)
	for fhi <= 0 && hi < max {
		lo, flo = hi, fhi
		hi *= 2
		fhi = gap(hi)
	}
	if fhi <= 0 {
		return hi
	}
	if math.IsNaN(flo) {
		flo = gap(lo)
		if flo > 0 {
			return 1 // the floor: the zCDP split
		}
	}
	side := 0                          // which end the last step kept (-1 lo, +1 hi), for Illinois
	w1, w2 := math.Inf(1), math.Inf(1) // the bracket's width one and two steps ago
	for i := 0; i < 60 && hi-lo > tol*lo; i++ {
		m, w := (lo+hi)/2, hi-lo
		// False position while the last two steps together at least
		// halved the bracket; else a bisection step.
		if w <= w2/2 && !math.IsInf(fhi, 1) && fhi > flo {
			if fp := lo - flo*(hi-lo)/(fhi-flo); fp >= lo && fp <= hi {
				m = fp
			}
		}
		w1, w2 = w, w1
		// At least half the tolerance from either end: near the root one
		// step then closes the bracket from the side false position
		// does not move.
		d := tol * lo / 2
		m = math.Min(math.Max(m, lo+d), hi-d)
		fm := gap(m)
		if fm <= 0 {
			lo, flo = m, fm
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = m, fm
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return lo
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
