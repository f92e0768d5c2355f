package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/privacy"
)

// read runs fn on the verified view advanced to the chain's head, inside a
// read transaction (a consistent snapshot).
func (l *Ledger) read(ctx context.Context, op string, fn func(t *txn) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return l.wrap(op, err)
	}
	defer tx.Rollback()
	v := l.view.clone()
	if err := l.advance(ctx, tx, v, nil); err != nil {
		return err
	}
	l.view = v
	return fn(&txn{l: l, tx: tx, v: v})
}

// Show returns the budget position of the data set with the given hash (an
// alias gives its data set's). A data set the ledger has never seen is not
// an error: it has no budget and nothing spent. The figures are recomputed
// from verified records; Remaining is what Reserve would admit.
func (l *Ledger) Show(ctx context.Context, hash string) (Status, error) {
	h, err := NormalizeHash(hash)
	if err != nil {
		return Status{}, err
	}
	var st Status
	err = l.read(ctx, "show", func(t *txn) error {
		h = t.v.resolve(h)
		ds, err := t.state(ctx, h)
		if err != nil {
			return err
		}
		st, err = t.status(ctx, h, ds)
		return err
	})
	return st, err
}

// status builds a Status from a verified state (nil: unknown data set).
func (t *txn) status(ctx context.Context, h string, ds *dsState) (Status, error) {
	st := Status{DataHash: h, Relation: ReplaceRow}
	if ds == nil {
		st.Spent = Spent{Composition: "none"}
		return st, nil
	}
	st.Name, st.Relation, st.Aliases = ds.Name, ds.Relation, append([]string(nil), ds.Aliases...)
	st.charged = ds.charged(0)
	if ds.Total != nil {
		st.HasBudget, st.Total = true, *ds.Total
		st.BudgetSetAt, _ = time.Parse(time.RFC3339Nano, ds.SetAt)
		// The ledger keeps the history within the total except for spends
		// recorded from outside dplr; report the composition either way.
		st.Spent, _ = compose(st.Total, st.charged)
		if st.Spent.Composition == "" {
			st.Spent = privacy.Uncomposed(st.charged)
			st.Spent.Composition = "over budget"
		}
		st.Remaining = privacy.RemainingOf(st.Total, st.charged)
		st.Rule = ruleOf(ds)
	} else {
		st.Spent = privacy.Uncomposed(st.charged)
	}
	c := ds.Counts
	st.Runs = RunCounts{Succeeded: c.Succeeded, Failed: c.Failed, Refunded: c.Refunded, External: c.External, Linked: c.Linked}
	for _, id := range ds.openIDs() {
		if t.l.stateOf(Reserved, ds.Open[strconv.FormatInt(id, 10)].Owner) == Interrupted {
			st.Runs.Interrupted++
		} else {
			st.Runs.Reserved++
		}
	}
	st.Runs.Total = st.Runs.Succeeded + st.Runs.Failed + st.Runs.Reserved + st.Runs.Interrupted + st.Runs.External
	var b []byte
	err := t.tx.QueryRowContext(ctx, `SELECT sketch FROM sketches WHERE hash = ?`, h).Scan(&b)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Status{}, t.l.wrap("read sketch", err)
	}
	st.Sketch = decodeSketch(b)
	return st, nil
}

// stateOf derives a run's displayed state from its stored status.
func (l *Ledger) stateOf(status State, o owner) State {
	if status == Reserved && l.self.check(o) == ownerDead {
		return Interrupted
	}
	return status
}

// Change is a change to a data set's budget settings, as Changes returns
// it: a total set or changed (Old and New), a name, a relation, or a link.
type Change struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// Kind is "registered", "budget", "name", "relation", "link",
	// "merge" (the data set Alias merged in) or "unlink" (the file Alias
	// unlinked). A registration with an Alias is a file unlinked from
	// that data set, charged all it was charged.
	Kind     string         `json:"kind"`
	Old      *privacy.Grant `json:"old,omitempty"`
	New      *privacy.Grant `json:"new,omitempty"`
	Name     string         `json:"name,omitempty"`
	Relation Relation       `json:"relation,omitempty"`
	Alias    string         `json:"alias,omitempty"`
	Note     string         `json:"note,omitempty"`
}

