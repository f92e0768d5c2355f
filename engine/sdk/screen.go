package sdk

import (
	"fmt"

	"github.com/dplr/dplr/engine/privacy"
)

// The near-random half of a rows estimator's screen (RowsNearRandom;
// plugins/pca/DERIVATIONS.md §14).
const (
	// screenNearRandom: near random when the noise's spectral edge is at
	// least this many times the largest spike the clip lets the reference
	// hold (twice the spike-detection threshold, which is half the edge).
	screenNearRandom = 4.0
	// screenMinP is the least dimension RowsNearRandom decides at: below
	// it a random subspace's own score spreads by more than the margin (at
	// p = 10, r = 3 the dry runs of a hopeless pca-amin fit scored 0.063
	// above random), and the dry runs are cheap there.
	screenMinP = 64
)

// RowsNearRandom is the near-random verdict of a rows estimator of rank r
// on p features whose noise has spectral edge edge at clip 1 on the
// scale of the rows reference model (rows of typical norm 1, r equal
// spikes θ = 1/(4r) + 1/(4p) over a bulk 1/(4p)): at any clip γ the
// noise's edge is edge·γ² and the clipped rows hold a spike of at most
// min(θ, 4θγ²), so when edge/(4θ) ≥ 4 no component stands out (the
// detection threshold is half the edge) whatever the clip. Undecided
// otherwise, or below 64 features.
func RowsNearRandom(p, rank int, edge float64) Screen {
	if rank < 1 || rank >= p || p < screenMinP {
		return Screen{}
	}
	theta := 1/(4*float64(rank)) + 1/(4*float64(p))
	if ratio := edge / (4 * theta); ratio >= screenNearRandom {
		return Screen{Verdict: CertainlyNearRandom, Why: fmt.Sprintf(
			"the noise's spectral edge is %.3g times the largest spike the clip lets the reference model hold, "+
				"above which no component stands out", ratio)}
	}
	return Screen{}
}

// ShareScale is the noise of one step of a plan's share under grant g
// (sensitivity sens in its mechanism's norm, dim coordinates), declared on
// a throwaway accountant as a fit declares it: the Gaussian's deviation,
// the Laplace scale, or the exponential mechanism's β.
func ShareScale(plan *privacy.Plan, g privacy.Grant, share string, sens float64, dim int) (float64, error) {
	b, err := plan.Budget(share)
	if err != nil {
		return 0, err
	}
	acct, err := privacy.NewAccountant(g)
	if err != nil {
		return 0, err
	}
	var rel interface{ Step() privacy.Step }
	switch b.Mechanism {
	case privacy.MechExponential:
		rel, err = acct.Exponential(share, sens, b)
	case privacy.MechLaplace:
		rel, err = acct.Laplace(share, sens, dim, b)
	default:
		rel, err = acct.Gaussian(share, sens, dim, b)
	}
	if err != nil {
		return 0, err
	}
	return rel.Step().Scale, nil
}

// Verdict is a public screen's answer about a fit's expected accuracy on
// the public reference model (Reference).
type Verdict int

// Verdicts.
const (
	// Undecided: only the dry runs can tell.
	Undecided Verdict = iota
	// CertainlyNearRandom: the estimator's noise drowns every signal the
	// reference model (clipped as the fit clips it) can hold; the dry runs
	// would score near a random subspace.
	CertainlyNearRandom
	// CertainlyFar: the estimator's noise is well below the reference
	// model's eigengap; the dry runs would score far above random.
	CertainlyFar
)

// Screen is a Screener's answer: its verdict and, in words with the
// numbers, why.
type Screen struct {
	Verdict Verdict
	Why     string
}

// Screener is implemented, beside Planner, by the options type of an
// estimator that can place a fit from public quantities alone (the
// shape, the checked plan of the fit under grant g, its options): the
// spectral size of the noise it adds against the largest signal the clip
// allows and against the reference model's eigengap. PlanOf asks it
// before any dry run: a fit's pre-flight (PlanIndicator) then runs none
// when it decides, and dplr plan (PlanFull) takes its verdict where its
// dry runs give none. A verdict must agree with what the dry runs would
// say (CertainlyNearRandom only where they say near random,
// CertainlyFar never where they do); an error means Undecided.
type Screener interface {
	Screen(s Shape, plan *privacy.Plan, g privacy.Grant) (Screen, error)
}

// screenOf is the verdict of the Screener among the bound options (or
// an OptionSet's first member that is one) on shape s and grant g, over
// the fit's declared plan; Undecided for an estimator without one, under
// a private selection, or when the hook fails.
func screenOf(prep *prepared, s Shape, g privacy.Grant) Screen {
	if selectionOf(prep.opts) != nil {
		return Screen{}
	}
	members := []any{prep.opts}
	if set, ok := prep.opts.(OptionSet); ok {
		members = set
	}
	for _, m := range members {
		sc, ok := m.(Screener)
		if !ok {
			continue
		}
		_, plan, err := declare(prep.info, prep.opts, s, g)
		if err != nil || plan == nil {
			return Screen{}
		}
		var out Screen
		if err := safeHook(func() error {
			var err error
			out, err = sc.Screen(s, plan, g)
			return err
		}); err != nil {
			return Screen{}
		}
		return out
	}
	return Screen{}
}

// screened is plan p with the screen's verdict: where the dry runs gave
// no indicator, a decided screen sets NearRandom; the note says which way
// the indicator was decided.
func screened(p Plan, sc Screen) Plan {
	switch {
	case sc.Verdict == Undecided:
		return p
	case p.Scored:
		word := "agrees"
		if p.NearRandom != (sc.Verdict == CertainlyNearRandom) {
			word = "disagrees" // a screen out of step with its estimator: the dry runs decide
		}
		p.Note += fmt.Sprintf("; the public screen %s: %s", word, sc.Why)
		return p
	}
	p.NearRandom = sc.Verdict == CertainlyNearRandom
	p.Note += "; " + screenNote(sc)
	return p
}

// ScreenDecided begins the note of a plan whose indicator the public
// screen decided (see Screener).
const ScreenDecided = "decided by the public screen"

// screenNote says what a decided screen concluded, and that no dry run
// was needed.
func screenNote(sc Screen) string {
	what := "far from random"
	if sc.Verdict == CertainlyNearRandom {
		what = "near random"
	}
	return fmt.Sprintf("%s, without a dry run: %s (%s)", ScreenDecided, what, sc.Why)
}
