package dataio

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cached array edited after it was prepared (same size, even with its
// modification time put back) is never used under the original hash: the
// handle prepared before the edit no longer opens, and preparing the
// source again rewrites the entry from the source.
func TestEditedCacheIsNotTrusted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("stamps read the change time on Linux")
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	src := writeTemp(t, dir, "t.csv", []byte("1,2\n3,4\n5,6\n"))
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, path string)
	}{
		{"bytes overwritten", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{0, 0, 0, 0, 0, 0, 0x59, 0x40}, 0) // 100.0
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"bytes overwritten, mtime restored", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			require.NoError(t, err)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{0, 0, 0, 0, 0, 0, 0x59, 0x40}, 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
		}},
		{"file replaced", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[6], b[7] = 0x59, 0x40
			tmp := path + ".new"
			require.NoError(t, os.WriteFile(tmp, b, 0o644))
			require.NoError(t, os.Rename(tmp, path))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := PrepareFile(src, LoadOptions{}, cache)
			require.NoError(t, err)
			tc.edit(t, h.X.Path)
			_, _, err = Open(h)
			assert.ErrorContains(t, err, "changed or replaced after it was prepared")
			again, err := PrepareFile(src, LoadOptions{}, cache)
			require.NoError(t, err)
			assert.Equal(t, h.Hash, again.Hash)
			ds, closer, err := Open(again)
			require.NoError(t, err)
			assert.Equal(t, 1.0, ds.X.At(0, 0), "the entry was rewritten from the source")
			require.NoError(t, closer.Close())
		})
	}
}
