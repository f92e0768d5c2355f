package privacy

import (
	"fmt"
	"math"
	"sync"
)

// GrantKind names the form in which a privacy budget was granted.
type GrantKind string

// Grant kinds.
const (
	// GrantPure is a pure ε-DP budget.
	GrantPure GrantKind = "pure"
	// GrantApprox is an (ε, δ)-DP budget.
	GrantApprox GrantKind = "approx"
	// GrantZCDP is a ρ-zCDP budget.
	GrantZCDP GrantKind = "zcdp"
)

// Grant is the budget the host gives one estimator run.
type Grant struct {
	Kind    GrantKind `json:"kind"`
	Epsilon float64   `json:"epsilon,omitempty"`
	Delta   float64   `json:"delta,omitempty"`
	Rho     float64   `json:"rho,omitempty"`
}

// Validate checks the grant's numbers.
func (g Grant) Validate() error {
	switch g.Kind {
	case GrantPure:
		if !(g.Epsilon > 0) || math.IsInf(g.Epsilon, 0) {
			return fmt.Errorf("pure grant: epsilon = %v must be positive and finite: %w", g.Epsilon, ErrInvalidBudget)
		}
	case GrantApprox:
		return checkEpsDelta(g.Epsilon, g.Delta)
	case GrantZCDP:
		if !(g.Rho > 0) || math.IsInf(g.Rho, 0) {
			return fmt.Errorf("zCDP grant: rho = %v must be positive and finite: %w", g.Rho, ErrInvalidBudget)
		}
	default:
		return fmt.Errorf("unknown grant kind %q: %w", g.Kind, ErrInvalidBudget)
	}
	return nil
}

// Mechanism names the mechanism a step used.
type Mechanism string

// Mechanisms.
const (
	MechGaussian    Mechanism = "gaussian"
	MechLaplace     Mechanism = "laplace"
	MechExponential Mechanism = "exponential"
)

// Step is one privacy-spending step an estimator declares before it draws
// noise. Cost fields that do not apply are zero.
type Step struct {
	Name        string    `json:"name"`        // what the step releases, e.g. "eigenvectors"
	Mechanism   Mechanism `json:"mechanism"`   // gaussian, laplace, exponential
	Calibration string    `json:"calibration"` // "zcdp", "classical", "analytic", "pure"
	// Sensitivity is the sensitivity the noise scale is calibrated to: ℓ2
	// (Gaussian), ℓ1 (Laplace) or utility (exponential). For the Spend
	// helpers it includes the allowance for rounding to the noise grid.
	Sensitivity float64 `json:"sensitivity"`
	Scale       float64 `json:"scale"`             // σ, b, or the exponential mechanism's inverse temperature
	Epsilon     float64 `json:"epsilon,omitempty"` // (ε, δ) or pure-ε cost, when calibrated that way
	Delta       float64 `json:"delta,omitempty"`
	Rho         float64 `json:"rho,omitempty"` // zCDP cost
	Note        string  `json:"note,omitempty"`
	// QuerySensitivity is the sensitivity the estimator declared, before
	// the grid allowance (0 when not recorded).
	QuerySensitivity float64 `json:"query_sensitivity,omitempty"`
	// Dim is the number of noised coordinates (0 when not recorded).
	Dim int `json:"dim,omitempty"`
	// Grid is the release grid γ the noise is drawn on (0 when none).
	Grid float64 `json:"grid,omitempty"`
}

// Achieved is what the steps spent, composed by the tightest valid
// accounting that fits the grant.
type Achieved struct {
	Epsilon float64
	Delta   float64
	// Rho is the zCDP total of the steps accounted by zCDP (all of them for
	// a zCDP grant or the "zcdp" composition, the non-pure ones for
	// "mixed"); 0 otherwise.
	Rho float64
	// Composition names the accounting: "pure" (ε add up), "zcdp" (ρ add
	// up, converted with the tight CKS bound for an (ε, δ) grant), "mixed"
	// (pure steps' ε plus the converted ρ of the rest), "basic" (ε and δ
	// add up), "gdp" (exact Gaussian composition) or "pld" (privacy loss
	// distributions).
	Composition string
	// Mu is the GDP parameter of a "gdp" composition (0 otherwise).
	Mu float64
}

