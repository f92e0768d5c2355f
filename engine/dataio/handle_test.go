package dataio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// sameData asserts two data sets have the same content.
func sameData(t *testing.T, want, got *data.Dataset) {
	t.Helper()
	assert.Equal(t, want.Kind, got.Kind)
	assert.Equal(t, want.Hash, got.Hash)
	assert.True(t, mat.Equal(want.X, got.X))
	assert.Equal(t, want.Y, got.Y)
	assert.Equal(t, want.D1, got.D1)
	assert.Equal(t, want.D2, got.D2)
	assert.Equal(t, want.UserStart, got.UserStart)
	assert.Equal(t, want.UserIDs, got.UserIDs)
	assert.Equal(t, want.Labels, got.Labels)
	assert.Equal(t, Hash(want), Hash(got), "the opened data has the loaded content")
	require.NoError(t, got.Validate())
}

// TestPrepareOpenKinds round-trips each kind through the cache, including
// through the handle's JSON form.
func TestPrepareOpenKinds(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	rows := writeTemp(t, dir, "r.csv", []byte("1,2,3\n4,5,6\n"))
	rowsLab := writeTemp(t, dir, "l.csv", []byte("3\n1\n"))
	trace := writeTemp(t, dir, "t.csv", []byte("1,2,3,4,0.5\n5,6,7,8,-1\n"))
	users := writeTemp(t, dir, "u.csv", []byte("user,a,y\n2,1,0.1\n1,2,0.2\n2,3,0.3\n"))
	cases := []struct {
		name string
		path string
		opt  LoadOptions
	}{
		{"rows", rows, LoadOptions{}},
		{"rows with labels", rows, LoadOptions{LabelsPath: rowsLab, Name: "r"}},
		{"trace", trace, LoadOptions{Kind: data.Trace, D1: 2, D2: 2}},
		{"users", users, LoadOptions{Kind: data.Users}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds, err := Load(c.path, c.opt)
			require.NoError(t, err)
			loaded := ds.Hash
			h, err := Prepare(ds, cache)
			require.NoError(t, err)
			assert.Equal(t, ds.Hash, h.Hash)
			assert.Equal(t, Hash(ds), h.Hash, "in memory, the data set is its own source")
			assert.Equal(t, filepath.Join(cache, ds.Hash, fileX), h.X.Path)
			// Through JSON, as the cache records it.
			b, err := json.Marshal(h)
			require.NoError(t, err)
			var h2 Handle
			require.NoError(t, json.Unmarshal(b, &h2))
			require.NoError(t, h2.Check())
			assert.Equal(t, h, h2)
			got, closer, err := Open(h2)
			require.NoError(t, err)
			defer closer.Close()
			sameData(t, ds, got)
			assert.Equal(t, c.opt.Name, got.Name)
			hj, err := ReadHandle(filepath.Join(cache, ds.Hash, fileHandle))
			require.NoError(t, err)
			content := h
			content.Source = nil // the entry describes content, not a source
			assert.Equal(t, content, hj)
			require.NotNil(t, h.Source)
			assert.Equal(t, IdentityOf(ds), *h.Source)

			// PrepareFile of a non-npy input goes through Load+Prepare,
			// under the hash Load derives from the file's rows: the
			// in-memory hash when the file's records are the rows with
			// their response last (all but users here, whose id column
			// comes first).
			hf, err := PrepareFile(c.path, c.opt, cache)
			require.NoError(t, err)
			assert.Equal(t, loaded, hf.Hash)
			assert.Equal(t, c.name == "users", h.Hash != hf.Hash)
			fromFile, closer2, err := Open(hf)
			require.NoError(t, err)
			defer closer2.Close()
			assert.Equal(t, Hash(got), Hash(fromFile), "the same content")
		})
	}
}

