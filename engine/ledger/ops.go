package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dplr/dplr/engine/privacy"
)

// NormalizeHash checks that hash is a hex SHA-256 (64 hex digits, any case,
// surrounding spaces ignored) and returns it in lower case.
func NormalizeHash(hash string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(hash))
	if len(h) != 64 {
		return "", fmt.Errorf("data set hash %q: want 64 hex digits (SHA-256), got %d characters: %w", hash, len(h), ErrInvalid)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("data set hash %q: not hexadecimal: %w", hash, ErrInvalid)
	}
	return h, nil
}

func validGrant(what string, g privacy.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)
	}
	return nil
}

// compatible checks that a run granted g can be charged to a total of its
// form (docs/ledger.md).
func compatible(total, g privacy.Grant) error {
	switch total.Kind {
	case privacy.GrantPure:
		if g.Kind != privacy.GrantPure {
			return fmt.Errorf("the data set's budget is %s: runs must be granted a pure ε budget, not %s: %w", GrantString(total), GrantString(g), ErrIncompatible)
		}
	case privacy.GrantZCDP:
		if g.Kind == privacy.GrantApprox {
			return fmt.Errorf("the data set's budget is %s: runs must be granted a ρ or pure ε budget, not %s: %w", GrantString(total), GrantString(g), ErrIncompatible)
		}
	}
	return nil
}

// register resolves hash (an alias gives its data set) and registers the
// data set if new, with name and relation rel ("" means ReplaceRow).
func (t *txn) register(ctx context.Context, hash, name string, rel Relation) (string, *dsState, error) {
	h := t.v.resolve(hash)
	st, err := t.state(ctx, h)
	if err != nil || st != nil {
		return h, st, err
	}
	rel = cmp.Or(rel, ReplaceRow)
	name = strings.TrimSpace(name)
	if name != "" {
		if other := t.byName(ctx, name); other != "" {
			name = "" // names are unique; keep the first holder's
		}
	}
	if err := t.emit(ctx, &event{Kind: evDataset, Dataset: h, Name: name, Rel: rel}); err != nil {
		return "", nil, err
	}
	st, err = t.state(ctx, h)
	return h, st, err
}

// byName is the data set holding name ("" if none).
func (t *txn) byName(ctx context.Context, name string) string {
	for k := range t.v.keys {
		if _, alias := t.v.aliases[k]; alias {
			continue
		}
		if st, err := t.state(ctx, k); err == nil && st != nil && st.Name == name {
			return k
		}
	}
	return ""
}

// known resolves ref to a registered data set: a content hash, an alias
// linked to one, or a data set's name.
func (t *txn) known(ctx context.Context, ref string) (string, *dsState, error) {
	h := ""
	if n, err := NormalizeHash(ref); err == nil {
		h = t.v.resolve(n)
	} else if h = t.byName(ctx, strings.TrimSpace(ref)); h == "" {
		return "", nil, fmt.Errorf("data set %q: no such hash or name: %w", ref, ErrNotFound)
	}
	st, err := t.state(ctx, h)
	if err != nil {
		return "", nil, err
	}
	if st == nil {
		return "", nil, fmt.Errorf("data set %s: %w", short(h), ErrNotFound)
	}
	return h, st, nil
}

// write runs fn in a write transaction and commits it durably.
func (l *Ledger) write(ctx context.Context, op string, fn func(t *txn) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeOn(ctx, l.db, op, fn)
}

// beginner starts transactions: the pool or one of its connections.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// writeOn runs fn in a write transaction on db and commits it. The caller
// holds l.mu.
func (l *Ledger) writeOn(ctx context.Context, db beginner, op string, fn func(t *txn) error) error {
	t, err := l.begin(ctx, db, op)
	if err != nil {
		return err
	}
	defer t.rollback()
	if err := fn(t); err != nil {
		return err
	}
	return t.commit(op)
}

// Resolve returns the content hash of the data set that ref names: a
// content hash (an alias linked to a data set gives that data set's hash; a
// hash the ledger has never seen is returned as is) or a data set's name
// (ErrNotFound if no data set has it).
func (l *Ledger) Resolve(ctx context.Context, ref string) (string, error) {
	var h string
	err := l.read(ctx, "resolve", func(t *txn) error {
		if n, err := NormalizeHash(ref); err == nil {
			h = t.v.resolve(n)
			return nil
		}
		var err error
		h, _, err = t.known(ctx, ref)
		return err
	})
	return h, err
}

