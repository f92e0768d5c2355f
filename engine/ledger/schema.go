package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/privacy"
)

// applicationID marks a SQLite file as a dplr ledger ("dplr" in ASCII).
const applicationID = 0x64706c72

// migrations are applied in order; migration i brings the schema to version
// i+1. Never edit a released migration: append a new one.
var migrations = []struct {
	desc string
	sql  string
}{
	{
		desc: "data sets, budget events and runs",
		sql: `
CREATE TABLE datasets (
	hash           TEXT PRIMARY KEY CHECK (length(hash) = 64),
	name           TEXT NOT NULL DEFAULT '',
	created_at     TEXT NOT NULL,
	budget_kind    TEXT CHECK (budget_kind IN ('pure', 'approx', 'zcdp')),
	budget_epsilon REAL NOT NULL DEFAULT 0,
	budget_delta   REAL NOT NULL DEFAULT 0,
	budget_rho     REAL NOT NULL DEFAULT 0,
	budget_set_at  TEXT
);
CREATE TABLE budget_events (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	hash    TEXT NOT NULL REFERENCES datasets(hash),
	kind    TEXT NOT NULL,
	epsilon REAL NOT NULL,
	delta   REAL NOT NULL,
	rho     REAL NOT NULL,
	set_at  TEXT NOT NULL
);
CREATE TABLE runs (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	hash           TEXT NOT NULL REFERENCES datasets(hash),
	estimator      TEXT NOT NULL,
	plugin         TEXT NOT NULL DEFAULT '',
	params         TEXT NOT NULL DEFAULT '{}',
	grant_kind     TEXT NOT NULL CHECK (grant_kind IN ('pure', 'approx', 'zcdp')),
	grant_epsilon  REAL NOT NULL,
	grant_delta    REAL NOT NULL,
	grant_rho      REAL NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('reserved', 'succeeded', 'failed')),
	charge_epsilon REAL NOT NULL,
	charge_delta   REAL NOT NULL,
	charge_rho     REAL NOT NULL,
	composition    TEXT NOT NULL DEFAULT '',
	noise_drawn    INTEGER NOT NULL DEFAULT 0,
	error          TEXT NOT NULL DEFAULT '',
	note           TEXT NOT NULL DEFAULT '',
	owner_host     TEXT NOT NULL,
	owner_boot     TEXT NOT NULL,
	owner_pid      INTEGER NOT NULL,
	owner_start    TEXT NOT NULL,
	reserved_at    TEXT NOT NULL,
	settled_at     TEXT
);
CREATE INDEX runs_by_hash ON runs(hash, id);
CREATE INDEX runs_charges ON runs(hash, charge_epsilon, charge_delta, charge_rho);
CREATE INDEX runs_states ON runs(hash, status, noise_drawn);
`,
	},
	{
		desc: "hash-chained records; row sketches",
		sql: `
CREATE TABLE chain (
	seq     INTEGER PRIMARY KEY,
	dataset TEXT NOT NULL DEFAULT '',
	body    BLOB NOT NULL,
	hash    TEXT NOT NULL
);
CREATE INDEX chain_by_dataset ON chain(dataset, seq);
CREATE TABLE sketches (
	hash   TEXT PRIMARY KEY,
	sketch BLOB NOT NULL
) WITHOUT ROWID
`,
	},
}

