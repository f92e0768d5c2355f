package dataio

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/data"
)

// DefaultCacheMaxBytes returns the default bound on the size of a cache
// directory (LoadOptions.CacheMaxBytes): the machine's physical memory,
// twice the largest data set Load accepts by default.
func DefaultCacheMaxBytes() int64 {
	return physicalMemory()
}

func (o LoadOptions) cacheMaxBytes() int64 {
	if o.CacheMaxBytes > 0 {
		return o.CacheMaxBytes
	}
	return DefaultCacheMaxBytes()
}

// CacheEntry describes one prepared data set in a cache directory.
type CacheEntry struct {
	// Hash is the content hash naming the entry (cacheDir/<hash>/).
	Hash string `json:"hash"`
	// Name, Kind, N and P come from the entry's handle.json (empty or zero
	// when it is missing or unreadable).
	Name string    `json:"name,omitempty"`
	Kind data.Kind `json:"kind,omitempty"`
	N    int       `json:"n"`
	P    int       `json:"p"`
	// Bytes is the total size of the entry's files.
	Bytes int64 `json:"bytes"`
	// LastUsed is when a preparation last created or reused the entry
	// (UTC).
	LastUsed time.Time `json:"last_used"`
}

// isEntryName reports whether name is a cache entry directory's name (a
// hex SHA-256).
func isEntryName(name string) bool {
	b, err := hex.DecodeString(name)
	return err == nil && len(b) == 32 && strings.ToLower(name) == name
}

// touch marks a cache entry as used now (its directory's modification
// time orders eviction). Errors are ignored: it is bookkeeping.
func touch(dir string) {
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
}

// touchRefs marks the cache entries a handle refers to as used.
func touchRefs(cacheDir string, h Handle) {
	for _, r := range h.refs() {
		if d := filepath.Dir(r.Path); filepath.Dir(d) == cacheDir && isEntryName(filepath.Base(d)) {
			touch(d)
		}
	}
}

// CacheList lists the entries of a cache directory, least recently used
// first. A missing directory holds no entries.
func CacheList(cacheDir string) ([]CacheEntry, error) {
	des, err := os.ReadDir(cacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	var out []CacheEntry
	for _, de := range des {
		if !de.IsDir() || !isEntryName(de.Name()) {
			continue
		}
		dir := filepath.Join(cacheDir, de.Name())
		st, err := os.Stat(dir)
		if err != nil {
			continue // removed meanwhile
		}
		e := CacheEntry{Hash: de.Name(), LastUsed: st.ModTime().UTC()}
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			if fi, err := f.Info(); err == nil && fi.Mode().IsRegular() {
				e.Bytes += fi.Size()
			}
		}
		if h, err := ReadHandle(filepath.Join(dir, fileHandle)); err == nil {
			e.Name, e.Kind, e.N, e.P = h.Name, h.Kind, h.N, h.P
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b CacheEntry) int { return a.LastUsed.Compare(b.LastUsed) })
	return out, nil
}

// CacheClear removes every entry of a cache directory, the records of
// prepared files and leftover temporary files, and returns the bytes
// freed. It removes nothing else: files it does not recognise stay.
func CacheClear(cacheDir string) (int64, error) {
	entries, err := CacheList(cacheDir)
	if err != nil {
		return 0, err
	}
	var freed int64
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(cacheDir, e.Hash)); err != nil {
			return freed, fmt.Errorf("cache: %w", err)
		}
		freed += e.Bytes
	}
	if err := os.RemoveAll(filepath.Join(cacheDir, "files")); err != nil {
		return freed, fmt.Errorf("cache: %w", err)
	}
	tmps, _ := filepath.Glob(filepath.Join(cacheDir, ".x-*.f8"))
	for _, t := range tmps {
		if st, err := os.Stat(t); err == nil && os.Remove(t) == nil {
			freed += st.Size()
		}
	}
	return freed, nil
}

// cacheNeed returns the bytes the canonical files of ds take, X taking
// xBytes.
func cacheNeed(ds *data.Dataset, xBytes int64) int64 {
	return xBytes + 8*int64(len(ds.Y)+len(ds.UserStart)+len(ds.UserIDs)+len(ds.Labels))
}

// checkCacheRoom refuses a data set whose canonical files alone (need
// bytes) exceed the cache bound.
func checkCacheRoom(cacheDir string, need, maxBytes int64) error {
	if need > maxBytes {
		return fmt.Errorf("the data set takes %s in the cache %s, above its limit of %s (LoadOptions.CacheMaxBytes, DPLR_CACHE_MAX_BYTES)",
			FormatBytes(need), cacheDir, FormatBytes(maxBytes))
	}
	return nil
}

// evictGrace is how recently an entry must have been used to be spared by
// EvictCache: long enough for a fit that just prepared it to start its
// plugin and map the files (after which removal no longer matters).
var evictGrace = 2 * time.Minute

// EvictCache removes least recently used entries of a cache directory until
// its entries take at most maxBytes, never removing the entries the kept
// handles refer to nor entries used in the last two minutes (another fit
// may be about to open them; the bound may be exceeded by such entries
// until a later eviction). A process that maps a removed entry's files
// keeps reading them (the files disappear when unmapped); a handle
// referring to a removed entry fails to open and its file is prepared
// again.
func EvictCache(cacheDir string, maxBytes int64, keep ...Handle) error {
	if maxBytes <= 0 {
		return nil
	}
	entries, err := CacheList(cacheDir)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, h := range keep {
		for _, r := range h.refs() {
			kept[filepath.Dir(r.Path)] = true
		}
	}
	var total int64
	for _, e := range entries {
		total += e.Bytes
	}
	for _, e := range entries {
		if total <= maxBytes {
			break
		}
		dir := filepath.Join(cacheDir, e.Hash)
		if kept[dir] || time.Since(e.LastUsed) < evictGrace {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("cache: evict %s: %w", e.Hash, err)
		}
		total -= e.Bytes
	}
	return nil
}
