package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
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
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// migrate brings the schema up to SchemaVersion inside one write transaction,
// so that processes opening a new ledger at the same time apply each
// migration exactly once.
func (l *Ledger) migrate(ctx context.Context) error {
	tx, err := l.w.BeginTx(ctx, nil)
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
		return fmt.Errorf("ledger %s: an SQLite database of another application (application_id %#x): %w", l.path, appID, ErrCorrupt)
	}

	var version int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&version); err != nil {
		return l.wrap("read schema version", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("ledger %s: schema version %d is newer than this dplr supports (%d); upgrade dplr", l.path, version, SchemaVersion)
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
	if err := tx.Commit(); err != nil {
		return l.wrap("commit migrations", err)
	}
	return nil
}

// now is the current time in the format the ledger stores.
func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func parseTime(s sql.NullString) time.Time {
	if !s.Valid {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, s.String)
	return t
}
