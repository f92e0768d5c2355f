package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

// DatasetRef names a data set of the ledger: by its data (read and
// hashed: the key is the identity of its source records), by its hash, or
// by the name given when its budget was set. Build it with ByData, ByHash
// or ByName.
type DatasetRef struct {
	Data *Data
	Hash string
	Name string
}

// ByData names the data set d is read from. When d.Load.Kind is empty the
// kind is inferred (InferKind).
func ByData(d Data) DatasetRef { return DatasetRef{Data: &d} }

// ByHash names a data set by its hash.
func ByHash(hash string) DatasetRef { return DatasetRef{Hash: hash} }

// ByName names a data set by its name (or a hash).
func ByName(name string) DatasetRef { return DatasetRef{Name: name} }

// target is a resolved reference: a hash, or a name for the ledger to
// resolve; kind is the kind data was read as ("" otherwise); name the
// data's own name.
type target struct {
	ref    string
	isHash bool
	kind   data.Kind
	name   string
	// sketch is the row sketch of the data when the target was read from
	// data (nil for a hash or a name).
	sketch []uint64
}

// DatasetKey reads and hashes d and returns its budget key: the identity
// of its source records.
func (c *Client) DatasetKey(ctx context.Context, d Data) (string, error) {
	t, err := c.target(ctx, ByData(d))
	return t.ref, err
}

func (c *Client) target(ctx context.Context, r DatasetRef) (target, error) {
	given := 0
	for _, s := range []bool{r.Data != nil, r.Hash != "", r.Name != ""} {
		if s {
			given++
		}
	}
	switch {
	case given != 1:
		return target{}, classedf(ErrUsage, "name the data set by exactly one of its data, hash or name")
	case r.Hash != "":
		return target{ref: r.Hash, isHash: true}, nil
	case r.Name != "":
		return target{ref: r.Name}, nil
	}
	k := r.Data.Load.Kind
	if k == "" && r.Data.Dataset != nil {
		k = r.Data.Dataset.Kind
	}
	if k == "" {
		k, _ = InferKind(r.Data.Path, r.Data.Load)
	}
	p, err := c.prepare(ctx, *r.Data, k)
	if err != nil {
		return target{}, err
	}
	t := target{ref: host.BudgetKey(p.handle), isHash: true, kind: k, name: p.handle.Name}
	if p.handle.Source != nil {
		t.sketch = p.handle.Source.Sketch
	}
	return t, nil
}

