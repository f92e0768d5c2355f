package host

import (
	"context"
	"os"
	"path/filepath"
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
