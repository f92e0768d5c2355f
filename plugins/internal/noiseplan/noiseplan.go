// Package noiseplan holds what the PCA estimators (plugins pca and orbit)
// share about the noise option: the plan of an estimator whose steps are
// all pure (Laplace, exponential mechanism: pca-amin and the orbit
// exponential-mechanism estimators), and the sentence a result carries
// about its calibration and the accountant behind its figures.
//
// Pure plans. Their shares are written as fractions of ε, as in the
// papers; under an (ε, δ) grant the default (noise=exact)
// keeps those proportions and scales every step's ε by the largest common
// factor the tightest valid accounting certifies, never below the pure
// split itself.
//
// Why a common factor. Under an (ε, δ) grant a pure run may be accounted
// three valid ways: basic composition (Σ ε_i ≤ ε, δ unused), zCDP (a
// Laplace step costs ε_i²/2, an exponential-mechanism step ε_i²/8, its
// bounded range; the total converted at δ), and the privacy loss
// distribution. Scaling the pure split by one factor s keeps the user's
// allocation (eigenvalue_share, clip_share, …) and makes the comparison a
// single number: s > 1 means every step gets more ε than the pure split
// gives it. privacy.NewPlan(NoiseExact) on shares weighted by the zCDP
// costs of the pure split's steps returns exactly such a scaled plan (the
// zCDP split, scaled up further when the privacy loss distribution allows
// it); its factor is compared with 1 and the better plan is used.
package noiseplan

