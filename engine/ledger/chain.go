package ledger

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/dplr/dplr/engine/privacy"
)

// eventVersion is the encoding version of the chain's records.
//
// Version 2 (the Gaussian-DP filter) adds charges' μ² and the data set's
// admission rule to the position; records of version 1 are still read and
// replayed without them (apply), so a ledger written before keeps its hashes.
const eventVersion = 2

// filterVersion is the first record version whose replay decides the
// admission rule (see apply).
const filterVersion = 2

// ref points at a chain record: its sequence number and hash.
type ref struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// rowQuerier is what reading the chain needs (a *sql.DB or *sql.Tx).
type rowQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func hashBody(body []byte) string {
	s := sha256.Sum256(body)
	return hex.EncodeToString(s[:])
}

func newLedgerID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("ledger id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// damaged formats an ErrDamaged error naming the ledger file.
func (l *Ledger) damaged(format string, args ...any) error {
	return fmt.Errorf("ledger %s: %s: %w", l.path, fmt.Sprintf(format, args...), ErrDamaged)
}

// decodeRow checks one stored record: its body hashes to its stored hash,
// it names this ledger, its own sequence number and the previous record's
// hash (prev; "" to skip that check).
func (l *Ledger) decodeRow(seq int64, body []byte, hash, prev string, checkPrev bool) (*event, error) {
	if got := hashBody(body); got != hash {
		return nil, l.damaged("record %d does not match its hash (edited or damaged)", seq)
	}
	var ev event
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return nil, l.damaged("record %d: %v", seq, err)
	}
	if ev.V < 1 || ev.V > eventVersion || ev.Seq != seq || (l.id != "" && ev.Ledger != l.id) {
		return nil, l.damaged("record %d is out of place (version %d, sequence %d, ledger %q)", seq, ev.V, ev.Seq, ev.Ledger)
	}
	if checkPrev && ev.Prev != prev {
		return nil, l.damaged("record %d is not chained to record %d (a record was removed, inserted or rewritten)", seq, seq-1)
	}
	return &ev, nil
}

// view is a verified position of the chain: its head and, for each data
// set or alias, the latest record about it, with the states recomputed so
// far (a cache).
type view struct {
	head    ref
	keys    map[string]ref
	states  map[string]*dsState
	aliases map[string]string
}

func newView() *view {
	return &view{keys: map[string]ref{}, states: map[string]*dsState{}, aliases: map[string]string{}}
}

func (v *view) clone() *view {
	return &view{head: v.head, keys: maps.Clone(v.keys), states: maps.Clone(v.states), aliases: maps.Clone(v.aliases)}
}