// Accountant checks each declared step against a Grant and records it. It is
// safe for concurrent use.
type Accountant struct {
	*books
	prefix string // see Prefixed
}

// books are an accountant's records, shared by its Prefixed views.
type books struct {
	mu      sync.Mutex
	grant   Grant
	steps   []Step
	onSpend func(Step)
	// releases are the steps declared through Gaussian, Laplace and
	// Exponential, with whether their noise was drawn.
	releases []releaseRecord
	// viaRelease[i] tells whether steps[i] was declared with a release.
	viaRelease []bool
}

// NewAccountant returns an accountant for g.
func NewAccountant(g Grant) (*Accountant, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &Accountant{books: &books{grant: g}}, nil
}

// Prefixed returns a view of a that records every step with its name
// prefixed by prefix, in a's records (one fit among several of a run:
// the candidates of a private selection).
func (a *Accountant) Prefixed(prefix string) *Accountant {
	return &Accountant{books: a.books, prefix: a.prefix + prefix}
}

// Grant returns the grant.
func (a *Accountant) Grant() Grant { return a.grant }

// OnSpend registers a hook called (synchronously, outside the accountant's
// lock) after each accepted step.
func (a *Accountant) OnSpend(f func(Step)) { a.mu.Lock(); a.onSpend = f; a.mu.Unlock() }

// TotalRho is the zCDP budget the grant allows: ρ itself, or the largest ρ
// whose tight conversion meets (ε, δ). It errors for a pure grant.
func (a *Accountant) TotalRho() (float64, error) {
	switch a.grant.Kind {
	case GrantZCDP:
		return a.grant.Rho, nil
	case GrantApprox:
		return RhoForEpsDelta(a.grant.Epsilon, a.grant.Delta)
	}
	return 0, fmt.Errorf("a pure ε-DP grant has no zCDP budget for Gaussian noise: %w", ErrInvalidBudget)
}

// slack is the relative tolerance for float rounding at the grant boundary
// (e.g. ε/3 spent three times). Achieved always reports the exact sums.
const slack = 1e-12

func within(x, limit float64) bool { return x <= limit*(1+slack) }

// Spend records step if the steps so far plus step compose within the grant,
// and refuses it (wrapping ErrOverBudget, or ErrInvalidBudget for a
// malformed step) otherwise, leaving the accountant unchanged. Call it
// before drawing the step's noise.
func (a *Accountant) Spend(step Step) error {
	_, err := a.spend(step, false)
	return err
}

// spend is Spend; with release it also registers a release for the step,
// under the same lock, and returns its id.
func (a *Accountant) spend(step Step, release bool) (int, error) {
	step.Name = a.prefix + step.Name
	if err := checkStep(step); err != nil {
		return 0, fmt.Errorf("step %q: %w", step.Name, err)
	}
	a.mu.Lock()
	trial := append(append(make([]Step, 0, len(a.steps)+1), a.steps...), step)
	if _, err := composeTight(a.grant, trial, false); err != nil {
		a.mu.Unlock()
		return 0, fmt.Errorf("step %q: %w", step.Name, err)
	}
	a.steps = trial
	a.viaRelease = append(a.viaRelease, release)
	id := -1
	if release {
		a.releases = append(a.releases, releaseRecord{name: step.Name})
		id = len(a.releases) - 1
	}
	hook := a.onSpend
	a.mu.Unlock()
	if hook != nil {
		hook(step)
	}
	return id, nil
}

// WithoutRelease returns the names of the accepted steps that were declared
// without a release (through Spend or the Spend* helpers), whose noise the
// accountant cannot vouch for.
func (a *Accountant) WithoutRelease() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for i, ok := range a.viaRelease {
		if !ok {
			out = append(out, a.steps[i].Name)
		}
	}
	return out
}

// Steps returns a copy of the accepted steps.
func (a *Accountant) Steps() []Step {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Step(nil), a.steps...)
}