// TestPrepareSkipsPresent: a second Prepare of the same data set writes
// nothing (the files keep their modification times), and a preset hash is
// replaced by the data set's own.
func TestPrepareSkipsPresent(t *testing.T) {
	cache := t.TempDir()
	ds := &data.Dataset{Kind: data.Rows, X: mat.NewDense(2, 2, []float64{1, 2, 3, 4})}
	h, err := Prepare(ds, cache)
	require.NoError(t, err)
	require.NotEmpty(t, ds.Hash, "Prepare fills in the hash")
	before, err := os.Stat(h.X.Path)
	require.NoError(t, err)
	h2, err := Prepare(ds, cache)
	require.NoError(t, err)
	assert.Equal(t, h, h2)
	st, err := os.Stat(h.X.Path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, st) && st.ModTime().Equal(before.ModTime()), "present files are not rewritten")
	// A cached file changed after it was written (here only its times) is
	// not trusted: it is written again.
	old := time.Unix(1_000_000, 0)
	require.NoError(t, os.Chtimes(h.X.Path, old, old))
	h3, err := Prepare(ds, cache)
	require.NoError(t, err)
	st, err = os.Stat(h3.X.Path)
	require.NoError(t, err)
	assert.False(t, st.ModTime().Equal(old), "a touched cache file is rewritten")
	assert.NotEqual(t, h.X.Stamp, h3.X.Stamp)

	// A preset hash is not trusted, even one naming an intact entry: the
	// data set is stored under its own hash, the other entry left alone.
	other := &data.Dataset{Kind: data.Rows, X: mat.NewDense(2, 2, []float64{1, 2, 3, 5}), Hash: ds.Hash}
	ho, err := Prepare(other, cache)
	require.NoError(t, err)
	assert.NotEqual(t, h.Hash, ho.Hash)
	assert.Equal(t, Hash(other), ho.Hash)
	st2, err := os.Stat(h3.X.Path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(st, st2) && st2.ModTime().Equal(st.ModTime()))

	// Non-finite values are refused before anything is written.
	bad := &data.Dataset{Kind: data.Rows, X: mat.NewDense(1, 2, []float64{1, nan})}
	_, err = Prepare(bad, cache)
	assert.ErrorContains(t, err, "row 0, column 1: value NaN is not finite")
	// Structural problems too.
	_, err = Prepare(&data.Dataset{Kind: data.Trace, X: mat.NewDense(1, 2, nil), D1: 1, D2: 2}, cache)
	assert.ErrorContains(t, err, "1 samples but 0 responses")
}

// TestPrepareFileInPlace: a float64 C-order .npy is referenced in place,
// hashes like the loaded data set, and Open maps it without copying.
func TestPrepareFileInPlace(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	x := seq(12, 0.5, -1)
	p := writeTemp(t, dir, "x.npy", npyFile(1, "<f8", false, []int{4, 3}, encode(binary.LittleEndian, x)))
	lab := writeTemp(t, dir, "lab.npy", npyFile(1, "|u1", false, []int{4}, []byte{1, 0, 1, 2}))
	for _, opt := range []LoadOptions{{}, {LabelsPath: lab}} {
		loaded, err := Load(p, opt)
		require.NoError(t, err)
		h, err := PrepareFile(p, opt, cache)
		require.NoError(t, err)
		assert.Equal(t, loaded.Hash, h.Hash)
		abs, _ := filepath.Abs(p)
		assert.Equal(t, abs, h.X.Path, "X is referenced in place")
		assert.EqualValues(t, 128, h.X.Offset)
		assert.NotZero(t, h.X.ModTime)
		ds, closer, err := Open(h)
		require.NoError(t, err)
		loaded.Name = ds.Name
		sameData(t, loaded, ds)
		assert.Equal(t, "x.npy", ds.Name)
		require.NoError(t, closer.Close())
		require.NoError(t, closer.Close(), "Close is idempotent")
	}
	// A second preparation of the unchanged file reuses the record; a
	// modified file is hashed again.
	h1, err := PrepareFile(p, LoadOptions{}, cache)
	require.NoError(t, err)
	memos, err := filepath.Glob(filepath.Join(cache, "files", "*.json"))
	require.NoError(t, err)
	assert.Len(t, memos, 2, "one record per (file state, options)")
	h2, err := PrepareFile(p, LoadOptions{}, cache)
	require.NoError(t, err)
	assert.Equal(t, h1, h2)
	x[5] = 99
	require.NoError(t, os.WriteFile(p, npyFile(1, "<f8", false, []int{4, 3}, encode(binary.LittleEndian, x)), 0o644))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(p, later, later))
	h3, err := PrepareFile(p, LoadOptions{}, cache)
	require.NoError(t, err)
	assert.NotEqual(t, h1.Hash, h3.Hash)
	re, err := Load(p, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, re.Hash, h3.Hash)

	// The in-place path validates too.
	bad := writeTemp(t, dir, "bad.npy", npyFile(1, "<f8", false, []int{2, 2}, encode(binary.LittleEndian, []float64{1, 2, 3, nan})))
	_, err = PrepareFile(bad, LoadOptions{}, cache)
	assert.ErrorContains(t, err, "row 1, column 1: value NaN is not finite")
	assert.ErrorContains(t, err, "bad.npy")
	short := writeTemp(t, dir, "short.npy", npyFile(1, "<f8", false, []int{2, 2}, encode(binary.LittleEndian, []float64{1, 2, 3})))
	_, err = PrepareFile(short, LoadOptions{}, cache)
	assert.ErrorContains(t, err, "header implies")
	// Scaled input cannot be referenced in place: it is copied.
	h, err := PrepareFile(p, LoadOptions{Scale: 2}, cache)
	require.NoError(t, err)
	assert.Equal(t, fileX, filepath.Base(h.X.Path))
}

