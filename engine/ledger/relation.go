package ledger

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dplr/dplr/engine/privacy"
)

// Relation is a neighbour relation: what two neighbouring data sets differ
// by. A budget is stated for one relation, and a run's guarantee holds for
// one; the ledger converts a run's charge to its budget's relation, or
// refuses it.
type Relation string

// Neighbour relations.
const (
	// ReplaceRow: one row replaced by another (the number of rows is
	// public). The default for rows and trace data.
	ReplaceRow Relation = "replace-one-row"
	// AddRemoveRow: one row added or removed.
	AddRemoveRow Relation = "add-remove-row"
	// ReplaceUser: one user's whole data replaced. The default for users
	// data.
	ReplaceUser Relation = "replace-one-user"
	// AddRemoveUser: one user's whole data added or removed.
	AddRemoveUser Relation = "add-remove-user"
)

// Relations lists the relations in a stable order.
var Relations = []Relation{ReplaceRow, AddRemoveRow, ReplaceUser, AddRemoveUser}

// ParseRelation checks a relation name.
func ParseRelation(s string) (Relation, error) {
	if slices.Contains(Relations, Relation(s)) {
		return Relation(s), nil
	}
	return "", fmt.Errorf("neighbour relation %q: want one of %s: %w", s, relationNames(), ErrInvalid)
}

func relationNames() string {
	s := make([]string, len(Relations))
	for i, r := range Relations {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// String describes the relation in words.
func (r Relation) String() string {
	switch r {
	case ReplaceRow:
		return "one row replaced"
	case AddRemoveRow:
		return "one row added or removed"
	case ReplaceUser:
		return "one user's data replaced"
	case AddRemoveUser:
		return "one user's data added or removed"
	}
	return string(r)
}

// ParseNeighbours reads a guarantee's Neighbours text (for instance "one
// user's row added or removed (rows clipped to norm ≤ clip)" or "one row
// replaced by an independent draw from the same model") as a relation. A
// text naming a user or a participant is user level, any other row level
// (a row, an observation, a response); "added or removed" (or "add/remove")
// is add/remove, "replaced" replace-one. A text that says neither is an
// error: the ledger does not guess.
func ParseNeighbours(text string) (Relation, error) {
	t := strings.ToLower(text)
	if t == "" {
		return "", fmt.Errorf("the guarantee states no neighbour relation: %w", ErrRelation)
	}
	user := strings.Contains(t, "user's whole") || strings.Contains(t, "user's data") || strings.Contains(t, "one user ") || strings.HasSuffix(t, "one user")
	addRemove := strings.Contains(t, "added or removed") || strings.Contains(t, "add/remove") || strings.Contains(t, "add-remove") || strings.Contains(t, "added/removed")
	replace := strings.Contains(t, "replace")
	switch {
	case addRemove && user:
		return AddRemoveUser, nil
	case addRemove:
		return AddRemoveRow, nil
	case replace && user:
		return ReplaceUser, nil
	case replace:
		return ReplaceRow, nil
	}
	return "", fmt.Errorf("neighbour relation %q: neither replace-one nor add/remove: %w", text, ErrRelation)
}

// groupSize is how many neighbour steps under run's relation make one step
// under the budget's relation, or 0 when no such bound holds.
//
//   - same relation: 1;
//   - user level to row level, same kind: 1 (replacing one row changes one
//     user's data);
//   - add/remove to replace-one (at the same or a finer unit): 2 (a
//     replacement is a removal followed by an addition);
//   - replace-one to add/remove, or row level to user level: none (the
//     first hides neither the data set's size nor a user with several rows).
func groupSize(run, budget Relation) int {
	if run == budget {
		return 1
	}
	switch budget {
	case ReplaceRow:
		switch run {
		case ReplaceUser:
			return 1
		case AddRemoveRow, AddRemoveUser:
			return 2
		}
	case ReplaceUser:
		if run == AddRemoveUser {
			return 2
		}
	case AddRemoveRow:
		if run == AddRemoveUser {
			return 1
		}
	}
	return 0
}

// convert restates a charge made under relation run for a budget under
// relation budget, by group privacy over k = groupSize neighbour steps
// (privacy.Charge.Group). It errors, wrapping ErrRelation, when no
// conversion holds.
func convert(c Charge, run, budget Relation) (Charge, int, error) {
	k := groupSize(run, budget)
	if k == 0 {
		return Charge{}, 0, fmt.Errorf("a run private for %s neighbours says nothing about %s neighbours, the budget's relation: %w", run, budget, ErrRelation)
	}
	if k == 1 {
		return c, 1, nil
	}
	out := c.Group(k)
	if out.IsZero() && !c.IsZero() {
		return Charge{}, 0, fmt.Errorf("converting %v from %s to %s neighbours leaves no valid statement: %w", c, run, budget, ErrRelation)
	}
	return out, k, nil
}

// GuaranteeClass is how a run's guarantee holds: "worst-case" (every
// neighbouring pair), "model-based" (with high probability over data from a
// stated model) or "nominal" (for an exact sampler the run did not use).
func GuaranteeClass(k privacy.GuaranteeKind) string {
	switch k {
	case privacy.Pure, privacy.Approx, privacy.ZCDP:
		return "worst-case"
	case privacy.Model:
		return "model-based"
	case privacy.Nominal:
		return "nominal"
	case privacy.None:
		return "none"
	}
	return ""
}
