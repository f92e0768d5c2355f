package privacy

import (
	"fmt"
	"math"
)

// CalibPTR is the calibration of a propose-test-release test (Dwork & Lei
// 2009): a Laplace release of an integer distance to instability, with
// ℓ1 sensitivity 1, whose step carries the test's own δ beside its ε.
const CalibPTR = "ptr"

// isPTR reports a propose-test-release test step.
func isPTR(s Step) bool { return s.Calibration == CalibPTR }

// PTRTest declares the Laplace test of propose-test-release under an
// (ε, δ) grant: the distance d ≥ 0 (sensitivity 1) to the nearest data set
// where the proposed bound fails, released as d + Lap(b) at cost eps with
// δ = delta. It returns the release and the threshold T = b·ln(1/delta)
// the released distance must exceed; why that costs δ is in
// docs/privacy.md ("Plans and releases"). It composes by basic composition.
func (a *Accountant) PTRTest(name string, eps, delta float64) (*Release, float64, error) {
	if g := a.Grant(); g.Kind != GrantApprox {
		return nil, 0, fmt.Errorf("step %q: propose-test-release needs an (ε, δ) grant, not a %s grant: %w", name, g.Kind, ErrInvalidBudget)
	}
	if !(delta > 0 && delta < 1) {
		return nil, 0, fmt.Errorf("step %q: test δ = %v outside (0, 1): %w", name, delta, ErrInvalidBudget)
	}
	st, err := laplaceStep(name, 1, 1, eps)
	if err != nil {
		return nil, 0, err
	}
	// The test is not pure and has no zCDP cost: only its (ε, δ) holds.
	st.Calibration, st.Delta, st.Rho = CalibPTR, delta, 0
	st.Note += "; propose-test-release test"
	rel, err := a.newRelease(st, (*Source).AddLaplace)
	if err != nil {
		return nil, 0, err
	}
	return rel, st.Scale * math.Log(1/delta), nil
}

// PTRGrant is what an (ε, δ) grant leaves for the other steps after a
// propose-test-release test of (eps, delta).
func PTRGrant(g Grant, eps, delta float64) (Grant, error) {
	if g.Kind != GrantApprox {
		return Grant{}, fmt.Errorf("propose-test-release needs an (ε, δ) grant, not a %s grant: %w", g.Kind, ErrInvalidBudget)
	}
	rest := Grant{Kind: GrantApprox, Epsilon: g.Epsilon - eps, Delta: g.Delta - delta}
	if err := rest.Validate(); err != nil {
		return Grant{}, fmt.Errorf("the grant (ε=%.4g, δ=%.3g) leaves nothing after a test of (ε=%.4g, δ=%.3g): %w", g.Epsilon, g.Delta, eps, delta, err)
	}
	return rest, nil
}

// NewPTRPlan is NewPlan over what the grant of a leaves after a
// propose-test-release test of (eps, delta) (PTRGrant); the test itself is
// declared with PTRTest.
func NewPTRPlan(a *Accountant, noise string, eps, delta float64, shares ...Share) (*Plan, error) {
	if a == nil {
		return nil, fmt.Errorf("plan: no accountant: %w", ErrInvalidBudget)
	}
	rest, err := PTRGrant(a.Grant(), eps, delta)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return NewPlan(&Accountant{books: &books{grant: rest}}, noise, shares...)
}

// composePTR composes steps holding propose-test-release tests under an
// (ε, δ) grant: the tests' (ε, δ) add up, and the other steps are composed
// by the tightest valid rule within what the tests leave (PTRGrant); the
// two add up by basic composition (DERIVATIONS.md of the pca plugin, §13,
// proves the mechanism built this way (Σε, Σδ)-DP for every data set).
// ok is false when there is no test step (or the grant is not (ε, δ)).
func composePTR(g Grant, steps []Step, tight bool) (ach Achieved, ok bool, err error) {
	if g.Kind != GrantApprox {
		return Achieved{}, false, nil
	}
	var eps, delta float64
	var rest []Step
	for _, s := range steps {
		if isPTR(s) {
			eps, delta, ok = eps+s.Epsilon, delta+s.Delta, true
		} else {
			rest = append(rest, s)
		}
	}
	if !ok {
		return Achieved{}, false, nil
	}
	tests := Achieved{Epsilon: eps, Delta: delta, Composition: "basic"}
	if !within(eps, g.Epsilon) || !(delta < g.Delta) {
		return Achieved{}, true, fmt.Errorf("propose-test-release tests spend (ε=%.6g, δ=%.3g) of a grant (ε=%.6g, δ=%.3g): %w", eps, delta, g.Epsilon, g.Delta, ErrOverBudget)
	}
	if len(rest) == 0 {
		return tests, true, nil
	}
	left := Grant{Kind: GrantApprox, Epsilon: g.Epsilon - eps, Delta: g.Delta - delta}
	if !(left.Epsilon > 0) {
		return Achieved{}, true, fmt.Errorf("propose-test-release tests spend all of ε = %.6g, leaving nothing for %d other steps: %w", g.Epsilon, len(rest), ErrOverBudget)
	}
	r, err := composeTight(left, rest, tight)
	if err != nil {
		return Achieved{}, true, fmt.Errorf("after propose-test-release tests of (ε=%.6g, δ=%.3g): %w", eps, delta, err)
	}
	tests.Epsilon += r.Epsilon
	tests.Delta += r.Delta
	return tests, true, nil
}