// TestOpenDetectsChanges: truncated, replaced or modified files and
// inconsistent handles are errors.
func TestOpenDetectsChanges(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	x := seq(12, 1, 0)
	p := writeTemp(t, dir, "x.npy", npyFile(1, "<f8", false, []int{4, 3}, encode(binary.LittleEndian, x)))
	h, err := PrepareFile(p, LoadOptions{}, cache)
	require.NoError(t, err)

	ds := &data.Dataset{Kind: data.Users, X: mat.NewDense(3, 1, []float64{1, 2, 3}), Y: []float64{1, 2, 3},
		UserStart: []int{0, 1, 3}, UserIDs: []int64{5, 6}}
	hu, err := Prepare(ds, cache)
	require.NoError(t, err)

	mutate := []struct {
		name string
		h    func() Handle
		want string
	}{
		{"bad version", func() Handle { c := h; c.Version = 7; return c }, "handle version 7"},
		{"bad hash", func() Handle { c := h; c.Hash = "xyz"; return c }, "not a hex SHA-256"},
		{"count mismatch", func() Handle { c := h; c.N = 5; return c }, "X has 12 values, shape 5×3"},
		{"bad dtype", func() Handle { c := h; c.X.DType = "<f4"; return c }, "dtype"},
		{"bad size", func() Handle { c := h; c.X.Size++; return c }, "truncated or replaced"},
		{"moved", func() Handle { c := h; c.X.Path += ".gone"; return c }, "no such file"},
		{"users without ids", func() Handle { c := hu; c.UserIDs = nil; return c }, "user ids missing"},
		{"users without y", func() Handle { c := hu; c.Y = nil; return c }, "responses missing"},
		{"trace shape", func() Handle { c := h; c.Kind = data.Trace; c.D1, c.D2 = 2, 2; return c }, "do not hold 2×2"},
		{"bad kind", func() Handle { c := h; c.Kind = "x"; return c }, "unknown data kind"},
	}
	for _, m := range mutate {
		t.Run(m.name, func(t *testing.T) {
			_, _, err := Open(m.h())
			assert.ErrorContains(t, err, m.want)
		})
	}

	// Bad user boundaries on disk.
	var buf bytes.Buffer
	require.NoError(t, writeLE(&buf, []int64{0, 3, 3}))
	require.NoError(t, os.WriteFile(hu.UserStart.Path, buf.Bytes(), 0o644))
	_, _, err = Open(hu)
	assert.ErrorContains(t, err, "changed or replaced after it was prepared", "the stamp catches the edit")
	hu.UserStart.Stamp = "" // without a stamp, the structure check still refuses it
	_, _, err = Open(hu)
	assert.ErrorContains(t, err, "user 1 has no rows")

	// Re-hashing: an intact data set matches, changed content does not.
	okds, closer, err := Open(h)
	require.NoError(t, err)
	assert.Equal(t, h.Hash, Hash(okds))
	closer.Close()
	cp := &data.Dataset{Kind: data.Rows, X: mat.NewDense(4, 3, seq(12, 1, 0)), Hash: h.Hash}
	assert.Equal(t, h.Hash, Hash(cp))
	cp.X.Set(3, 2, 0)
	assert.NotEqual(t, h.Hash, Hash(cp))

	// Modified in place (same size): the time check catches it.
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(p, later, later))
	_, _, err = Open(h)
	assert.ErrorContains(t, err, "modified after it was prepared")
	// Truncated.
	require.NoError(t, os.Truncate(p, 100))
	_, _, err = Open(h)
	assert.ErrorContains(t, err, "truncated")
}

