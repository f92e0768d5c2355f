package privacy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// Noise calibrations: how a Plan turns a grant into per-step budgets, and
// how a Gaussian step is calibrated.
const (
	// NoiseZCDP calibrates Gaussian steps in zCDP (σ = Δ/sqrt(2ρ)); the
	// grant's whole ρ (an (ε, δ) grant's largest ρ under the tight
	// conversion) is split. It is the tightest choice for composed runs.
	NoiseZCDP = "zcdp"
	// NoiseClassical calibrates each Gaussian step to its own (ε, δ) with
	// the textbook formula (per-step ε ≤ 1); the grant's (ε, δ) is split by
	// basic composition, as most papers do.
	NoiseClassical = "classical"
	// NoiseAnalytic is NoiseClassical with the analytic Gaussian
	// calibration of Balle & Wang (any ε).
	NoiseAnalytic = "analytic"
	// NoisePure splits a pure or (ε, δ) grant's ε among pure steps
	// (Laplace, exponential mechanism) only; δ is not used.
	NoisePure = "pure"
	// NoiseExact calibrates with the tightest accounting dplr can certify:
	// μ² of Gaussian DP for a Gaussian-only plan under an (ε, δ) grant, the
	// zCDP split scaled up as far as the PLD allows for a mixed one
	// (docs/privacy.md, "Pure plans and exact scaling"); budgets are paid
	// like zCDP budgets and admitted by the GDP or PLD composition. Under a
	// ρ grant it equals NoiseZCDP; a pure grant needs NoisePure.
	NoiseExact = "exact"
)

// Budget is one step's share of a grant, in the currency of its Plan's
// noise: Rho for NoiseZCDP, (Epsilon, Delta) for NoiseClassical and
// NoiseAnalytic, Epsilon for NoisePure. Pass it to Accountant.Gaussian,
// Laplace or Exponential.
type Budget struct {
	Noise   string
	Rho     float64
	Epsilon float64
	Delta   float64
	// Mechanism, when set, is the only mechanism the budget may be spent
	// on (copied from the Share).
	Mechanism Mechanism
}

// pureEpsilon is the pure ε a Laplace or exponential step may use from b:
// b.Epsilon, or for a zCDP budget the ε whose zCDP cost is b.Rho (ε²/2 for
// Laplace, ε²/8 for the exponential mechanism).
func (b Budget) pureEpsilon(m Mechanism) (float64, error) {
	if b.Noise == NoiseZCDP || b.Noise == NoiseExact {
		if err := checkRho(b.Rho); err != nil {
			return 0, err
		}
		if m == MechExponential {
			return math.Sqrt(8 * b.Rho), nil
		}
		return math.Sqrt(2 * b.Rho), nil
	}
	switch b.Noise {
	case NoisePure, NoiseClassical, NoiseAnalytic:
		return b.Epsilon, checkEps(b.Epsilon)
	}
	return 0, fmt.Errorf("unknown noise calibration %q: %w", b.Noise, ErrInvalidBudget)
}

// checkMechanism refuses a budget restricted to another mechanism.
func (b Budget) checkMechanism(m Mechanism) error {
	if b.Mechanism != "" && b.Mechanism != m {
		return fmt.Errorf("the budget is planned for the %s mechanism, not %s: %w", b.Mechanism, m, ErrInvalidBudget)
	}
	return nil
}

// Share is one named part of a Plan, spent in Steps equal steps (0 means
// 1). Its size is given by exactly one of: Weight, the fraction of the
// grant; Fixed, a per-step cost set by a formula (a paper's σ turned into
// its ρ, say), in the plan's currency (ρ for NoiseZCDP, ε for NoisePure;
// not available for the (ε, δ) calibrations); or Rest, what the other
// shares leave.
type Share struct {
	Name   string
	Weight float64
	Fixed  float64
	Rest   bool
	Steps  int
	// Mechanism optionally restricts the share to one mechanism, so that
	// NewPlan can refuse, before any draw, a Gaussian share under a plan
	// that can only pay for pure steps.
	Mechanism Mechanism
}

// Plan splits a grant into named shares. It is checked in full by NewPlan,
// before the first step is declared, so that a run never stops half way
// because a later step's budget is unusable.
type Plan struct {
	noise  string
	total  Budget // for an exact plan under an (ε, δ) grant, before scaling
	shares []Share
	prefix string        // see Prefixed
	factor float64       // see Factor
	exact  *exactScaling // set for an exact plan under an (ε, δ) grant
}

// exactScaling is the scaling of an exact plan's zCDP split (exactBoost),
// made on the first use of the plan's budgets, or on a goroutine of its own
// from Calibrate, rather than by NewPlan: a
// plan made only to be checked (a fit's pre-flight declaration, answered
// by another process than the fit's) then pays for no PLD search. The
// scaling cannot make a checked split unusable (its factor lies in
// [1, 64]) short of overflow, which Budget reports.
type exactScaling struct {
	once  sync.Once
	grant Grant
	rho   float64 // the zCDP split's total ρ, then the scaled one
}