// SetBudget sets the total budget of the data set with the given hash (or
// alias), registering the data set if new; a non-empty name names it if it
// has no name. It is refused, with nothing written, if the runs already
// recorded do not compose within total (ErrBudgetExceeded,
// ErrIncompatible), and if the data set already has a different total
// (ErrBudgetSet: change it with ChangeBudget). Setting the same total again
// changes nothing.
func (l *Ledger) SetBudget(ctx context.Context, hash, name string, total privacy.Grant) error {
	h, err := NormalizeHash(hash)
	if err != nil {
		return err
	}
	if err := validGrant("budget", total); err != nil {
		return err
	}
	return l.write(ctx, "set budget", func(t *txn) error {
		h, st, err := t.register(ctx, h, name, "")
		if err != nil {
			return err
		}
		if name = strings.TrimSpace(name); name != "" && st.Name == "" && t.byName(ctx, name) == "" {
			if err := t.emit(ctx, &event{Kind: evName, Dataset: h, Name: name}); err != nil {
				return err
			}
		}
		if st.Total != nil {
			if *st.Total == total {
				return nil
			}
			return fmt.Errorf("data set %s has the total %s; change it explicitly (dplr budget set --change): %w", short(h), GrantString(*st.Total), ErrBudgetSet)
		}
		return t.setTotal(ctx, h, st, nil, total, "")
	})
}

// ChangeBudget changes the total of a data set that has one, recording the
// old and new values (and note) in its history. A total below what has been
// spent is refused (ErrBudgetExceeded, ErrIncompatible), with nothing
// written.
func (l *Ledger) ChangeBudget(ctx context.Context, ref string, total privacy.Grant, note string) error {
	if err := validGrant("budget", total); err != nil {
		return err
	}
	return l.write(ctx, "change budget", func(t *txn) error {
		h, st, err := t.known(ctx, ref)
		if err != nil {
			return err
		}
		if st.Total == nil {
			return fmt.Errorf("data set %s has no total to change (set one with SetBudget): %w", short(h), ErrNotFound)
		}
		old := *st.Total
		if old == total && !lostToGDP(st, total) {
			return nil
		}
		return t.setTotal(ctx, h, st, &old, total, note)
	})
}

func (t *txn) setTotal(ctx context.Context, h string, st *dsState, old *privacy.Grant, total privacy.Grant, note string) error {
	a := st.charged(0)
	ev := &event{Kind: evBudget, Dataset: h, Old: old, New: &total, Note: strings.TrimSpace(note)}
	if _, err := compose(total, a); err != nil {
		if old != nil && lostToGDP(st, total) {
			// The Gaussian-DP filter cannot count some charge (a spend
			// recorded with Force, or a failed run of unknown steps): the
			// data owner's change counts the history under the classic
			// rule instead, which counts every charge.
			ev.Rule, a.Filter = privacy.FilterClassic, privacy.FilterClassic
			_, err = compose(total, a)
		}
		if err != nil && !(old != nil && atLeast(total, *old) && errors.Is(err, ErrBudgetExceeded)) {
			return fmt.Errorf("data set %s: cannot set the budget to %s: the %d run(s) already charged do not fit: %w", short(h), GrantString(total), a.N(), err)
		}
		// A total at least as large as the old one is accepted even
		// over budget: it never lowers what is recorded as spent.
	}
	return t.emit(ctx, ev)
}

// lostToGDP reports whether the data set follows the Gaussian-DP filter
// and holds a charge that filter cannot count, so that under total (an
// (ε, δ) one) nothing could be admitted again.
func lostToGDP(st *dsState, total privacy.Grant) bool {
	a := st.charged(0)
	return st.approxTotal() && total.Kind == privacy.GrantApprox && a.Mode() == privacy.FilterGDP && !a.AllMu()
}

// atLeast reports whether total is of old's form and no smaller in any
// parameter.
func atLeast(total, old privacy.Grant) bool {
	return total.Kind == old.Kind && total.Epsilon >= old.Epsilon && total.Delta >= old.Delta && total.Rho >= old.Rho
}

// Rename names a data set (names are unique; ErrInvalid if another data set
// holds it).
func (l *Ledger) Rename(ctx context.Context, ref, name string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return fmt.Errorf("rename: empty name: %w", ErrInvalid)
	}
	if _, err := NormalizeHash(name); err == nil {
		return fmt.Errorf("rename: %q looks like a content hash: %w", name, ErrInvalid)
	}
	return l.write(ctx, "rename", func(t *txn) error {
		h, st, err := t.known(ctx, ref)
		if err != nil {
			return err
		}
		if st.Name == name {
			return nil
		}
		if other := t.byName(ctx, name); other != "" {
			return fmt.Errorf("rename: data set %s is already called %q: %w", short(other), name, ErrInvalid)
		}
		return t.emit(ctx, &event{Kind: evName, Dataset: h, Name: name})
	})
}