// TestNPYWriters round-trips the writers through the readers.
func TestNPYWriters(t *testing.T) {
	dir := t.TempDir()
	m := mat.NewDense(3, 2, []float64{1, -2, 3.5, 4, 5, 6e-300})
	p := filepath.Join(dir, "m.npy")
	require.NoError(t, SaveNPY(p, m))
	ds, err := Load(p, LoadOptions{})
	require.NoError(t, err)
	assert.True(t, mat.Equal(m, ds.X))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, 0, (len(b)-48)%64, "data starts on a 64-byte boundary")

	// A strided view is written row by row.
	big := mat.NewDense(3, 4, seq(12, 1, 0))
	view := big.Slice(0, 3, 1, 3)
	vp := filepath.Join(t.TempDir(), "view.npy")
	require.NoError(t, SaveNPY(vp, view))
	l, err := readFile(vp, FormatNPY, csvConfig{})
	require.NoError(t, err)
	v, err := l.arr.float64s()
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 5, 6, 9, 10}, v)

	// Rank-3 float64 and int64 vectors.
	q := filepath.Join(dir, "t.npy")
	require.NoError(t, SaveNPYFloat64(q, []int{2, 2, 2}, seq(8, 1, 0)))
	tr, err := Load(q, LoadOptions{Kind: data.Trace, ResponsePath: writeTemp(t, dir, "y.csv", []byte("1\n2\n"))})
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 2}, [2]int{tr.D1, tr.D2})
	assert.Error(t, SaveNPYFloat64(q, []int{2, 3}, seq(5, 1, 0)))

	ip := filepath.Join(dir, "i.npy")
	ids := []int64{-1, 1 << 60, 3}
	require.NoError(t, SaveNPYInt64(ip, ids))
	f, err := os.Open(ip)
	require.NoError(t, err)
	defer f.Close()
	st, _ := f.Stat()
	ia, err := decodeWhole(decodeNPYHeader, f, st.Size())
	require.NoError(t, err)
	got, err := ia.int64s()
	require.NoError(t, err)
	assert.Equal(t, ids, got)
	assert.Equal(t, []int{3}, ia.shape)
}

// TestOpenIsZeroCopyAndReadOnly: opening a 1.6 MB matrix allocates a few
// kilobytes, and X is the read-only mapping (a write faults).
func TestOpenIsZeroCopyAndReadOnly(t *testing.T) {
	if !mmapSupported {
		t.Skip("no mmap on this system")
	}
	dir := t.TempDir()
	const n, p = 2000, 100
	path := filepath.Join(dir, "x.npy")
	require.NoError(t, SaveNPYFloat64(path, []int{n, p}, seq(n*p, 1e-3, 0)))
	h, err := PrepareFile(path, LoadOptions{}, filepath.Join(dir, "cache"))
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ds, closer, err := Open(h)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	defer closer.Close()
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "Open must not copy X (%d bytes)", n*p*8)
	assert.Equal(t, 1e-3*float64(n*p-1), ds.X.At(n-1, p-1))

	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	faulted := func() (f bool) {
		defer func() { f = recover() != nil }()
		ds.X.Set(0, 0, 42)
		return false
	}()
	assert.True(t, faulted, "writing to the mapped X must fault")
}

