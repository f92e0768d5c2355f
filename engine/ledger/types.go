package ledger

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/privacy"
)

// RunID identifies a run in the ledger. IDs are never reused.
type RunID int64

// String formats the id.
func (id RunID) String() string { return fmt.Sprintf("run-%d", int64(id)) }

// State is a run's state in the ledger.
type State string

// Run states.
const (
	// Reserved: charged its full grant, not settled yet, and the process
	// that reserved it is alive (or on another host, so cannot be checked).
	Reserved State = "reserved"
	// Succeeded: released; charged what it achieved.
	Succeeded State = "succeeded"
	// Failed: charged its full grant if noise was drawn, refunded otherwise.
	Failed State = "failed"
	// Interrupted: never settled and the process that reserved it is gone
	// (killed, crashed, machine rebooted): stays charged its full grant.
	Interrupted State = "interrupted"
)

// ReserveRequest describes a run about to be charged.
type ReserveRequest struct {
	Estimator string            // estimator name (required)
	Plugin    string            // plugin path or name@version, for the record
	Params    map[string]string // the run's raw parameters, for the record
	Grant     privacy.Grant     // the budget the run is granted (charged in full until settled)
	Name      string            // optional data set name, recorded if the data set is new and the name is free
	// Relation is the neighbour relation a new data set's budget is stated
	// for ("": ReplaceRow; the host passes ReplaceUser for users data). It
	// does not change an existing data set's.
	Relation Relation
	// Neighbours, when the run's neighbour relation is known before it
	// runs (as a guarantee's Neighbours text), makes the reservation charge
	// the grant converted to the budget's relation (an add/remove ε run
	// reserves 2ε under replace-one), so that a run that could not be
	// charged is refused before it runs (ErrRelation, ErrBudgetExceeded).
	Neighbours string
	// MechanismsDeclared says that the run's estimator declared, before it
	// ran, which privacy mechanisms its steps will use: Mechanisms (empty:
	// none). Reserve then refuses (ErrIncompatible, nothing written) a run
	// declared to use a mechanism other than the Gaussian on a data set
	// whose budget follows the Gaussian-DP filter, which could only withhold
	// its result at Settle. Undeclared runs are reserved as before.
	MechanismsDeclared bool
	Mechanisms         []privacy.Mechanism
	// Sketch, if not empty, is stored as the data set's row sketch in the
	// reservation's transaction (as SetSketch does), unless the hash is a
	// file linked to the data set: its rows are not all of the data set's.
	Sketch []uint64
	// LinkTo, when set, is the budgeted data set whose rows the run's data
	// mostly are (a subset or a cross-validation fold; the host's sketch
	// test finds it). The reservation's transaction links the run's hash
	// to it, as Link does (or merges it, as Merge does, when it has runs
	// of its own and no total), and charges the run there, so there is no
	// moment at which the run's data is unlinked. Refused (ErrOverlap,
	// nothing written) when LinkTo has no total, or the hash cannot be
	// merged (see autoMerge).
	LinkTo string
}

// Outcome is how a reserved run ended, given to Settle.
type Outcome struct {
	// Status is Succeeded or Failed.
	Status State
	// Steps are the steps the run's accountant accepted (acct.Steps());
	// for a success they determine the charge. Preferred over Achieved. A
	// non-nil empty slice means nothing was spent. For a failure after
	// noise was drawn they tell whether the run was Gaussian-only, which
	// keeps its reservation's GDP statement (docs/ledger.md); nil
	// means unknown.
	Steps []privacy.Step
	// Achieved is the accountant's composed cost (acct.Achieved()), used for
	// a success when Steps is nil.
	Achieved *privacy.Achieved
	// NoiseDrawn says whether a failed run drew any noise: if not, the run is
	// refunded; if so, it stays charged its full grant. When unsure, say true.
	NoiseDrawn bool
	// Error is the failure's message, for the record.
	Error string
	// Guarantee is the kind of guarantee the result carries; the history
	// shows its class (worst-case, model-based, nominal).
	Guarantee privacy.GuaranteeKind
	// Neighbours is the guarantee's Neighbours text; a success is charged
	// for the budget's relation from it (see ParseNeighbours and Settle).
	// Empty: the run is counted as made under the budget's relation, with a
	// note saying so.
	Neighbours string
}

