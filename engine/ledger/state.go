package ledger

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/dplr/dplr/engine/privacy"
)

// Event kinds: every change to the ledger is one event appended to the
// chain.
const (
	evGenesis  = "genesis"  // the chain's first record: the ledger's id
	evDataset  = "dataset"  // a data set registered (name, relation)
	evName     = "name"     // a data set (re)named
	evRelation = "relation" // a budget's neighbour relation stated
	evBudget   = "budget"   // a total set or changed (old and new values)
	evLink     = "link"     // another content hash linked to a data set
	evReserve  = "reserve"  // a run reserved, charged its grant
	evSettle   = "settle"   // a reserved run settled
	evCharge   = "charge"   // a spend made outside dplr
	evMerge    = "merge"    // another data set merged in: its charges added, its hash linked
	evUnlink   = "unlink"   // a linked hash unlinked (it becomes a data set of its own)
)

// event is one record of the chain. Its canonical encoding is its JSON
// encoding (fields in declaration order, map keys sorted, floats in Go's
// shortest round-trip form); the record's hash is the SHA-256 of those
// bytes, which include the previous record's hash (Prev), so that each
// record is chained to the one before. State is the data set's position
// after the event: the verifier recomputes it from the previous verified
// position and the event, and refuses a record whose State differs.
type event struct {
	V       int            `json:"v"`
	Ledger  string         `json:"ledger"`
	Seq     int64          `json:"seq"`
	Prev    string         `json:"prev"`
	Time    string         `json:"time"`
	Kind    string         `json:"kind"`
	Dataset string         `json:"dataset,omitempty"`
	Alias   string         `json:"alias,omitempty"`
	Name    string         `json:"name,omitempty"`
	Rel     Relation       `json:"relation,omitempty"`
	Old     *privacy.Grant `json:"old,omitempty"`
	New     *privacy.Grant `json:"new,omitempty"`
	Run     *runEvent      `json:"run,omitempty"`
	Note    string         `json:"note,omitempty"`
	// Rule, on a budget event, is the admission rule the change fixes
	// (filterClassic; "" keeps the rule).
	Rule string `json:"rule,omitempty"`
	// Inherit, on a merge record, is every charge of the data set merged
	// in (Alias); on a registration, every charge of the data set Alias
	// it was unlinked from. The verifier checks it against that data
	// set's verified position.
	Inherit *privacy.Tally `json:"inherit,omitempty"`
	// Auto, on a link or merge record, says that it was made by a run
	// whose data are mostly rows of the data set (ReserveRequest.LinkTo).
	Auto  bool     `json:"auto,omitempty"`
	State *dsState `json:"state,omitempty"`
}

// runEvent is the run part of a reserve, settle or charge event.
type runEvent struct {
	ID         int64             `json:"id"`
	Estimator  string            `json:"estimator,omitempty"`
	Plugin     string            `json:"plugin,omitempty"`
	Params     map[string]string `json:"params,omitempty"`
	Grant      *privacy.Grant    `json:"grant,omitempty"`
	Owner      *owner            `json:"owner,omitempty"`
	Status     State             `json:"status,omitempty"`
	Charge     Charge            `json:"charge"`
	Basis      string            `json:"basis,omitempty"`
	NoiseDrawn bool              `json:"noise_drawn,omitempty"`
	Error      string            `json:"error,omitempty"`
	Note       string            `json:"note,omitempty"`
	Neighbours string            `json:"neighbours,omitempty"`
	Relation   Relation          `json:"run_relation,omitempty"`
	Class      string            `json:"class,omitempty"`
	Factor     int               `json:"factor,omitempty"`
	// Data, on a reservation, is the content hash the run read when it is
	// not the data set's own (a file linked to it).
	Data string `json:"data,omitempty"`
}

// openRun is a reservation not settled yet: charged its grant.
type openRun struct {
	Charge Charge        `json:"charge"`
	Grant  privacy.Grant `json:"grant"`
	Owner  owner         `json:"owner"`
}

// counts are a data set's settled runs by outcome.
type counts struct {
	Succeeded int `json:"succeeded,omitempty"`
	Failed    int `json:"failed,omitempty"`
	Refunded  int `json:"refunded,omitempty"`
	External  int `json:"external,omitempty"`
	Linked    int `json:"linked,omitempty"` // runs reserved on a file linked to the data set
}

// dsState is a data set's position after an event: what admission needs,
// recomputed from the chain.
type dsState struct {
	Name     string             `json:"name,omitempty"`
	Relation Relation           `json:"relation"`
	Total    *privacy.Grant     `json:"total,omitempty"`
	SetAt    string             `json:"set_at,omitempty"`
	Final    privacy.Tally      `json:"final"` // settled charges
	Open     map[string]openRun `json:"open,omitempty"`
	Counts   counts             `json:"counts"`
	Aliases  []string           `json:"aliases,omitempty"`
}

// clone copies s deeply enough to be modified.
func (s *dsState) clone() *dsState {
	if s == nil {
		return nil
	}
	c := *s
	c.Open = maps.Clone(s.Open)
	c.Aliases = append([]string(nil), s.Aliases...)
	if s.Total != nil {
		t := *s.Total
		c.Total = &t
	}
	return &c
}

