package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"modernc.org/sqlite"
)

// FileName is the ledger database's file name inside its directory.
const FileName = "ledger.db"

// MarkerName is the marker file's name inside the ledger directory. It is
// written when the ledger is created and rewritten after each change with
// the chain's verified head (a checkpoint), so that a ledger file that
// vanished, was emptied or was cut short is told from a fresh home.
const MarkerName = "ledger.marker"

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
	// ErrMechanism: the run declared a mechanism the budget's admission
	// rule cannot admit (a non-Gaussian step under the Gaussian-DP filter).
	// Always wrapped together with ErrIncompatible; no other grant fixes it.
	ErrMechanism = errors.New("ledger: the budget's rule admits no run using the declared mechanisms")
	// ErrRelation: a run's neighbour relation cannot be converted to its
	// budget's (or is not stated).
	ErrRelation = errors.New("ledger: neighbour relation cannot be converted")
	// ErrInvalid: a malformed argument (hash, grant, outcome).
	ErrInvalid = errors.New("ledger: invalid argument")
	// ErrNotFound: no such run or data set.
	ErrNotFound = errors.New("ledger: not found")
	// ErrAlreadySettled: Settle was called on a run that is not reserved.
	ErrAlreadySettled = errors.New("ledger: run already settled")
	// ErrInterrupted: Settle was called on a run whose reserving process is
	// gone; it stays charged its full grant.
	ErrInterrupted = errors.New("ledger: run was interrupted")
	// ErrBudgetSet: SetBudget on a data set whose total is already set to
	// another value; change it explicitly with ChangeBudget.
	ErrBudgetSet = errors.New("ledger: the data set already has a total")
	// ErrOverlap: a run's data is mostly rows of a budgeted data set
	// (ReserveRequest.LinkTo) but cannot be linked to it.
	ErrOverlap = errors.New("ledger: the data overlaps a budgeted data set it cannot be linked to")
	// ErrCorrupt: the database file is damaged at the SQLite level or is
	// not a dplr ledger. Errors wrapping it also wrap ErrDamaged.
	ErrCorrupt = errors.New("ledger: database corrupt or not a dplr ledger")
	// ErrDamaged: the ledger cannot be trusted: its file vanished, was
	// emptied or replaced while the marker says a ledger existed, a record
	// does not match its hash or its place in the chain, or a recorded
	// budget position does not follow from the history. The ledger is
	// never reset: every operation refuses until a person looks.
	ErrDamaged = errors.New("ledger: damaged or tampered with")
)

// busyTimeoutMS is how long a write waits for another process's write
// transaction before failing with "database is locked".
const busyTimeoutMS = 60000