// state returns the verified state of data set ds (nil if unknown),
// reading its latest record when it is not cached: that record must hash
// to the hash the verified view holds for it.
func (l *Ledger) state(ctx context.Context, q rowQuerier, v *view, ds string) (*dsState, error) {
	if s, ok := v.states[ds]; ok {
		return s, nil
	}
	r, ok := v.keys[ds]
	if !ok {
		return nil, nil
	}
	ev, err := l.fetch(ctx, q, r)
	if err != nil {
		return nil, err
	}
	if ev.Dataset != ds || ev.State == nil {
		return nil, l.damaged("record %d is not about data set %s", r.Seq, short(ds))
	}
	// The checkpoint's record must be the data set's latest up to the
	// head, as the chain's own index says: two sources that a bit flip or
	// an edit of one of them makes disagree.
	var latest sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(seq) FROM chain WHERE dataset = ? AND seq <= ?`, ds, v.head.Seq).Scan(&latest); err != nil {
		return nil, l.wrap("read chain", err)
	}
	if latest.Int64 != r.Seq {
		return nil, l.damaged("the checkpoint names record %d as data set %s's latest, the chain record %d", r.Seq, short(ds), latest.Int64)
	}
	v.states[ds] = ev.State
	return ev.State, nil
}

// fetch reads the record r points at and checks it against r's hash.
func (l *Ledger) fetch(ctx context.Context, q rowQuerier, r ref) (*event, error) {
	var (
		body []byte
		hash string
	)
	err := q.QueryRowContext(ctx, `SELECT body, hash FROM chain WHERE seq = ?`, r.Seq).Scan(&body, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, l.damaged("record %d is missing", r.Seq)
	}
	if err != nil {
		return nil, l.wrap("read record", err)
	}
	if hash != r.Hash {
		return nil, l.damaged("record %d was rewritten (its hash differs from the verified one)", r.Seq)
	}
	return l.decodeRow(r.Seq, body, hash, "", false)
}

// resolve maps an alias to its data set (verified links only).
func (v *view) resolve(h string) string {
	if d, ok := v.aliases[h]; ok {
		return d
	}
	return h
}

// replay checks that ev's recorded state is what apply computes from the
// verified state before it, and advances v.
func (l *Ledger) replay(ctx context.Context, q rowQuerier, v *view, ev *event, hash string) error {
	r := ref{Seq: ev.Seq, Hash: hash}
	if ev.Kind == evGenesis {
		if ev.Seq != 1 {
			return l.damaged("record %d is a second genesis record", ev.Seq)
		}
		v.head = r
		return nil
	}
	if ev.Dataset == "" {
		return l.damaged("record %d names no data set", ev.Seq)
	}
	if _, isAlias := v.aliases[ev.Dataset]; isAlias {
		return l.damaged("record %d is about %s, which is linked to another data set", ev.Seq, short(ev.Dataset))
	}
	prev, err := l.state(ctx, q, v, ev.Dataset)
	if err != nil {
		return err
	}
	got, err := apply(prev, ev)
	if err != nil {
		return l.damaged("%v", err)
	}
	// Structural equality is canonical-encoding equality here: apply
	// leaves empty maps and slices nil, as decoding an omitted field does.
	if !reflect.DeepEqual(ev.State, got) {
		return l.damaged("record %d states a budget position that its history does not give (totals or charges edited)", ev.Seq)
	}
	switch ev.Kind {
	case evLink:
		if _, taken := v.keys[ev.Alias]; taken || ev.Alias == ev.Dataset {
			return l.damaged("record %d links %s, which already has a record", ev.Seq, short(ev.Alias))
		}
	case evMerge:
		if _, has := v.keys[ev.Alias]; !has || ev.Alias == ev.Dataset {
			return l.damaged("record %d merges %s, which is no other data set", ev.Seq, short(ev.Alias))
		}
		if src, err := l.state(ctx, q, v, ev.Alias); err != nil || src == nil || len(src.Aliases) > 0 {
			return l.damaged("record %d merges %s, which is no data set without linked files (%v)", ev.Seq, short(ev.Alias), err)
		}
	case evUnlink:
		if v.aliases[ev.Alias] != ev.Dataset {
			return l.damaged("record %d unlinks %s, which is not linked to data set %s", ev.Seq, short(ev.Alias), short(ev.Dataset))
		}
	}
	if ev.Inherit != nil {
		if err := l.checkInherit(ctx, q, v, ev); err != nil {
			return err
		}
	}
	v.record(ev, r)
	return nil
}

// checkInherit checks that the charges a merge or an unlinked file's
// registration carries are every charge of the data set they come from
// (ev.Alias), at its verified position.
func (l *Ledger) checkInherit(ctx context.Context, q rowQuerier, v *view, ev *event) error {
	if _, isAlias := v.aliases[ev.Alias]; isAlias || ev.Alias == "" {
		return l.damaged("record %d takes charges from %q, which is no data set", ev.Seq, short(ev.Alias))
	}
	src, err := l.state(ctx, q, v, ev.Alias)
	if err != nil {
		return err
	}
	if src == nil || !reflect.DeepEqual(inherited(src), *ev.Inherit) {
		return l.damaged("record %d states charges that data set %s does not hold", ev.Seq, short(ev.Alias))
	}
	return nil
}

// inherited is what a data set passes on when merged into another or when
// a file is unlinked from it: every charge, the open reservations' whole
// grants included, without its rule.
func inherited(s *dsState) privacy.Tally {
	a := s.charged(0)
	a.Filter = ""
	return a
}

// record advances v past the verified or appended record ev (at r).
func (v *view) record(ev *event, r ref) {
	v.head = r
	if ev.Kind == evGenesis {
		return
	}
	switch ev.Kind {
	case evLink, evMerge:
		v.aliases[ev.Alias] = ev.Dataset
		v.keys[ev.Alias] = r
		delete(v.states, ev.Alias)
	case evUnlink:
		delete(v.aliases, ev.Alias)
		delete(v.keys, ev.Alias)
	}
	v.keys[ev.Dataset] = r
	v.states[ev.Dataset] = ev.State
}

// advance verifies every record after v's head, in order, calling fn (if
// not nil) on each verified event, and moves v to the chain's head. It also
// checks that v's head record is still there and unchanged, so that a
// truncated or rewritten tail is found.
func (l *Ledger) advance(ctx context.Context, q rowQuerier, v *view, fn func(*event)) error {
	if v.head.Seq > 0 {
		var hash string
		err := q.QueryRowContext(ctx, `SELECT hash FROM chain WHERE seq = ?`, v.head.Seq).Scan(&hash)
		if errors.Is(err, sql.ErrNoRows) {
			return l.damaged("the chain ends before record %d, which was verified earlier (records were removed)", v.head.Seq)
		}
		if err != nil {
			return l.wrap("read chain head", err)
		}
		if hash != v.head.Hash {
			return l.damaged("record %d was rewritten since it was verified", v.head.Seq)
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT seq, body, hash FROM chain WHERE seq > ? ORDER BY seq`, v.head.Seq)
	if err != nil {
		return l.wrap("read chain", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq  int64
			body []byte
			hash string
		)
		if err := rows.Scan(&seq, &body, &hash); err != nil {
			return l.wrap("read chain", err)
		}
		if seq != v.head.Seq+1 {
			return l.damaged("record %d is missing", v.head.Seq+1)
		}
		ev, err := l.decodeRow(seq, body, hash, v.head.Hash, true)
		if err != nil {
			return err
		}
		if err := l.replay(ctx, q, v, ev, hash); err != nil {
			return err
		}
		if fn != nil {
			fn(ev)
		}
	}
	return l.wrap("read chain", rows.Err())
}