// Achieved composes the accepted steps.
func (a *Accountant) Achieved() Achieved {
	a.mu.Lock()
	defer a.mu.Unlock()
	ach, _ := composeTight(a.grant, a.steps, true)
	return ach
}

// Compose returns the composed guarantee of steps under grant, or an error
// wrapping ErrOverBudget if they do not fit (ErrInvalidBudget for a
// malformed grant or step).
func Compose(g Grant, steps []Step) (Achieved, error) {
	if err := g.Validate(); err != nil {
		return Achieved{}, err
	}
	for _, s := range steps {
		if err := checkStep(s); err != nil {
			return Achieved{}, fmt.Errorf("step %q: %w", s.Name, err)
		}
	}
	return compose(g, steps)
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }

// checkStep rejects costs that are negative, non-finite or absent.
func checkStep(s Step) error {
	if !finiteNonNeg(s.Epsilon) || !finiteNonNeg(s.Rho) || !(s.Delta >= 0 && s.Delta < 1) {
		return fmt.Errorf("costs ε=%v, δ=%v, ρ=%v must be finite, non-negative, δ < 1: %w", s.Epsilon, s.Delta, s.Rho, ErrInvalidBudget)
	}
	if s.Epsilon == 0 && s.Rho == 0 {
		return fmt.Errorf("declares no privacy cost (neither ε nor ρ): %w", ErrInvalidBudget)
	}
	if s.Delta > 0 && s.Epsilon == 0 {
		return fmt.Errorf("declares δ = %v without ε: %w", s.Delta, ErrInvalidBudget)
	}
	return nil
}

// isPure reports a pure ε-DP step.
func isPure(s Step) bool { return s.Epsilon > 0 && s.Delta == 0 }

// stepRho is a step's zCDP cost: its declared ρ, or ε²/2 for a pure step
// that declared none; 0 when it has no zCDP accounting (an (ε, δ) step
// without ρ).
func stepRho(s Step) float64 {
	if s.Rho > 0 {
		return s.Rho
	}
	if isPure(s) {
		return RhoOfPure(s.Epsilon)
	}
	return 0
}

// compose finds the tightest valid accounting of steps that fits g, among
// "pure", "zcdp", "mixed" and "basic" composition, and "gdp" and "pld" when
// tight is set (Achieved, Certify) or nothing else fits (Spend of an exact
// plan); Compose, which the ledger charges with, keeps the composable
// figures whenever one fits. Each candidate and its justification:
// docs/privacy.md, "Which accountings a grant admits".
func compose(g Grant, steps []Step) (Achieved, error) { return composeTight(g, steps, false) }

