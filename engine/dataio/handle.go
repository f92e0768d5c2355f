package dataio

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// HandleVersion is the version of the Handle layout. Version 2 keeps X
// of a source of bytes as bytes with its scale (DTypeUint8); entries and
// records of version 1 are prepared again.
const HandleVersion = 2

// DType names of the raw arrays a FileRef points at.
const (
	DTypeFloat64 = "<f8" // little-endian IEEE-754 float64
	DTypeInt64   = "<i8" // little-endian int64
	// DTypeUint8 is an X of bytes standing for the float64 values
	// float64(b)·FileRef.Scale: a source of bytes kept compact.
	DTypeUint8 = "|u1"
)

// FileRef locates one raw little-endian array inside a file.
type FileRef struct {
	// Path is the absolute path of the file.
	Path string `json:"path"`
	// Offset is the byte offset of the first element.
	Offset int64 `json:"offset"`
	// DType is DTypeFloat64, DTypeInt64 or (X only) DTypeUint8.
	DType string `json:"dtype"`
	// Scale, for DTypeUint8, is what each byte is multiplied by: element k
	// is float64(b_k)·Scale, exactly the value the view holds.
	Scale float64 `json:"scale,omitempty"`
	// Count is the number of elements.
	Count int64 `json:"count"`
	// Size is the expected size of the whole file in bytes; Open refuses a
	// file of any other size.
	Size int64 `json:"size"`
	// ModTime, if non-zero, is the file's modification time (Unix
	// nanoseconds) when it was hashed; Open refuses a file modified since.
	// It is set for source files referenced in place, not for cache files.
	ModTime int64 `json:"mtime,omitempty"`
	// Stamp, if set, is the file's state when it was prepared (fileStamp:
	// device, inode, size and change time on Linux). Open and the reuse of
	// a prepared handle refuse a file whose stamp changed: a cached array
	// edited or replaced after it was hashed is never used under the old
	// hash.
	Stamp string `json:"stamp,omitempty"`
}

// stampRefs records the current stamp of every file h refers to.
func stampRefs(h *Handle) error {
	for _, r := range h.refs() {
		st, err := os.Stat(r.Path)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		r.Stamp = fileStamp(st)
	}
	return nil
}

// stampOK reports whether the file r refers to (already stat'ed as st) is
// in the state r recorded.
func stampOK(r *FileRef, st os.FileInfo) bool {
	return r.Stamp == "" || fileStamp(st) == r.Stamp
}

// entryIntact reports whether a cache entry's files are those its
// handle.json recorded: each present with its size and stamp. An entry
// written before stamps were recorded counts as not intact (rewritten).
func entryIntact(dir string) bool {
	rec, err := ReadHandle(filepath.Join(dir, fileHandle))
	return err == nil && refsIntact(&rec)
}

// refsIntact reports whether every file h refers to is stamped and in the
// state it recorded (refState).
func refsIntact(h *Handle) bool {
	for _, r := range h.refs() {
		st, err := os.Stat(r.Path)
		if err != nil || r.Stamp == "" || refState(r, st) != nil {
			return false
		}
	}
	return true
}

// refState reports how the file r refers to (stat'ed as st) departs from
// the state r recorded, or nil.
func refState(r *FileRef, st os.FileInfo) error {
	need := r.Offset + r.elemSize()*r.Count
	switch {
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: not a regular file", r.Path)
	case r.Offset < 0 || r.Count < 0 || need < r.Offset:
		return fmt.Errorf("%s: bad offset %d or count %d", r.Path, r.Offset, r.Count)
	case r.Size != 0 && st.Size() != r.Size:
		return fmt.Errorf("%s: file has %d bytes, the handle says %d (truncated or replaced)", r.Path, st.Size(), r.Size)
	case st.Size() < need:
		return fmt.Errorf("%s: file has %d bytes, needs %d (truncated)", r.Path, st.Size(), need)
	case r.ModTime != 0 && st.ModTime().UnixNano() != r.ModTime:
		return fmt.Errorf("%s: file was modified after it was prepared", r.Path)
	case !stampOK(r, st):
		return fmt.Errorf("%s: file was changed or replaced after it was prepared (run again to prepare it anew)", r.Path)
	}
	return nil
}

