package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"modernc.org/sqlite"
)

// FileName is the ledger database's file name inside its directory.
const FileName = "ledger.db"

// EnvHome is the environment variable that moves the ledger directory.
const EnvHome = "DPLR_HOME"

// Sentinel errors; test with errors.Is.
var (
	// ErrBudgetExceeded: the run's grant does not fit in what is left of the
	// data set's budget (or a new budget is below what has been spent).
	ErrBudgetExceeded = errors.New("ledger: privacy budget exceeded")
	// ErrIncompatible: a charge cannot be counted against a budget of that
	// form (e.g. an (ε, δ) grant against a pure ε budget).
	ErrIncompatible = errors.New("ledger: grant incompatible with the data set's budget")
	// ErrInvalid: a malformed argument (hash, grant, outcome).
	ErrInvalid = errors.New("ledger: invalid argument")
	// ErrNotFound: no such run or data set.
	ErrNotFound = errors.New("ledger: not found")
	// ErrAlreadySettled: Settle was called on a run that is not reserved.
	ErrAlreadySettled = errors.New("ledger: run already settled")
	// ErrInterrupted: Settle was called on a run whose reserving process is
	// gone; it stays charged its full grant.
	ErrInterrupted = errors.New("ledger: run was interrupted")
	// ErrCorrupt: the database file is damaged or is not a dplr ledger.
	ErrCorrupt = errors.New("ledger: database corrupt or not a dplr ledger")
)

// busyTimeoutMS is how long a write waits for another process's write
// transaction before failing with "database is locked".
const busyTimeoutMS = 60000

// Ledger is an open ledger database. It is safe for concurrent use by
// several goroutines, and several processes may open the same file.
type Ledger struct {
	path string
	w    *sql.DB // writers: every transaction is BEGIN IMMEDIATE
	r    *sql.DB // readers: deferred transactions (WAL snapshots)
	self owner
}

// HomeDir returns the default ledger directory: $DPLR_HOME if set, else
// $XDG_DATA_HOME/dplr if XDG_DATA_HOME is an absolute path, else
// ~/.local/share/dplr (on Windows %LOCALAPPDATA%\dplr).
func HomeDir() (string, error) {
	if d := os.Getenv(EnvHome); d != "" {
		return d, nil
	}
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "dplr"), nil
		}
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "dplr"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("ledger home: set %s: %w", EnvHome, err)
	}
	return filepath.Join(home, ".local", "share", "dplr"), nil
}

// OpenDefault opens the ledger in HomeDir().
func OpenDefault(ctx context.Context) (*Ledger, error) {
	dir, err := HomeDir()
	if err != nil {
		return nil, err
	}
	return Open(ctx, dir)
}

// Open opens (creating if needed) the ledger <dir>/ledger.db, creating dir
// with mode 0700 and the file with mode 0600, and migrates its schema. An
// existing file that is not a healthy dplr ledger gives an error naming it
// and wrapping ErrCorrupt; it is never reset.
func Open(ctx context.Context, dir string) (*Ledger, error) {
	if dir == "" {
		return nil, fmt.Errorf("ledger: empty directory: %w", ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("ledger directory: %w", err)
	}
	path := filepath.Join(abs, FileName)
	if err := precheck(path); err != nil {
		return nil, err
	}
	l := &Ledger{path: path, self: currentOwner()}
	base := "file:" + uriEscape(path) + "?_busy_timeout=" + fmt.Sprint(busyTimeoutMS) +
		"&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1"
	if l.w, err = sql.Open("sqlite", base+"&_txlock=immediate"); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if l.r, err = sql.Open("sqlite", base+"&_txlock=deferred"); err != nil {
		l.w.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	l.w.SetMaxOpenConns(2)
	l.r.SetMaxOpenConns(4)
	if err := l.migrate(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.quickCheck(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Path returns the database file's path.
func (l *Ledger) Path() string { return l.path }

// Close closes the database.
func (l *Ledger) Close() error {
	var errs []error
	if l.w != nil {
		errs = append(errs, l.w.Close())
	}
	if l.r != nil {
		errs = append(errs, l.r.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ledger %s: close: %w", l.path, err)
	}
	return nil
}

var sqliteMagic = []byte("SQLite format 3\x00")

// precheck creates a missing file with mode 0600 and refuses an existing,
// non-empty file that does not start with SQLite's header, before the
// driver sees it.
func precheck(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	f, err = os.Open(path)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil // empty file: SQLite treats it as a new database
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("ledger %s: %w", path, err)
	case !bytes.Equal(head[:n], sqliteMagic):
		return fmt.Errorf("ledger %s: not an SQLite database (bad header; the file is left untouched, move it away to start a new ledger): %w", path, ErrCorrupt)
	}
	return nil
}

// uriEscape escapes the characters SQLite's URI parser treats specially.
func uriEscape(path string) string {
	path = filepath.ToSlash(path)
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	path = r.Replace(path)
	if !strings.HasPrefix(path, "/") {
		path = "/" + path // Windows drive letters: file:/C:/...
	}
	return path
}

// SQLite primary result codes the ledger distinguishes.
const (
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// wrap adds the operation and file to err, and ErrCorrupt when SQLite
// reports a damaged file.
func (l *Ledger) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteCorrupt, sqliteNotADB:
			return fmt.Errorf("ledger %s: %s: %w (%w)", l.path, op, ErrCorrupt, err)
		}
	}
	return fmt.Errorf("ledger %s: %s: %w", l.path, op, err)
}

func (l *Ledger) quickCheck(ctx context.Context) error {
	rows, err := l.r.QueryContext(ctx, "PRAGMA quick_check")
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
		return fmt.Errorf("ledger %s: integrity check failed (%s): %w", l.path, strings.Join(msgs, "; "), ErrCorrupt)
	}
	return nil
}
