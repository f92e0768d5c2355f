package dataio

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLoadBounded: endless or oversized input is refused with a clear
// message after a bounded amount of memory. On 992c541 /dev/zero read as
// CSV grew without bound and a small IDX.gz claiming a huge shape
// allocated the claim.
func TestLoadBounded(t *testing.T) {
	dir := t.TempDir()
	// 10⁶ images of 28×28 claimed, 3 MB of zeros delivered (compresses to
	// a few kB): the claim (6.3 GB of float64) exceeds a 64 MiB limit.
	claim := gz(idxFile(0x08, []int{1000000, 28, 28}, make([]byte, 3<<20)))
	idxPath := writeTemp(t, dir, "claim-idx3-ubyte.gz", claim)
	// Under the limit but more than the stream holds: memory follows what
	// arrives (2 MB of pixels claimed, 64 kB delivered).
	// The pixels are random so that the compressed size vouches for the
	// claim.
	noise := make([]byte, 64<<10)
	for i := range noise {
		noise[i] = byte(i*2654435761>>13) ^ byte(i>>7)
	}
	short := writeTemp(t, dir, "short-idx3-ubyte.gz", gz(idxFile(0x08, []int{2000, 32, 32}, noise)))
	csvRows := writeTemp(t, dir, "many.csv", []byte(strings.Repeat("1,2,3,4\n", 20000)))
	longLine := writeTemp(t, dir, "long.csv", []byte(strings.Repeat("1,", 1<<19)+"1\n"))
	cases := []struct {
		name     string
		path     string
		opt      LoadOptions
		want     string
		maxAlloc uint64
	}{
		{"dev zero as csv", "/dev/zero", LoadOptions{Format: FormatCSV, MaxRecordBytes: 1 << 20}, "longer than 1.0 MiB", 32 << 20},
		{"long line", longLine, LoadOptions{MaxRecordBytes: 1 << 16}, "longer than 64.0 KiB", 8 << 20},
		{"csv above memory limit", csvRows, LoadOptions{MaxBytes: 64 << 10}, "more than 64.0 KiB in memory", 8 << 20},
		{"idx claim above limit", idxPath, LoadOptions{MaxBytes: 64 << 20}, "above the loading limit of 64.0 MiB", 8 << 20},
		{"idx claim above limit, users kind", idxPath, LoadOptions{Kind: data.Users, ResponsePath: idxPath, UsersPath: idxPath, MaxBytes: 64 << 20}, "above the loading limit", 8 << 20},
		{"idx claim beyond the stream", short, LoadOptions{MaxBytes: 64 << 20}, "stream ends after 65536", 8 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.path); err != nil {
				t.Skip(err)
			}
			var err error
			got := allocated(func() { _, err = Load(c.path, c.opt) })
			require.Error(t, err)
			assert.ErrorContains(t, err, c.want)
			assert.Less(t, got, c.maxAlloc, "allocated %s", FormatBytes(int64(got)))
			_, err = PrepareFile(c.path, c.opt, t.TempDir())
			assert.ErrorContains(t, err, c.want, "PrepareFile applies the same limits")
		})
	}
	// Within the limits the same loaders work.
	ds, err := Load(csvRows, LoadOptions{MaxBytes: 4 << 20})
	require.NoError(t, err)
	assert.Equal(t, 20000, ds.N())
}

// TestAmbiguousInputRefused: input whose meaning other readers would
// disagree on is refused with a message saying why. On 992c541 each was
// read by a guess.
func TestAmbiguousInputRefused(t *testing.T) {
	dir := t.TempDir()
	le := binary.LittleEndian
	dupKeys := func() []byte {
		b := npyFile(1, "<f8", false, []int{1, 2}, encode(le, []float64{1, 2}))
		s := string(b)
		return []byte(strings.Replace(s, "'shape': (1, 2), ", "'shape': (1, 2), 'shape': (2, 1),", 1))
	}()
	cases := []struct {
		name    string
		file    string
		content []byte
		opt     LoadOptions
		want    string
	}{
		{"npy duplicate key", "a.npy", dupKeys, LoadOptions{}, `duplicate key "shape"`},
		{"csv underscore", "a.csv", []byte("1,2\n1_000,3\n"), LoadOptions{}, "underscore"},
		{"csv underscore first row", "a.csv", []byte("1_000,2\n1,3\n"), LoadOptions{Header: HeaderNo}, "underscore"},
		{"csv hex float", "a.csv", []byte("1,2\n0x1p3,3\n"), LoadOptions{}, "hexadecimal"},
		{"user id 1.0", "u.csv", []byte("user,x,y\n1,2,3\n1.0,4,5\n"), LoadOptions{Kind: data.Users}, `user id "1.0"`},
		{"user id 01", "u.csv", []byte("user,x,y\n1,2,3\n01,4,5\n"), LoadOptions{Kind: data.Users}, `user id "01"`},
		{"user id +1", "u.csv", []byte("user,x,y\n1,2,3\n+1,4,5\n"), LoadOptions{Kind: data.Users}, `user id "+1"`},
		{"user id -0", "u.csv", []byte("user,x,y\n0,2,3\n-0,4,5\n"), LoadOptions{Kind: data.Users}, `user id "-0"`},
		{"user id 1e0", "u.csv", []byte("user,x,y\nbob,2,3\n1e0,4,5\n"), LoadOptions{Kind: data.Users}, `user id "1e0"`},
		{"headerless users csv", "d.csv", []byte("0,0,12,255,3\n0,1,200,0,4\n"), LoadOptions{Kind: data.Users}, "needs its user id column named"},
		{"users csv without a user column", "d.csv", []byte("a,b,y\n0,12,3\n1,200,4\n"), LoadOptions{Kind: data.Users}, "needs its user id column named"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, dir, c.file, c.content)
			_, err := Load(p, c.opt)
			require.Error(t, err)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorContains(t, err, filepath.Base(p))
		})
	}
	// Canonical ids, text ids and an explicit column still work.
	for name, c := range map[string]struct {
		content string
		opt     LoadOptions
		users   int
	}{
		"canonical ints": {"user,x,y\n1,2,3\n-4,4,5\n1,6,7\n", LoadOptions{Kind: data.Users}, 2},
		"text ids":       {"user,x,y\nbob,2,3\nBob,4,5\nbob,6,7\n", LoadOptions{Kind: data.Users}, 2},
		"named column":   {"0,0,12,3\n0,1,200,4\n", LoadOptions{Kind: data.Users, UserColumn: "1"}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			ds, err := Load(writeTemp(t, dir, "ok.csv", []byte(c.content)), c.opt)
			require.NoError(t, err)
			assert.Equal(t, c.users, ds.NumUsers())
		})
	}
}

