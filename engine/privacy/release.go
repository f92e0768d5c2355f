package privacy

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// ErrDraw is wrapped when a release is drawn in a way its declaration does
// not allow: a second time, with a different number of values, or without
// a random source.
var ErrDraw = errors.New("privacy: release drawn against its declaration")

// releaseRecord is the accountant's bookkeeping for one declared release.
type releaseRecord struct {
	name  string
	drawn bool
}

// declare records st (as Spend does) and registers a release for it.
func (a *Accountant) declare(st Step) (int, error) { return a.spend(st, true) }

// claim marks release id drawn, refusing a second draw.
func (a *Accountant) claim(id int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &a.releases[id]
	if r.drawn {
		return fmt.Errorf("release %q was already drawn; declare a new step for new noise: %w", r.name, ErrDraw)
	}
	r.drawn = true
	return nil
}

// Undrawn returns the names of the releases declared through Gaussian,
// Laplace or Exponential whose noise has not been drawn. A finished fit
// should leave it empty: a declared step whose noise was never drawn means
// the estimator released something other than what it declared (or
// declared a cost it did not need).
func (a *Accountant) Undrawn() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range a.releases {
		if !r.drawn {
			out = append(out, r.name)
		}
	}
	return out
}

// Release is a declared additive-noise step (Gaussian or Laplace). It owns
// its noise scale and grid and draws the noise itself, exactly once, on
// exactly the number of values it was declared for; each value is rounded
// to the grid before the noise is added (see AddGaussian).
type Release struct {
	acct *Accountant
	id   int
	step Step
	add  func(src *Source, dst []float64, scale float64)
}

// Gaussian declares a Gaussian step releasing dim values of ℓ2 sensitivity
// sens, paid from b: zCDP budgets calibrate σ = Δ'/sqrt(2ρ), classical and
// analytic budgets calibrate σ to (ε, δ) (Δ' is the sensitivity enlarged
// for the grid). A pure budget cannot pay for Gaussian noise. The step is
// refused, and nothing is recorded, if it does not fit the grant.
func (a *Accountant) Gaussian(name string, sens float64, dim int, b Budget) (*Release, error) {
	if err := b.checkMechanism(MechGaussian); err != nil {
		return nil, fmt.Errorf("step %q: %w", name, err)
	}
	var st Step
	var err error
	switch b.Noise {
	case NoiseZCDP, NoiseExact:
		st, err = gaussianRhoStep(name, sens, dim, b.Rho)
	case NoiseClassical, NoiseAnalytic:
		st, err = gaussianEpsDeltaStep(name, sens, dim, b.Epsilon, b.Delta, b.Noise)
	case NoisePure:
		err = fmt.Errorf("step %q: a pure budget cannot pay for Gaussian noise: %w", name, ErrInvalidBudget)
	default:
		err = fmt.Errorf("step %q: unknown noise calibration %q: %w", name, b.Noise, ErrInvalidBudget)
	}
	if err != nil {
		return nil, err
	}
	st.Calibration = b.Noise
	return a.newRelease(st, (*Source).AddGaussian)
}

// Laplace declares a Laplace step releasing dim values of ℓ1 sensitivity
// sens at pure cost b.Epsilon (for a zCDP budget, the ε with ε²/2 = b.Rho).
func (a *Accountant) Laplace(name string, sens float64, dim int, b Budget) (*Release, error) {
	if err := b.checkMechanism(MechLaplace); err != nil {
		return nil, fmt.Errorf("step %q: %w", name, err)
	}
	eps, err := b.pureEpsilon(MechLaplace)
	if err != nil {
		return nil, fmt.Errorf("step %q: %w", name, err)
	}
	st, err := laplaceStep(name, sens, dim, eps)
	if err != nil {
		return nil, err
	}
	return a.newRelease(st, (*Source).AddLaplace)
}

func (a *Accountant) newRelease(st Step, add func(*Source, []float64, float64)) (*Release, error) {
	id, err := a.declare(st)
	if err != nil {
		return nil, err
	}
	return &Release{acct: a, id: id, step: st, add: add}, nil
}

// Name returns the step's name.
func (r *Release) Name() string { return r.step.Name }

// Scale returns the noise scale (σ or b).
func (r *Release) Scale() float64 { return r.step.Scale }

// Grid returns the grid the noised values are rounded to.
func (r *Release) Grid() float64 { return r.step.Grid }

// Dim returns the number of values the release noises.
func (r *Release) Dim() int { return r.step.Dim }

// Step returns the declared step.
func (r *Release) Step() Step { return r.step }

// Add rounds x to the grid and adds the noise, in place. len(x) must equal
// the declared dim.
func (r *Release) Add(src *Source, x []float64) error {
	return r.AddParts(src, x)
}