func composeTight(g Grant, steps []Step, tight bool) (Achieved, error) {
	if ach, ok, err := composePTR(g, steps, tight); ok {
		return ach, err
	}
	var sumEps, sumDelta, sumRho, pureEps, otherRho float64
	allPure, allRho, allEps := true, true, true
	nPure := 0
	for _, s := range steps {
		sumEps += s.Epsilon
		sumDelta += s.Delta
		r := stepRho(s)
		if r == 0 {
			allRho = false
		}
		sumRho += r
		if isPure(s) {
			pureEps += s.Epsilon
			nPure++
		} else {
			allPure = false
			otherRho += r
		}
		if s.Epsilon == 0 {
			allEps = false
		}
	}
	switch g.Kind {
	case GrantPure:
		if !allPure {
			return Achieved{}, fmt.Errorf("a pure ε-DP grant admits only pure steps (Laplace, exponential); a Gaussian or (ε, δ) step needs an (ε, δ) or zCDP grant: %w", ErrOverBudget)
		}
		if !within(sumEps, g.Epsilon) {
			return Achieved{}, fmt.Errorf("ε spent %.6g > granted %.6g: %w", sumEps, g.Epsilon, ErrOverBudget)
		}
		return Achieved{Epsilon: sumEps, Composition: "pure"}, nil
	case GrantZCDP:
		if !allRho {
			return Achieved{}, fmt.Errorf("a zCDP grant needs every step's ρ; an (ε, δ)-only step cannot be accounted: %w", ErrOverBudget)
		}
		if !within(sumRho, g.Rho) {
			return Achieved{}, fmt.Errorf("ρ spent %.6g > granted %.6g: %w", sumRho, g.Rho, ErrOverBudget)
		}
		return Achieved{Rho: sumRho, Composition: "zcdp"}, nil
	case GrantApprox:
	default:
		return Achieved{}, fmt.Errorf("unknown grant kind %q: %w", g.Kind, ErrInvalidBudget)
	}
	if len(steps) == 0 {
		return Achieved{Composition: "pure"}, nil
	}
	var cands []Achieved
	if allPure {
		cands = append(cands, Achieved{Epsilon: sumEps, Composition: "pure"})
	}
	if allRho {
		cands = append(cands, Achieved{Epsilon: EpsilonFromRho(sumRho, g.Delta), Delta: g.Delta, Rho: sumRho, Composition: "zcdp"})
		if nPure > 0 && nPure < len(steps) {
			cands = append(cands, Achieved{Epsilon: pureEps + EpsilonFromRho(otherRho, g.Delta), Delta: g.Delta, Rho: otherRho, Composition: "mixed"})
		}
	}
	if allEps {
		cands = append(cands, Achieved{Epsilon: sumEps, Delta: sumDelta, Composition: "basic"})
	}
	best, found := bestFit(g, cands)
	// All-pure runs try the PLD only when nothing else fits (an exact
	// plan of pure shares, sized by the PLD): when Σε fits, "pure" is
	// the statement to make (Certify adds the PLD's tighter (ε, δ)).
	if (!allPure && tight) || !found {
		if c, ok := gdpCandidate(steps, g.Delta); ok {
			cands = append(cands, c)
		} else if c, ok := pldCandidate(steps, g.Delta); ok {
			cands = append(cands, c)
		}
		best, found = bestFit(g, cands)
	}
	if found {
		return best, nil
	}
	msg := "steps do not compose within the grant"
	if len(cands) > 0 {
		lowest := cands[0]
		for _, c := range cands[1:] {
			if c.Epsilon < lowest.Epsilon {
				lowest = c
			}
		}
		msg = fmt.Sprintf("the tightest accounting (%s) needs ε = %.6g, δ = %.3g", lowest.Composition, lowest.Epsilon, lowest.Delta)
	}
	return Achieved{}, fmt.Errorf("%s; granted (ε=%.6g, δ=%.3g): %w", msg, g.Epsilon, g.Delta, ErrOverBudget)
}

// bestFit returns the candidate that fits g with the smallest ε (then δ).
func bestFit(g Grant, cands []Achieved) (Achieved, bool) {
	best, found := Achieved{}, false
	for _, c := range cands {
		if !within(c.Epsilon, g.Epsilon) || !within(c.Delta, g.Delta) {
			continue
		}
		if !found || c.Epsilon < best.Epsilon || (c.Epsilon == best.Epsilon && c.Delta < best.Delta) {
			best, found = c, true
		}
	}
	return best, found
}

// gdpCandidate accounts an all-Gaussian list of steps exactly.
func gdpCandidate(steps []Step, delta float64) (Achieved, bool) {
	mu, ok, err := RunGDP(steps)
	if err != nil || !ok || len(steps) == 0 {
		return Achieved{}, false
	}
	eps, err := GDPEpsilon(mu, delta)
	if err != nil {
		return Achieved{}, false
	}
	return Achieved{Epsilon: eps, Delta: delta, Rho: mu * mu / 2, Mu: mu, Composition: MethodGDP}, true
}

// pldCandidate accounts Gaussian and pure steps by their PLD.
func pldCandidate(steps []Step, delta float64) (Achieved, bool) {
	for _, s := range steps {
		switch {
		case s.Mechanism == MechGaussian && s.Scale > 0 && s.Sensitivity > 0:
		case (s.Mechanism == MechLaplace || s.Mechanism == MechExponential) && isPure(s):
		default:
			return Achieved{}, false
		}
	}
	eps, err := pldEpsilon(steps, delta)
	if err != nil {
		return Achieved{}, false
	}
	return Achieved{Epsilon: eps, Delta: delta, Composition: MethodPLD}, true
}
