package sdk

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dplr/dplr/engine/privacy"
)

// MechanismUse is one privacy mechanism a fit will use, and what for.
type MechanismUse struct {
	// Mechanism is privacy.MechGaussian, MechLaplace or MechExponential.
	Mechanism privacy.Mechanism
	// For says, in a few words, which step or option needs it ("clip
	// quantile (clip=auto)"), so that a refusal can tell the user what to
	// change.
	For string
}

// String writes the use as "exponential (clip quantile (clip=auto))".
func (u MechanismUse) String() string {
	if u.For == "" {
		return string(u.Mechanism)
	}
	return fmt.Sprintf("%s (%s)", u.Mechanism, u.For)
}

// Declaration is the pre-flight answer about mechanisms: whether the
// estimator declared them, and which. The host refuses before reserving a
// request the data set's budget rule cannot admit, and withholds (charged)
// a result with a step of an undeclared mechanism; docs/plugins.md says
// more.
type Declaration struct {
	// Declared is false when the estimator's options do not implement
	// Planner (its mechanisms are unknown before the fit).
	Declared bool
	// Uses lists the mechanisms the fit may use (each mechanism once,
	// with the purposes of its uses joined), sorted by mechanism name.
	Uses []MechanismUse
}

// Mechanisms lists the declared mechanisms, each once, sorted.
func (d Declaration) Mechanisms() []privacy.Mechanism {
	out := make([]privacy.Mechanism, 0, len(d.Uses))
	for _, u := range d.Uses {
		if !slices.Contains(out, u.Mechanism) {
			out = append(out, u.Mechanism)
		}
	}
	slices.Sort(out)
	return out
}

// Allows reports whether a step of mechanism m keeps the declaration: true
// for an undeclared estimator, or when m is declared.
func (d Declaration) Allows(m privacy.Mechanism) bool {
	if !d.Declared {
		return true
	}
	return slices.ContainsFunc(d.Uses, func(u MechanismUse) bool { return u.Mechanism == m })
}

// GaussianOnly reports whether the declaration promises that every step is
// Gaussian (vacuously true for a declaration with no mechanism).
func (d Declaration) GaussianOnly() bool {
	return d.Declared && !slices.ContainsFunc(d.Uses, func(u MechanismUse) bool { return u.Mechanism != privacy.MechGaussian })
}

// String writes the declaration ("gaussian (second moment), exponential
// (clip quantile)"; "undeclared"; "no privacy mechanism").
func (d Declaration) String() string {
	switch {
	case !d.Declared:
		return "undeclared"
	case len(d.Uses) == 0:
		return "no privacy mechanism"
	}
	s := make([]string, len(d.Uses))
	for i, u := range d.Uses {
		s[i] = u.String()
	}
	return strings.Join(s, ", ")
}

// knownMechanisms are the mechanisms the privacy package can verify.
var knownMechanisms = []privacy.Mechanism{privacy.MechGaussian, privacy.MechLaplace, privacy.MechExponential}

// KnownMechanism reports whether m is a mechanism the privacy package
// verifies (gaussian, laplace, exponential).
func KnownMechanism(m privacy.Mechanism) bool { return slices.Contains(knownMechanisms, m) }

// NewDeclaration normalises a list of uses into a Declaration: unknown
// mechanism names are refused, uses of one mechanism are merged (their
// purposes joined with "; ", duplicates dropped) and sorted by mechanism.
func NewDeclaration(uses []MechanismUse) (Declaration, error) {
	d := Declaration{Declared: true, Uses: []MechanismUse{}}
	for _, u := range uses {
		if !KnownMechanism(u.Mechanism) {
			return Declaration{}, fmt.Errorf("declares the unknown privacy mechanism %q (known: %s)", u.Mechanism, mechList(knownMechanisms))
		}
		i := slices.IndexFunc(d.Uses, func(v MechanismUse) bool { return v.Mechanism == u.Mechanism })
		switch {
		case i < 0:
			d.Uses = append(d.Uses, u)
		case u.For != "" && !slices.Contains(strings.Split(d.Uses[i].For, "; "), u.For):
			if d.Uses[i].For == "" {
				d.Uses[i].For = u.For
			} else {
				d.Uses[i].For += "; " + u.For
			}
		}
	}
	slices.SortFunc(d.Uses, func(a, b MechanismUse) int { return strings.Compare(string(a.Mechanism), string(b.Mechanism)) })
	return d, nil
}