// claimEntry locks the cache entry dir (created if missing) against other
// preparations, in this process or another, and reports whether its files
// are intact (entryIntact). When they are not, the files present are
// removed so that they are written again from the data being prepared;
// the caller writes them, stamps them and writes handle.json before it
// calls the returned unlock.
func claimEntry(dir string) (intact bool, unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, nil, fmt.Errorf("prepare: %w", err)
	}
	unlock, err = lockDir(dir)
	if err != nil {
		return false, nil, fmt.Errorf("prepare: lock %s: %w", dir, err)
	}
	if entryIntact(dir) {
		return true, unlock, nil
	}
	for _, name := range []string{fileX, fileXU8, fileY, fileUserStart, fileUserIDs, fileLabels, fileHandle} {
		_ = os.Remove(filepath.Join(dir, name))
	}
	return false, unlock, nil
}

// Handle describes a validated, hashed data set stored as raw arrays in
// files. It is a plain value (JSON-serialisable) that the host hands to a
// plugin on the same machine; Open turns it back into a data.Dataset
// without copying X.
type Handle struct {
	Version   int       `json:"version"`
	Kind      data.Kind `json:"kind"`
	Hash      string    `json:"hash"`
	Name      string    `json:"name,omitempty"`
	N         int       `json:"n"`
	P         int       `json:"p"`
	D1        int       `json:"d1,omitempty"`
	D2        int       `json:"d2,omitempty"`
	X         FileRef   `json:"x"`
	Y         *FileRef  `json:"y,omitempty"`
	UserStart *FileRef  `json:"user_start,omitempty"`
	UserIDs   *FileRef  `json:"user_ids,omitempty"`
	Labels    *FileRef  `json:"labels,omitempty"`
	// Source identifies the source records the data set was read from,
	// before the view (scaling, column choice, header, kind) was applied;
	// the budget of a data set belongs to its source. Hash above is the
	// content hash of the view itself (what the plugin reads).
	Source *Identity `json:"source,omitempty"`
	// View records how the source was read (nil for a data set prepared
	// from memory).
	View *View `json:"view,omitempty"`
	// ColumnScaled: X's columns were divided by public per-column scales
	// (View.ColumnScales); carried to the plugin as
	// data.Dataset.ColumnScaled.
	ColumnScaled bool `json:"column_scaled,omitempty"`
}

// View records the loading choices that turned a source into the data
// set a handle describes. None of them enters the source identity.
type View struct {
	Kind           data.Kind  `json:"kind"`
	Format         Format     `json:"format,omitempty"`
	Scale          float64    `json:"scale,omitempty"`
	ColumnScales   []float64  `json:"column_scales,omitempty"`
	Header         HeaderMode `json:"header,omitempty"`
	FeatureColumns []string   `json:"features,omitempty"`
	LabelColumn    string     `json:"label_column,omitempty"`
	ResponseColumn string     `json:"response_column,omitempty"`
	UserColumn     string     `json:"user_column,omitempty"`
	D1             int        `json:"d1,omitempty"`
	D2             int        `json:"d2,omitempty"`
}

// view returns the view the options describe.
func (o LoadOptions) view() *View {
	return &View{Kind: o.kind(), Format: o.Format, Scale: o.Scale, ColumnScales: o.ColumnScales, Header: o.Header,
		FeatureColumns: o.FeatureColumns, LabelColumn: o.LabelColumn, ResponseColumn: o.ResponseColumn,
		UserColumn: o.UserColumn, D1: o.D1, D2: o.D2}
}

// Canonical file names inside cacheDir/<hash>/.
const (
	fileX         = "x.f8"
	fileXU8       = "x.u1"
	fileY         = "y.f8"
	fileUserStart = "user_start.i8"
	fileUserIDs   = "user_ids.i8"
	fileLabels    = "labels.i8"
	fileHandle    = "handle.json"
)

