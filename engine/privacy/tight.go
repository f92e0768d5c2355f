package privacy

import (
	"fmt"
	"math"
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
	var gauss []Step
	type key struct {
		mech Mechanism
		eps  float64
	}
	counts := map[key]int{}
	var order []key
	for _, s := range steps {
		if s.Mechanism == MechGaussian {
			gauss = append(gauss, s)
			continue
		}
		eps, err := stepPureEps(s)
		if err != nil {
			return nil, err
		}
		k := key{s.Mechanism, eps}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
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
	if len(gauss) > 0 {
		mu, _, err := RunGDP(gauss)
		if err != nil {
			return nil, err
		}
		p, err := CTDGaussian(mu, h)
		if err != nil {
			return nil, err
		}
		if err := add(p); err != nil {
			return nil, err
		}
	}
	for _, k := range order {
		var p *PLD
		var err error
		if k.mech == MechLaplace {
			p, err = CTDLaplace(k.eps*latticeMargin, h)
		} else {
			p, err = CTDBoundedRange(k.eps, h)
		}
		if err == nil {
			p, err = p.SelfCompose(counts[k])
		}
		if err == nil {
			err = add(p)
		}
		if err != nil {
			return nil, err
		}
	}
	if acc == nil {
		return nil, fmt.Errorf("no steps to account: %w", ErrInvalidBudget)
	}
	return acc, nil
}

// pldEpsilon is RunPLD(steps, DefaultPLDGrid).Epsilon(delta), memoised in
// the process on δ and the steps, of which it is a deterministic function:
// the steps a run spends are composed again, with the same figures, when
// the next step is admitted, when the SDK certifies the result and when
// the host checks it, and an exact plan's calibration (exactBoost) repeats
// when the same request is planned twice in one process. A PLD takes
// milliseconds, a lookup microseconds.
func pldEpsilon(steps []Step, delta float64) (float64, error) {
	// Every field of a Step is a plain value, which %v prints exactly
	// (floats in the shortest form that reads back to the same bits).
	key := fmt.Sprint(delta, steps)
	pldMemo.Lock()
	eps, ok := pldMemo.m[key]
	pldMemo.Unlock()
	if ok {
		return eps, nil
	}
	p, err := RunPLD(steps, DefaultPLDGrid)
	if err == nil {
		eps, err = p.Epsilon(delta)
	}
	if err != nil {
		return 0, err
	}
	pldMemo.Lock()
	if len(pldMemo.m) >= 1024 {
		clear(pldMemo.m) // a long-lived process keeps only recent entries
	}
	pldMemo.m[key] = eps
	pldMemo.Unlock()
	return eps, nil
}

// pldMemo maps pldEpsilon's keys to ε.
var pldMemo = struct {
	sync.Mutex
	m map[string]float64
}{m: map[string]float64{}}
