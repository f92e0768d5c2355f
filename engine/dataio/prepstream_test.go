package dataio

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadThenPrepare is the preparation PrepareFile did before the streamed
// path: read the whole file with the plain decoder (with its source
// identity), then Prepare.
func loadThenPrepare(t *testing.T, path string, opt LoadOptions, cache string) Handle {
	t.Helper()
	ids := &idSink{want: true, hash: true}
	ds, err := loadWhole(path, opt, ids)
	require.NoError(t, err)
	ds.Name = opt.Name
	if ds.Name == "" {
		ds.Name = filepath.Base(path)
	}
	id := ids.b.finish()
	h, err := prepare(ds, cache, &id)
	require.NoError(t, err)
	h.View = opt.view()
	return h
}

// TestPrepareStreamedMatchesLoad: the streamed preparation gives the
// handle, content hash, source identity and cache file bytes that loading
// then preparing gives, for every array type it takes, scaled or not, with
// labels or not, plain or gzip, and block boundaries inside or between
// rows.
func TestPrepareStreamedMatchesLoad(t *testing.T) {
	dir := t.TempDir()
	const n, p = 700, 13 // 700 rows: several blocks for every type
	u8 := make([]byte, n*p)
	for i := range u8 {
		u8[i] = byte((i*37 + i/p) % 251)
	}
	vals := seq(n*p, 0.37, -1000)
	for i := range vals {
		if i%7 == 0 {
			vals[i] = 0 // zeros, and a -0 below
		}
	}
	vals[5] = math.Copysign(0, -1)
	labels := make([]byte, n)
	for i := range labels {
		labels[i] = byte(i % 10)
	}
	labelsPath := writeTemp(t, dir, "labels.idx", idxFile(0x08, []int{n}, labels))
	cases := []struct {
		name    string
		content []byte
	}{
		{"u8.idx.gz", gz(idxFile(0x08, []int{n, p}, u8))},
		{"u8-3d.idx", idxFile(0x08, []int{n, 1, p}, u8)},
		{"i16be.idx", idxFile(0x0B, []int{n, p}, encode(binary.BigEndian, func() []int16 {
			v := make([]int16, n*p)
			for i := range v {
				v[i] = int16(i%3000 - 1500)
			}
			return v
		}()))},
		{"f4be.idx.gz", gz(idxFile(0x0D, []int{n, p}, encode(binary.BigEndian, f32s(vals))))},
		{"f8be.idx", idxFile(0x0E, []int{n, p}, encode(binary.BigEndian, vals))},
		{"f8.npy", npyFile(1, "<f8", false, []int{n, p}, encode(binary.LittleEndian, vals))},
		{"f4.npy.gz", gz(npyFile(1, "<f4", false, []int{n, p}, encode(binary.LittleEndian, f32s(vals))))},
		{"u8.npy", npyFile(1, "|u1", false, []int{n, p}, u8)},
		{"vector.npy", npyFile(1, "<f8", false, []int{n * p}, encode(binary.LittleEndian, vals))},
	}
	for _, c := range cases {
		path := writeTemp(t, dir, c.name, c.content)
		for _, opt := range []LoadOptions{{}, {Scale: 1.0 / 255}, {Scale: 3, LabelsPath: labelsPath}, {Name: "named"}} {
			if c.name == "vector.npy" && opt.LabelsPath != "" {
				continue // one row per value: the labels do not fit
			}
			t.Run(c.name, func(t *testing.T) {
				want := loadThenPrepare(t, path, opt, filepath.Join(dir, "old"))
				cache := t.TempDir()
				got, ok, err := prepareStreamed(context.Background(), path, opt, cache)
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, want.Hash, got.Hash)
				assert.Equal(t, want.Source, got.Source)
				assert.Equal(t, want.View, got.View)
				assert.Equal(t, want.Name, got.Name)
				assert.Equal(t, [2]int{want.N, want.P}, [2]int{got.N, got.P})
				assert.Equal(t, want.Labels != nil, got.Labels != nil)
				ds, closer, err := Open(got)
				require.NoError(t, err)
				defer closer.Close()
				wds, wcloser, err := Open(want)
				require.NoError(t, err)
				defer wcloser.Close()
				assert.Equal(t, f64bits(wds.X.RawMatrix().Data), f64bits(ds.WithDenseX().X.RawMatrix().Data), "the same values, bit for bit, in the cache or in place")
				if strings.HasPrefix(c.name, "u8") {
					// Bytes stay bytes, with their scale: in place when
					// uncompressed, else a cache file of n·p bytes.
					assert.Equal(t, DTypeUint8, got.X.DType)
					assert.Equal(t, int64(n*p), got.X.Count)
					assert.Equal(t, !strings.HasSuffix(c.name, ".gz"), got.X.Path == path)
					if st, err := os.Stat(got.X.Path); assert.NoError(t, err) && strings.HasSuffix(c.name, ".gz") {
						assert.Equal(t, int64(n*p), st.Size())
					}
				}
				if opt.Scale == 0 {
					assert.Equal(t, ds.Hash, Hash(ds), "an unscaled array source is its own source")
				}
				// Nothing but the entry is left in the cache.
				left, err := filepath.Glob(filepath.Join(cache, ".x-*"))
				require.NoError(t, err)
				assert.Empty(t, left)
			})
		}
	}
}