// Check validates the handle's own consistency (not the files).
func (h *Handle) Check() error {
	if h.Version != HandleVersion {
		return fmt.Errorf("handle version %d, want %d", h.Version, HandleVersion)
	}
	if b, err := hex.DecodeString(h.Hash); err != nil || len(b) != 32 {
		return fmt.Errorf("handle hash %q is not a hex SHA-256", h.Hash)
	}
	if h.N < 1 || h.P < 1 {
		return fmt.Errorf("handle: empty shape %d×%d", h.N, h.P)
	}
	if int64(h.N) > math.MaxInt64/int64(h.P) || h.X.Count != int64(h.N)*int64(h.P) {
		return fmt.Errorf("handle: X has %d values, shape %d×%d", h.X.Count, h.N, h.P)
	}
	switch {
	case h.X.DType == DTypeUint8:
		if !isFinite(h.X.Scale) || !isFinite(255*h.X.Scale) {
			return fmt.Errorf("handle: X of bytes with scale %v: its values are not all finite", h.X.Scale)
		}
	case h.X.DType != DTypeFloat64:
		return fmt.Errorf("handle: X dtype %q, want %q or %q", h.X.DType, DTypeFloat64, DTypeUint8)
	}
	check := func(name string, r *FileRef, dt string, count int64) error {
		if r == nil {
			return fmt.Errorf("handle: %s missing", name)
		}
		if r.DType != dt {
			return fmt.Errorf("handle: %s dtype %q, want %q", name, r.DType, dt)
		}
		if r.Count != count {
			return fmt.Errorf("handle: %s has %d values, want %d", name, r.Count, count)
		}
		return nil
	}
	switch h.Kind {
	case data.Rows:
	case data.Trace:
		if h.D1 < 1 || h.D2 < 1 || h.D1*h.D2 != h.P {
			return fmt.Errorf("handle: trace rows of %d values do not hold %d×%d matrices", h.P, h.D1, h.D2)
		}
	case data.Users:
		if h.UserStart == nil || h.UserStart.Count < 2 {
			return errors.New("handle: user boundaries missing")
		}
		if err := check("user ids", h.UserIDs, DTypeInt64, h.UserStart.Count-1); err != nil {
			return err
		}
		if err := check("user boundaries", h.UserStart, DTypeInt64, h.UserStart.Count); err != nil {
			return err
		}
	default:
		return fmt.Errorf("handle: unknown data kind %q", h.Kind)
	}
	if h.Kind != data.Rows {
		if err := check("responses", h.Y, DTypeFloat64, int64(h.N)); err != nil {
			return err
		}
	}
	if h.Labels != nil {
		if err := check("labels", h.Labels, DTypeInt64, int64(h.N)); err != nil {
			return err
		}
	}
	if h.Source != nil {
		if err := h.Source.Check(); err != nil {
			return fmt.Errorf("handle: source: %w", err)
		}
	}
	return nil
}

// Prepare validates ds, computes its hash and writes its canonical files
// (raw little-endian arrays and handle.json) into cacheDir/<hash>/. Each
// file is written to a temporary name and renamed into place, and files
// already present with the right size are kept, so concurrent or repeated
// calls are safe and cheap. A data set held in memory is its own source:
// its hash is Hash(ds) (replacing any hash set) and the handle's Source is
// IdentityOf(ds), both from one pass over its rows.
func Prepare(ds *data.Dataset, cacheDir string) (Handle, error) {
	return prepare(ds, cacheDir, nil)
}

