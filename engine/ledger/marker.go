package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// markerFormat is the marker file's format version.
const markerFormat = 1

// marker is the content of the marker file: which ledger lives in this
// directory and the chain position last verified (a checkpoint): the head
// record and, for each data set and alias, its latest record.
type marker struct {
	Format    int               `json:"format"`
	Ledger    string            `json:"ledger"`
	Seq       int64             `json:"seq"`
	Head      string            `json:"head"`
	Keys      map[string]ref    `json:"keys,omitempty"`
	Aliases   map[string]string `json:"aliases,omitempty"`
	FullCheck string            `json:"full_check,omitempty"` // time of the last full verification
}

// readMarker reads the marker file: nil if there is none (a fresh home, or
// a ledger written before markers existed), an ErrDamaged error if it is
// unreadable.
func (l *Ledger) readMarker() (*marker, error) {
	b, err := os.ReadFile(l.marker)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger marker %s: %w", l.marker, err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil || m.Format != markerFormat || m.Ledger == "" || m.Seq < 1 {
		return nil, fmt.Errorf("ledger marker %s: unreadable (%v): %w", l.marker, err, ErrDamaged)
	}
	return &m, nil
}

// writeMarker checkpoints the ledger's verified view in the marker file,
// atomically (a temporary file renamed over it). full, if not empty,
// records the time of a full verification. The caller holds l.mu.
//
// Several processes may write it; a marker that lags behind the chain is
// harmless (the next Open verifies from it), and it is never ahead, since
// it is written after the records it describes are committed.
func (l *Ledger) writeMarker(full string) error {
	if full != "" {
		l.full = full
	}
	m := marker{Format: markerFormat, Ledger: l.id, Seq: l.view.head.Seq, Head: l.view.head.Hash,
		Keys: l.view.keys, Aliases: l.view.aliases, FullCheck: l.full}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("ledger marker: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(l.marker), MarkerName+".tmp*")
	if err != nil {
		return fmt.Errorf("ledger marker: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, l.marker)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ledger marker %s: %w", l.marker, err)
	}
	l.lag = false
	return nil
}