// Run is one run's record, as History returns it.
type Run struct {
	ID        RunID             `json:"id"`
	DataHash  string            `json:"data_hash"`
	Estimator string            `json:"estimator"`
	Plugin    string            `json:"plugin,omitempty"`
	Params    map[string]string `json:"params,omitempty"`
	Grant     privacy.Grant     `json:"grant"`
	State     State             `json:"state"`
	// Charge is what the run counts against the budget (zero if refunded).
	Charge Charge `json:"charge"`
	// Basis says where the charge comes from: "grant" (the full grant:
	// reserved, interrupted, failed after noise), "refund", or the run
	// accountant's composition ("pure", "zcdp", "basic").
	Basis string `json:"basis"`
	// Relation is the neighbour relation the run's guarantee holds for,
	// Neighbours the guarantee's own words, Factor the group-privacy factor
	// its cost was multiplied by for the budget's relation (1: none), and
	// Class the guarantee's class: worst-case, model-based or nominal
	// (empty while reserved).
	Relation   Relation `json:"relation,omitempty"`
	Neighbours string   `json:"neighbours,omitempty"`
	Factor     int      `json:"factor,omitempty"`
	Class      string   `json:"guarantee_class,omitempty"`
	NoiseDrawn bool     `json:"noise_drawn,omitempty"`
	Refunded   bool     `json:"refunded,omitempty"`
	Error      string   `json:"error,omitempty"`
	Note       string   `json:"note,omitempty"`
	// Data is the content hash of the data the run read when it is not
	// the data set's own: a file linked to it (by a user, or by the run
	// itself when its rows were rows of the data set).
	Data       string    `json:"data,omitempty"`
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	ReservedAt time.Time `json:"reserved_at"`
	SettledAt  time.Time `json:"settled_at,omitzero"`
}

// MarshalJSON writes the grant with lower-case keys.
func (r Run) MarshalJSON() ([]byte, error) {
	type plain Run
	return json.Marshal(struct {
		plain
		Grant grantJSON `json:"grant"`
	}{plain(r), toGrantJSON(r.Grant)})
}

// RunCounts counts a data set's runs by state.
type RunCounts struct {
	Total       int `json:"total"`
	Reserved    int `json:"reserved"`
	Interrupted int `json:"interrupted"`
	Succeeded   int `json:"succeeded"`
	Failed      int `json:"failed"`
	Refunded    int `json:"refunded"` // failed before drawing noise (included in Failed)
	External    int `json:"external"` // spends recorded from outside dplr (in Total, not in Succeeded)
	Linked      int `json:"linked"`   // runs that read a file linked to the data set (a fold, a subset; in Total)
}

// Status is a data set's budget position, as Show returns it.
type Status struct {
	DataHash  string `json:"data_hash"`
	Name      string `json:"name,omitempty"`
	HasBudget bool   `json:"has_budget"`
	// Relation is the neighbour relation the budget counts in.
	Relation Relation `json:"relation"`
	// Aliases are the content hashes linked to the data set.
	Aliases []string `json:"aliases,omitempty"`
	// Sketch is the data set's row sketch, if one was stored.
	Sketch      []uint64      `json:"sketch,omitempty"`
	Total       privacy.Grant `json:"total"`
	BudgetSetAt time.Time     `json:"budget_set_at,omitzero"`
	// Spent composes every charged run (reserved, interrupted, settled);
	// with no budget it holds plain sums (Composition "sum").
	Spent Spent `json:"spent"`
	// Rule is the admission rule of the budget (RuleGDP, RuleClassic or
	// RuleUndecided; "" without a budget); Spent and Remaining are stated
	// under it. See docs/ledger.md.
	Rule string `json:"rule,omitempty"`
	// Remaining is the headroom (zero without a budget); see Remaining.
	Remaining Remaining `json:"remaining"`
	Runs      RunCounts `json:"runs"`

	charged privacy.Tally
}

