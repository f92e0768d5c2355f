package privacy

import (
	"errors"
	"fmt"
)

// ErrGuarantee is wrapped when an estimator's declared guarantee does not
// follow from the steps it spent.
var ErrGuarantee = errors.New("privacy: guarantee does not follow from the composition")

// Certify states the guarantee that steps, composed under grant, actually
// give. From declared it keeps what only the estimator knows (Model, Beta,
// Assumptions, Neighbours, Seeded); the figures, and for worst-case kinds
// the kind itself, come from the composition: Pure with ε = Σ ε_i when
// every step is pure (a tighter statement in TightEpsilon/TightDelta, never
// a δ on the pure ε), else the tightest valid accounting (docs/privacy.md,
// "Guarantees"). A declared Pure guarantee with a non-pure step, a None
// guarantee with a step, or a private one with no step is an error wrapping
// ErrGuarantee; steps that do not fit the grant give Compose's error.
func Certify(declared Guarantee, grant Grant, steps []Step) (Guarantee, error) {
	g := declared
	g.Epsilon, g.Delta, g.Rho = 0, 0, 0
	if g.Kind == None {
		if len(steps) > 0 {
			return Guarantee{}, fmt.Errorf("a non-private result declared %d privacy steps: %w", len(steps), ErrGuarantee)
		}
		return g, nil
	}
	if len(steps) == 0 {
		return Guarantee{}, fmt.Errorf("a %q guarantee claimed with no privacy step: %w", kindName(g.Kind), ErrGuarantee)
	}
	ach, err := Compose(grant, steps)
	if err != nil {
		return Guarantee{}, err
	}
	tight := ach
	if t, err := composeTight(grant, steps, true); err == nil {
		tight = t
	}
	allPure := true
	var sumEps, sumRho float64
	for _, s := range steps {
		if !isPure(s) {
			allPure = false
		}
		sumEps += s.Epsilon
		sumRho += stepRho(s)
	}

	switch g.Kind {
	case Model, Nominal:
		g.Epsilon, g.Delta, g.Rho = tight.Epsilon, tight.Delta, tight.Rho
		g.Accounting, g.Mu = tight.Composition, tight.Mu
		return g, nil
	case Pure:
		if !allPure {
			for _, s := range steps {
				if !isPure(s) {
					return Guarantee{}, fmt.Errorf("pure ε-DP declared, but step %q (%s, δ = %v) is not pure: %w", s.Name, s.Mechanism, s.Delta, ErrGuarantee)
				}
			}
		}
	case "", Approx, ZCDP:
	default:
		return Guarantee{}, fmt.Errorf("unknown guarantee kind %q: %w", string(g.Kind), ErrGuarantee)
	}
	if allPure {
		g.Kind, g.Epsilon, g.Accounting = Pure, sumEps, "pure"
		// The tighter (ε, δ) statement: the composition keeps "pure"
		// when Σε fits, so the privacy loss distribution (Laplace and
		// bounded-range factors) is tried here.
		if grant.Kind == GrantApprox {
			if c, ok := pldCandidate(steps, grant.Delta); ok && c.Epsilon < tight.Epsilon {
				tight = c
			}
		}
		switch {
		case grant.Kind == GrantZCDP:
			g.Rho = sumRho
		case grant.Kind == GrantApprox && tight.Delta > 0 && tight.Epsilon < sumEps*(1-1e-12):
			// A tighter (ε', δ) statement: zCDP's conversion or the PLD's.
			g.Rho, g.TightEpsilon, g.TightDelta = sumRho, tight.Epsilon, tight.Delta
		}
		return g, nil
	}
	g.Epsilon, g.Delta, g.Rho = tight.Epsilon, tight.Delta, tight.Rho
	g.Accounting, g.Mu = tight.Composition, tight.Mu
	if tight.Composition == "zcdp" {
		g.Kind = ZCDP
	} else {
		g.Kind = Approx
	}
	return g, nil
}

func kindName(k GuaranteeKind) string {
	if k == "" {
		return "worst-case"
	}
	return string(k)
}

// Tighter returns the (ε, δ) a Pure guarantee also satisfies, when it
// states one (TightDelta > 0): TightEpsilon at TightDelta, or, when
// TightEpsilon was not carried (a guarantee read back from a form without
// it), the conversion EpsilonFromRho(Rho, TightDelta) of its steps' zCDP
// total, which is valid though possibly less tight. ok is false otherwise.
func (g Guarantee) Tighter() (eps, delta float64, ok bool) {
	if g.Kind != Pure || !(g.TightDelta > 0) {
		return 0, 0, false
	}
	if g.TightEpsilon > 0 {
		return g.TightEpsilon, g.TightDelta, true
	}
	if g.Rho > 0 {
		return EpsilonFromRho(g.Rho, g.TightDelta), g.TightDelta, true
	}
	return 0, 0, false
}
