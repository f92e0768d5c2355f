package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// A plugin's catalogue is cached by the executable's identity: a second
// Start reads it without starting a process, a check then starts one;
// an edited executable, or one started with another environment, is read
// again; a cached entry the plugin no
// longer answers is refused at the check and removed.
func TestCatalogueCache(t *testing.T) {
	src := filepath.Join(buildPlugins(t), "dplr-example")
	dir := t.TempDir()
	exe := filepath.Join(dir, "dplr-example")
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, b, 0o755))
	opt := Options{CatalogueDir: filepath.Join(dir, "catalogues")}
	ctx := context.Background()

	first, err := Start(ctx, exe, opt)
	require.NoError(t, err)
	first.Close()
	key, ok := catalogueKey(exe)
	require.True(t, ok)
	require.FileExists(t, filepath.Join(opt.CatalogueDir, key+".json"))

	p, err := Start(ctx, exe, opt)
	require.NoError(t, err)
	assert.Nil(t, p.proc, "no process for a cached catalogue")
	assert.True(t, sameCatalogue(first.Catalogue, p.Catalogue))
	call := fitReq("example-mean")
	call.Params = map[string]string{"clip": "1"}
	call.Data = dataio.Handle{Kind: data.Rows, Hash: "h", N: 100, P: 5}
	_, err = p.Check(ctx, call, 0)
	require.NoError(t, err)
	assert.NotNil(t, p.proc, "the check started the process")
	p.Close()

	// An edited executable has another identity.
	require.NoError(t, os.Chtimes(exe, time.Now(), time.Now().Add(time.Hour)))
	key2, ok := catalogueKey(exe)
	require.True(t, ok)
	assert.NotEqual(t, key, key2)
	// So does another environment for the plugin.
	t.Setenv("DPLR_CATALOGUE_TEST", "1")
	key3, ok := catalogueKey(exe)
	require.True(t, ok)
	assert.NotEqual(t, key2, key3)
	require.NoError(t, os.Unsetenv("DPLR_CATALOGUE_TEST"))

	// A cached entry the plugin does not answer is refused and removed.
	stale := first.Catalogue
	stale.Version = "0.0.0-stale"
	keepCatalogue(opt.CatalogueDir, exe, stale)
	p, err = Start(ctx, exe, opt)
	require.NoError(t, err)
	defer p.Close()
	assert.Equal(t, "0.0.0-stale", p.Version())
	_, err = p.Check(ctx, call, 0)
	require.ErrorIs(t, err, ErrPlugin)
	assert.Contains(t, err.Error(), "changed since its catalogue was read")
	assert.NoFileExists(t, filepath.Join(opt.CatalogueDir, key2+".json"))
}

// TestPrune: past the bound, a cache directory loses the entries used
// longest ago; an entry read is marked used and stays; files that are not
// entries are left alone.
func TestPrune(t *testing.T) {
	old := time.Now().Add(-2 * time.Hour) // older than markEvery: a read renews the mark
	for _, tc := range []struct {
		name    string
		entries int
		read    string // an entry read (marked used) before the new one is kept
		max     int
		gone    []string
	}{
		{name: "under the bound", entries: 3, max: 5},
		{name: "the oldest go", entries: 5, max: 3, gone: []string{"e0", "e1", "e2"}},
		{name: "a read entry stays", entries: 5, read: "e0", max: 3, gone: []string{"e1", "e2", "e3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := range tc.entries {
				name := filepath.Join(dir, fmt.Sprintf("e%d.json", i))
				require.NoError(t, os.WriteFile(name, []byte(`{"x":1}`), 0o600))
				at := old.Add(time.Duration(i) * time.Minute) // e0 oldest
				require.NoError(t, os.Chtimes(name, at, at))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "note.txt"), nil, 0o600))
			if tc.read != "" {
				var v map[string]int
				require.True(t, readKept(dir, tc.read, &v))
			}
			defer func(m int) { maxKept = m }(maxKept)
			maxKept = tc.max
			keep(dir, "new", map[string]int{"x": 2})
			for i := range tc.entries {
				name := fmt.Sprintf("e%d", i)
				_, err := os.Stat(filepath.Join(dir, name+".json"))
				assert.Equal(t, slices.Contains(tc.gone, name), os.IsNotExist(err), name)
			}
			assert.FileExists(t, filepath.Join(dir, "new.json"), "the entry just kept is the newest")
			assert.FileExists(t, filepath.Join(dir, "note.txt"), "not an entry")
		})
	}
}
