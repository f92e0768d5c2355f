package stats

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// TestStatePass: Describe records the state of .npy shards read in
// ranges (none for a glob with a CSV shard); StatePass with those states
// gives RunPass's result, and refuses, naming the shard and wrapping
// dataio.ErrFileChanged, shards changed after the description: before
// the pipeline starts, and while it runs (the splits' headers read
// before the change, as when a shard changes after the pass's checks).
func TestStatePass(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("states are trusted on Linux")
	}
	const n, p = 2500, 7
	ctx := context.Background()
	req := pass.RowsMomentKind.EncodeRequest(&data.Remote{N: n, P: p}, pass.MomentRequest{Clip: 2})
	setup := func(t *testing.T, mixed bool) (string, *Description) {
		dir := t.TempDir()
		writeShards(t, dir, synth(n, p, 5), p, []int{2000, 500}, mixed)
		glob := filepath.Join(dir, "shard-*")
		desc, err := Describe(ctx, glob, data.Rows, 0, 0, Options{})
		require.NoError(t, err)
		return glob, desc
	}
	t.Run("mixed shards record no state", func(t *testing.T) {
		_, desc := setup(t, true)
		assert.Nil(t, desc.Files)
	})
	glob, desc := setup(t, false)
	require.Len(t, desc.Files, 2)
	want, err := RunPass(ctx, glob, desc.Remote(), ReadOptions{}, req, Options{})
	require.NoError(t, err)
	got, err := StatePass(ctx, glob, desc.Remote(), ReadOptions{}, req, desc.Files, Options{})
	require.NoError(t, err)
	assert.Equal(t, want, got)

	for _, tc := range []struct {
		name, shard string
		edit        func(t *testing.T, path string)
	}{
		{"touched", "shard-a.npy", func(t *testing.T, path string) {
			now := time.Now().Add(time.Second)
			require.NoError(t, os.Chtimes(path, now, now))
		}},
		{"rewritten with the same bytes", "shard-a.npy", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o644))
		}},
		{"added", "shard-c.npy", func(t *testing.T, path string) {
			require.NoError(t, dataio.SaveNPYFloat64(path, []int{1, p}, make([]float64, p)))
		}},
		{"removed", "shard-b.npy", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			glob, desc := setup(t, false)
			path := filepath.Join(filepath.Dir(glob), tc.shard)
			tc.edit(t, path)
			_, err := StatePass(ctx, glob, desc.Remote(), ReadOptions{}, req, desc.Files, Options{})
			assert.ErrorIs(t, err, dataio.ErrFileChanged)
			assert.ErrorContains(t, err, path)
		})
	}

	// Changed after the pass's checks, while its pipeline reads: each
	// range is read only from the file in the recorded state.
	glob, desc = setup(t, false)
	paths, err := Expand(ctx, glob)
	require.NoError(t, err)
	splits := splitShards(paths, data.Rows, ReadOptions{})
	require.NoError(t, checkStates(paths, splits, desc.Files))
	a := filepath.Join(filepath.Dir(glob), "shard-a.npy")
	now := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(a, now, now))
	_, _, err = shardPass(ctx, splits, desc.Remote(), ReadOptions{}, req, false, Options{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "shard-a.npy: "+dataio.ErrFileChanged.Error())
	_, err = StatePass(ctx, glob, desc.Remote(), ReadOptions{}, req, desc.Files, Options{})
	assert.ErrorIs(t, err, dataio.ErrFileChanged)
}
