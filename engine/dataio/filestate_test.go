package dataio

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateEdits change a file without changing its size, as a user
// could between two reads: each leaves a state other than the one
// recorded before it (a touch too, and a replacement by the same bytes).
var stateEdits = []struct {
	name string
	edit func(t *testing.T, path string)
}{
	{"bytes overwritten", func(t *testing.T, path string) { overwrite(t, path) }},
	{"bytes overwritten, mtime restored", func(t *testing.T, path string) {
		st, err := os.Stat(path)
		require.NoError(t, err)
		overwrite(t, path)
		require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
	}},
	{"replaced by the same bytes", func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path+".new", b, 0o644))
		require.NoError(t, os.Rename(path+".new", path))
	}},
	{"touched", func(t *testing.T, path string) {
		now := time.Now().Add(time.Second)
		require.NoError(t, os.Chtimes(path, now, now))
	}},
	{"mode changed", func(t *testing.T, path string) { require.NoError(t, os.Chmod(path, 0o600)) }},
	{"grown and cut back", func(t *testing.T, path string) {
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, st.Size()+8))
		require.NoError(t, os.Truncate(path, st.Size()))
	}},
}

// overwrite writes the last 8 bytes of the file at path again with other
// bytes (the last value of an array, 100.0).
func overwrite(t *testing.T, path string) {
	st, err := os.Stat(path)
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0, 0, 0, 0, 0, 0, 0x59, 0x40}, st.Size()-8)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestFileState: a file's state names one content: every change, even
// one that keeps the size, the bytes or the modification time, gives
// another state; a range of a file whose state changed after its header
// was read is refused, before or after it is read.
func TestFileState(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("states are trusted on Linux (the change time)")
	}
	const n, p = 40, 3
	for _, tc := range stateEdits {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.npy")
			require.NoError(t, SaveNPYFloat64(path, []int{n, p}, seq(n*p, 0.5, 1)))
			st, err := os.Stat(path)
			require.NoError(t, err)
			before := StateOf(path, st)
			require.True(t, before.Trusted())
			f, ok, err := SplitRows(path, LoadOptions{})
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, before, f.State, "the header's descriptor is in the file's state")
			x := make([]float64, n*p)
			require.NoError(t, f.ReadRange(context.Background(), 0, n, nil, x))

			tc.edit(t, path)
			st, err = os.Stat(path)
			require.NoError(t, err)
			assert.NotEqual(t, before, StateOf(path, st))
			err = f.ReadRange(context.Background(), 0, n, nil, x)
			assert.ErrorIs(t, err, ErrFileChanged)
			assert.ErrorContains(t, err, path)
		})
	}
	t.Run("not regular", func(t *testing.T) {
		st, err := os.Stat(t.TempDir())
		require.NoError(t, err)
		assert.False(t, StateOf("d", st).Trusted())
	})
}

// TestSettleWait: a state is trusted for a read that starts more than one
// tick of the file system's clock after its change time.
func TestSettleWait(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		changed time.Time
		want    time.Duration
	}{
		{"old", now.Add(-time.Hour), 0},
		{"just now, fine clock", now.Add(-30 * time.Millisecond).Add(time.Nanosecond), 70*time.Millisecond + time.Nanosecond},
		{"just now, whole seconds", now, 2 * time.Second},
		{"a tick ago", now.Add(-100 * time.Millisecond), 0},
	} {
		s := FileState{Stamp: "x", Changed: tc.changed.UnixNano()}
		assert.Equal(t, tc.want, s.SettleWait(now), tc.name)
	}
	assert.Zero(t, FileState{Changed: now.UnixNano()}.SettleWait(now), "not trusted: nothing to wait for")
}