// totalBudget is the plan's whole budget, an exact plan's scaled.
func (p *Plan) totalBudget() Budget {
	t := p.total
	if e := p.exact; e != nil {
		e.once.Do(func() { e.rho *= exactBoost(e.grant, e.rho, p.shares) })
		t.Rho = e.rho
	}
	return t
}

// NewPlan splits the grant of a into shares under the noise calibration
// noise, checking the whole plan before anything is spent (docs/privacy.md,
// "Plans and releases"): the grant's kind against noise, unique non-empty
// names, positive finite weights adding up to at most 1, non-negative step
// counts, usable per-step budgets (classical: ε ≤ 1), and fixed costs that
// fit the grant and leave something for a Rest share. A plan spans the
// whole grant: make it before the first step. Errors wrap ErrInvalidBudget.
// An exact plan under an (ε, δ) grant is scaled on the first use of its
// budgets (Budget, Total) or from Calibrate, so that a plan made only to
// be checked costs no calibration.
func NewPlan(a *Accountant, noise string, shares ...Share) (*Plan, error) {
	if a == nil {
		return nil, fmt.Errorf("plan: no accountant: %w", ErrInvalidBudget)
	}
	g := a.Grant()
	p := &Plan{noise: noise, total: Budget{Noise: noise}}
	switch noise {
	case NoiseZCDP, NoiseExact:
		rho, err := a.TotalRho()
		if err != nil {
			return nil, fmt.Errorf("plan: %s noise: %w", noise, err)
		}
		p.total.Rho = rho
	case NoiseClassical, NoiseAnalytic:
		if g.Kind != GrantApprox {
			return nil, fmt.Errorf("plan: the %s Gaussian calibration needs an (ε, δ) grant, got a %s grant: %w", noise, g.Kind, ErrInvalidBudget)
		}
		p.total.Epsilon, p.total.Delta = g.Epsilon, g.Delta
	case NoisePure:
		if g.Kind != GrantPure && g.Kind != GrantApprox {
			return nil, fmt.Errorf("plan: pure steps need a pure or (ε, δ) grant, got a %s grant: %w", g.Kind, ErrInvalidBudget)
		}
		p.total.Epsilon = g.Epsilon
	default:
		return nil, fmt.Errorf("plan: unknown noise calibration %q (want %s, %s, %s or %s): %w",
			noise, NoiseZCDP, NoiseClassical, NoiseAnalytic, NoisePure+" or "+NoiseExact, ErrInvalidBudget)
	}
	if len(shares) == 0 {
		return nil, fmt.Errorf("plan: no shares: %w", ErrInvalidBudget)
	}
	var sum float64
	rest := -1
	for _, s := range shares {
		if err := p.checkShare(&s, len(p.shares), &rest); err != nil {
			return nil, err
		}
		sum += s.Weight
		p.shares = append(p.shares, s)
	}
	if rest >= 0 {
		left := 1 - sum
		if !(left > 1e-12) {
			return nil, fmt.Errorf("plan: share %q is to get what the others leave, but they use %.6g of the grant: %w", p.shares[rest].Name, sum, ErrInvalidBudget)
		}
		p.shares[rest].Weight = left
		sum = 1
	}
	if !within(sum, 1) {
		return nil, fmt.Errorf("plan: the shares use %.6g of the grant, more than all of it: %w", sum, ErrInvalidBudget)
	}
	for _, s := range p.shares {
		if err := p.checkStep(s.Name, p.perStepOf(p.total, s)); err != nil {
			return nil, err
		}
	}
	if noise == NoiseExact && g.Kind == GrantApprox {
		p.exact = &exactScaling{grant: g, rho: p.total.Rho}
	}
	return p, nil
}

// checkShare validates s (the i-th share) and turns a Fixed cost into its
// weight; rest records the index of the Rest share.
func (p *Plan) checkShare(s *Share, i int, rest *int) error {
	if s.Name == "" {
		return fmt.Errorf("plan: a share has no name: %w", ErrInvalidBudget)
	}
	if slices.ContainsFunc(p.shares, func(o Share) bool { return o.Name == s.Name }) {
		return fmt.Errorf("plan: share %q is listed twice: %w", s.Name, ErrInvalidBudget)
	}
	if s.Steps < 0 {
		return fmt.Errorf("plan: share %q: %d steps: %w", s.Name, s.Steps, ErrInvalidBudget)
	}
	if s.Steps == 0 {
		s.Steps = 1
	}
	if s.Mechanism == MechGaussian && p.noise == NoisePure {
		return fmt.Errorf("plan: share %q is a Gaussian share, which a pure plan cannot pay for (use zcdp, classical or analytic noise with an (ε, δ) or ρ grant): %w", s.Name, ErrInvalidBudget)
	}
	given := 0
	if s.Weight != 0 {
		given++
	}
	if s.Fixed != 0 {
		given++
	}
	if s.Rest {
		given++
	}
	if given != 1 {
		return fmt.Errorf("plan: share %q must give exactly one of Weight, Fixed and Rest: %w", s.Name, ErrInvalidBudget)
	}
	switch {
	case s.Rest:
		if *rest >= 0 {
			return fmt.Errorf("plan: shares %q and %q both take the rest: %w", p.shares[*rest].Name, s.Name, ErrInvalidBudget)
		}
		*rest = i
	case s.Fixed != 0:
		if p.noise != NoiseZCDP && p.noise != NoisePure {
			return fmt.Errorf("plan: share %q: a fixed cost needs zcdp or pure noise, not %s: %w", s.Name, p.noise, ErrInvalidBudget)
		}
		if !(s.Fixed > 0) || math.IsInf(s.Fixed, 0) {
			return fmt.Errorf("plan: share %q: fixed cost %v must be positive and finite: %w", s.Name, s.Fixed, ErrInvalidBudget)
		}
		total := p.total.Rho
		if p.noise == NoisePure {
			total = p.total.Epsilon
		}
		s.Weight = s.Fixed * float64(s.Steps) / total
	default:
		if !(s.Weight > 0) || math.IsInf(s.Weight, 0) {
			return fmt.Errorf("plan: share %q: weight %v must be positive and finite: %w", s.Name, s.Weight, ErrInvalidBudget)
		}
	}
	return nil
}