// walk verifies the whole chain from its first record, calling fn (if not
// nil) on each verified event, and returns the resulting view.
func (l *Ledger) walk(ctx context.Context, q rowQuerier, fn func(*event)) (*view, error) {
	v := newView()
	if err := l.advance(ctx, q, v, fn); err != nil {
		return nil, err
	}
	return v, nil
}

// txn is a write transaction on the chain: the events it appends become
// part of the ledger's verified view only once it commits.
type txn struct {
	l *Ledger
	// lazyMarker skips the marker rewrite after commit (Reserve and
	// Settle, a fit's two records: Close checkpoints them once).
	lazyMarker bool
	tx         *sql.Tx
	v          *view // a copy of the ledger's view, advanced to the chain head
	time       string
}

// begin starts a write transaction (BEGIN IMMEDIATE: writers from every
// process are serialised) and verifies the records appended since this
// process last looked: admission only ever sees verified records.
func (l *Ledger) begin(ctx context.Context, db beginner, op string) (*txn, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, l.wrap(op, err)
	}
	v := l.view.clone()
	if err := l.advance(ctx, tx, v, nil); err != nil {
		tx.Rollback()
		return nil, err
	}
	return &txn{l: l, tx: tx, v: v, time: now()}, nil
}

func (t *txn) rollback() { t.tx.Rollback() }

// state is data set ds's verified state in this transaction.
func (t *txn) state(ctx context.Context, ds string) (*dsState, error) {
	return t.l.state(ctx, t.tx, t.v, ds)
}

// emit computes ev's resulting state, chains it to the head and appends it.
func (t *txn) emit(ctx context.Context, ev *event) error {
	ev.V, ev.Ledger, ev.Seq, ev.Prev = eventVersion, t.l.id, t.v.head.Seq+1, t.v.head.Hash
	ev.Time = cmp.Or(ev.Time, t.time)
	if ev.Run != nil && ev.Kind == evReserve {
		ev.Run.ID = ev.Seq
	}
	if ev.Kind != evGenesis {
		prev, err := t.state(ctx, ev.Dataset)
		if err != nil {
			return err
		}
		if ev.State, err = apply(prev, ev); err != nil {
			return fmt.Errorf("ledger %s: %w", t.l.path, err)
		}
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("ledger %s: encode record: %w", t.l.path, err)
	}
	hash := hashBody(body)
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO chain(seq, dataset, body, hash) VALUES (?, ?, ?, ?)`, ev.Seq, ev.Dataset, body, hash); err != nil {
		return t.l.wrap("append record", err)
	}
	t.v.record(ev, ref{Seq: ev.Seq, Hash: hash})
	return nil
}

// commit commits and makes the transaction's view the ledger's, then
// checkpoints it in the marker file.
func (t *txn) commit(op string) error {
	if err := t.tx.Commit(); err != nil {
		return t.l.wrap(op+": commit", err)
	}
	t.l.view = t.v
	if t.lazyMarker {
		t.l.lag = true
		return nil
	}
	// A marker that lags behind is harmless (the next Open verifies from
	// it); the change itself is committed, so a failure here is not one.
	_ = t.l.writeMarker("")
	return nil
}