// openIDs are the open reservations' ids, in increasing order.
func (s *dsState) openIDs() []int64 {
	ids := make([]int64, 0, len(s.Open))
	for k := range s.Open {
		id, _ := strconv.ParseInt(k, 10, 64)
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// charged is every charge of the data set: settled, plus each open
// reservation's grant (in id order), leaving out run except (0: none).
func (s *dsState) charged(except int64) privacy.Tally {
	a := s.Final
	for _, id := range s.openIDs() {
		if id != except {
			a.Add(s.Open[strconv.FormatInt(id, 10)].Charge)
		}
	}
	return a
}

// apply computes the data set's position after ev from its position prev
// (nil: the data set is new). It is the single definition of what each
// event does, used both when writing and when verifying.
func apply(prev *dsState, ev *event) (*dsState, error) {
	s := prev.clone()
	if s == nil {
		if ev.Kind != evDataset {
			return nil, fmt.Errorf("event %d (%s) on unregistered data set %s", ev.Seq, ev.Kind, short(ev.Dataset))
		}
		s = &dsState{}
	}
	switch ev.Kind {
	case evDataset:
		if prev != nil {
			return nil, fmt.Errorf("event %d registers data set %s twice", ev.Seq, short(ev.Dataset))
		}
		s.Name, s.Relation = ev.Name, ev.Rel
		if ev.Inherit != nil {
			s.Final.Merge(*ev.Inherit)
		}
	case evName:
		s.Name = ev.Name
	case evRelation:
		s.Relation = ev.Rel
	case evBudget:
		if ev.New == nil {
			return nil, fmt.Errorf("event %d: budget without a total", ev.Seq)
		}
		t := *ev.New
		s.Total, s.SetAt = &t, ev.Time
		if ev.V >= filterVersion {
			s.fixOnHistory()
		}
		if ev.Rule == privacy.FilterClassic && s.approxTotal() {
			s.Final.Filter = privacy.FilterClassic // see setTotal
		}
	case evLink:
		s.Aliases = append(s.Aliases, ev.Alias)
	case evMerge:
		if ev.Inherit == nil {
			return nil, fmt.Errorf("event %d: merge without charges", ev.Seq)
		}
		s.Final.Merge(*ev.Inherit)
		s.Aliases = append(s.Aliases, ev.Alias)
		s.fixOnHistory()
	case evUnlink:
		i := slices.Index(s.Aliases, ev.Alias)
		if i < 0 {
			return nil, fmt.Errorf("event %d unlinks %s, which is not linked to data set %s", ev.Seq, short(ev.Alias), short(ev.Dataset))
		}
		s.Aliases = slices.Delete(s.Aliases, i, i+1)
		if len(s.Aliases) == 0 {
			s.Aliases = nil
		}
	case evReserve:
		r := ev.Run
		if r == nil || r.Grant == nil || r.Owner == nil || r.ID != ev.Seq {
			return nil, fmt.Errorf("event %d: malformed reservation", ev.Seq)
		}
		if s.Open == nil {
			s.Open = map[string]openRun{}
		}
		if ev.V >= filterVersion && s.approxTotal() && s.Final.Filter == "" && len(s.Open) > 0 {
			// A second run reserved while the rule is undecided: the
			// first run's kind cannot decide it any more (see
			// docs/ledger.md), so the classic rule applies from now on.
			s.Final.Filter = privacy.FilterClassic
		}
		s.Open[strconv.FormatInt(r.ID, 10)] = openRun{Charge: r.Charge, Grant: *r.Grant, Owner: *r.Owner}
		if r.Data != "" {
			s.Counts.Linked++
		}
	case evSettle:
		r := ev.Run
		key := ""
		if r != nil {
			key = strconv.FormatInt(r.ID, 10)
		}
		if _, ok := s.Open[key]; !ok {
			return nil, fmt.Errorf("event %d settles a run that is not open", ev.Seq)
		}
		delete(s.Open, key)
		if len(s.Open) == 0 {
			s.Open = nil
		}
		s.Final.Add(r.Charge)
		if ev.V >= filterVersion {
			s.decide(r.Charge)
		}
		switch {
		case r.Status == Succeeded:
			s.Counts.Succeeded++
		case r.Status == Failed && !r.NoiseDrawn:
			s.Counts.Failed++
			s.Counts.Refunded++
		default:
			s.Counts.Failed++
		}
	case evCharge:
		if ev.Run == nil {
			return nil, fmt.Errorf("event %d: malformed charge", ev.Seq)
		}
		s.Final.Add(ev.Run.Charge)
		if ev.V >= filterVersion {
			s.decide(ev.Run.Charge)
		}
		s.Counts.External++
	default:
		return nil, fmt.Errorf("event %d: unknown kind %q", ev.Seq, ev.Kind)
	}
	return s, nil
}

// approxTotal reports whether the data set has an (ε, δ) total.
func (s *dsState) approxTotal() bool {
	return s.Total != nil && s.Total.Kind == privacy.GrantApprox
}

// fixOnHistory fixes the admission rule of an (ε, δ) total still
// undecided when the data owner acts on an existing history (sets a
// total, merges another data set in): the rule is fixed then, by that
// act, not later by a run the analyst may have chosen from that history's
// outputs.
func (s *dsState) fixOnHistory() {
	if !s.approxTotal() || s.Final.Filter != "" || (s.Final.N() == 0 && len(s.Open) == 0) {
		return
	}
	if s.Final.GaussianOnly() && s.Final.N() > 0 && len(s.Open) == 0 {
		s.Final.Filter = privacy.FilterGDP
	} else {
		s.Final.Filter = privacy.FilterClassic
	}
}

// decide fixes the admission rule of an (ε, δ) total when the first
// charged run settles (c is its charge, already added to Final): the
// Gaussian-DP filter when that run, and every charge before it, is
// Gaussian-only and no other run is open; the classic rule otherwise.
func (s *dsState) decide(c Charge) {
	if !s.approxTotal() || s.Final.Filter != "" || c.IsZero() {
		return
	}
	if s.Final.GaussianOnly() && len(s.Open) == 0 {
		s.Final.Filter = privacy.FilterGDP
	} else {
		s.Final.Filter = privacy.FilterClassic
	}
}