// perStepOf is the budget of one step of share s when the plan's whole
// budget is total.
func (p *Plan) perStepOf(total Budget, s Share) Budget {
	f := s.Weight / float64(s.Steps)
	b := Budget{Noise: p.noise, Rho: total.Rho * f, Epsilon: total.Epsilon * f, Delta: total.Delta * f, Mechanism: s.Mechanism}
	if s.Fixed > 0 {
		// The formula's cost exactly, not its round trip through a weight.
		if p.noise == NoiseZCDP {
			b.Rho = s.Fixed
		} else {
			b.Epsilon = s.Fixed
		}
	}
	return b
}

// checkStep refuses a per-step budget no release could use.
func (p *Plan) checkStep(name string, b Budget) error {
	var err error
	switch p.noise {
	case NoiseZCDP, NoiseExact:
		err = checkRho(b.Rho)
	case NoisePure:
		err = checkEps(b.Epsilon)
	case NoiseAnalytic:
		err = checkEpsDelta(b.Epsilon, b.Delta)
	case NoiseClassical:
		if err = checkEpsDelta(b.Epsilon, b.Delta); err == nil && b.Epsilon > 1 && b.Mechanism != MechLaplace && b.Mechanism != MechExponential {
			err = fmt.Errorf("classical Gaussian calibration is proved only for per-step ε ≤ 1, but each step gets ε = %.4g (total ε = %.4g); lower ε, use more steps or the analytic calibration: %w",
				b.Epsilon, p.total.Epsilon, ErrInvalidBudget)
		}
	}
	if err != nil {
		return fmt.Errorf("plan: share %q: %w", name, err)
	}
	return nil
}

// Noise returns the plan's noise calibration.
func (p *Plan) Noise() string { return p.noise }

// Total returns the whole grant in the plan's currency.
func (p *Plan) Total() Budget { return p.totalBudget() }

// Calibrate starts an exact plan's scaling on a goroutine of its own, so
// that it runs beside the work a fit does before it first reads a budget
// (a pass over the rows); Budget and Total wait for it. The scaling is the
// same whenever it runs. Other plans have nothing to calibrate.
func (p *Plan) Calibrate() {
	if p.exact != nil {
		go p.totalBudget()
	}
}

// Mechanism returns the mechanism the named share is restricted to (""
// for none) without waiting for an exact plan's scaling.
func (p *Plan) Mechanism(name string) (Mechanism, error) {
	s, err := p.share(name)
	return s.Mechanism, err
}

// share returns the named share (prefixed).
func (p *Plan) share(name string) (Share, error) {
	name = p.prefix + name
	for _, s := range p.shares {
		if s.Name == name {
			return s, nil
		}
	}
	return Share{}, fmt.Errorf("plan has no share %q: %w", name, ErrInvalidBudget)
}

// Shares returns the plan's shares (Steps filled in: never 0; Weight
// filled in for Fixed and Rest shares); on a Prefixed view, those whose
// names start with the prefix, named without it.
func (p *Plan) Shares() []Share {
	var out []Share
	for _, s := range p.shares {
		if name, ok := strings.CutPrefix(s.Name, p.prefix); ok {
			s.Name = name
			out = append(out, s)
		}
	}
	return out
}

// Prefixed returns a view of p whose Budget(name) is p's Budget(prefix +
// name): one fit among several planned together (the candidates of a
// private selection) reads its shares by their own names.
func (p *Plan) Prefixed(prefix string) *Plan {
	q := *p
	q.prefix = p.prefix + prefix
	return &q
}

// Budget returns the per-step budget of the named share: its weight times
// the grant, divided by its number of steps.
func (p *Plan) Budget(name string) (Budget, error) {
	s, err := p.share(name)
	if err != nil {
		return Budget{}, err
	}
	b := p.perStepOf(p.totalBudget(), s)
	if p.exact != nil {
		if err := p.checkStep(s.Name, b); err != nil {
			return Budget{}, err
		}
	}
	return b, nil
}