// TestPrepareStreamedErrors: a truncated stream, trailing bytes, a
// non-finite value (before or after scaling) and a cancelled context fail
// and leave no temporary file.
func TestPrepareStreamedErrors(t *testing.T) {
	dir := t.TempDir()
	const n, p = 300, 50
	vals := seq(n*p, 1, 0)
	full := idxFile(0x0E, []int{n, p}, encode(binary.BigEndian, vals))
	bad := append([]float64(nil), vals...)
	bad[250*p+3] = math.Inf(1)
	huge := append([]float64(nil), vals...)
	huge[10] = math.MaxFloat64
	cases := []struct {
		name, file string
		content    []byte
		opt        LoadOptions
		ctx        func() context.Context
		msg        string
	}{
		{"truncated", "t.idx.gz", gz(full[:len(full)-100]), LoadOptions{}, nil, "truncated"},
		{"trailing", "x.idx.gz", gz(append(append([]byte(nil), full...), 1, 2, 3)), LoadOptions{}, nil, "trailing"},
		{"infinite", "i.idx", idxFile(0x0E, []int{n, p}, encode(binary.BigEndian, bad)), LoadOptions{}, nil, "row 250, column 3"},
		{"overflow", "o.idx", idxFile(0x0E, []int{n, p}, encode(binary.BigEndian, huge)), LoadOptions{Scale: 10}, nil, "after scaling"},
		{"bytes overflow", "b.idx.gz", gz(idxFile(0x08, []int{2, 2}, []byte{0, 1, 200, 3})), LoadOptions{Scale: 1e307}, nil, "not finite after scaling by 1e+307"},
		{"cancelled", "c.idx", full, LoadOptions{}, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, "canceled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, dir, c.file, c.content)
			cache := t.TempDir()
			ctx := context.Background()
			if c.ctx != nil {
				ctx = c.ctx()
			}
			_, _, err := prepareStreamed(ctx, path, c.opt, cache)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.msg)
			left, err := os.ReadDir(cache)
			require.NoError(t, err)
			assert.Empty(t, left)
		})
	}
}

// TestPrepareStreamedFashionMNIST: on the Fashion-MNIST test images the
// streamed preparation (through PrepareFile) gives the identity and
// content hash of loading them.
func TestPrepareStreamedFashionMNIST(t *testing.T) {
	const path = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("dataset-fashion-mnist not installed: %v", err)
	}
	opt := LoadOptions{Scale: 1.0 / 255}
	ds, id, err := LoadIdentity(path, opt)
	require.NoError(t, err)
	h, err := PrepareFile(path, opt, t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, ds.Hash, h.Hash)
	assert.Equal(t, id, *h.Source)
}

// TestByteRowMatchesRow: the byte-row shortcut gives the identity the
// general row gives, with and without side columns, for rows of every
// scale (zero rows included).
func TestByteRowMatchesRow(t *testing.T) {
	const n, p = 600, 31
	raw := make([]byte, n*p)
	for i := range raw {
		raw[i] = byte((i * 7919) % 256)
	}
	for r := 0; r < n; r++ {
		for j := 0; j < p; j++ {
			raw[r*p+j] = byte(int(raw[r*p+j]) % (r%256 + 1)) // every row scale 0..255
		}
	}
	x := make([]float64, len(raw))
	for i, v := range raw {
		x[i] = float64(v)
	}
	labels := make([]int64, n)
	for i := range labels {
		labels[i] = int64(i % 7)
	}
	for _, sides := range [][]sideCol{nil, {{i: labels}}} {
		a, b := newIDBuilder(sides...), newIDBuilder(sides...)
		var rnd byteRounding
		for r := 0; r < n; r++ {
			a.row(r, x[r*p:(r+1)*p], nil)
			b.byteRow(r, raw[r*p:(r+1)*p], x[r*p:(r+1)*p], &rnd)
		}
		assert.Equal(t, a.finish(), b.finish())
	}
}

// f64bits returns the bit patterns of v, to compare values exactly (-0, NaN).
func f64bits(v []float64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = math.Float64bits(x)
	}
	return out
}