// SetRelation states the neighbour relation a data set's budget counts in,
// registering the data set if new. It is refused once anything has been
// charged to the data set (ErrInvalid): earlier charges were converted for
// the old relation.
func (l *Ledger) SetRelation(ctx context.Context, hash string, rel Relation) error {
	if _, err := ParseRelation(string(rel)); err != nil {
		return err
	}
	h, err := NormalizeHash(hash)
	if err != nil {
		return err
	}
	return l.write(ctx, "set relation", func(t *txn) error {
		h, st, err := t.register(ctx, h, "", rel)
		if err != nil {
			return err
		}
		if st.Relation == rel {
			return nil
		}
		if st.Final.N() > 0 || len(st.Open) > 0 {
			return fmt.Errorf("data set %s: runs were already charged for %s neighbours; the relation cannot change: %w", short(h), st.Relation, ErrInvalid)
		}
		return t.emit(ctx, &event{Kind: evRelation, Dataset: h, Rel: rel})
	})
}

// Link records that the file with content hash alias holds the same people
// as the data set target (a hash, alias or name), so that both count
// against one budget: every operation given alias then acts on target. An
// alias that has records of its own is refused (ErrInvalid): budgets are
// not merged.
func (l *Ledger) Link(ctx context.Context, alias, target, note string) error {
	a, err := NormalizeHash(alias)
	if err != nil {
		return err
	}
	return l.write(ctx, "link", func(t *txn) error {
		h, _, err := t.known(ctx, target)
		if err != nil {
			return err
		}
		return t.link(ctx, a, h, &event{Kind: evLink, Dataset: h, Alias: a, Note: strings.TrimSpace(note)})
	})
}

// link appends ev, the link of alias a to data set h, unless a is linked
// to h already; an alias of another data set, h itself, or a hash with
// records of its own is refused (ErrInvalid).
func (t *txn) link(ctx context.Context, a, h string, ev *event) error {
	if d, ok := t.v.aliases[a]; ok {
		if d == h {
			return nil
		}
		return fmt.Errorf("link: %s is already linked to data set %s: %w", short(a), short(d), ErrInvalid)
	}
	if a == h {
		return fmt.Errorf("link: %s is the data set itself: %w", short(a), ErrInvalid)
	}
	if _, has := t.v.keys[a]; has {
		return fmt.Errorf("link: %s has budget records of its own; budgets are not merged: %w", short(a), ErrInvalid)
	}
	return t.emit(ctx, ev)
}

// autoLink links a, the data a run is about to read, to the budgeted data
// set target whose rows it mostly is (ReserveRequest.LinkTo), or merges
// it there when it has runs of its own (autoMerge). It refuses
// (ErrOverlap) when target has no total.
func (t *txn) autoLink(ctx context.Context, a, target string) error {
	h, st, err := t.known(ctx, target)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", err, ErrOverlap)
	case t.v.aliases[a] == h:
		return nil
	case st.Total == nil:
		return fmt.Errorf("data set %s has no total to count the run against: %w", short(h), ErrOverlap)
	}
	if _, has := t.v.keys[a]; has {
		return t.autoMerge(ctx, a, h, st)
	}
	return t.emit(ctx, &event{Kind: evLink, Dataset: h, Alias: a, Auto: true, Note: "linked by the run that read it: its rows are rows of this data set"})
}

// autoMerge merges a, a data set with runs of its own and no total (runs
// made before data set h, whose rows it mostly is, had a total), into h
// as Merge does: those runs used h's rows too. It refuses (ErrOverlap) a
// hash linked elsewhere, a data set with a total, one made by an unlink
// (it holds the charges of the data set it left already: merging would
// count them twice), and whatever Merge refuses.
func (t *txn) autoMerge(ctx context.Context, a, h string, st *dsState) error {
	src, err := t.state(ctx, a)
	if err != nil {
		return err
	}
	why := ""
	if _, alias := t.v.aliases[a]; alias {
		why = "is linked to another data set"
	} else if src.Total != nil {
		why = "has a total of its own (`dplr budget merge` joins two budgets)"
	} else if evs, err := t.l.datasetRecords(ctx, t, a); err != nil {
		return err
	} else if len(evs) > 0 && evs[0].Alias != "" {
		why = "was unlinked from a data set, whose charges it holds"
	}
	if why == "" {
		_, err = t.merge(ctx, a, src, h, st, &event{Auto: true,
			Note: "merged by a run that read it: its rows are rows of this data set, and its earlier runs are counted here"}, false)
		if err == nil {
			return nil
		}
		why = fmt.Sprintf("ran before the total was set and cannot be merged (%v)", err)
	}
	return fmt.Errorf("this data (%s) %s, so it is not counted against data set %s automatically: %w", short(a), why, short(h), ErrOverlap)
}