// Ledger is an open ledger database. It is safe for concurrent use by
// several goroutines, and several processes may open the same file.
type Ledger struct {
	path   string
	marker string
	// db is the one connection pool: a write transaction is BEGIN
	// IMMEDIATE, a read-only one deferred (a WAL snapshot); every commit
	// syncs (synchronous=FULL). l.mu serialises a
	// Ledger's transactions, so a fit opens one connection.
	db   *sql.DB
	self owner

	mu   sync.Mutex // guards id, view and the marker file
	id   string     // the ledger's id, from its genesis record
	view *view      // the verified position of the chain
	full string     // time of the last full verification ("" unknown)
	lag  bool       // a reservation or settle was committed since the marker was written
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

// Option changes how Open opens a ledger.
type Option func(*openConfig)

type openConfig struct {
	full  bool
	adopt bool
}

// WithFullCheck makes Open verify the whole chain and run SQLite's
// integrity_check (indexes against tables), instead of verifying only the
// records appended since the marker's checkpoint.
func WithFullCheck() Option { return func(c *openConfig) { c.full = true } }

// WithAdoptMarker lets Open accept a ledger whose marker file is missing,
// after a full check, and write a new marker. Use it only when a person
// knows why the marker went (the ledger cannot tell a lost marker from a
// ledger swapped in from elsewhere).
func WithAdoptMarker() Option { return func(c *openConfig) { c.adopt = true; c.full = true } }

// Open opens (creating if needed) the ledger <dir>/ledger.db, creating dir
// with mode 0700 and the file with mode 0600, migrates its schema and
// verifies its chain of records from the marker's checkpoint on (see
// docs/ledger.md). A ledger that is not healthy gives an error naming the file
// and wrapping ErrDamaged (and ErrCorrupt for SQLite-level damage); it is
// never reset.
func Open(ctx context.Context, dir string, opts ...Option) (*Ledger, error) {
	var cfg openConfig
	for _, o := range opts {
		o(&cfg)
	}
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
	l := &Ledger{path: path, marker: filepath.Join(abs, MarkerName), self: currentOwner(), view: newView()}
	m, err := l.readMarker()
	if err != nil {
		return nil, err
	}
	if m != nil {
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, l.damaged("the ledger file is missing, but %s says a ledger with %d record(s) existed here (restore the file from a backup; to start a new ledger deliberately, move both files away)", l.marker, m.Seq)
		case err != nil:
			return nil, fmt.Errorf("ledger %s: %w", path, err)
		case fi.Size() == 0:
			return nil, l.damaged("the ledger file is empty, but %s says a ledger with %d record(s) existed here (restore the file from a backup; to start a new ledger deliberately, move both files away)", l.marker, m.Seq)
		}
	}
	if err := precheck(path); err != nil {
		return nil, err
	}
	base := "file:" + uriEscape(path) + "?_busy_timeout=" + fmt.Sprint(busyTimeoutMS) +
		"&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1"
	// The driver begins read-only transactions deferred whatever _txlock
	// says.
	if l.db, err = sql.Open("sqlite", base+"&_txlock=immediate"); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	l.db.SetMaxOpenConns(2)
	if err := l.init(ctx, m, cfg); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// init migrates the schema, creates the chain of a new ledger, and
// verifies the chain against the marker.
func (l *Ledger) init(ctx context.Context, m *marker, cfg openConfig) error {
	if err := l.migrate(ctx, m != nil); err != nil {
		return err
	}
	var id string
	var body []byte
	var hash string
	err := l.db.QueryRowContext(ctx, `SELECT body, hash FROM chain WHERE seq = 1`).Scan(&body, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return l.damaged("the ledger has no records, but %s says it had %d", l.marker, mSeq(m))
	}
	if err != nil {
		return l.wrap("read chain", err)
	}
	g, err := l.decodeRow(1, body, hash, "", true)
	if err != nil {
		return err
	}
	if g.Kind != evGenesis {
		return l.damaged("record 1 is not the chain's genesis record")
	}
	id = g.Ledger
	l.id = id
	if m == nil {
		// Re-read: a process creating the ledger writes the marker right
		// after the genesis record.
		if m, err = l.readMarker(); err != nil {
			return err
		}
	}
	switch {
	case m != nil:
		if m.Ledger != id {
			return l.damaged("the ledger file belongs to ledger %s, but %s to ledger %s (a ledger file was swapped in)", short(id), l.marker, short(m.Ledger))
		}
		l.full = m.FullCheck
		l.view.head = ref{Seq: m.Seq, Hash: m.Head}
		maps.Copy(l.view.keys, m.Keys)
		maps.Copy(l.view.aliases, m.Aliases)
	default:
		var n int64
		if err := l.db.QueryRowContext(ctx, `SELECT max(seq) FROM chain`).Scan(&n); err != nil {
			return l.wrap("read chain", err)
		}
		if n > 1 && !cfg.adopt {
			return l.damaged("the marker file %s is missing but the ledger has %d records (was it deleted, or the ledger file copied from elsewhere? \"dplr budget verify --adopt\" checks the whole ledger and writes a new marker)", l.marker, n)
		}
		cfg.full = cfg.full || n > 1
	}
	if cfg.full {
		_, err := l.Verify(ctx)
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.advance(ctx, l.db, l.view, nil); err != nil {
		return err
	}
	if m == nil || m.Seq != l.view.head.Seq {
		return l.writeMarker("")
	}
	return nil
}

func mSeq(m *marker) int64 {
	if m == nil {
		return 0
	}
	return m.Seq
}

// Path returns the database file's path.
func (l *Ledger) Path() string { return l.path }

// Close closes the database. When a reservation or settle was committed
// since the marker was last written, it writes the marker naming them
// (every commit is synced, so the marker never names a record a power
// failure could take away) while the database closes (closing the last
// connection copies the WAL into the database file).
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	marked := make(chan struct{})
	go func() {
		defer close(marked)
		if l.lag && l.db != nil {
			_ = l.writeMarker("") // a marker that lags is harmless
		}
	}()
	var err error
	if l.db != nil {
		err = l.db.Close()
	}
	<-marked
	if err != nil {
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
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		what := "a directory"
		if !st.IsDir() {
			what = "a special file"
		}
		return fmt.Errorf("ledger %s: not a regular file but %s (move it away to start a new ledger): %w", path, what, ErrDamaged)
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
		return fmt.Errorf("ledger %s: not an SQLite database (bad header; the file is left untouched, move it away to start a new ledger): %w (%w)", path, ErrCorrupt, ErrDamaged)
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
			return fmt.Errorf("ledger %s: %s: %w (%w; %w)", l.path, op, ErrCorrupt, ErrDamaged, err)
		}
	}
	return fmt.Errorf("ledger %s: %s: %w", l.path, op, err)
}
