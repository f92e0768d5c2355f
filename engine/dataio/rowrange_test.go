package dataio

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadRange checks that the ranges of a splittable file, read in any
// order, give Load's rows and merge into LoadIdentityParts' identity, and
// that files Load must read whole are not split.
func TestReadRange(t *testing.T) {
	dir := t.TempDir()
	n, p := 1000, 3
	x := seq(n*p, 0.37, -5)
	pix := make([]byte, n*p)
	for i := range pix {
		pix[i] = byte(i * 7)
	}
	f8 := filepath.Join(dir, "x.npy")
	require.NoError(t, SaveNPYFloat64(f8, []int{n, p}, x))
	files := map[string]string{
		"npy f8":  f8,
		"npy >f4": writeTemp(t, dir, "x4.npy", npyFile(1, ">f4", false, []int{n, p}, encode(binary.BigEndian, f32s(x)))),
		"idx u8":  writeTemp(t, dir, "img-idx3-ubyte", idxFile(0x08, []int{n, p}, pix)),
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			ds, want, err := LoadIdentityParts(path, LoadOptions{})
			require.NoError(t, err)
			f, ok, err := SplitRows(path, LoadOptions{})
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, [2]int{n, p}, [2]int{f.N, f.P})
			got := make([]float64, n*p)
			var id IdentityParts
			for _, r := range [][2]int{{700, n}, {0, 1}, {1, 700}} {
				var part IdentityParts
				require.NoError(t, f.ReadRange(context.Background(), r[0], r[1], &part, got[r[0]*p:r[1]*p]))
				id.Merge(part)
			}
			assert.Equal(t, ds.X.RawMatrix().Data, got)
			assert.Equal(t, want.Identity(), id.Identity())
		})
	}
	gzipped := writeTemp(t, dir, "x.npy.gz", gz(npyFile(1, "<f8", false, []int{2, 2}, encode(binary.LittleEndian, []float64{1, 2, 3, 4}))))
	fortran := writeTemp(t, dir, "f.npy", npyFile(1, "<f8", true, []int{2, 2}, encode(binary.LittleEndian, []float64{1, 2, 3, 4})))
	trailing := writeTemp(t, dir, "t.npy", append(npyFile(1, "<f8", false, []int{2, 2}, encode(binary.LittleEndian, []float64{1, 2, 3, 4})), 0))
	for _, path := range []string{gzipped, fortran, trailing} {
		_, ok, err := SplitRows(path, LoadOptions{})
		require.NoError(t, err)
		assert.False(t, ok, path)
	}
	_, ok, err := SplitRows(f8, LoadOptions{Kind: "users"})
	require.NoError(t, err)
	assert.False(t, ok)

	// A non-finite value fails with Load's message, wherever the range starts.
	bad := append([]float64(nil), x...)
	bad[500*p+1] = math.NaN()
	nan := filepath.Join(dir, "nan.npy")
	require.NoError(t, SaveNPYFloat64(nan, []int{n, p}, bad))
	_, lerr := Load(nan, LoadOptions{})
	require.Error(t, lerr)
	f, ok, err := SplitRows(nan, LoadOptions{})
	require.NoError(t, err)
	require.True(t, ok)
	err = f.ReadRange(context.Background(), 400, 600, nil, make([]float64, 200*p))
	require.Error(t, err)
	assert.Equal(t, lerr.Error(), err.Error())
}