// beginCreating begins the write transaction of migrate. While processes
// create (or switch to WAL) the same new database file at once, SQLite can
// answer SQLITE_BUSY at once, without waiting in the busy handler (the
// switch of journal mode and WAL recovery do not wait); such a begin is
// retried, with a growing pause, for at most the busy timeout.
func (l *Ledger) beginCreating(ctx context.Context) (*sql.Tx, error) {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		tx, err := l.db.BeginTx(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return tx, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// migrate brings the schema up to SchemaVersion inside one write transaction,
// so that processes opening a new ledger at the same time apply each
// migration exactly once.
//
// A new database gets its genesis record; a database of schema version 1
// (before the chain) has its data sets, budgets and runs imported into the
// chain. hadMarker says the marker file exists: an empty database is then
// a ledger that was emptied or replaced, not a new one.
func (l *Ledger) migrate(ctx context.Context, hadMarker bool) error {
	tx, err := l.beginCreating(ctx)
	if err != nil {
		return l.wrap("open", err)
	}
	defer tx.Rollback()

	var appID int64
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return l.wrap("read application id", err)
	}
	var nTables int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'").Scan(&nTables); err != nil {
		return l.wrap("read schema", err)
	}
	switch {
	case appID == 0 && nTables == 0 && hadMarker:
		return l.damaged("the ledger file is an empty database, but %s says a ledger existed here", l.marker)
	case appID == 0 && nTables == 0: // a new database
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
			return l.wrap("set application id", err)
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_migrations (
	version     INTEGER PRIMARY KEY,
	description TEXT NOT NULL,
	applied_at  TEXT NOT NULL
)`); err != nil {
			return l.wrap("create schema_migrations", err)
		}
	case appID != applicationID:
		return fmt.Errorf("ledger %s: an SQLite database of another application (application_id %#x): %w (%w)", l.path, appID, ErrCorrupt, ErrDamaged)
	}

	var version int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&version); err != nil {
		return l.wrap("read schema version", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("ledger %s: schema version %d is newer than this dplr supports (%d); upgrade dplr: %w", l.path, version, SchemaVersion, ErrDamaged)
	}
	for v := version; v < SchemaVersion; v++ {
		m := migrations[v]
		for _, stmt := range strings.Split(m.sql, ";\n") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return l.wrap(fmt.Sprintf("migration %d (%s)", v+1, m.desc), err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations(version, description, applied_at) VALUES (?, ?, ?)",
			v+1, m.desc, now()); err != nil {
			return l.wrap("record migration", err)
		}
	}
	var nRecords int64
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM chain LIMIT 2)").Scan(&nRecords); err != nil {
		return l.wrap("read chain", err)
	}
	if nRecords == 0 {
		if hadMarker {
			return l.damaged("the ledger has no records, but %s says it had some", l.marker)
		}
		if err := l.genesis(ctx, tx, version); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return l.wrap("commit migrations", err)
	}
	if nRecords == 0 {
		l.mu.Lock()
		defer l.mu.Unlock()
		if err := l.writeMarker(""); err != nil {
			return err
		}
	}
	return nil
}

// genesis writes the chain's first record and, for a ledger of schema
// version 1, imports its history.
func (l *Ledger) genesis(ctx context.Context, tx *sql.Tx, fromVersion int) error {
	id, err := newLedgerID()
	if err != nil {
		return err
	}
	l.id = id
	t := &txn{l: l, tx: tx, v: newView(), time: now()}
	if err := t.emit(ctx, &event{Kind: evGenesis, Note: "dplr budget ledger"}); err != nil {
		return err
	}
	if fromVersion >= 1 {
		if err := importV1(ctx, t); err != nil {
			return fmt.Errorf("ledger %s: importing the history written by an earlier dplr: %w", l.path, err)
		}
	}
	l.view = t.v
	return nil
}

// importV1 replays a schema-1 ledger's data sets, budget events and runs
// into the chain, in their original order.
func importV1(ctx context.Context, t *txn) error {
	rows, err := t.tx.QueryContext(ctx, `SELECT hash, name FROM datasets ORDER BY created_at, hash`)
	if err != nil {
		return err
	}
	type ds struct{ hash, name string }
	var sets []ds
	for rows.Next() {
		var d ds
		if err := rows.Scan(&d.hash, &d.name); err != nil {
			rows.Close()
			return err
		}
		sets = append(sets, d)
	}
	rows.Close()
	for _, d := range sets {
		if err := t.emit(ctx, &event{Kind: evDataset, Dataset: d.hash, Name: d.name, Rel: ReplaceRow, Note: "imported"}); err != nil {
			return err
		}
		var kind sql.NullString
		var g privacy.Grant
		if err := t.tx.QueryRowContext(ctx, `SELECT budget_kind, budget_epsilon, budget_delta, budget_rho FROM datasets WHERE hash = ?`, d.hash).
			Scan(&kind, &g.Epsilon, &g.Delta, &g.Rho); err != nil {
			return err
		}
		runs, err := t.tx.QueryContext(ctx, `SELECT id, estimator, plugin, grant_kind, grant_epsilon, grant_delta, grant_rho, status,
	charge_epsilon, charge_delta, charge_rho, composition, noise_drawn, error, note, owner_host, owner_boot, owner_pid, owner_start, reserved_at
	FROM runs WHERE hash = ? ORDER BY id`, d.hash)
		if err != nil {
			return err
		}
		type oldRun struct {
			id                         int64
			est, plugin, status, basis string
			g                          privacy.Grant
			c                          Charge
			noise                      bool
			errMsg, note               string
			o                          owner
			at                         string
		}
		var old []oldRun
		for runs.Next() {
			var r oldRun
			if err := runs.Scan(&r.id, &r.est, &r.plugin, &r.g.Kind, &r.g.Epsilon, &r.g.Delta, &r.g.Rho, &r.status,
				&r.c.Epsilon, &r.c.Delta, &r.c.Rho, &r.basis, &r.noise, &r.errMsg, &r.note, &r.o.Host, &r.o.Boot, &r.o.PID, &r.o.Start, &r.at); err != nil {
				runs.Close()
				return err
			}
			old = append(old, r)
		}
		runs.Close()
		for _, r := range old {
			g := r.g
			o := r.o
			note := fmt.Sprintf("imported from run %d of the earlier ledger", r.id)
			res := &event{Kind: evReserve, Dataset: d.hash, Time: r.at, Note: note,
				Run: &runEvent{Estimator: r.est, Plugin: r.plugin, Grant: &g, Owner: &o, Charge: privacy.GrantCharge(g), Basis: "grant"}}
			if err := t.emit(ctx, res); err != nil {
				return err
			}
			if State(r.status) == Reserved {
				continue
			}
			set := &event{Kind: evSettle, Dataset: d.hash, Note: note,
				Run: &runEvent{ID: res.Seq, Status: State(r.status), Charge: r.c, Basis: r.basis, NoiseDrawn: r.noise, Error: r.errMsg, Note: r.note,
					Relation: ReplaceRow, Class: "", Neighbours: ""}}
			if err := t.emit(ctx, set); err != nil {
				return err
			}
		}
		if kind.Valid {
			g.Kind = privacy.GrantKind(kind.String)
			if err := t.emit(ctx, &event{Kind: evBudget, Dataset: d.hash, New: &g, Note: "imported"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// now is the current time in the format the ledger stores.
func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