// MarshalJSON writes the total with lower-case keys, and null without a
// budget; without a budget there is no remaining figure to misread as zero.
func (s Status) MarshalJSON() ([]byte, error) {
	type plain Status
	var total *grantJSON
	var rem *Remaining
	if s.HasBudget {
		g := toGrantJSON(s.Total)
		total, rem = &g, &s.Remaining
	}
	return json.Marshal(struct {
		plain
		Total     *grantJSON `json:"total"`
		Remaining *Remaining `json:"remaining,omitempty"` // absent without a budget
	}{plain(s), total, rem})
}

// Fits reports whether a run granted g would be accepted now: nil if so,
// else an error wrapping ErrBudgetExceeded, ErrIncompatible or ErrInvalid.
// It is a preview; Reserve decides atomically.
func (s Status) Fits(g privacy.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("grant: %w: %w", ErrInvalid, err)
	}
	if !s.HasBudget {
		return nil
	}
	if err := compatible(s.Total, g); err != nil {
		return err
	}
	return fits(s.Total, s.charged, privacy.ReserveCharge(g))
}

// String describes the status in words, for the CLI.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data set %s", s.DataHash)
	if s.Name != "" {
		fmt.Fprintf(&b, " (%s)", s.Name)
	}
	b.WriteString("\n")
	if !s.HasBudget {
		b.WriteString("  budget:    no budget set (runs are allowed and recorded)\n")
		fmt.Fprintf(&b, "  spent:     %s\n", spentString(s.Spent))
	} else {
		fmt.Fprintf(&b, "  budget:    %s (neighbours: %s)\n", GrantString(s.Total), s.Relation)
		fmt.Fprintf(&b, "  rule:      %s\n", s.RuleText())
		fmt.Fprintf(&b, "  spent:     %s\n", spentString(s.Spent))
		fmt.Fprintf(&b, "  remaining: %s\n", remainingString(s.Total, s.Remaining))
	}
	c := s.Runs
	fmt.Fprintf(&b, "  runs:      %d (%d succeeded, %d failed of which %d refunded, %d reserved, %d interrupted)\n",
		c.Total-c.External, c.Succeeded, c.Failed, c.Refunded, c.Reserved, c.Interrupted)
	if c.External > 0 {
		fmt.Fprintf(&b, "  outside:   %d spend(s) recorded from outside dplr\n", c.External)
	}
	if c.Linked > 0 {
		fmt.Fprintf(&b, "  via links: %d of the runs read a file linked to it (a fold or subset of its rows)\n", c.Linked)
	}
	for _, a := range s.Aliases {
		fmt.Fprintf(&b, "  linked:    %s\n", a)
	}
	return b.String()
}

// Admission rules a budget follows (Status.Rule; see docs/ledger.md).
const (
	// RuleGDP is the Gaussian-DP filter of an (ε, δ) total whose first
	// charged run was Gaussian-only: every run must be Gaussian-only and
	// Σ μ_i² ≤ μ_T² (Smith & Thakurta 2022).
	RuleGDP = "gaussian-dp"
	// RuleClassic is the privacy package's composition of the runs'
	// statements: the zCDP/Rényi filter where each run's ρ is known
	// (Feldman & Zrnic 2021), pure or basic composition otherwise.
	RuleClassic = "classic"
	// RuleUndecided is an (ε, δ) total with no charged run yet: the first
	// run to be charged fixes the rule, and until then a run must fit both.
	RuleUndecided = "undecided"
)

