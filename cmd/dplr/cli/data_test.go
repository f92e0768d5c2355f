package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
)

// mainRun runs the command line without plugins.
func mainRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestDataCache: `dplr cache list` shows what preparing data put in the
// cache, `dplr cache clear` removes it, and DPLR_CACHE_MAX_BYTES bounds it.
func TestDataCache(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	var paths []string
	for i, content := range []string{"1,2\n3,4\n5,6\n", "7,8\n9,10\n11,12\n"} {
		p := filepath.Join(dir, []string{"a.csv", "b.csv"}[i])
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		paths = append(paths, p)
	}
	code, out, _ := mainRun("cache", "list", "--home", home)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "empty")

	t.Setenv(client.CacheMaxEnv, "100") // room for one entry (48 bytes of X + handle.json > 100)
	for _, p := range paths {
		df := dataFlags{path: p}
		l, err := df.locate(data.Rows)
		require.NoError(t, err)
		h, err := prepare(l, home)
		require.NoError(t, err)
		require.NotNil(t, h.Source)
		require.NotNil(t, h.View)
		// Entries used in the last minutes are spared; age this one.
		old := time.Now().Add(-time.Hour)
		require.NoError(t, os.Chtimes(filepath.Dir(h.X.Path), old, old))
	}
	code, out, errs := mainRun("cache", "list", "--home", home, "--json")
	require.Equal(t, ExitOK, code, errs)
	assert.Equal(t, 1, bytes.Count([]byte(out), []byte(`"hash"`)), "the bound evicted the older entry: %s", out)
	code, out, _ = mainRun("cache", "list", "--home", home)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "b.csv")
	assert.Contains(t, out, "1 entry")

	code, out, _ = mainRun("cache", "clear", "--home", home)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "freed")
	code, out, _ = mainRun("cache", "list", "--home", home)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "empty")

	code, _, _ = mainRun("cache", "frobnicate")
	assert.Equal(t, ExitUsage, code)
	code, _, _ = mainRun("cache", "list", "extra", "--home", home)
	assert.Equal(t, ExitUsage, code)
}

// TestDataRefusals: the data flags refuse what cannot be read safely, with
// the data exit code (nothing is spent): users data from a headerless CSV
// without --user-column (on 992c541 a pixel column became the user id),
// data above --max-data-bytes, and a bad size.
func TestDataRefusals(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	digits := filepath.Join(dir, "digits.csv")
	require.NoError(t, os.WriteFile(digits, []byte("0,0,12,255,3\n0,1,200,0,4\n0,0,7,1,2\n"), 0o644))
	cases := []struct {
		name string
		df   dataFlags
		kind data.Kind
		code int
		want string
	}{
		{"headerless users csv", dataFlags{path: digits}, data.Users, ExitData, "needs its user id column named"},
		{"above the memory limit", dataFlags{path: digits, maxBytes: "16"}, data.Rows, ExitData, "more than 16 B in memory"},
		{"bad size", dataFlags{path: digits, maxBytes: "lots"}, data.Rows, ExitUsage, "--max-data-bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := c.df.locate(c.kind)
			if err == nil {
				_, err = prepare(l, home)
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, c.want)
			assert.Equal(t, c.code, exitCode(err))
		})
	}
	// Named, the same file is users data.
	df := dataFlags{path: digits, userCol: "1"}
	l, err := df.locate(data.Users)
	require.NoError(t, err)
	h, err := prepare(l, home)
	require.NoError(t, err)
	assert.Equal(t, 3, h.N)
}

// prepare validates, hashes and (if needed) converts the located data set
// into home's cache (client.Located.Prepare).
func prepare(l *loaded, home string) (client.Handle, error) {
	return (&client.Located{Path: l.path, Options: l.opt}).Prepare(context.Background(), home)
}