// String describes the change.
func (c Change) String() string {
	var s string
	switch c.Kind {
	case "registered":
		s = fmt.Sprintf("data set registered (neighbours: %s)", c.Relation)
		if c.Alias != "" {
			s = fmt.Sprintf("data set registered when unlinked from %s, charged all it was charged (neighbours: %s)", c.Alias, c.Relation)
		}
	case "budget":
		if c.Old == nil {
			s = "total set to " + GrantString(*c.New)
		} else {
			s = fmt.Sprintf("total changed from %s to %s", GrantString(*c.Old), GrantString(*c.New))
		}
	case "name":
		s = fmt.Sprintf("named %q", c.Name)
	case "relation":
		s = fmt.Sprintf("neighbour relation set to %s", c.Relation)
	case "link":
		s = "linked " + c.Alias
	case "merge":
		s = "merged data set " + c.Alias + " in, with all its charges"
	case "unlink":
		s = "unlinked " + c.Alias
	}
	if c.Note != "" {
		s += " (" + c.Note + ")"
	}
	return s
}

// History returns the runs recorded for the data set (an alias gives its
// data set's), oldest first, including spends recorded from outside dplr
// (Estimator "(outside dplr)"); empty for a data set the ledger has never
// seen. The data set's records are verified as a sequence ending at its
// verified position (docs/ledger.md); Verify checks the whole chain.
func (l *Ledger) History(ctx context.Context, hash string) ([]Run, error) {
	runs, _, err := l.history(ctx, hash)
	return runs, err
}

// Changes returns the changes to the data set's budget settings, oldest
// first: totals set and changed (with old and new values), names,
// relations and links, verified as History's are.
func (l *Ledger) Changes(ctx context.Context, hash string) ([]Change, error) {
	_, ch, err := l.history(ctx, hash)
	return ch, err
}