// TestPrepareFileInPlaceTraceUsers: trace and (already grouped) users data
// from float64 .npy files are referenced in place too; users data that
// needs regrouping is copied. Either way the hash equals Load's.
func TestPrepareFileInPlaceTraceUsers(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	le := binary.LittleEndian
	x3 := writeTemp(t, dir, "x3.npy", npyFile(1, "<f8", false, []int{3, 2, 2}, encode(le, seq(12, 0.5, 0))))
	x2 := writeTemp(t, dir, "x2.npy", npyFile(1, "<f8", false, []int{3, 4}, encode(le, seq(12, 0.5, 0))))
	y := writeTemp(t, dir, "y.npy", npyFile(1, "<f8", false, []int{3}, encode(le, []float64{1, -1, 2})))
	sorted := writeTemp(t, dir, "us.npy", npyFile(1, "<i8", false, []int{3}, encode(le, []int64{4, 4, 9})))
	unsorted := writeTemp(t, dir, "uu.npy", npyFile(1, "<i8", false, []int{3}, encode(le, []int64{9, 4, 4})))
	lab := writeTemp(t, dir, "l.csv", []byte("0\n1\n0\n"))
	cases := []struct {
		name    string
		path    string
		opt     LoadOptions
		inPlace bool
	}{
		{"trace rank 3", x3, LoadOptions{Kind: data.Trace, ResponsePath: y}, true},
		{"trace rank 2", x2, LoadOptions{Kind: data.Trace, ResponsePath: y, D1: 2, D2: 2, LabelsPath: lab}, true},
		{"users grouped", x2, LoadOptions{Kind: data.Users, ResponsePath: y, UsersPath: sorted}, true},
		{"users regrouped", x2, LoadOptions{Kind: data.Users, ResponsePath: y, UsersPath: unsorted, LabelsPath: lab}, false},
		{"trace scaled", x3, LoadOptions{Kind: data.Trace, ResponsePath: y, Scale: 3}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := Load(c.path, c.opt)
			require.NoError(t, err)
			h, err := PrepareFile(c.path, c.opt, cache)
			require.NoError(t, err)
			assert.Equal(t, want.Hash, h.Hash)
			abs, _ := filepath.Abs(c.path)
			assert.Equal(t, c.inPlace, h.X.Path == abs)
			// The in-place and the copying paths compute one identity, the
			// in-memory data set's own when it is unscaled.
			_, id, err := LoadIdentity(c.path, c.opt)
			require.NoError(t, err)
			require.NotNil(t, h.Source)
			assert.Equal(t, id, *h.Source)
			if c.opt.Scale == 0 {
				assert.Equal(t, IdentityOf(want), id)
			}
			got, closer, err := Open(h)
			require.NoError(t, err)
			defer closer.Close()
			want.Name = got.Name
			sameData(t, want, got)
		})
	}
	_, err := PrepareFile(x3, LoadOptions{Kind: data.Trace, ResponsePath: y, D1: 3}, cache)
	assert.ErrorContains(t, err, "does not hold 3×0")
	short := writeTemp(t, dir, "ys.npy", npyFile(1, "<f8", false, []int{2}, encode(le, []float64{1, 2})))
	_, err = PrepareFile(x3, LoadOptions{Kind: data.Trace, ResponsePath: short}, cache)
	assert.ErrorContains(t, err, "2 values for 3 rows")
}

// TestPrepareFileReuse: a copied input (gzip IDX) is prepared once; a later
// PrepareFile of the unchanged file reuses the record, and recomputes when
// a referenced cache file is gone or the options change.
func TestPrepareFileReuse(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	p := writeTemp(t, dir, "img-idx3-ubyte.gz", gz(idxFile(0x08, []int{3, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})))
	opt := LoadOptions{Scale: 0.5}
	h, err := PrepareFile(p, opt, cache)
	require.NoError(t, err)
	memos, err := filepath.Glob(filepath.Join(cache, "files", "*.json"))
	require.NoError(t, err)
	require.Len(t, memos, 1)
	// Mark the record: a reuse returns the marked handle.
	marked := h
	marked.Name = "marker"
	require.NoError(t, writeHandleJSON(memos[0], marked))
	again, err := PrepareFile(p, opt, cache)
	require.NoError(t, err)
	assert.Equal(t, "marker", again.Name)
	// Other options: a separate record.
	other, err := PrepareFile(p, LoadOptions{}, cache)
	require.NoError(t, err)
	assert.NotEqual(t, h.Hash, other.Hash)
	// A missing cache file forces a fresh preparation.
	require.NoError(t, os.Remove(h.X.Path))
	fresh, err := PrepareFile(p, opt, cache)
	require.NoError(t, err)
	assert.NotEqual(t, h.X.Stamp, fresh.X.Stamp, "a new file, a new stamp")
	fresh.X.Stamp = h.X.Stamp
	assert.Equal(t, h, fresh)
	fresh, err = PrepareFile(p, opt, cache)
	require.NoError(t, err)
	ds, closer, err := Open(fresh)
	require.NoError(t, err)
	defer closer.Close()
	assert.Equal(t, 6.0, ds.WithDenseX().X.At(2, 3))
}