// ruleOf names the admission rule of a data set's position.
func ruleOf(ds *dsState) string {
	switch {
	case ds == nil || ds.Total == nil:
		return ""
	case !ds.approxTotal():
		return RuleClassic
	}
	switch ds.Final.Mode() {
	case privacy.FilterGDP:
		return RuleGDP
	case "":
		return RuleUndecided
	}
	return RuleClassic
}

// RuleText says in words which admission rule the budget follows and why.
func (s Status) RuleText() string {
	switch s.Rule {
	case RuleGDP:
		mu, _ := privacy.GDPMu(s.Total.Epsilon, s.Total.Delta)
		return fmt.Sprintf("Gaussian-DP filter (Σμ² ≤ μ_T² = %.4g, μ_T = %.4g): the first charged run was Gaussian-only, so runs must be Gaussian-only, or granted a pure ε (counted μ = 2Φ⁻¹(e^ε/(1+e^ε)))", mu*mu, mu)
	case RuleUndecided:
		return "undecided: the first charged run fixes it (Gaussian-DP filter if it is Gaussian-only, classic otherwise); until then a run must fit both"
	case RuleClassic:
		switch s.Total.Kind {
		case privacy.GrantZCDP:
			return "classic: zCDP/Rényi filter (Σρ ≤ ρ_T)"
		case privacy.GrantPure:
			return "classic: basic composition of pure runs (Σε ≤ ε_T)"
		}
		return "classic: zCDP/Rényi filter where each run's ρ is known, pure or basic composition otherwise"
	}
	return "none (no budget set)"
}

// AdmitsMechanisms refuses, before anything is reserved, a run granted g
// and declared to use mechs on a budget that could not admit it: under the
// Gaussian-DP filter a run must be Gaussian-only, or granted a pure ε
// (then ε-DP, hence μ_ε-GDP whatever its mechanisms; see the package
// doc). The error wraps ErrMechanism and ErrIncompatible. It is a preview;
// Reserve decides atomically.
func (s Status) AdmitsMechanisms(g privacy.Grant, mechs []privacy.Mechanism) error {
	return mechanismsAdmitted(s.Rule, g, mechs)
}

// mechanismsAdmitted is the mechanism check of admission under rule.
func mechanismsAdmitted(rule string, g privacy.Grant, mechs []privacy.Mechanism) error {
	if rule != RuleGDP || g.Kind == privacy.GrantPure {
		return nil
	}
	var other []string
	for _, m := range mechs {
		if m != privacy.MechGaussian && !slices.Contains(other, string(m)) {
			other = append(other, string(m))
		}
	}
	if len(other) == 0 {
		return nil
	}
	what := "the " + other[0] + " mechanism"
	if len(other) > 1 {
		what = "the " + strings.Join(other, " and ") + " mechanisms"
	}
	return fmt.Errorf("the budget follows the Gaussian-DP filter (its first charged run was Gaussian-only), which admits runs whose every step is Gaussian, or runs granted a pure ε, and this run, granted %s, declares %s: %w: %w",
		GrantString(g), what, ErrMechanism, ErrIncompatible)
}

// GrantString describes a grant or budget in words.
func GrantString(g privacy.Grant) string {
	switch g.Kind {
	case privacy.GrantPure:
		return fmt.Sprintf("pure ε-DP, ε = %.4g", g.Epsilon)
	case privacy.GrantApprox:
		return fmt.Sprintf("(ε, δ)-DP, ε = %.4g, δ = %.3g", g.Epsilon, g.Delta)
	case privacy.GrantZCDP:
		return fmt.Sprintf("ρ-zCDP, ρ = %.4g", g.Rho)
	}
	return fmt.Sprintf("unknown budget kind %q", g.Kind)
}