// Merge makes the data set from (a hash, alias or name) part of the data
// set into: into is charged every charge of from (open reservations at
// their whole grant) and from's hash becomes linked to into, so the merge
// never under-counts (docs/ledger.md, "Overlapping data sets"). Charges
// that do not fit into's total are refused with nothing written
// (ErrBudgetExceeded, ErrIncompatible, stating their cost) unless force,
// which records them and returns the same cause. A data set with linked
// files of its own, or a run still running, is refused (ErrInvalid).
func (l *Ledger) Merge(ctx context.Context, from, into, note string, force bool) error {
	var over error
	err := l.write(ctx, "merge", func(t *txn) error {
		h, st, err := t.known(ctx, into)
		if err != nil {
			return err
		}
		b, src, err := t.known(ctx, from)
		if err != nil {
			return err
		}
		if b == h {
			return fmt.Errorf("merge: %s is already data set %s: %w", from, short(h), ErrInvalid)
		}
		over, err = t.merge(ctx, b, src, h, st, &event{Note: strings.TrimSpace(note)}, force)
		return err
	})
	if err != nil {
		return err
	}
	return over
}

// merge appends ev, completed as the merge of data set b (at position
// src) into data set h (at st), for Merge and autoMerge. It refuses
// (ErrInvalid) a data set with linked files or a run still running, and
// charges that do not fit h's total unless force, when it returns why
// as over.
func (t *txn) merge(ctx context.Context, b string, src *dsState, h string, st *dsState, ev *event, force bool) (over, err error) {
	if len(src.Aliases) > 0 {
		return nil, fmt.Errorf("merge: data set %s has linked files of its own; unlink them first (each then keeps its charges): %w", short(b), ErrInvalid)
	}
	for _, id := range src.openIDs() {
		if t.l.stateOf(Reserved, src.Open[strconv.FormatInt(id, 10)].Owner) != Interrupted {
			return nil, fmt.Errorf("merge: run-%d on data set %s is still running; merge when it has ended: %w", id, short(b), ErrInvalid)
		}
	}
	in := inherited(src)
	if st.Total != nil {
		after := st.charged(0)
		after.Merge(in)
		if _, err := compose(*st.Total, after); err != nil {
			why := fmt.Errorf("data set %s: the %d charge(s) of data set %s do not fit its budget's rule (they cost %s): %w", short(h), in.N(), short(b), spentString(privacy.Uncomposed(in)), err)
			if !force {
				return nil, fmt.Errorf("nothing was merged: %w", why)
			}
			over = fmt.Errorf("merged all the same; nothing more will be admitted until the total is changed: %w", why)
		}
	}
	ev.Kind, ev.Dataset, ev.Alias, ev.Inherit = evMerge, h, b, &in
	return over, t.emit(ctx, ev)
}

