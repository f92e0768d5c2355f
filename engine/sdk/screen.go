package sdk

import (
	"fmt"

	"github.com/dplr/dplr/engine/privacy"
)

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