import (
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Choices are the values of a pure estimator's noise option.
const Choices = "exact, pure or zcdp"

// Plan is a pure estimator's plan with the calibration actually used.
type Plan struct {
	*privacy.Plan
	// Used is the calibration of the plan: privacy.NoisePure,
	// privacy.NoiseExact or privacy.NoiseZCDP.
	Used string
	// Factor is the common factor by which each step's ε exceeds its ε
	// in the pure split of the grant's ε: 1 for the pure plan, 0 under a
	// ρ grant (which has no ε to split).
	Factor float64
}

// New plans shares, whose weights are fractions of ε, under noise (one of
// Choices) for run's grant; every share must name its Mechanism (Laplace
// or exponential). Errors are sdk.BadRequest when the plan cannot be made.
func New(run *sdk.Run, noise string, shares ...privacy.Share) (*Plan, error) {
	g := run.Acct.Grant()
	pure := func() (*Plan, error) {
		p, err := sdk.NewPlan(run, privacy.NoisePure, shares...)
		if err != nil {
			return nil, err
		}
		return &Plan{Plan: p, Used: privacy.NoisePure, Factor: 1}, nil
	}
	switch noise {
	case privacy.NoisePure:
		return pure()
	case privacy.NoiseExact, privacy.NoiseZCDP:
	default:
		return nil, sdk.BadRequest("unknown noise %q for a pure estimator (want %s)", noise, Choices)
	}
	if g.Kind == privacy.GrantPure {
		if noise == privacy.NoiseExact {
			return pure()
		}
		return nil, sdk.BadRequest("noise=zcdp needs an (ε, δ) grant; a pure grant is split by noise=exact or pure")
	}
	costed, err := zcdpWeights(shares)
	if err != nil {
		return nil, err
	}
	p, err := sdk.NewPlan(run, noise, costed...)
	if err != nil {
		return nil, err
	}
	out := &Plan{Plan: p, Used: noise}
	if g.Kind == privacy.GrantApprox {
		f, err := factor(p, shares, g.Epsilon)
		if err != nil {
			return nil, err
		}
		out.Factor = f
		if noise == privacy.NoiseExact && !(f > 1) {
			return pure()
		}
	}
	return out, nil
}

// cost is the zCDP cost of a pure step of ε under mechanism m.
func cost(m privacy.Mechanism, eps float64) float64 {
	if m == privacy.MechExponential {
		return eps * eps / 8
	}
	return eps * eps / 2
}

// zcdpWeights reweights shares (fractions of ε) by the zCDP cost of their
// steps at the pure split, so that a zCDP or exact plan gives every step an
// ε proportional to its pure-split ε.
func zcdpWeights(shares []privacy.Share) ([]privacy.Share, error) {
	out := make([]privacy.Share, len(shares))
	var total float64
	for i, s := range shares {
		if s.Mechanism != privacy.MechLaplace && s.Mechanism != privacy.MechExponential {
			return nil, fmt.Errorf("pure plan: share %q has mechanism %q, want laplace or exponential", s.Name, s.Mechanism)
		}
		if s.Rest || s.Fixed != 0 || !(s.Weight > 0) {
			return nil, fmt.Errorf("pure plan: share %q needs a positive weight", s.Name)
		}
		n := float64(max(s.Steps, 1))
		out[i] = s
		out[i].Weight = n * cost(s.Mechanism, s.Weight/n)
		total += out[i].Weight
	}
	for i := range out {
		out[i].Weight /= total
	}
	return out, nil
}

// factor is the common ratio of p's per-step ε to the pure split of eps.
func factor(p *privacy.Plan, shares []privacy.Share, eps float64) (float64, error) {
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
// mechanism, its bounded range).
func StepEpsilon(b privacy.Budget, m privacy.Mechanism) float64 {
	if b.Noise != privacy.NoiseZCDP && b.Noise != privacy.NoiseExact {
		return b.Epsilon
	}
	if m == privacy.MechExponential {
		return math.Sqrt(8 * b.Rho)
	}
	return math.Sqrt(2 * b.Rho)
}

// Note is the sentence a result carries about the plan: which split was
// used and which accountant states the guarantee's figures.
func (p *Plan) Note(requested string) string {
	switch p.Used {
	case privacy.NoiseExact:
		return fmt.Sprintf("noise=exact: every pure step gets %.4g× its share of ε in the pure split, the largest common factor the tightest valid accounting certifies for the grant; the guarantee states its (ε, δ) figures from that accounting (its accounting field and tighter ε)", p.Factor)
	case privacy.NoiseZCDP:
		return fmt.Sprintf("noise=zcdp: the pure split's proportions scaled to the grant's zCDP budget (%.4g× the pure split's ε per step); the guarantee's figures come from the tightest valid accounting of the steps", p.Factor)
	}
	if requested == privacy.NoiseExact {
		return "noise=exact: the pure split (ε divided by basic composition) is the tightest choice here (a pure grant, or too few steps for zCDP or the privacy loss distribution to certify more); the guarantee is pure ε-DP, with a tighter (ε, δ) statement when one holds"
	}
	return "noise=pure: ε divided among the steps by basic composition (δ unused)"
}

// GaussianNote is the sentence a Gaussian estimator's result carries
// about its calibration: how σ was set and which accountant states the
// guarantee's figures (its accounting field), under grant kind g.
func GaussianNote(noise string, g privacy.GrantKind) string {
	if g == privacy.GrantZCDP && (noise == privacy.NoiseExact || noise == privacy.NoiseZCDP) {
		return "noise=" + noise + " under a ρ grant: ρ split over the Gaussian steps, which compose in zero-concentrated DP (the exact and zcdp calibrations coincide for a ρ grant)"
	}
	switch noise {
	case privacy.NoiseExact:
		return "noise=exact: a Gaussian-only plan is split in μ² of Gaussian DP and composes exactly (Dong, Roth & Su), σ from the grant's exact (ε, δ) curve; a plan with a pure step (clip=auto's quantile, say) is the zCDP split scaled up as far as the privacy loss distribution certifies (it accounts a pure step as generic ε-DP, so often not at all); the guarantee's figures come from the tightest valid accounting (its accounting field)"
	case privacy.NoiseZCDP:
		return "noise=zcdp: ρ split in zero-concentrated DP (dplr's calibration before exact; about 7 % more noise than exact at (1, 1e-6) for a Gaussian-only plan); the guarantee's figures come from the tightest valid accounting of the same steps (its accounting field)"
	}
	return fmt.Sprintf("noise=%s: each step calibrated to its own (ε, δ) share, shares added by basic composition; the guarantee's figures come from the tightest valid accounting of the same steps (its accounting field), so its ε is often below the grant's", noise)
}
