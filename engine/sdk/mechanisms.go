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

// MechanismDeclarer is implemented by an options type that says, before
// anything is spent, every privacy mechanism a fit with its bound values
// may use, from the options, the public shape s and the grant g alone (never
// the data). The host refuses before reserving a request the data set's
// budget rule cannot admit, and withholds (charged) a result with a step
// of an undeclared mechanism; docs/plugins.md says more. Mechanisms runs
// after the Check hook; an error refuses the request (a BadRequest).
type MechanismDeclarer interface {
	Mechanisms(s Shape, g privacy.Grant) ([]MechanismUse, error)
}

// Declaration is the pre-flight answer about mechanisms: whether the
// estimator declared them, and which.
type Declaration struct {
	// Declared is false when the estimator does not implement
	// MechanismDeclarer (its mechanisms are unknown before the fit).
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

// UsesOf turns plan shares into mechanism uses (a share without a
// Mechanism is skipped): an estimator that builds its privacy.Plan shares
// from its options alone can declare exactly what its plan will pay for,
//
//	func (o *options) Mechanisms(s sdk.Shape, g privacy.Grant) ([]sdk.MechanismUse, error) {
//		return sdk.UsesOf(o.shares()...), nil
//	}
func UsesOf(shares ...privacy.Share) []MechanismUse {
	out := make([]MechanismUse, 0, len(shares))
	for _, s := range shares {
		if s.Mechanism != "" {
			out = append(out, MechanismUse{Mechanism: s.Mechanism, For: s.Name})
		}
	}
	return out
}

// Declare is the pre-flight answer about mechanisms for a request that
// Prepare bound into opts (see MechanismDeclarer): a non-private estimator
// declares none; an options value (or each member of an OptionSet) that
// implements MechanismDeclarer is asked, and the answers are merged; with
// no implementation the estimator is undeclared. An error (from the hook,
// or an unknown mechanism name) is a BadRequest.
func Declare(info Info, opts any, s Shape, g privacy.Grant) (Declaration, error) {
	if info.NonPrivate {
		return Declaration{Declared: true, Uses: []MechanismUse{}}, nil
	}
	members := []any{opts}
	if set, ok := opts.(OptionSet); ok {
		members = set
	}
	var (
		uses     []MechanismUse
		declared bool
	)
	for _, m := range members {
		md, ok := m.(MechanismDeclarer)
		if !ok {
			continue
		}
		declared = true
		var got []MechanismUse
		if err := safeHook(func() error {
			var err error
			got, err = md.Mechanisms(s, g)
			return err
		}); err != nil {
			return Declaration{}, BadRequest("estimator %s: %w", info.Name, err)
		}
		uses = append(uses, got...)
	}
	if err := checkSelection(opts, s, g); err != nil {
		return Declaration{}, fmt.Errorf("estimator %s: %w", info.Name, err)
	}
	if !declared {
		return Declaration{}, nil
	}
	if selectionOf(opts) != nil {
		uses = append(uses, MechanismUse{Mechanism: privacy.MechExponential, For: "private selection among candidates"})
	}
	d, err := NewDeclaration(uses)
	if err != nil {
		return Declaration{}, BadRequest("estimator %s: %w", info.Name, err)
	}
	return d, nil
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