// Unlink undoes a link: the file with content hash alias becomes a data
// set of its own, with no total, charged everything its data set was
// charged up to now (open reservations at their whole grant), so its
// spending is never under-counted (docs/ledger.md, "Overlapping data
// sets"). A hash merged in, or one not linked, is refused (ErrInvalid).
func (l *Ledger) Unlink(ctx context.Context, alias, note string) error {
	a, err := NormalizeHash(alias)
	if err != nil {
		return err
	}
	return l.write(ctx, "unlink", func(t *txn) error {
		h, ok := t.v.aliases[a]
		if !ok {
			return fmt.Errorf("unlink: %s is not linked to a data set: %w", short(a), ErrInvalid)
		}
		var own int
		if err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM chain WHERE dataset = ?`, a).Scan(&own); err != nil {
			return l.wrap("unlink", err)
		}
		if own > 0 {
			return fmt.Errorf("unlink: %s was merged into data set %s; its charges belong to it now: %w", short(a), short(h), ErrInvalid)
		}
		st, err := t.state(ctx, h)
		if err != nil {
			return err
		}
		note = strings.TrimSpace(note)
		if err := t.emit(ctx, &event{Kind: evUnlink, Dataset: h, Alias: a, Note: note}); err != nil {
			return err
		}
		in := inherited(st)
		return t.emit(ctx, &event{Kind: evDataset, Dataset: a, Rel: st.Relation, Alias: h, Inherit: &in, Note: note})
	})
}

// ChargeRequest is a spend made outside dplr on a data set.
type ChargeRequest struct {
	// Cost is what was spent, as a grant (pure ε, (ε, δ) or ρ); zero when
	// Mu is given.
	Cost privacy.Grant
	// Mu states the spend as μ-GDP instead (a Gaussian mechanism of
	// sensitivity Δ and noise σ is Δ/σ-GDP, and μ²/2-zCDP): the form the
	// Gaussian-DP filter counts.
	Mu float64
	// Relation is the neighbour relation the spend's guarantee holds for
	// ("": the budget's own).
	Relation Relation
	// Note says what the spend was (required).
	Note string
	// Force records a spend the budget's rule cannot admit (it happened):
	// the data set then admits nothing more until its total is changed
	// (ChangeBudget). Without it such a spend is refused, with nothing
	// written.
	Force bool
}

// charge is the request's cost as a charge.
func (r ChargeRequest) charge() (Charge, error) {
	if r.Mu != 0 {
		if r.Cost != (privacy.Grant{}) {
			return Charge{}, fmt.Errorf("charge: give either a cost or μ, not both: %w", ErrInvalid)
		}
		if !(r.Mu > 0) || math.IsInf(r.Mu, 0) {
			return Charge{}, fmt.Errorf("charge: μ = %v must be positive and finite: %w", r.Mu, ErrInvalid)
		}
		return Charge{Rho: r.Mu * r.Mu / 2, Mu2: r.Mu * r.Mu}, nil
	}
	if err := validGrant("charge", r.Cost); err != nil {
		return Charge{}, err
	}
	c := privacy.GrantCharge(r.Cost)
	if r.Cost.Kind == privacy.GrantPure {
		// An ε-DP spend is μ_ε-GDP too: the Gaussian-DP filter can
		// count it (see privacy.PureMu).
		c.Mu2 = privacy.GrantMu2(r.Cost)
	}
	return c, nil
}

// RecordCharge records a spend made outside dplr against the data set ref
// (a hash, alias or name; an unseen hash is registered). One the budget's
// rule cannot admit is refused with nothing written, stating its cost
// (ErrBudgetExceeded or ErrIncompatible); with req.Force it is recorded all
// the same and the error wraps the cause with the recorded id
// (docs/ledger.md, "Life of a run").
func (l *Ledger) RecordCharge(ctx context.Context, ref string, req ChargeRequest) (RunID, error) {
	base, err := req.charge()
	if err != nil {
		return 0, err
	}
	if strings.TrimSpace(req.Note) == "" {
		return 0, fmt.Errorf("charge: a note saying what was spent is required: %w", ErrInvalid)
	}
	var (
		id   RunID
		over error
	)
	err = l.write(ctx, "record charge", func(t *txn) error {
		var h string
		var st *dsState
		var err error
		if n, nerr := NormalizeHash(ref); nerr == nil {
			h, st, err = t.register(ctx, n, "", "")
		} else {
			h, st, err = t.known(ctx, ref)
		}
		if err != nil {
			return err
		}
		rel := req.Relation
		rel = cmp.Or(rel, st.Relation)
		c, k, err := convert(base, rel, st.Relation)
		if err != nil {
			return fmt.Errorf("data set %s: %w", short(h), err)
		}
		var g *privacy.Grant
		if req.Mu == 0 {
			g = &req.Cost
		}
		ev := &event{Kind: evCharge, Dataset: h, Run: &runEvent{Estimator: "(outside dplr)", Grant: g, Status: Succeeded,
			Charge: c, Basis: "external", Note: strings.TrimSpace(req.Note), Relation: rel, Factor: k}}
		if st.Total != nil {
			before := st.charged(0)
			if err := fits(*st.Total, before, c); err != nil {
				why := fmt.Errorf("data set %s: the spend (%s) does not fit the budget's rule: it %s: %w", short(h), c, costUnder(*st.Total, before, c), err)
				if !req.Force {
					return fmt.Errorf("nothing was recorded: %w", why)
				}
				over = fmt.Errorf("recorded all the same; nothing more will be admitted until the total is changed: %w", why)
			}
		}
		if err := t.emit(ctx, ev); err != nil {
			return err
		}
		ev.Run.ID = ev.Seq
		id = RunID(ev.Seq)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, over
}

// costUnder says what charge c costs on top of a under the total's rule,
// and what remains of the total.
func costUnder(total privacy.Grant, a privacy.Tally, c Charge) string {
	if total.Kind != privacy.GrantApprox || a.Mode() != privacy.FilterGDP {
		return fmt.Sprintf("costs %s, where %s remains", c, remainingString(total, privacy.RemainingOf(total, a)))
	}
	left := privacy.GDPLeft(total, a)
	eps, _ := privacy.GDPEpsilon(left, total.Delta)
	rest := fmt.Sprintf("μ = %.4g (ε = %.4g at δ = %.3g)", left, eps, total.Delta)
	if c.Mu2 > 0 {
		return fmt.Sprintf("costs μ = %.4g under the Gaussian-DP filter (Σμ² ≤ μ_T²), where %s remains", math.Sqrt(c.Mu2), rest)
	}
	return fmt.Sprintf("has no Gaussian-DP statement, so under the Gaussian-DP filter this budget follows it would cost all that remains, %s, and the data set would admit nothing more (a Gaussian spend of sensitivity Δ and noise σ is Δ/σ-GDP; an ε-DP spend, stated as a pure ε, counts μ = 2Φ⁻¹(e^ε/(1+e^ε)))", rest)
}

// SetSketch stores the row sketch of data set hash (or of the data set an
// alias links to), for overlap detection. The sketch is a plain column,
// outside the chain: it is a hint for finding related files, not a record
// of spending.
func (l *Ledger) SetSketch(ctx context.Context, hash string, sketch []uint64) error {
	h, err := NormalizeHash(hash)
	if err != nil {
		return err
	}
	return l.write(ctx, "set sketch", func(t *txn) error {
		h, _, err := t.register(ctx, h, "", "")
		if err != nil {
			return err
		}
		return t.setSketch(ctx, h, sketch)
	})
}

// setSketch stores data set h's row sketch (a plain column, outside the
// chain).
func (t *txn) setSketch(ctx context.Context, h string, sketch []uint64) error {
	b := make([]byte, 8*len(sketch))
	for i, x := range sketch {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO sketches(hash, sketch) VALUES (?, ?) ON CONFLICT(hash) DO UPDATE SET sketch = excluded.sketch`, h, b)
	return t.l.wrap("set sketch", err)
}

func decodeSketch(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// Reserve charges a run's full grant against the data set's budget before
// the run draws any noise, in one write transaction that first verifies the
// records appended since this process last looked (docs/ledger.md, "Life
// of a run"). It errors, with nothing written, on a malformed request
// (ErrInvalid), a grant of the wrong form (ErrIncompatible), one that does
// not fit (ErrBudgetExceeded) or a damaged ledger (ErrDamaged). hash may be
// an alias; a data set with no budget is registered and the run recorded.
func (l *Ledger) Reserve(ctx context.Context, hash string, req ReserveRequest) (RunID, error) {
	h, err := NormalizeHash(hash)
	if err != nil {
		return 0, err
	}
	if strings.TrimSpace(req.Estimator) == "" {
		return 0, fmt.Errorf("reserve: empty estimator name: %w", ErrInvalid)
	}
	if err := validGrant("run grant", req.Grant); err != nil {
		return 0, err
	}
	if req.Relation != "" {
		if _, err := ParseRelation(string(req.Relation)); err != nil {
			return 0, err
		}
	}
	var id RunID
	err = l.write(ctx, "reserve", func(t *txn) error {
		t.lazyMarker = true
		data := h
		if req.LinkTo != "" {
			if err := t.autoLink(ctx, data, req.LinkTo); err != nil {
				return err
			}
		}
		h, st, err := t.register(ctx, h, req.Name, req.Relation)
		if err != nil {
			return err
		}
		if data == h {
			data = "" // the data set's own data
		}
		charge := privacy.ReserveCharge(req.Grant)
		var (
			runRel Relation
			factor int
		)
		if req.Neighbours != "" {
			if runRel, err = ParseNeighbours(req.Neighbours); err != nil {
				return fmt.Errorf("data set %s: %w", short(h), err)
			}
			if charge, factor, err = convert(charge, runRel, st.Relation); err != nil {
				return fmt.Errorf("data set %s: %w", short(h), err)
			}
		}
		if st.Total != nil {
			total := *st.Total
			if err := compatible(total, req.Grant); err != nil {
				return fmt.Errorf("data set %s: %w", short(h), err)
			}
			if req.MechanismsDeclared {
				if err := mechanismsAdmitted(ruleOf(st), req.Grant, req.Mechanisms); err != nil {
					return fmt.Errorf("data set %s: %w", short(h), err)
				}
			}
			before := st.charged(0)
			if err := fits(total, before, charge); err != nil {
				sp, _ := compose(total, before)
				return fmt.Errorf("data set %s: a run granted %s does not fit the budget (%s; spent %s; remaining %s): %w",
					short(h), GrantString(req.Grant), GrantString(total), spentString(sp), remainingString(total, privacy.RemainingOf(total, before)), err)
			}
		}
		g, o := req.Grant, l.self
		ev := &event{Kind: evReserve, Dataset: h, Run: &runEvent{Estimator: req.Estimator, Plugin: req.Plugin, Params: req.Params,
			Grant: &g, Owner: &o, Charge: charge, Basis: "grant", Neighbours: req.Neighbours, Relation: runRel, Factor: factor, Data: data}}
		if err := t.emit(ctx, ev); err != nil {
			return err
		}
		id = RunID(ev.Seq)
		if len(req.Sketch) > 0 && data == "" { // a linked file's rows are not the data set's
			return t.setSketch(ctx, h, req.Sketch)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Settle records how a reserved run ended (docs/ledger.md, "Life of a
// run"). A run not reserved gives ErrAlreadySettled, one whose reserving
// process is gone ErrInterrupted, an unknown id ErrNotFound, a malformed
// outcome ErrInvalid, and none of them changes anything. A success whose
// cost, converted to the budget's neighbour relation, cannot be stated
// (ErrRelation) or does not fit (ErrBudgetExceeded) is recorded as failed,
// charged its full grant, and Settle returns the error: the caller must not
// release the result.
func (l *Ledger) Settle(ctx context.Context, id RunID, out Outcome) error {
	if out.Status != Succeeded && out.Status != Failed {
		return fmt.Errorf("settle %v: outcome status %q: want %q or %q: %w", id, out.Status, Succeeded, Failed, ErrInvalid)
	}
	if out.Status == Succeeded && out.Steps == nil && out.Achieved == nil {
		return fmt.Errorf("settle %v: a successful outcome needs Steps or Achieved: %w", id, ErrInvalid)
	}
	var refused error
	err := l.write(ctx, "settle", func(t *txn) error {
		t.lazyMarker = true
		if int64(id) < 1 || int64(id) > t.v.head.Seq {
			return fmt.Errorf("settle %v: %w", id, ErrNotFound)
		}
		rec, err := t.l.fetchVerified(ctx, t, int64(id))
		if err != nil {
			return err
		}
		if rec.Kind != evReserve {
			return fmt.Errorf("settle %v: %w", id, ErrNotFound)
		}
		h := t.v.resolve(rec.Dataset) // a merged data set's runs are its target's
		st, err := t.state(ctx, h)
		if err != nil {
			return err
		}
		open, ok := st.Open[strconv.FormatInt(int64(id), 10)]
		if !ok {
			return fmt.Errorf("settle %v: the run is already settled: %w", id, ErrAlreadySettled)
		}
		if l.stateOf(Reserved, open.Owner) == Interrupted {
			return fmt.Errorf("settle %v: the process that reserved it (pid %d) is gone; the run stays charged its full grant: %w", id, open.Owner.PID, ErrInterrupted)
		}
		g := open.Grant
		re := &runEvent{ID: int64(id), Status: out.Status, NoiseDrawn: out.NoiseDrawn, Error: out.Error,
			Neighbours: out.Neighbours, Class: GuaranteeClass(out.Guarantee)}
		switch {
		case out.Status == Failed && !out.NoiseDrawn:
			re.Basis = "refund"
		case out.Status == Failed:
			re.Charge, re.Basis = open.Charge, "grant"
			if _, ok := privacy.StepsMu2(out.Steps); !ok && g.Kind != privacy.GrantPure {
				// Not known to be Gaussian-only (Outcome.Steps lists the
				// steps announced before their noise was drawn): the
				// reservation's μ² cap does not bound it. Under the
				// Gaussian-DP filter it is charged its steps' own GDP
				// statement (privacy.DrawnMu2), which keeps the budget admitting;
				// elsewhere it carries none. A run granted a pure ε is
				// ε-DP whatever it did within its grant, so it keeps the
				// μ_ε² its reservation held.
				re.Charge.Mu2 = 0
				if st.Final.Filter == privacy.FilterGDP {
					re.Charge.Mu2 = privacy.DrawnMu2(open.Charge.Mu2, out.Steps)
				}
			}
		default:
			refused = settleSuccess(g, open.Charge, st, int64(id), out, re)
		}
		if !re.Charge.HasEpsDelta() {
			re.Charge.Delta = 0 // δ without ε is no statement
		}
		return t.emit(ctx, &event{Kind: evSettle, Dataset: h, Run: re})
	})
	if err != nil {
		return err
	}
	if refused != nil {
		return fmt.Errorf("settle %v: %w", id, refused)
	}
	return nil
}

// settleSuccess fills re for a successful run granted g: its cost composed
// by the privacy package, converted to the budget's relation, kept within
// the budget. A non-nil error means the run is instead recorded as failed,
// charged its grant, and its result must not be released.
//
// reserved is what the reservation charged: the grant, converted when the
// run's relation was known then.
func settleSuccess(g privacy.Grant, reserved Charge, st *dsState, id int64, out Outcome, re *runEvent) error {
	c, basis, note := successCharge(g, out)
	re.Charge, re.Basis, re.Note = c, basis, note
	if st.approxTotal() && st.Final.Mode() == privacy.FilterGDP && !c.IsZero() && !c.HasMu() {
		err := refuse(re, reserved, fmt.Errorf("the run is not Gaussian-only, and the budget follows the Gaussian-DP filter since its first run (see dplr budget show): %w", ErrIncompatible))
		if mu2 := privacy.DrawnMu2(reserved.Mu2, out.Steps); mu2 > 0 {
			re.Charge.Mu2 = mu2
		}
		return err
	}
	rel, err := ParseNeighbours(out.Neighbours)
	switch {
	case out.Neighbours == "":
		rel = st.Relation
		re.Note = strings.TrimSpace(re.Note + " the run stated no neighbour relation; counted as the budget's (" + string(rel) + ")")
	case err != nil:
		return refuse(re, reserved, err)
	}
	re.Relation = rel
	// Each true statement of the run, converted to the budget's relation;
	// under a total, the one that leaves the most room is charged.
	cands := privacy.ChargeStatements(c, out.Steps)
	convs := make([]Charge, len(cands))
	var k int
	for i, x := range cands {
		if convs[i], k, err = convert(x, rel, st.Relation); err != nil {
			return refuse(re, reserved, err)
		}
	}
	conv := convs[0]
	if st.Total != nil && len(convs) > 1 {
		conv = privacy.Roomiest(*st.Total, st.charged(id), convs)
		if i := slices.Index(convs, conv); i > 0 {
			c, re.Charge, re.Basis = cands[i], cands[i], "pure"
			re.Note = strings.TrimSpace(re.Note + " charged its pure statement, which leaves the budget more room than its (ε, δ) one")
		}
	}
	re.Factor = k
	if k > 1 {
		re.Charge = conv
		re.Note = strings.TrimSpace(fmt.Sprintf("%s cost %v for %s neighbours, %d× by group privacy for the budget's %s", re.Note, c, rel, k, st.Relation))
	}
	if st.Total != nil && !re.Charge.IsZero() {
		if err := fits(*st.Total, st.charged(id), re.Charge); err != nil {
			if k > 1 {
				return refuse(re, reserved, fmt.Errorf("converted for the budget's relation the run costs %v, which does not fit: %w", re.Charge, err))
			}
			re.Charge, re.Basis = reserved, "grant"
			re.Note = strings.TrimSpace(re.Note + " the achieved charge did not fit the budget's composition; charged the full grant")
		}
	}
	return nil
}

// refuse turns a success into a failure charged what its reservation
// charged.
func refuse(re *runEvent, reserved Charge, why error) error {
	re.Status, re.NoiseDrawn, re.Charge, re.Basis = Failed, true, reserved, "grant"
	re.Error = "result withheld: " + why.Error()
	return why
}

// successCharge is what a successful run granted g is charged: its steps
// (or the accountant's Achieved) composed by the privacy package's
// composition, never more than g. Steps that do not compose within g (or
// that privacy.Compose refuses, such as a step that declares no cost) give
// the full grant.
func successCharge(g privacy.Grant, out Outcome) (Charge, string, string) {
	full := func(why string) (Charge, string, string) {
		return privacy.GrantCharge(g), "grant", why + "; charged the full grant"
	}
	var ach privacy.Achieved
	if out.Steps != nil {
		if len(out.Steps) == 0 {
			return Charge{}, "none", "nothing spent"
		}
		var err error
		if ach, err = privacy.Compose(g, out.Steps); err != nil {
			return full(fmt.Sprintf("the steps do not compose within the grant (%v)", err))
		}
	} else {
		ach = *out.Achieved
		for _, v := range []float64{ach.Epsilon, ach.Delta, ach.Rho} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return full(fmt.Sprintf("the reported cost (ε=%v, δ=%v, ρ=%v) is not valid", ach.Epsilon, ach.Delta, ach.Rho))
			}
		}
		// Check the reported figures against the grant with the same rule.
		as := privacy.Step{Name: "reported", Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Rho}
		if g.Kind == privacy.GrantApprox && ach.Composition != "zcdp" {
			as.Rho = 0 // partial ρ: no statement
		}
		if g.Kind == privacy.GrantZCDP {
			as = privacy.Step{Name: "reported", Rho: ach.Rho}
		}
		if as.Epsilon == 0 && as.Rho == 0 {
			return Charge{}, ach.Composition, "nothing spent"
		}
		if _, err := privacy.Compose(g, []privacy.Step{as}); err != nil {
			return full(fmt.Sprintf("the reported cost does not fit the grant (%v)", err))
		}
	}
	c := privacy.AchievedCharge(g, ach)
	if g.Kind == privacy.GrantPure && c.IsPure() {
		// ε-DP under a pure grant: the GDP statement of privacy.PureRunMu2.
		c.Mu2 = privacy.PureRunMu2(c.Epsilon, out.Steps)
	} else if mu2, ok := privacy.StepsMu2(out.Steps); ok {
		c.Mu2 = mu2
	} else if out.Steps == nil && ach.Composition == privacy.MethodGDP && ach.Mu > 0 {
		c.Mu2 = ach.Mu * ach.Mu
	}
	if !c.Valid() {
		return full("the composed cost is not valid")
	}
	if c.IsZero() {
		return Charge{}, ach.Composition, "nothing spent"
	}
	return c, ach.Composition, ""
}

// fetchVerified reads record seq inside t: records after the verified head
// were verified by begin; earlier ones are checked against the chain by
// their hash and the next record's link to it.
func (l *Ledger) fetchVerified(ctx context.Context, t *txn, seq int64) (*event, error) {
	var body []byte
	var hash, nextBody string
	err := t.tx.QueryRowContext(ctx, `SELECT body, hash FROM chain WHERE seq = ?`, seq).Scan(&body, &hash)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, l.damaged("record %d is missing", seq)
		}
		return nil, l.wrap("read record", err)
	}
	ev, err := l.decodeRow(seq, body, hash, "", false)
	if err != nil {
		return nil, err
	}
	if seq < t.v.head.Seq {
		if err := t.tx.QueryRowContext(ctx, `SELECT body FROM chain WHERE seq = ?`, seq+1).Scan(&nextBody); err != nil {
			return nil, l.wrap("read record", err)
		}
		if !strings.Contains(nextBody, `"prev":"`+hash+`"`) {
			return nil, l.damaged("record %d is not chained to record %d", seq+1, seq)
		}
	}
	return ev, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
