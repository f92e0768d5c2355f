package privacy

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Tight accounting of a run's steps: exact Gaussian composition (RunGDP)
// and the privacy loss distribution of Gaussian and pure steps (RunPLD),
// which Compose and Certify try as candidates. The Gaussian noise is drawn
// on a lattice; its privacy curve differs from the continuous one by a
// relative amount of order (γ/σ)² ≈ 1e-24, which the 1e-9 relative
// allowance on μ (as on σ for the analytic calibration) covers.

// PLDAccountingNote states, for result texts, how the default PLD
// accountant discretises and its error bound. It bounds the composition of
// each step's worst-case profile (the bounded-range supremum for an
// exponential step, valid under adaptive choices), which is not optimal for
// non-adaptive exponential steps (docs/privacy.md, "Accounting").
const PLDAccountingNote = "connect-the-dots on a 0.001 loss grid, each exponential step by the supremum privacy profile of bounded-range mechanisms, valid when steps depend on earlier outputs: " +
	"never below the true ε, and at most 0.001 per pure step plus 0.001 above the exact composition of those per-step profiles " +
	"(for exponential steps chosen independently of each other the optimal composition can be smaller)"

// Accounting methods of the tight candidates (Achieved.Composition).
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
		return math.Max(s.Epsilon, exponentialImpliedEps(s)), nil
	}
	return 0, fmt.Errorf("step %q: unknown mechanism %q: %w", s.Name, s.Mechanism, ErrInvalidBudget)
}

// exponentialImpliedEps is the ε that an exponential-mechanism step's
// sensitivity and inverse temperature imply (2Δβ, or Δβ for a monotone
// utility; see docs/privacy.md), or 0 when they are not recorded. It is both the
// step's pure ε and its bounded-range parameter.
func exponentialImpliedEps(s Step) float64 {
	if !(s.Sensitivity > 0) || !(s.Scale > 0) {
		return 0
	}
	if s.Calibration == CalibMonotone {
		return s.Sensitivity * s.Scale
	}
	return 2 * s.Sensitivity * s.Scale
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

// RunPLD returns the connect-the-dots PLD of a list of steps on grid h
// (0: DefaultPLDGrid): Gaussian steps composed exactly into one μ-GDP
// factor, Laplace and bounded-range exponential factors, all convolved
// (docs/privacy.md, "Privacy loss distributions", for the factors and the
// error bound). The result dominates the run's composition.
func RunPLD(steps []Step, h float64) (*PLD, error) {
	if h == 0 {
		h = DefaultPLDGrid
	}
	if err := checkGrid(h); err != nil {
		return nil, err
	}
	f, err := factorsOf(steps)
	if err != nil {
		return nil, err
	}
	return f.build(h)
}

// pldFactors are what RunPLD composes: the Gaussian steps' joint μ (when
// gauss) and the pure factors, each with its number of steps, in the order
// of their first step. The PLD is a function of them and the grid alone.
type pldFactors struct {
	gauss bool
	mu    float64
	pure  []pldPure
}

type pldPure struct {
	mech  Mechanism
	eps   float64
	count int
}

// factorsOf groups steps into the factors of their PLD.
func factorsOf(steps []Step) (pldFactors, error) {
	var f pldFactors
	var gauss []Step
	for _, s := range steps {
		if s.Mechanism == MechGaussian {
			gauss = append(gauss, s)
			continue
		}
		eps, err := stepPureEps(s)
		if err != nil {
			return f, err
		}
		i := slices.IndexFunc(f.pure, func(p pldPure) bool { return p.mech == s.Mechanism && p.eps == eps })
		if i < 0 {
			f.pure = append(f.pure, pldPure{mech: s.Mechanism, eps: eps})
			i = len(f.pure) - 1
		}
		f.pure[i].count++
	}
	if f.gauss = len(gauss) > 0; f.gauss {
		var err error
		if f.mu, _, err = RunGDP(gauss); err != nil {
			return f, err
		}
	}
	if !f.gauss && len(f.pure) == 0 {
		return f, fmt.Errorf("no steps to account: %w", ErrInvalidBudget)
	}
	return f, nil
}

// build convolves the factors' PLDs on grid h: the Gaussian one first,
// then the pure ones in order.
func (f pldFactors) build(h float64) (*PLD, error) {
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
	if f.gauss {
		p, err := CTDGaussian(f.mu, h)
		if err != nil {
			return nil, err
		}
		if err := add(p); err != nil {
			return nil, err
		}
	}
	for _, k := range f.pure {
		var p *PLD
		var err error
		if k.mech == MechLaplace {
			p, err = CTDLaplace(k.eps*latticeMargin, h)
		} else {
			p, err = CTDBoundedRange(k.eps, h)
		}
		if err == nil {
			p, err = p.SelfCompose(k.count)
		}
		if err == nil {
			err = add(p)
		}
		if err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// pldEpsilon is RunPLD(steps, DefaultPLDGrid).Epsilon(delta), memoised in
// the process on the factors and δ, of which it is a deterministic
// function: the steps a run spends are composed again, with the same
// figures, when the next step is admitted, when the SDK certifies the
// result and when the host checks it, and a plan's calibration
// (exactBoost) repeats when the same request is checked and then fitted.
// A PLD costs milliseconds, a lookup microseconds.
func pldEpsilon(steps []Step, delta float64) (float64, error) {
	f, err := factorsOf(steps)
	if err != nil {
		return 0, err
	}
	key := f.key(delta)
	pldMemo.Lock()
	eps, ok := pldMemo.m[key]
	pldMemo.Unlock()
	if ok {
		return eps, nil
	}
	p, err := f.build(DefaultPLDGrid)
	if err == nil {
		eps, err = p.Epsilon(delta)
	}
	if err != nil {
		return 0, err
	}
	pldMemo.Lock()
	if len(pldMemo.m) >= pldMemoSize {
		clear(pldMemo.m) // a long-lived process keeps only recent entries
	}
	pldMemo.m[key] = eps
	pldMemo.Unlock()
	return eps, nil
}

// pldMemoSize bounds pldMemo (an entry is about 100 bytes).
const pldMemoSize = 4096

// pldMemo maps pldFactors.key to ε.
var pldMemo = struct {
	sync.Mutex
	m map[string]float64
}{m: map[string]float64{}}

// key identifies the factors and δ exactly (%v prints a float64 in the
// shortest form that reads back to the same bits).
func (f pldFactors) key(delta float64) string { return fmt.Sprint(f.mu, delta, f.pure) }