func spentString(sp Spent) string {
	switch sp.Composition {
	case "none":
		return "nothing"
	case "pure":
		if sp.Delta > 0 {
			return fmt.Sprintf("ε = %.4g, δ = %.3g (pure runs, basic composition)", sp.Epsilon, sp.Delta)
		}
		return fmt.Sprintf("ε = %.4g (basic composition of pure runs)", sp.Epsilon)
	case "zcdp":
		if sp.Epsilon > 0 {
			return fmt.Sprintf("ρ = %.4g, i.e. ε = %.4g at δ = %.3g (zCDP composition)", sp.Rho, sp.Epsilon, sp.Delta)
		}
		return fmt.Sprintf("ρ = %.4g (zCDP composition)", sp.Rho)
	case "basic":
		return fmt.Sprintf("ε = %.4g, δ = %.3g (basic composition)", sp.Epsilon, sp.Delta)
	case "mixed":
		return fmt.Sprintf("ε = %.4g, δ = %.3g (pure runs' ε plus the zCDP composition, ρ = %.4g, of the others)", sp.Epsilon, sp.Delta, sp.Rho)
	case "gdp":
		return fmt.Sprintf("μ = %.4g, i.e. ε = %.4g at δ = %.3g (Gaussian-DP filter: Σμ² = %.4g)", sp.Mu, sp.Epsilon, sp.Delta, sp.Mu*sp.Mu)
	case "sum":
		var parts []string
		if sp.Epsilon > 0 {
			parts = append(parts, fmt.Sprintf("Σε = %.4g, Σδ = %.3g", sp.Epsilon, sp.Delta))
		}
		if sp.Rho > 0 {
			parts = append(parts, fmt.Sprintf("Σρ = %.4g", sp.Rho))
		}
		if len(parts) == 0 {
			return "runs of mixed kinds (see history)"
		}
		return strings.Join(parts, "; ")
	}
	return sp.Composition
}

// RemainingText says in words what the budget still affords, in the forms
// its total allows ("an (ε = 0.5, δ = 5e-06) run, or a ρ = 0.01 run"), or
// "no budget set".
func (s Status) RemainingText() string {
	if !s.HasBudget {
		return "no budget set"
	}
	return remainingString(s.Total, s.Remaining)
}

func remainingString(total privacy.Grant, r Remaining) string {
	switch total.Kind {
	case privacy.GrantPure:
		if r.Epsilon == 0 {
			return "none (no further run fits)"
		}
		return fmt.Sprintf("ε = %.4g", r.Epsilon)
	case privacy.GrantZCDP:
		if r.Rho == 0 {
			return "none (no further run fits)"
		}
		return fmt.Sprintf("ρ = %.4g", r.Rho)
	}
	var parts []string
	if r.Epsilon > 0 && r.Mu > 0 {
		parts = append(parts, fmt.Sprintf("μ = %.4g: a Gaussian-only (ε = %.4g, δ = %.3g) run (Gaussian-DP filter)", r.Mu, r.Epsilon, r.Delta))
	} else if r.Epsilon > 0 {
		parts = append(parts, fmt.Sprintf("an (ε = %.4g, δ = %.3g) run", r.Epsilon, r.Delta))
	}
	if r.Rho > 0 {
		parts = append(parts, fmt.Sprintf("a ρ = %.4g run", r.Rho))
	}
	if r.PureEpsilon > 0 {
		parts = append(parts, fmt.Sprintf("a pure ε = %.4g run of any mechanisms", r.PureEpsilon))
	}
	if len(parts) == 0 {
		return "none (no further run fits)"
	}
	return strings.Join(parts, ", or ")
}

// grantJSON is a grant with lower-case JSON keys.
type grantJSON struct {
	Kind    privacy.GrantKind `json:"kind"`
	Epsilon float64           `json:"epsilon,omitempty"`
	Delta   float64           `json:"delta,omitempty"`
	Rho     float64           `json:"rho,omitempty"`
}

func toGrantJSON(g privacy.Grant) grantJSON {
	return grantJSON{Kind: g.Kind, Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho}
}
