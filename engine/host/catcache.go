package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/transport"
)

// The catalogue cache keeps each plugin executable's catalogue in a file
// of Options.CatalogueDir, keyed by the executable's identity (path,
// device, inode, size, modification and change times), the environment it
// gets (the backend's thread count may change the catalogue) and the
// protocol version (docs/plugins.md, "Catalogue cache"); a process started
// from an entry must answer the same catalogue (see Plugin.process).

// catalogueKey names the cache entry of the executable at path (false
// when it cannot be identified).
func catalogueKey(path string) (string, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q %d %d %s %d\n", abs, st.Size(), st.ModTime().UnixNano(), fileIdentity(st), transport.ProtocolVersion)
	env := pluginEnv(os.Environ())
	slices.Sort(env)
	for _, kv := range env {
		fmt.Fprintf(h, "%q\n", kv)
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// cachedCatalogue returns the cached catalogue of the executable at path.
func cachedCatalogue(dir, path string) (transport.Catalogue, bool) {
	var cat transport.Catalogue
	key, ok := catalogueKey(path)
	if !ok || !readKept(dir, key, &cat) || checkCatalogue(cat) != nil {
		return transport.Catalogue{}, false
	}
	return cat, true
}

// keepCatalogue caches the catalogue of the executable at path (best
// effort: a cache that cannot be written only costs a process next time).
func keepCatalogue(dir, path string, cat transport.Catalogue) {
	if key, ok := catalogueKey(path); ok {
		keep(dir, key, cat)
	}
}

// readKept reads the entry key of the cache directory dir into v; false
// when there is none or it does not decode. An entry read is marked used
// (its modification time, at most once per markEvery, so that a warm fit
// writes no metadata), which keeps it from pruning (maxKept).
func readKept(dir, key string, v any) bool {
	if dir == "" {
		return false
	}
	path := filepath.Join(dir, key+".json")
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, st.Size()+1))
	if err != nil || json.Unmarshal(b, v) != nil {
		return false
	}
	if now := time.Now(); now.Sub(st.ModTime()) > markEvery {
		_ = os.Chtimes(path, now, now) // best effort: a missed mark only risks an earlier pruning
	}
	return true
}

// markEvery is how stale an entry's mark of use may grow before a read
// renews it.
const markEvery = time.Hour

// maxKept bounds the entries of each of the host's cache directories
// (catalogues, checks): keep removes those used longest ago past it, so
// that a home which sees many distinct requests or plugin builds does not
// grow without end. An entry removed costs one plugin process when it is
// next needed.
var maxKept = 1000

// prune removes the entries of dir used longest ago (modification time)
// until at most max are left.
func prune(dir string, max int) {
	des, err := os.ReadDir(dir)
	if err != nil || len(des) <= max {
		return
	}
	type entry struct {
		name string
		used time.Time
	}
	var es []entry
	for _, d := range des {
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() && strings.HasSuffix(d.Name(), ".json") {
			es = append(es, entry{d.Name(), info.ModTime()})
		}
	}
	if len(es) <= max {
		return
	}
	slices.SortFunc(es, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range es[:len(es)-max] {
		os.Remove(filepath.Join(dir, e.name))
	}
}

// keep writes v as the entry key of the cache directory dir, whole or not
// at all (a temporary file renamed into place). Failing is not an error:
// the host's caches only save time.
func keep(dir, key string, v any) {
	if dir == "" {
		return
	}
	b, err := json.Marshal(v)
	if err != nil || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil && cerr == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, key+".json"))
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	prune(dir, maxKept)
}

// forgetCatalogue removes the cache entry of the executable at path.
func forgetCatalogue(dir, path string) {
	if key, ok := catalogueKey(path); dir != "" && ok {
		os.Remove(filepath.Join(dir, key+".json"))
	}
}

// sameCatalogue reports whether two catalogues are the same (as cached).
func sameCatalogue(a, b transport.Catalogue) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