func mechList(ms []privacy.Mechanism) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// UsesOf turns plan shares into mechanism uses, named by their shares (a
// share without a Mechanism is skipped).
func UsesOf(shares ...privacy.Share) []MechanismUse {
	out := make([]MechanismUse, 0, len(shares))
	for _, s := range shares {
		if s.Mechanism != "" {
			out = append(out, MechanismUse{Mechanism: s.Mechanism, For: s.Name})
		}
	}
	return out
}

// PlanSpec is a fit's privacy plan as data: the shares it splits the
// grant into, each naming its mechanism, decided from the options, the
// public shape and the grant alone (never the data). The SDK checks it in
// full before anything is reserved and builds the run's plan from it
// before Fit (Run.Plan).
type PlanSpec struct {
	// Noise is the calibration the shares are planned under (privacy.Noise*;
	// for a Pure spec one of privacy.PureChoices).
	Noise string
	// Shares split the grant; every share names its Mechanism.
	Shares []privacy.Share
	// Pure: the shares are fractions of ε of Laplace and exponential
	// steps, planned by privacy.NewPurePlan.
	Pure bool
	// TestEpsilon and TestDelta, when TestEpsilon is positive, are the cost
	// of a propose-test-release test paid outside the shares, which then
	// span what it leaves (privacy.NewPTRPlan); Test names its mechanism.
	TestEpsilon, TestDelta float64
	Test                   MechanismUse
}

// New builds the plan spec describes for a's grant.
func (spec PlanSpec) New(a *privacy.Accountant) (*privacy.Plan, error) {
	for _, s := range spec.Shares {
		if !KnownMechanism(s.Mechanism) {
			return nil, fmt.Errorf("plan: share %q names no known privacy mechanism (%q; known: %s): %w", s.Name, s.Mechanism, mechList(knownMechanisms), privacy.ErrInvalidBudget)
		}
	}
	switch {
	case spec.Pure:
		return privacy.NewPurePlan(a, spec.Noise, spec.Shares...)
	case spec.TestEpsilon > 0:
		return privacy.NewPTRPlan(a, spec.Noise, spec.TestEpsilon, spec.TestDelta, spec.Shares...)
	}
	return privacy.NewPlan(a, spec.Noise, spec.Shares...)
}

// uses are the mechanism uses of the spec: its shares' and its test's.
func (spec PlanSpec) uses() []MechanismUse {
	uses := UsesOf(spec.Shares...)
	if spec.TestEpsilon > 0 {
		uses = append(uses, spec.Test)
	}
	return uses
}

// Planner is implemented by the options type of an estimator whose plan
// is data: Plan answers, from the bound options, the public shape s and
// the grant g, the plan of a fit (an error refuses the request, a
// BadRequest). Pre-flight, the SDK declares the mechanisms of its shares
// and checks the whole plan against the grant, so a plan the grant or the
// data set's budget rule cannot admit is refused before anything is
// reserved; the run's plan (Run.Plan) is built from the same answer.
type Planner interface {
	Plan(s Shape, g privacy.Grant) (PlanSpec, error)
}

// PlanFor is the plan of a fit with the bound options opts (as Opts
// returns them) on data of shape s for a's grant; nil, nil for options
// that are not a Planner. Errors are BadRequests.
func PlanFor(opts any, s Shape, a *privacy.Accountant) (*privacy.Plan, error) {
	spec, ok, err := specOf(opts, s, a.Grant())
	if !ok {
		return nil, nil
	}
	var p *privacy.Plan
	if err == nil {
		p, err = spec.New(a)
	}
	if err != nil {
		return nil, BadRequest("%w", err)
	}
	return p, nil
}