// AddParts releases several slices as one step: their lengths must add up
// to the declared dim.
func (r *Release) AddParts(src *Source, parts ...[]float64) error {
	return r.draw(src, "the noised vector", parts)
}

// AddSym releases the symmetric matrix m in place: its upper triangle
// (diagonal included), n(n+1)/2 values, is rounded and noised and the lower
// triangle mirrors it.
func (r *Release) AddSym(src *Source, m *mat.SymDense) error {
	return r.draw(src, "the upper triangle", upperRows(m))
}

// AddDense releases the r×c matrix m in place (r·c values).
func (r *Release) AddDense(src *Source, m *mat.Dense) error {
	rows, cols := m.Dims()
	raw := m.RawMatrix()
	parts := make([][]float64, rows)
	for i := range parts {
		parts[i] = raw.Data[i*raw.Stride : i*raw.Stride+cols]
	}
	return r.draw(src, "the matrix", parts)
}

// draw checks that parts (what, in an error) hold the declared number of
// values, marks the release drawn and rounds and noises them in place.
func (r *Release) draw(src *Source, what string, parts [][]float64) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if src == nil {
		return fmt.Errorf("release %q: no random source: %w", r.step.Name, ErrDraw)
	}
	if n != r.step.Dim {
		return fmt.Errorf("release %q: %s has %d values, but the step was declared for %d: %w", r.step.Name, what, n, r.step.Dim, ErrDraw)
	}
	if err := r.acct.claim(r.id); err != nil {
		return err
	}
	src.addAll(r.add, r.step.Scale, parts...)
	return nil
}

// ExponentialRelease is a declared exponential-mechanism step: it owns the
// inverse temperature β and hands it to the sampler exactly once.
type ExponentialRelease struct {
	acct *Accountant
	id   int
	step Step
}

// Exponential declares an exponential-mechanism step whose utility has
// sensitivity sens, at pure cost b.Epsilon (for a zCDP budget, the ε with
// bounded-range cost ε²/8 = b.Rho); β = ε/(2Δ).
func (a *Accountant) Exponential(name string, sens float64, b Budget) (*ExponentialRelease, error) {
	return a.exponential(name, sens, b, false)
}

// exponential declares an exponential-mechanism step at pure cost
// b.Epsilon; monotone sets β = ε/Δ (see ExponentialMonotone).
func (a *Accountant) exponential(name string, sens float64, b Budget, monotone bool) (*ExponentialRelease, error) {
	if err := b.checkMechanism(MechExponential); err != nil {
		return nil, fmt.Errorf("step %q: %w", name, err)
	}
	eps, err := b.pureEpsilon(MechExponential)
	if err != nil {
		return nil, fmt.Errorf("step %q: %w", name, err)
	}
	st, err := exponentialStep(name, sens, eps)
	if err != nil {
		return nil, err
	}
	if monotone {
		st.Calibration, st.Scale = CalibMonotone, eps/sens
		st.Note = "monotone utility: β = ε/Δ"
	}
	id, err := a.declare(st)
	if err != nil {
		return nil, err
	}
	return &ExponentialRelease{acct: a, id: id, step: st}, nil
}

// CalibMonotone is the Calibration of an exponential-mechanism step whose
// utility is monotone in the data (see ExponentialMonotone).
const CalibMonotone = "monotone"

// ExponentialMonotone declares an exponential-mechanism step whose utility
// is monotone: between neighbouring data sets every candidate's utility
// moves in the same direction, by at most sens. Then β = ε/Δ, twice the
// general β, is ε-DP (McSherry & Talwar 2007, Thm 6) and ε-bounded-range
// (docs/privacy.md), so the zCDP cost is ε²/8 as for the general mechanism.
// The step records Calibration CalibMonotone.
func (a *Accountant) ExponentialMonotone(name string, sens float64, b Budget) (*ExponentialRelease, error) {
	return a.exponential(name, sens, b, true)
}

// Beta returns the inverse temperature β: sample with density ∝ exp(β·u).
func (e *ExponentialRelease) Beta() float64 { return e.step.Scale }

// Name returns the step's name.
func (e *ExponentialRelease) Name() string { return e.step.Name }

// Step returns the declared step.
func (e *ExponentialRelease) Step() Step { return e.step }

// Sample marks the release drawn and calls sample with β; a second call is
// refused. An error from sample is returned wrapped (the budget stays
// spent: the sampler may already have looked at the data).
func (e *ExponentialRelease) Sample(sample func(beta float64) error) error {
	if err := e.acct.claim(e.id); err != nil {
		return err
	}
	if err := sample(e.step.Scale); err != nil {
		return fmt.Errorf("release %q: sampling: %w", e.step.Name, err)
	}
	return nil
}