// TestCacheBounded: the cache evicts least recently used entries beyond
// its bound, refuses a data set larger than the bound, and lists and
// clears its entries. On 992c541 the cache grew without bound.
func TestCacheBounded(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	const n, p = 100, 10 // 8000 bytes of X per entry
	files := make([]string, 3)
	for i := range files {
		files[i] = writeTemp(t, dir, "d"+string(rune('a'+i))+".csv", csvOf(identityRows(n, p, uint64(10+i)), n, p, "", identityOrder(n)))
	}
	opt := LoadOptions{CacheMaxBytes: 20000} // room for two entries
	// Entries just used are spared: with the grace period, all three stay.
	graced := filepath.Join(t.TempDir(), "graced")
	for _, f := range files {
		_, err := PrepareFile(f, opt, graced)
		require.NoError(t, err)
	}
	entries, err := CacheList(graced)
	require.NoError(t, err)
	require.Len(t, entries, 3)
	old := evictGrace
	evictGrace = 0
	t.Cleanup(func() { evictGrace = old })
	var hs []Handle
	for _, f := range files {
		h, err := PrepareFile(f, opt, cache)
		require.NoError(t, err)
		hs = append(hs, h)
	}
	entries, err = CacheList(cache)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the least recently used entry was evicted")
	assert.Equal(t, hs[1].Hash, entries[0].Hash)
	assert.Equal(t, hs[2].Hash, entries[1].Hash)
	assert.Equal(t, int64(8000+len(mustRead(t, filepath.Join(cache, hs[2].Hash, fileHandle)))), entries[1].Bytes)
	assert.Equal(t, n, entries[1].N)
	_, _, err = Open(hs[0])
	assert.Error(t, err, "an evicted entry no longer opens")

	// Preparing the evicted file again works (its record is stale).
	h0, err := PrepareFile(files[0], opt, cache)
	require.NoError(t, err)
	ds, c, err := Open(h0)
	require.NoError(t, err)
	assert.Equal(t, n, ds.N())
	c.Close()

	// A data set that alone exceeds the bound is refused before writing.
	_, err = PrepareFile(files[0], LoadOptions{CacheMaxBytes: 4000, Scale: 2}, cache)
	assert.ErrorContains(t, err, "above its limit")

	freed, err := CacheClear(cache)
	require.NoError(t, err)
	assert.Greater(t, freed, int64(16000))
	entries, err = CacheList(cache)
	require.NoError(t, err)
	assert.Empty(t, entries)
	// Clear leaves unknown files alone.
	keep := writeTemp(t, cache, "notes.txt", []byte("mine"))
	_, err = CacheClear(cache)
	require.NoError(t, err)
	assert.FileExists(t, keep)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestGrowTo: buffers double, jump to the declared size once a eighth of
// it has arrived, and never exceed it.
func TestGrowTo(t *testing.T) {
	cases := []struct{ c, need, total, want int }{
		{64, 65, 1 << 20, 128},
		{64, 1000, 1 << 20, 1000},
		{100_000, 131_072, 1 << 20, 1 << 20},
		{1 << 19, 1<<19 + 1, 1 << 20, 1 << 20},
		{10, 11, 12, 12},
	}
	for _, c := range cases {
		got := growTo(c.c, c.need, c.total)
		assert.Equal(t, c.want, got, "%+v", c)
		assert.LessOrEqual(t, got, 8*c.need, "at most 8× what arrived")
	}
}