// specOf is the answer of the Planner among bound options (or the first
// among an OptionSet's members) for shape s and grant g; ok is false when
// there is none.
func specOf(opts any, s Shape, g privacy.Grant) (spec PlanSpec, ok bool, err error) {
	members := []any{opts}
	if set, isSet := opts.(OptionSet); isSet {
		members = set
	}
	for _, m := range members {
		if pl, isPlanner := m.(Planner); isPlanner {
			err = safeHook(func() error {
				var err error
				spec, err = pl.Plan(s, g)
				return err
			})
			return spec, true, err
		}
	}
	return PlanSpec{}, false, nil
}

// Declare is the pre-flight answer about mechanisms for a request that
// Prepare bound into opts: a non-private estimator declares none; options
// that implement Planner (or an OptionSet's first member that does)
// declare the mechanisms of their plan's shares, after the whole plan is
// checked against the grant g; otherwise the estimator is undeclared. An
// error (from the hook, an unknown mechanism name, a plan the grant cannot
// pay for) is a BadRequest.
func Declare(info Info, opts any, s Shape, g privacy.Grant) (Declaration, error) {
	d, _, err := declare(info, opts, s, g)
	return d, err
}

// declare is Declare that also returns the checked plan of the run (the
// whole selection's under an active selection; nil when not planned).
func declare(info Info, opts any, s Shape, g privacy.Grant) (Declaration, *privacy.Plan, error) {
	if info.NonPrivate {
		return Declaration{Declared: true, Uses: []MechanismUse{}}, nil, nil
	}
	acct, err := privacy.NewAccountant(g)
	if err != nil {
		return Declaration{}, nil, BadRequest("estimator %s: %w", info.Name, err)
	}
	spec, declared, err := specOf(opts, s, g)
	if err != nil {
		return Declaration{}, nil, BadRequest("estimator %s: %w", info.Name, err)
	}
	var plan *privacy.Plan
	uses := spec.uses()
	if sel := selectionOf(opts); sel != nil {
		if plan, err = checkSelection(sel, s, acct); err != nil {
			return Declaration{}, nil, fmt.Errorf("estimator %s: %w", info.Name, err)
		}
		uses = append(uses, MechanismUse{Mechanism: privacy.MechExponential, For: "private selection among candidates"})
	} else if declared {
		if plan, err = spec.New(acct); err != nil {
			return Declaration{}, nil, BadRequest("estimator %s: %w", info.Name, err)
		}
	}
	if !declared {
		return Declaration{}, plan, nil
	}
	d, err := NewDeclaration(uses)
	if err != nil {
		return Declaration{}, nil, BadRequest("estimator %s: %w", info.Name, err)
	}
	return d, plan, nil
}

// PrepareDeclared is Prepare followed by Declare: the whole pre-flight
// answer of an estimator for a request (bound options, footprint and
// declared mechanisms).
func PrepareDeclared(info Info, raw map[string]string, s Shape, g privacy.Grant) (opts any, footprint int64, d Declaration, err error) {
	p, err := prepare(info, raw, s)
	if err != nil {
		return nil, 0, Declaration{}, err
	}
	d, err = Declare(p.info, p.opts, s, g)
	if err != nil {
		return nil, 0, Declaration{}, err
	}
	return p.opts, p.footprint, d, nil
}

// CheckSteps reports the first step whose mechanism the declaration does
// not allow (nil when every step keeps it, or the estimator is
// undeclared).
func (d Declaration) CheckSteps(steps []privacy.Step) error {
	for i, st := range steps {
		if !d.Allows(st.Mechanism) {
			return fmt.Errorf("privacy step %d (%q) uses the %s mechanism, which the estimator did not declare before the fit (it declared: %s)",
				i+1, st.Name, st.Mechanism, d)
		}
	}
	return nil
}
