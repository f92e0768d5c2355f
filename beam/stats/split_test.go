package stats

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// TestSplitRanges: a .npy shard read in ranges of rows (beside a CSV
// shard read whole) gives, in one pipeline, the pass result of the one
// file and the description Describe gives, whose source identity is the
// single-machine reader's; a NaN in a later range fails with the reader's
// message naming the shard.
func TestSplitRanges(t *testing.T) {
	const n, p = 2500, 7
	x := synth(n, p, 5)
	dir := t.TempDir()
	whole := writeShards(t, dir, x, p, []int{2000, 500}, true)
	glob := filepath.Join(dir, "shard-*")
	paths, err := Expand(context.Background(), glob)
	require.NoError(t, err)
	splits := splitShards(paths, data.Rows, ReadOptions{})
	assert.Greater(t, len(splits), 4, "the .npy shard is read in ranges")
	ds, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	shape := pass.ShapeOf(ds)
	req := pass.RowsMomentKind.EncodeRequest(shape, pass.MomentRequest{Clip: 2})
	want, err := pass.Local(ds).Pass(context.Background(), req)
	require.NoError(t, err)
	got, desc, err := DescribedPass(context.Background(), glob, shape, ReadOptions{}, req, 0, 0, Options{})
	require.NoError(t, err)
	for k, w := range want.Outputs {
		assert.Less(t, maxRel(got.Outputs[k].Data, w.Data), 1e-12, w.Name)
	}
	described, err := Describe(context.Background(), glob, data.Rows, 0, 0, Options{})
	require.NoError(t, err)
	assert.Equal(t, described, desc)
	assert.Equal(t, id, desc.Identity.Identity())
	assert.Equal(t, 2, desc.Shards)

	x[1500*p+2] = math.NaN()
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "shard-a.npy"), []int{2000, p}, x[:2000*p]))
	for _, run := range []func() error{
		func() error { _, err := Describe(context.Background(), glob, data.Rows, 0, 0, Options{}); return err },
		func() error {
			_, err := RunPass(context.Background(), glob, shape, ReadOptions{}, req, Options{})
			return err
		},
	} {
		err := run()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "shard-a.npy: row 1500, column 2: value NaN is not finite")
	}
}
