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
	Kind    GrantKind
	Epsilon float64
	Delta   float64
	Rho     float64
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
	Name        string    // what the step releases, e.g. "eigenvectors"
	Mechanism   Mechanism // gaussian, laplace, exponential
	Calibration string    // "zcdp", "classical", "analytic", "pure"
	Sensitivity float64   // ℓ2 (Gaussian), ℓ1 (Laplace) or utility (exponential) sensitivity
	Scale       float64   // σ, b, or the exponential mechanism's inverse temperature
	Epsilon     float64   // (ε, δ) or pure-ε cost, when calibrated that way
	Delta       float64
	Rho         float64 // zCDP cost
	Note        string
}

// Achieved is what the steps spent, composed.
type Achieved struct {
	Epsilon     float64
	Delta       float64
	Rho         float64 // 0 when some step has no zCDP cost
	Composition string  // "pure", "zcdp", "basic"
}

// Accountant checks each declared step against a Grant and records it. It is
// safe for concurrent use.
type Accountant struct {
	mu      sync.Mutex
	grant   Grant
	steps   []Step
	onSpend func(Step)
}

// NewAccountant returns an accountant for g.
func NewAccountant(g Grant) (*Accountant, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &Accountant{grant: g}, nil
}

// Grant returns the grant.
func (a *Accountant) Grant() Grant { return a.grant }

// OnSpend registers a hook called (synchronously) after each accepted step.
func (a *Accountant) OnSpend(f func(Step)) { a.mu.Lock(); a.onSpend = f; a.mu.Unlock() }

// TotalRho is the zCDP budget the grant allows: ρ itself, or the largest ρ
// whose conversion meets (ε, δ). It errors for a pure grant.
func (a *Accountant) TotalRho() (float64, error) {
	switch a.grant.Kind {
	case GrantZCDP:
		return a.grant.Rho, nil
	case GrantApprox:
		return RhoForEpsDelta(a.grant.Epsilon, a.grant.Delta)
	}
	return 0, fmt.Errorf("a pure ε-DP grant has no zCDP budget for Gaussian noise: %w", ErrInvalidBudget)
}

const slack = 1e-9

// Spend records step if the steps so far plus step compose within the grant,
// and refuses it (wrapping ErrOverBudget) otherwise. Call it before drawing
// the step's noise.
func (a *Accountant) Spend(step Step) error {
	a.mu.Lock()
	trial := append(append([]Step(nil), a.steps...), step)
	ach, err := compose(a.grant, trial)
	if err != nil {
		a.mu.Unlock()
		return fmt.Errorf("step %q: %w", step.Name, err)
	}
	_ = ach
	a.steps = trial
	hook := a.onSpend
	a.mu.Unlock()
	if hook != nil {
		hook(step)
	}
	return nil
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
	ach, _ := compose(a.grant, a.steps)
	return ach
}

// Compose returns the composed guarantee of steps under grant, or an error
// wrapping ErrOverBudget if they do not fit.
func Compose(g Grant, steps []Step) (Achieved, error) { return compose(g, steps) }

func compose(g Grant, steps []Step) (Achieved, error) {
	var sumEps, sumDelta, sumRho float64
	allPure, allRho := true, true
	for _, s := range steps {
		sumEps += s.Epsilon
		sumDelta += s.Delta
		if s.Delta > 0 || s.Epsilon == 0 {
			allPure = false
		}
		rho := s.Rho
		if rho == 0 && s.Delta == 0 && s.Epsilon > 0 {
			rho = s.Epsilon * s.Epsilon / 2
		}
		if rho == 0 {
			allRho = false
		}
		sumRho += rho
	}
	switch g.Kind {
	case GrantPure:
		if !allPure && len(steps) > 0 {
			return Achieved{}, fmt.Errorf("a pure ε-DP grant admits only pure steps: %w", ErrOverBudget)
		}
		if sumEps > g.Epsilon*(1+slack) {
			return Achieved{}, fmt.Errorf("ε spent %.6g > granted %.6g: %w", sumEps, g.Epsilon, ErrOverBudget)
		}
		return Achieved{Epsilon: sumEps, Composition: "pure"}, nil
	case GrantZCDP:
		if !allRho {
			return Achieved{}, fmt.Errorf("a zCDP grant needs every step's ρ: %w", ErrOverBudget)
		}
		if sumRho > g.Rho*(1+slack) {
			return Achieved{}, fmt.Errorf("ρ spent %.6g > granted %.6g: %w", sumRho, g.Rho, ErrOverBudget)
		}
		return Achieved{Rho: sumRho, Composition: "zcdp"}, nil
	}
	// Approximate DP: any valid accounting that fits will do.
	if allPure && len(steps) > 0 && sumEps <= g.Epsilon*(1+slack) {
		return Achieved{Epsilon: sumEps, Composition: "pure"}, nil
	}
	if allRho {
		if e := EpsilonFromRho(sumRho, g.Delta); e <= g.Epsilon*(1+slack) {
			return Achieved{Epsilon: e, Delta: g.Delta, Rho: sumRho, Composition: "zcdp"}, nil
		}
	}
	if sumEps <= g.Epsilon*(1+slack) && sumDelta <= g.Delta*(1+slack) && (sumEps > 0 || len(steps) == 0) {
		return Achieved{Epsilon: sumEps, Delta: sumDelta, Composition: "basic"}, nil
	}
	return Achieved{}, fmt.Errorf("steps do not compose within (ε=%.6g, δ=%.3g): %w", g.Epsilon, g.Delta, ErrOverBudget)
}