// withLedger opens the ledger, runs fn and closes it.
func (c *Client) withLedger(ctx context.Context, fn func(*ledger.Ledger) error, opts ...ledger.Option) error {
	led, err := ledger.Open(ctx, c.opt.Home, opts...)
	if err != nil {
		return ledgerErr(fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer led.Close()
	return fn(led)
}

// resolve returns the data set's hash.
func (c *Client) resolve(ctx context.Context, led *ledger.Ledger, t target) (string, error) {
	if t.isHash {
		return t.ref, nil
	}
	h, err := led.Resolve(ctx, t.ref)
	return h, ledgerErr(err)
}

// onDataset resolves r and runs fn on the open ledger with its hash.
func (c *Client) onDataset(ctx context.Context, r DatasetRef, fn func(*ledger.Ledger, string, target) error) error {
	t, err := c.target(ctx, r)
	if err != nil {
		return err
	}
	return c.withLedger(ctx, func(led *ledger.Ledger) error {
		h, err := c.resolve(ctx, led, t)
		if err != nil {
			return err
		}
		return fn(led, h, t)
	})
}

// BudgetOptions qualify SetBudget.
type BudgetOptions struct {
	// Name is a human name for the data set (default: the data's own).
	Name string
	// Relation is the neighbour relation the budget counts in (default
	// ledger.ReplaceUser for users data, ledger.ReplaceRow otherwise).
	Relation Relation
	// Change changes an existing total (with a Note saying why); the total
	// never goes below what has been spent.
	Change bool
	Note   string
}

// SetBudget sets (or, with Change, changes) the data set's total budget
// and returns its position. Setting a total twice without Change is
// ErrBudget (wrapping ledger.ErrBudgetSet).
func (c *Client) SetBudget(ctx context.Context, r DatasetRef, total Grant, opt BudgetOptions) (BudgetStatus, error) {
	if opt.Change && strings.TrimSpace(opt.Note) == "" {
		return BudgetStatus{}, classedf(ErrUsage, "changing a total needs a note saying why it changes")
	}
	var st BudgetStatus
	err := c.onDataset(ctx, r, func(led *ledger.Ledger, h string, t target) error {
		if opt.Change {
			if err := led.ChangeBudget(ctx, h, total, opt.Note); err != nil {
				return ledgerErr(err)
			}
		} else {
			// A total on data that shares most of its rows with a
			// budgeted data set, or that is linked to one, would be a
			// second budget for the same people: refused, with nothing
			// written.
			if st, err := led.Show(ctx, h); err == nil && st.DataHash != h {
				return classedf(ErrBudget, "no total was set: this data is linked to the data set %s (its rows are counted against that budget), so it has no total of its own; "+
					"change that data set's total with `budget set --change`, or `budget unlink` this data first", cmp.Or(st.Name, st.DataHash))
			}
			if err := host.CheckOverlap(ctx, led, h, &dataio.Identity{Sketch: t.sketch}); err != nil {
				return classed(ErrBudget, fmt.Errorf("no total was set: %w", err))
			}
			if err := setBudget(ctx, led, h, t, total, opt); err != nil {
				return err
			}
		}
		// Record the rows' sketch with the total, so that near copies are
		// recognised (refused by dplr fit and dplr audit) from the start,
		// not only after a first fit.
		if len(t.sketch) > 0 {
			if err := led.SetSketch(ctx, h, t.sketch); err != nil {
				return ledgerErr(err)
			}
		}
		var err error
		st, err = led.Show(ctx, h)
		return ledgerErr(err)
	})
	return st, err
}

func setBudget(ctx context.Context, led *ledger.Ledger, h string, t target, total privacy.Grant, opt BudgetOptions) error {
	rel := opt.Relation
	if rel == "" && t.kind == data.Users {
		rel = ledger.ReplaceUser
	}
	if rel != "" {
		if err := led.SetRelation(ctx, h, rel); err != nil {
			return ledgerErr(err)
		}
	}
	return ledgerErr(led.SetBudget(ctx, h, cmp.Or(opt.Name, t.name), total))
}

// ShowBudget returns the data set's budget position.
func (c *Client) ShowBudget(ctx context.Context, r DatasetRef) (BudgetStatus, error) {
	var st BudgetStatus
	err := c.onDataset(ctx, r, func(led *ledger.Ledger, h string, _ target) error {
		var err error
		st, err = led.Show(ctx, h)
		return ledgerErr(err)
	})
	return st, err
}

// History is a data set's record: its runs and its budget's changes.
type History struct {
	Runs    []Run
	Changes []Change
}

// History returns the data set's runs and budget changes.
func (c *Client) History(ctx context.Context, r DatasetRef) (History, error) {
	var hist History
	err := c.onDataset(ctx, r, func(led *ledger.Ledger, h string, _ target) error {
		var err error
		if hist.Runs, err = led.History(ctx, h); err != nil {
			return ledgerErr(err)
		}
		hist.Changes, err = led.Changes(ctx, h)
		return ledgerErr(err)
	})
	return hist, err
}

// Link makes the data set r (another file holding the same people) count
// against the data set to (a name or hash). It returns r's own key (the
// alias) and the hash of the data set it now counts against.
func (c *Client) Link(ctx context.Context, r DatasetRef, to, note string) (alias, dataset string, err error) {
	if to == "" {
		return "", "", classedf(ErrUsage, "a link needs the data set the file holds the same people as")
	}
	t, err := c.target(ctx, r)
	if err != nil {
		return "", "", err
	}
	err = c.withLedger(ctx, func(led *ledger.Ledger) error {
		if err := led.Link(ctx, t.ref, to, note); err != nil {
			return ledgerErr(err)
		}
		var err error
		dataset, err = led.Resolve(ctx, t.ref)
		return ledgerErr(err)
	})
	return t.ref, dataset, err
}

// Merge makes the data set r part of the data set into (a name or hash),
// for two budgets that cover the same people: into is charged every
// charge of r, and r's key then counts against into. Charges that do not
// fit into's total are refused (ErrBudget) unless force, which merges all
// the same and returns the refusal's cause. It returns into's hash.
func (c *Client) Merge(ctx context.Context, r DatasetRef, into, note string, force bool) (string, error) {
	if into == "" {
		return "", classedf(ErrUsage, "a merge needs the data set to merge into")
	}
	var h string
	err := c.onDataset(ctx, r, func(led *ledger.Ledger, from string, _ target) error {
		merr := ledgerErr(led.Merge(ctx, from, into, note, force))
		var err error
		h, err = led.Resolve(ctx, into)
		if merr != nil {
			return merr
		}
		return ledgerErr(err)
	})
	return h, err
}

// Unlink makes the file r, linked to a data set, a data set of its own,
// charged all that data set was charged (see ledger.Ledger.Unlink). It
// returns r's key.
func (c *Client) Unlink(ctx context.Context, r DatasetRef, note string) (string, error) {
	t, err := c.target(ctx, r)
	if err != nil {
		return "", err
	}
	if !t.isHash {
		return "", classedf(ErrUsage, "unlink names the linked file by its data or hash, not by a data set's name")
	}
	return t.ref, c.withLedger(ctx, func(led *ledger.Ledger) error {
		return ledgerErr(led.Unlink(ctx, t.ref, note))
	})
}

// ChargeOptions qualify Charge.
type ChargeOptions struct {
	// Note says what the spend was (required).
	Note string
	// Relation is the neighbour relation the spend's guarantee holds for
	// (default: the budget's).
	Relation Relation
	// Mu states the spend as μ-GDP instead of cost (which is then zero);
	// see ledger.ChargeRequest.
	Mu float64
	// Force records a spend the budget's rule cannot admit instead of
	// refusing it (see ledger.ChargeRequest).
	Force bool
}

// Charge records a spend made outside dplr. A non-zero RunID with an
// error means the charge was recorded (forced beyond what the budget's
// rule admits, or something after it failed).
func (c *Client) Charge(ctx context.Context, r DatasetRef, cost Grant, opt ChargeOptions) (RunID, error) {
	var id RunID
	err := c.onDataset(ctx, r, func(led *ledger.Ledger, h string, _ target) error {
		var err error
		id, err = led.RecordCharge(ctx, h, ledger.ChargeRequest{Cost: cost, Mu: opt.Mu, Relation: opt.Relation, Note: opt.Note, Force: opt.Force})
		return ledgerErr(err)
	})
	return id, err
}

// Datasets lists every data set of the ledger.
func (c *Client) Datasets(ctx context.Context) ([]DatasetEntry, error) {
	var ds []DatasetEntry
	err := c.withLedger(ctx, func(led *ledger.Ledger) error {
		var err error
		ds, err = led.Datasets(ctx)
		return ledgerErr(err)
	})
	return ds, err
}

// VerifyLedger checks the whole ledger (SQLite's integrity check, the hash
// chain, every budget position); a damaged ledger is ErrData. With adopt,
// a ledger whose marker file is missing is accepted after the check.
func (c *Client) VerifyLedger(ctx context.Context, adopt bool) (VerifyReport, string, error) {
	opts := []ledger.Option{ledger.WithFullCheck()}
	if adopt {
		opts = append(opts, ledger.WithAdoptMarker())
	}
	var rep VerifyReport
	var path string
	err := c.withLedger(ctx, func(led *ledger.Ledger) error {
		path = led.Path()
		var err error
		rep, err = led.Verify(ctx)
		return ledgerErr(err)
	}, opts...)
	return rep, path, err
}

// IsBudgetSet reports whether err is the refusal to set a total twice.
func IsBudgetSet(err error) bool { return errors.Is(err, ledger.ErrBudgetSet) }
