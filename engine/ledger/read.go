package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dplr/dplr/engine/privacy"
)

// Show returns the budget position of the data set with the given hash. A
// data set the ledger has never seen is not an error: it has no budget and
// nothing spent.
func (l *Ledger) Show(ctx context.Context, hash string) (Status, error) {
	h, err := NormalizeHash(hash)
	if err != nil {
		return Status{}, err
	}
	tx, err := l.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Status{}, l.wrap("show", err)
	}
	defer tx.Rollback()

	st := Status{DataHash: h}
	var setAt sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT name, budget_set_at FROM datasets WHERE hash = ?`, h).Scan(&st.Name, &setAt)
	if errors.Is(err, sql.ErrNoRows) {
		st.Spent = Spent{Composition: "none"}
		return st, nil
	}
	if err != nil {
		return Status{}, l.wrap("show", err)
	}
	st.BudgetSetAt = parseTime(setAt)
	if st.Total, st.HasBudget, err = budgetOf(ctx, tx, h); err != nil {
		return Status{}, l.wrap("show", err)
	}
	if st.sums, err = chargeSums(ctx, tx, h, 0); err != nil {
		return Status{}, l.wrap("show", err)
	}
	if st.HasBudget {
		// The ledger keeps the history within the total, so compose fits;
		// report its best composition even if it did not.
		st.Spent, _ = compose(st.Total, st.sums)
		st.Remaining = remaining(st.Total, st.sums)
	} else {
		st.Spent = uncomposed(st.sums)
	}

	rows, err := tx.QueryContext(ctx, `SELECT status, noise_drawn, count(*) FROM runs WHERE hash = ? GROUP BY status, noise_drawn`, h)
	if err != nil {
		return Status{}, l.wrap("show", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			status string
			noise  bool
			n      int
		)
		if err := rows.Scan(&status, &noise, &n); err != nil {
			return Status{}, l.wrap("show", err)
		}
		st.Runs.Total += n
		switch State(status) {
		case Reserved:
			st.Runs.Reserved += n // split into interrupted below
		case Succeeded:
			st.Runs.Succeeded += n
		case Failed:
			st.Runs.Failed += n
			if !noise {
				st.Runs.Refunded += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		return Status{}, l.wrap("show", err)
	}
	if st.Runs.Reserved > 0 {
		owners, err := tx.QueryContext(ctx, `SELECT owner_host, owner_boot, owner_pid, owner_start FROM runs WHERE hash = ? AND status = 'reserved'`, h)
		if err != nil {
			return Status{}, l.wrap("show", err)
		}
		defer owners.Close()
		for owners.Next() {
			var o owner
			if err := owners.Scan(&o.Host, &o.Boot, &o.PID, &o.Start); err != nil {
				return Status{}, l.wrap("show", err)
			}
			if l.state(Reserved, o) == Interrupted {
				st.Runs.Reserved--
				st.Runs.Interrupted++
			}
		}
		if err := owners.Err(); err != nil {
			return Status{}, l.wrap("show", err)
		}
	}
	return st, nil
}

// state derives a run's displayed state from its stored status.
func (l *Ledger) state(status State, o owner) State {
	if status == Reserved && l.self.check(o) == ownerDead {
		return Interrupted
	}
	return status
}

const runColumns = `id, hash, estimator, plugin, params, grant_kind, grant_epsilon, grant_delta, grant_rho, status,
	charge_epsilon, charge_delta, charge_rho, composition, noise_drawn, error, note,
	owner_host, owner_boot, owner_pid, owner_start, reserved_at, settled_at`

func (l *Ledger) scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var (
		r              Run
		params, status string
		o              owner
		res, set       sql.NullString
	)
	err := sc.Scan(&r.ID, &r.DataHash, &r.Estimator, &r.Plugin, &params, &r.Grant.Kind, &r.Grant.Epsilon, &r.Grant.Delta, &r.Grant.Rho,
		&status, &r.Charge.Epsilon, &r.Charge.Delta, &r.Charge.Rho, &r.Basis, &r.NoiseDrawn, &r.Error, &r.Note,
		&o.Host, &o.Boot, &o.PID, &o.Start, &res, &set)
	if err != nil {
		return Run{}, err
	}
	if params != "" && params != "{}" {
		if err := json.Unmarshal([]byte(params), &r.Params); err != nil {
			return Run{}, fmt.Errorf("run %d: params: %w", r.ID, err)
		}
	}
	r.State = l.state(State(status), o)
	r.Refunded = r.State == Failed && !r.NoiseDrawn
	r.Host, r.PID = o.Host, o.PID
	r.ReservedAt, r.SettledAt = parseTime(res), parseTime(set)
	if r.State == Reserved && l.self.check(o) == ownerUnknown && o.Host != l.self.Host && r.Note == "" {
		r.Note = fmt.Sprintf("reserved on host %s: cannot tell from here whether it is still running", o.Host)
	}
	return r, nil
}

// History returns the runs recorded for the data set, oldest first (empty
// for a data set the ledger has never seen).
func (l *Ledger) History(ctx context.Context, hash string) ([]Run, error) {
	h, err := NormalizeHash(hash)
	if err != nil {
		return nil, err
	}
	rows, err := l.r.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE hash = ? ORDER BY id`, h)
	if err != nil {
		return nil, l.wrap("history", err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		r, err := l.scanRun(rows)
		if err != nil {
			return nil, l.wrap("history", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, l.wrap("history", err)
	}
	return runs, nil
}

// Get returns one run's record.
func (l *Ledger) Get(ctx context.Context, id RunID) (Run, error) {
	r, err := l.scanRun(l.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("%v: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, l.wrap("get run", err)
	}
	return r, nil
}

// Dataset is a data set the ledger knows.
type Dataset struct {
	Hash      string
	Name      string
	HasBudget bool
	Total     privacy.Grant
}

// Datasets lists the data sets the ledger knows, by name then hash.
func (l *Ledger) Datasets(ctx context.Context) ([]Dataset, error) {
	rows, err := l.r.QueryContext(ctx, `SELECT hash, name, budget_kind, budget_epsilon, budget_delta, budget_rho FROM datasets ORDER BY name, hash`)
	if err != nil {
		return nil, l.wrap("list data sets", err)
	}
	defer rows.Close()
	var out []Dataset
	for rows.Next() {
		var (
			d    Dataset
			kind sql.NullString
		)
		if err := rows.Scan(&d.Hash, &d.Name, &kind, &d.Total.Epsilon, &d.Total.Delta, &d.Total.Rho); err != nil {
			return nil, l.wrap("list data sets", err)
		}
		if kind.Valid {
			d.HasBudget, d.Total.Kind = true, privacy.GrantKind(kind.String)
		} else {
			d.Total = privacy.Grant{}
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, l.wrap("list data sets", err)
	}
	return out, nil
}