func (l *Ledger) history(ctx context.Context, hash string) ([]Run, []Change, error) {
	h, err := NormalizeHash(hash)
	if err != nil {
		return nil, nil, err
	}
	var (
		runs    []Run
		changes []Change
		byID    = map[int64]int{}
		evs     []*event
	)
	err = l.read(ctx, "history", func(t *txn) error {
		h = t.v.resolve(h)
		evs, err = l.datasetRecords(ctx, t, h)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	for _, ev := range evs {
		if ev.Dataset != h {
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, ev.Time)
		switch ev.Kind {
		case evDataset:
			changes = append(changes, Change{Seq: ev.Seq, Time: at, Kind: "registered", Relation: ev.Rel, Name: ev.Name, Alias: ev.Alias, Note: ev.Note})
		case evBudget:
			changes = append(changes, Change{Seq: ev.Seq, Time: at, Kind: "budget", Old: ev.Old, New: ev.New, Note: ev.Note})
		case evName:
			changes = append(changes, Change{Seq: ev.Seq, Time: at, Kind: "name", Name: ev.Name})
		case evRelation:
			changes = append(changes, Change{Seq: ev.Seq, Time: at, Kind: "relation", Relation: ev.Rel})
		case evLink, evMerge, evUnlink:
			changes = append(changes, Change{Seq: ev.Seq, Time: at, Kind: ev.Kind, Alias: ev.Alias, Note: ev.Note})
		case evReserve, evCharge:
			r := ev.Run
			run := Run{ID: RunID(ev.Seq), DataHash: h, Estimator: r.Estimator, Plugin: r.Plugin, Params: r.Params,
				State: Reserved, Charge: r.Charge, Basis: r.Basis, Note: strings.TrimSpace(ev.Note + " " + r.Note), ReservedAt: at,
				Relation: r.Relation, Factor: r.Factor, Data: r.Data}
			if r.Grant != nil {
				run.Grant = *r.Grant
			}
			if r.Owner != nil {
				run.Host, run.PID = r.Owner.Host, r.Owner.PID
				run.State = l.stateOf(Reserved, *r.Owner)
				if run.State == Reserved && l.self.check(*r.Owner) == ownerUnknown && r.Owner.Host != l.self.Host {
					run.Note = strings.TrimSpace(run.Note + fmt.Sprintf(" reserved on host %s: cannot tell from here whether it is still running", r.Owner.Host))
				}
			}
			if ev.Kind == evCharge {
				run.State, run.SettledAt, run.Class = Succeeded, at, "outside dplr"
			}
			byID[ev.Seq] = len(runs)
			runs = append(runs, run)
		case evSettle:
			r := ev.Run
			i, ok := byID[r.ID]
			if !ok {
				continue
			}
			run := &runs[i]
			run.State, run.Charge, run.Basis, run.NoiseDrawn, run.Error = r.Status, r.Charge, r.Basis, r.NoiseDrawn, r.Error
			run.Refunded = r.Status == Failed && !r.NoiseDrawn
			run.Relation, run.Neighbours, run.Factor, run.Class = r.Relation, r.Neighbours, r.Factor, r.Class
			run.Note = strings.TrimSpace(run.Note + " " + r.Note)
			run.SettledAt = at
		}
	}
	return runs, changes, nil
}

// datasetRecords reads data set h's records (through an index on the
// data set) and verifies them as a chain of their own: each record hashes
// to its stored hash and states the position apply gives from the one
// before, and the last is the record the verified view holds for h, with
// the same position. A record missing from what the index returns, or one
// edited, breaks that sequence. It does not check the links between
// records of different data sets; the full check (Verify) does.
func (l *Ledger) datasetRecords(ctx context.Context, t *txn, h string) ([]*event, error) {
	want, ok := t.v.keys[h]
	if !ok {
		return nil, nil
	}
	latest, err := t.state(ctx, h)
	if err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT seq, body, hash FROM chain WHERE dataset = ? ORDER BY seq`, h)
	if err != nil {
		return nil, l.wrap("read history", err)
	}
	defer rows.Close()
	var (
		evs  []*event
		st   *dsState
		last ref
	)
	for rows.Next() {
		var (
			seq  int64
			body []byte
			hash string
		)
		if err := rows.Scan(&seq, &body, &hash); err != nil {
			return nil, l.wrap("read history", err)
		}
		if seq > t.v.head.Seq {
			continue // appended after the verified view: not part of it
		}
		if seq > want.Seq {
			return nil, l.damaged("record %d is about data set %s but the checkpoint names record %d as its latest", seq, short(h), want.Seq)
		}
		ev, err := l.decodeRow(seq, body, hash, "", false)
		if err != nil {
			return nil, err
		}
		if ev.Dataset != h {
			return nil, l.damaged("record %d is filed under data set %s but is about %s", seq, short(h), short(ev.Dataset))
		}
		got, err := apply(st, ev)
		if err != nil {
			return nil, l.damaged("data set %s's history: %v", short(h), err)
		}
		if !reflect.DeepEqual(got, ev.State) {
			return nil, l.damaged("record %d states a budget position that data set %s's history does not give (a record edited or missing)", seq, short(h))
		}
		st, last = got, ref{Seq: seq, Hash: hash}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, l.wrap("read history", err)
	}
	if last != want || !reflect.DeepEqual(st, latest) {
		return nil, l.damaged("data set %s's records do not end at its verified position (record %d; read up to %d)", short(h), want.Seq, last.Seq)
	}
	return evs, nil
}

// sameView checks that a full verification reached the same position as
// the incremental one: same head, same latest record for every key.
func (l *Ledger) sameView(full, inc *view) error {
	if full.head != inc.head {
		return l.damaged("the full check ends at record %d, the checkpoint at record %d", full.head.Seq, inc.head.Seq)
	}
	for k, r := range inc.keys {
		if full.keys[k] != r {
			return l.damaged("the checkpoint's record for %s (%d) is not the chain's (%d)", short(k), r.Seq, full.keys[k].Seq)
		}
	}
	if len(full.keys) != len(inc.keys) {
		return l.damaged("the checkpoint knows %d data sets and aliases, the chain %d", len(inc.keys), len(full.keys))
	}
	return nil
}

// Get returns one run's record.
func (l *Ledger) Get(ctx context.Context, id RunID) (Run, error) {
	var h string
	err := l.read(ctx, "get run", func(t *txn) error {
		if int64(id) < 1 || int64(id) > t.v.head.Seq {
			return fmt.Errorf("%v: %w", id, ErrNotFound)
		}
		ev, err := l.fetchVerified(ctx, t, int64(id))
		if err != nil {
			return err
		}
		if ev.Kind != evReserve && ev.Kind != evCharge {
			return fmt.Errorf("%v: %w", id, ErrNotFound)
		}
		h = ev.Dataset
		return nil
	})
	if err != nil {
		return Run{}, err
	}
	runs, err := l.History(ctx, h)
	if err != nil {
		return Run{}, err
	}
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
	}
	return Run{}, fmt.Errorf("%v: %w", id, ErrNotFound)
}

// Dataset is a data set the ledger knows.
type Dataset struct {
	Hash      string
	Name      string
	HasBudget bool
	Total     privacy.Grant
	Relation  Relation
	Aliases   []string
	Sketch    []uint64 // row sketch, if stored (SetSketch)
}

// Datasets lists the data sets the ledger knows, by name then hash (aliases
// are listed under their data set).
func (l *Ledger) Datasets(ctx context.Context) ([]Dataset, error) {
	var out []Dataset
	err := l.read(ctx, "list data sets", func(t *txn) error {
		for k := range t.v.keys {
			if _, alias := t.v.aliases[k]; alias {
				continue
			}
			ds, err := t.state(ctx, k)
			if err != nil {
				return err
			}
			d := Dataset{Hash: k, Name: ds.Name, Relation: ds.Relation, Aliases: append([]string(nil), ds.Aliases...)}
			if ds.Total != nil {
				d.HasBudget, d.Total = true, *ds.Total
			}
			var b []byte
			err = t.tx.QueryRowContext(ctx, `SELECT sketch FROM sketches WHERE hash = ?`, k).Scan(&b)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return l.wrap("read sketch", err)
			}
			d.Sketch = decodeSketch(b)
			out = append(out, d)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Hash < out[j].Hash
	})
	return out, err
}

// VerifyReport is what a full verification found.
type VerifyReport struct {
	Records  int64 // records in the chain
	Datasets int   // data sets
	Aliases  int   // linked hashes
}

// Verify checks the whole ledger: SQLite's integrity_check (which, unlike
// the quick check, compares every index with its table), then every record
// of the chain from the first (its hash, its link to the previous one, and
// the budget position it states), and that the result agrees with the
// checkpoint in the marker file. On success it records the check in a new
// marker. Errors wrap ErrDamaged.
func (l *Ledger) Verify(ctx context.Context) (VerifyReport, error) {
	if err := l.integrityCheck(ctx); err != nil {
		return VerifyReport{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return VerifyReport{}, l.wrap("verify", err)
	}
	defer tx.Rollback()
	full, err := l.walk(ctx, tx, nil)
	if err != nil {
		return VerifyReport{}, err
	}
	if l.view.head.Seq > 0 {
		// The checkpoint's position must be on the chain: the records it
		// names are the latest about their keys as of its head.
		inc := l.view.clone()
		if err := l.advance(ctx, tx, inc, nil); err != nil {
			return VerifyReport{}, err
		}
		if err := l.sameView(full, inc); err != nil {
			return VerifyReport{}, err
		}
	}
	l.view = full
	rep := VerifyReport{Records: full.head.Seq, Aliases: len(full.aliases), Datasets: len(full.keys) - len(full.aliases)}
	return rep, l.writeMarker(now())
}

func (l *Ledger) integrityCheck(ctx context.Context) error {
	rows, err := l.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return l.wrap("integrity check", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return l.wrap("integrity check", err)
		}
		msgs = append(msgs, strings.Join(strings.Fields(m), " "))
	}
	if err := rows.Err(); err != nil {
		return l.wrap("integrity check", err)
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		if len(msgs) > 5 {
			msgs = append(msgs[:5], "...")
		}
		return fmt.Errorf("ledger %s: integrity check failed (%s): %w (%w)", l.path, strings.Join(msgs, "; "), ErrCorrupt, ErrDamaged)
	}
	return nil
}
