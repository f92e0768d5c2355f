package privacy

import "fmt"

// Pure plans (Laplace and exponential steps, shares as fractions of ε,
// scaled under an (ε, δ) grant by the largest common factor the tightest
// accounting certifies; docs/privacy.md, "Pure plans and exact scaling")
// and the sentence a result carries about its calibration.

// PureChoices are the values of a pure estimator's noise option.
const PureChoices = "exact, pure or zcdp"

// NewPurePlan plans shares, whose weights are fractions of ε, under noise
// (one of PureChoices) for a's grant; every share must name its Mechanism
// (Laplace or exponential). It is NewPlan under the calibration it picks
// (the plan's Noise: NoisePure, NoiseExact or NoiseZCDP), with the plan's
// Factor set; errors wrap ErrInvalidBudget when the plan cannot be made.
func NewPurePlan(a *Accountant, noise string, shares ...Share) (*Plan, error) {
	if a == nil {
		return nil, fmt.Errorf("plan: no accountant: %w", ErrInvalidBudget)
	}
	g := a.Grant()
	pure := func() (*Plan, error) {
		p, err := NewPlan(a, NoisePure, shares...)
		if err != nil {
			return nil, err
		}
		p.factor = 1
		return p, nil
	}
	switch noise {
	case NoisePure:
		return pure()
	case NoiseExact, NoiseZCDP:
	default:
		return nil, fmt.Errorf("unknown noise %q for a pure estimator (want %s): %w", noise, PureChoices, ErrInvalidBudget)
	}
	if g.Kind == GrantPure {
		if noise == NoiseExact {
			return pure()
		}
		return nil, fmt.Errorf("noise=zcdp needs an (ε, δ) grant; a pure grant is split by noise=exact or pure: %w", ErrInvalidBudget)
	}
	costed, err := zcdpWeights(shares)
	if err != nil {
		return nil, err
	}
	p, err := NewPlan(a, noise, costed...)
	if err != nil {
		return nil, err
	}
	if g.Kind == GrantApprox {
		f, err := pureFactor(p, shares, g.Epsilon)
		if err != nil {
			return nil, err
		}
		p.factor = f
		if noise == NoiseExact && !(f > 1) {
			return pure()
		}
	}
	return p, nil
}

// zcdpWeights reweights shares (fractions of ε) by the zCDP cost of their
// steps at the pure split, so that a zCDP or exact plan gives every step an
// ε proportional to its pure-split ε.
func zcdpWeights(shares []Share) ([]Share, error) {
	out := make([]Share, len(shares))
	var total float64
	for i, s := range shares {
		if s.Mechanism != MechLaplace && s.Mechanism != MechExponential {
			return nil, fmt.Errorf("pure plan: share %q has mechanism %q, want laplace or exponential: %w", s.Name, s.Mechanism, ErrInvalidBudget)
		}
		if s.Rest || s.Fixed != 0 || !(s.Weight > 0) {
			return nil, fmt.Errorf("pure plan: share %q needs a positive weight: %w", s.Name, ErrInvalidBudget)
		}
		n := float64(max(s.Steps, 1))
		out[i] = s
		rho := RhoOfPure(s.Weight / n)
		if s.Mechanism == MechExponential {
			rho = RhoOfExponential(s.Weight / n)
		}
		out[i].Weight = n * rho
		total += out[i].Weight
	}
	for i := range out {
		out[i].Weight /= total
	}
	return out, nil
}

// pureFactor is the common ratio of p's per-step ε to the pure split of eps.
func pureFactor(p *Plan, shares []Share, eps float64) (float64, error) {
	s := shares[0]
	b, err := p.Budget(s.Name)
	if err != nil {
		return 0, err
	}
	return StepEpsilon(b, s.Mechanism) / (eps * s.Weight / float64(max(s.Steps, 1))), nil
}

// StepEpsilon is the pure ε a Laplace or exponential step of budget b
// spends: b.Epsilon for a pure budget, or for a zCDP or exact budget the ε
// whose zCDP cost is b.Rho (ε²/2 for Laplace, ε²/8 for the exponential
// mechanism, its bounded range); 0 for an invalid budget.
func StepEpsilon(b Budget, m Mechanism) float64 {
	eps, _ := b.pureEpsilon(m)
	return eps
}

// Factor is, for a plan made by NewPurePlan, the common factor by which
// each step's ε exceeds its ε in the pure split of the grant's ε: 1 for
// the pure split, 0 under a ρ grant (which has no ε to split) and for a
// plan made by NewPlan.
func (p *Plan) Factor() float64 { return p.factor }

// PureNote is the sentence the result of a plan made by NewPurePlan
// carries about it: which split was used and which accountant states the
// guarantee's figures.
func (p *Plan) PureNote(requested string) string {
	switch p.noise {
	case NoiseExact:
		return fmt.Sprintf("noise=exact: every pure step gets %.4g× its share of ε in the pure split, the largest common factor the tightest valid accounting certifies for the grant; the guarantee states its (ε, δ) figures from that accounting (its accounting field and tighter ε)", p.factor)
	case NoiseZCDP:
		return fmt.Sprintf("noise=zcdp: the pure split's proportions scaled to the grant's zCDP budget (%.4g× the pure split's ε per step); the guarantee's figures come from the tightest valid accounting of the steps", p.factor)
	}
	if requested == NoiseExact {
		return "noise=exact: the pure split (ε divided by basic composition) is the tightest choice here (a pure grant, or no larger factor certified); the guarantee is pure ε-DP, with a tighter (ε, δ) statement when one holds"
	}
	return "noise=pure: ε divided among the steps by basic composition (δ unused)"
}

// GaussianNote is the sentence a Gaussian estimator's result carries
// about its calibration: how σ was set and which accountant states the
// guarantee's figures (its accounting field), under grant kind g.
func GaussianNote(noise string, g GrantKind) string {
	if g == GrantZCDP && (noise == NoiseExact || noise == NoiseZCDP) {
		return "noise=" + noise + " under a ρ grant: ρ split over the Gaussian steps, which compose in zero-concentrated DP (the exact and zcdp calibrations coincide for a ρ grant)"
	}
	switch noise {
	case NoiseExact:
		return "noise=exact: a Gaussian-only plan is split in μ² of Gaussian DP and composes exactly (Dong, Roth & Su), σ from the grant's exact (ε, δ) curve; a plan with a pure step (clip=auto's quantile, say) is the zCDP split scaled up as far as the privacy loss distribution certifies (the exponential mechanism as bounded range); the guarantee's figures come from the tightest valid accounting (its accounting field)"
	case NoiseZCDP:
		return "noise=zcdp: ρ split in zero-concentrated DP (dplr's calibration before exact; about 7 % more noise than exact at (1, 1e-6) for a Gaussian-only plan); the guarantee's figures come from the tightest valid accounting of the same steps (its accounting field)"
	}
	return fmt.Sprintf("noise=%s: each step calibrated to its own (ε, δ) share, shares added by basic composition; the guarantee's figures come from the tightest valid accounting of the same steps (its accounting field), so its ε is often below the grant's", noise)
}