// prepare is Prepare with the source identity given (nil: ds is its own
// source); a given identity comes with ds.Hash computed from that source.
func prepare(ds *data.Dataset, cacheDir string, src *Identity) (Handle, error) {
	if ds == nil {
		return Handle{}, errors.New("prepare: no data set")
	}
	if dense := ds.WithDenseX(); dense != ds {
		h, err := prepare(dense, cacheDir, src)
		ds.Hash = dense.Hash
		return h, err
	}
	if err := checkStructure(ds); err != nil {
		return Handle{}, fmt.Errorf("prepare: %w", err)
	}
	abs, err := filepath.Abs(cacheDir)
	if err != nil {
		return Handle{}, fmt.Errorf("prepare: cache directory: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Handle{}, fmt.Errorf("prepare: %w", err)
	}
	if src == nil {
		b := ownBuilder(ds, true)
		id := b.finish()
		src, ds.Hash = &id, contentHash(ds, hashView{scale: 1}, b.digs)
	}
	n, p := ds.X.Dims()
	dir := filepath.Join(abs, ds.Hash)
	if entryIntact(dir) {
		h := canonicalHandle(ds, n, p, dir, 0)
		if present(h) && stampRefs(&h) == nil {
			h.Source = src
			touch(dir)
			return h, nil
		}
	}
	// Write X to a temporary file while validating it.
	tmp, err := createTempX(abs)
	if err != nil {
		return Handle{}, err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	raw := ds.X.RawMatrix()
	for i := 0; i < n && err == nil; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+p]
		if err = checkFinite(row, i*p, p); err == nil {
			err = writeLE(bw, row)
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Handle{}, fmt.Errorf("prepare: %w", err)
	}
	h := canonicalHandle(ds, n, p, dir, 0)
	if err := storeEntry(ds, &h, tmp.Name()); err != nil {
		return Handle{}, err
	}
	h.Source = src
	return h, nil
}

// createTempX creates the temporary file X is written to before it is
// renamed into its cache entry.
func createTempX(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	f, err := os.CreateTemp(dir, ".x-*.f8")
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return f, nil
}

// storeEntry completes the cache entry holding the files h describes
// (filepath.Dir of its side arrays) under the entry's lock: X is renamed
// from tmpX unless the entry holds it already ("" when X lives elsewhere),
// the side arrays of ds are written, every file is stamped into h and
// handle.json records h. The entry's handle.json describes the content
// only (h has no source yet): several sources or views can give the same
// content.
func storeEntry(ds *data.Dataset, h *Handle, tmpX string) error {
	dir := filepath.Dir(h.X.Path)
	if tmpX == "" {
		dir = filepath.Dir(h.refs()[1].Path)
	}
	_, unlock, err := claimEntry(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if tmpX != "" && !sizeIs(h.X.Path, h.X.Size) {
		if err := os.Rename(tmpX, h.X.Path); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	if err := writeSmall(ds, *h); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := stampRefs(h); err != nil {
		return err
	}
	if err := writeHandleJSON(filepath.Join(dir, fileHandle), *h); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	touch(dir)
	return nil
}

// canonicalHandle returns the handle of the canonical files in dir of ds,
// whose X (n×p) need not be in memory: X is float64, or bytes standing for
// float64(b)·xScale when xScale is not 0.
func canonicalHandle(ds *data.Dataset, n, p int, dir string, xScale float64) Handle {
	h := Handle{Version: HandleVersion, Kind: ds.Kind, Hash: ds.Hash, Name: ds.Name, N: n, P: p, ColumnScaled: ds.ColumnScaled}
	if ds.Kind == data.Trace {
		h.D1, h.D2 = ds.D1, ds.D2
	}
	ref := func(name, dt string, count int) *FileRef {
		return &FileRef{Path: filepath.Join(dir, name), DType: dt, Count: int64(count), Size: 8 * int64(count)}
	}
	h.X = *ref(fileX, DTypeFloat64, n*p)
	if xScale != 0 {
		h.X = FileRef{Path: filepath.Join(dir, fileXU8), DType: DTypeUint8, Count: int64(n * p), Size: int64(n * p), Scale: xScale}
	}
	if ds.Y != nil {
		h.Y = ref(fileY, DTypeFloat64, len(ds.Y))
	}
	if ds.NumUsers() > 0 {
		h.UserStart = ref(fileUserStart, DTypeInt64, len(ds.UserStart))
		h.UserIDs = ref(fileUserIDs, DTypeInt64, len(ds.UserIDs))
	}
	if ds.Labels != nil {
		h.Labels = ref(fileLabels, DTypeInt64, len(ds.Labels))
	}
	return h
}

// present reports whether every file of a canonical handle exists with the
// expected size.
func present(h Handle) bool {
	return !slices.ContainsFunc(h.refs(), func(r *FileRef) bool { return !sizeIs(r.Path, r.Size) })
}

func (h *Handle) refs() []*FileRef {
	out := []*FileRef{&h.X}
	for _, r := range []*FileRef{h.Y, h.UserStart, h.UserIDs, h.Labels} {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

func sizeIs(path string, size int64) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Size() == size
}

// writeSmall writes Y, user arrays and labels of ds where h says, skipping
// files already present with the right size.
func writeSmall(ds *data.Dataset, h Handle) error {
	type item struct {
		ref   *FileRef
		write func(io.Writer) error
	}
	items := []item{}
	if h.Y != nil {
		items = append(items, item{h.Y, func(w io.Writer) error { return writeLE(w, ds.Y) }})
	}
	if h.UserStart != nil {
		items = append(items,
			item{h.UserStart, func(w io.Writer) error { return writeLE(w, intsToInt64(ds.UserStart)) }},
			item{h.UserIDs, func(w io.Writer) error { return writeLE(w, ds.UserIDs) }})
	}
	if h.Labels != nil {
		items = append(items, item{h.Labels, func(w io.Writer) error { return writeLE(w, intsToInt64(ds.Labels)) }})
	}
	for _, it := range items {
		if sizeIs(it.ref.Path, it.ref.Size) {
			continue
		}
		if err := WriteFileAtomic(it.ref.Path, it.write); err != nil {
			return err
		}
	}
	return nil
}

func writeHandleJSON(path string, h Handle) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(h)
	})
}

// ReadHandle reads a handle.json written by Prepare.
func ReadHandle(path string) (Handle, error) {
	var h Handle
	b, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	if err := h.Check(); err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// PrepareFile reads, validates and hashes the data set at path and returns
// its handle, writing any files it needs into cacheDir/<hash>/. A float64
// C-order .npy X read without scaling is used in place (read to hash it,
// never copied); other data from a C-order .npy or IDX is streamed into the
// cache in one pass; anything else is loaded and passed to Prepare. The
// handle is recorded under cacheDir/files/, so that preparing the same,
// unchanged input again reads nothing (docs/data.md).
func PrepareFile(path string, opt LoadOptions, cacheDir string) (Handle, error) {
	return PrepareFileContext(context.Background(), path, opt, cacheDir)
}

// PrepareFileContext is PrepareFile honouring ctx during the streaming pass.
func PrepareFileContext(ctx context.Context, path string, opt LoadOptions, cacheDir string) (Handle, error) {
	if err := opt.check(); err != nil {
		return Handle{}, fmt.Errorf("prepare %s: %w", path, err)
	}
	opt.SkipHash = false
	st, err := os.Stat(path)
	if err != nil {
		return Handle{}, fmt.Errorf("prepare: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Handle{}, fmt.Errorf("prepare %s: %w", path, err)
	}
	cdir, err := filepath.Abs(cacheDir)
	if err != nil {
		return Handle{}, fmt.Errorf("prepare %s: cache directory: %w", path, err)
	}
	if !st.Mode().IsRegular() && !st.IsDir() {
		// A pipe or device (e.g. /dev/zero) is read like a file but has no
		// state to key a record on.
		st = nil
	}
	var memo string
	if st != nil {
		memo = memoPath(cdir, abs, st, opt)
		if h, ok := reusePrepared(memo); ok {
			touchRefs(cdir, h)
			h.ColumnScaled = len(opt.ColumnScales) > 0
			return h, nil
		}
	}
	h, ok, err := prepareStreamed(ctx, path, opt, cdir)
	if err != nil {
		return Handle{}, err
	}
	if !ok {
		ids := &idSink{want: true}
		ds, err := loadWith(path, opt, ids)
		if err != nil {
			return Handle{}, err
		}
		id := ids.b.finish()
		ds.Name = cmp.Or(ds.Name, filepath.Base(path))
		if err := checkCacheRoom(cdir, cacheNeed(ds, 8*int64(ds.N()*ds.P())), opt.cacheMaxBytes()); err != nil {
			return Handle{}, fmt.Errorf("prepare %s: %w", path, err)
		}
		if h, err = prepare(ds, cdir, &id); err != nil {
			return Handle{}, err
		}
		h.View = opt.view()
	}
	h.ColumnScaled = len(opt.ColumnScales) > 0
	if err := EvictCache(cdir, opt.cacheMaxBytes(), h); err != nil {
		return Handle{}, fmt.Errorf("prepare %s: %w", path, err)
	}
	if memo == "" {
		return h, nil
	}
	if err := os.MkdirAll(filepath.Dir(memo), 0o755); err != nil {
		return Handle{}, fmt.Errorf("prepare %s: %w", path, err)
	}
	if err := writeHandleJSON(memo, h); err != nil {
		return Handle{}, fmt.Errorf("prepare %s: %w", path, err)
	}
	return h, nil
}

// memoPath names the record of a preparation of the file at abs in its
// current state (size, modification time, device and inode) with the given
// options (and the current state of the side files they name).
func memoPath(cacheDir, abs string, st os.FileInfo, opt LoadOptions) string {
	key := sha256.New()
	key.Write([]byte(hashPrefix)) // a record of an older encoding is not reused
	fmt.Fprintf(key, "%s\x00%d\x00%d\x00%s\x00", abs, st.Size(), st.ModTime().UnixNano(), fileStamp(st))
	optJSON, _ := json.Marshal(opt)
	key.Write(optJSON)
	for _, side := range []string{opt.LabelsPath, opt.ResponsePath, opt.UsersPath} {
		fmt.Fprintf(key, "|")
		if side == "" {
			continue
		}
		sa, _ := filepath.Abs(side)
		fmt.Fprintf(key, "%s", sa)
		if ls, err := os.Stat(side); err == nil {
			fmt.Fprintf(key, "\x00%d\x00%d\x00%s", ls.Size(), ls.ModTime().UnixNano(), fileStamp(ls))
		}
	}
	return filepath.Join(cacheDir, "files", hex.EncodeToString(key.Sum(nil))+".json")
}

// reusePrepared returns a recorded handle if every file it references is
// still there with the recorded size (and modification time, where one
// was recorded).
func reusePrepared(memo string) (Handle, bool) {
	h, err := ReadHandle(memo)
	if err != nil || h.Source == nil || h.View == nil || !refsIntact(&h) {
		return Handle{}, false // unreadable, recorded before identities, or stale
	}
	return h, true
}

// Open turns a handle into a data set. A float64 X is memory-mapped
// read-only and wrapped in a *mat.Dense without copying (writing to it
// faults); an X of bytes is mapped likewise and kept as bytes
// (data.Dataset.XBytes) for rows data, decoded for the other kinds; the
// small arrays are read into memory. Every file's size (and, where
// recorded, its modification time) must match the handle. The content is not re-hashed
// (its hash names the source rows it was read from, which the handle does
// not hold); it was validated when the handle was prepared. The
// returned Closer unmaps X: the data set must not be used after Close.
func Open(h Handle) (*data.Dataset, io.Closer, error) {
	if err := h.Check(); err != nil {
		return nil, nil, fmt.Errorf("open data set: %w", err)
	}
	ds := &data.Dataset{Kind: h.Kind, Hash: h.Hash, Name: h.Name, ColumnScaled: h.ColumnScaled}
	if h.Kind == data.Trace {
		ds.D1, ds.D2 = h.D1, h.D2
	}
	var err error
	if h.Y != nil {
		if ds.Y, err = readRef[float64](h.Y); err != nil {
			return nil, nil, fmt.Errorf("open data set: responses: %w", err)
		}
	}
	if h.UserStart != nil {
		us, err := readRef[int64](h.UserStart)
		if err != nil {
			return nil, nil, fmt.Errorf("open data set: user boundaries: %w", err)
		}
		ds.UserStart = make([]int, len(us))
		for i, v := range us {
			if v < 0 || v > int64(h.N) {
				return nil, nil, fmt.Errorf("open data set: user boundary %d out of range", v)
			}
			ds.UserStart[i] = int(v)
		}
		if ds.UserIDs, err = readRef[int64](h.UserIDs); err != nil {
			return nil, nil, fmt.Errorf("open data set: user ids: %w", err)
		}
	}
	if h.Labels != nil {
		lb, err := readRef[int64](h.Labels)
		if err != nil {
			return nil, nil, fmt.Errorf("open data set: labels: %w", err)
		}
		if ds.Labels, err = toLabels(lb); err != nil {
			return nil, nil, fmt.Errorf("open data set: %w", err)
		}
	}
	closer, err := openX(ds, &h)
	if err != nil {
		return nil, nil, fmt.Errorf("open data set: X: %w", err)
	}
	if err := checkStructure(ds); err != nil {
		closer.Close()
		return nil, nil, fmt.Errorf("open data set: %w", err)
	}
	return ds, closer, nil
}

// openRef opens a referenced file and checks its size and time.
func openRef(r *FileRef) (*os.File, int64, error) {
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if err = refState(r, st); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// readRef reads a referenced array of float64 or int64 values.
func readRef[T float64 | int64](r *FileRef) ([]T, error) {
	f, _, err := openRef(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 8*r.Count)
	if _, err := f.ReadAt(b, r.Offset); err != nil {
		return nil, fmt.Errorf("%s: %w", r.Path, err)
	}
	out := make([]T, r.Count)
	for i := range out {
		w := binary.LittleEndian.Uint64(b[8*i:])
		out[i] = *(*T)(unsafe.Pointer(&w))
	}
	return out, nil
}

// unmapper releases a mapping once.
type unmapper struct {
	once sync.Once
	fn   func() error
	err  error
}

func (u *unmapper) Close() error {
	u.once.Do(func() { u.err = u.fn() })
	return u.err
}

// mapRef maps a float64 array read-only, falling back to reading it into
// memory where mapping cannot give an aligned little-endian view.
func mapRef(r *FileRef) ([]float64, io.Closer, error) {
	if !nativeLE || r.Offset%8 != 0 || !mmapSupported {
		v, err := readRef[float64](r)
		if err != nil {
			return nil, nil, err
		}
		return v, &unmapper{fn: func() error { return nil }}, nil
	}
	m, closer, err := mapBytes(r)
	if err != nil {
		return nil, nil, err
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&m[0])), r.Count), closer, nil
}

// mapBytes maps the bytes of the array r refers to read-only (mapFile
// reads them where files cannot be mapped).
func mapBytes(r *FileRef) ([]byte, io.Closer, error) {
	f, size, err := openRef(r)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close() // the mapping stays valid after the file is closed
	m, unmap, err := mapFile(f, size)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", r.Path, err)
	}
	return m[r.Offset : r.Offset+r.elemSize()*r.Count], &unmapper{fn: unmap}, nil
}

// elemSize is the size in bytes of one element of the array r refers to.
func (r *FileRef) elemSize() int64 {
	if r.DType == DTypeUint8 {
		return 1
	}
	return 8
}

// openX maps the X of h into ds and returns what unmaps it.
func openX(ds *data.Dataset, h *Handle) (io.Closer, error) {
	if h.X.DType != DTypeUint8 {
		x, closer, err := mapRef(&h.X)
		if err == nil {
			ds.X = mat.NewDense(h.N, h.P, x)
		}
		return closer, err
	}
	b, closer, err := mapBytes(&h.X)
	if err != nil {
		return nil, err
	}
	xb, err := data.NewBytes(h.N, h.P, b, h.X.Scale)
	if err != nil {
		closer.Close()
		return nil, err
	}
	if ds.Kind == data.Rows {
		ds.XBytes = xb
		return closer, nil
	}
	ds.X = xb.Dense()
	return closer, closer.Close()
}
