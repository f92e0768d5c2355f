package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/cmd/dplr/cli"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
)

// The edit hook: when the test binary runs as `dplr-beam pass` with
// editEnv naming one of shardEdits, it counts the passes in the file
// editMark and, before pass editAt (default 1), applies the edit to the
// shards in editDir (the glob's directory), so that the data change
// between the description (or an earlier pass) and that pass, as a user
// could change them.
const (
	editEnv  = "DPLR_BEAM_TEST_EDIT"
	editDir  = "DPLR_BEAM_TEST_EDIT_DIR"
	editMark = "DPLR_BEAM_TEST_EDIT_MARK"
	editAt   = "DPLR_BEAM_TEST_EDIT_AT"
)

// shardEdits change the shards a.npy (100 rows) and b.npy (200 rows) of
// shards(t, 300, 6) in dir; shard names the one changed.
var shardEdits = []struct {
	name, shard string
	edit        func(dir string) error
}{
	{"modified", "a.npy", func(dir string) error { return overwriteLast(filepath.Join(dir, "a.npy"), false) }},
	{"modified, mtime restored", "a.npy", func(dir string) error { return overwriteLast(filepath.Join(dir, "a.npy"), true) }},
	{"replaced", "a.npy", func(dir string) error { return replace(filepath.Join(dir, "a.npy"), true) }},
	{"replaced by the same bytes", "a.npy", func(dir string) error { return replace(filepath.Join(dir, "a.npy"), false) }},
	{"grown by a row", "a.npy", func(dir string) error {
		a, err := dataio.Load(filepath.Join(dir, "a.npy"), dataio.LoadOptions{})
		if err != nil {
			return err
		}
		r, c := a.X.Dims()
		x := append(a.X.RawMatrix().Data[:r*c:r*c], make([]float64, c)...)
		return dataio.SaveNPYFloat64(filepath.Join(dir, "a.npy"), []int{r + 1, c}, x)
	}},
	{"touched", "a.npy", func(dir string) error {
		now := time.Now().Add(time.Second)
		return os.Chtimes(filepath.Join(dir, "a.npy"), now, now)
	}},
	{"added", "c.npy", func(dir string) error {
		return dataio.SaveNPYFloat64(filepath.Join(dir, "c.npy"), []int{1, 6}, make([]float64, 6))
	}},
	{"removed", "b.npy", func(dir string) error { return os.Remove(filepath.Join(dir, "b.npy")) }},
}

// overwriteLast writes the last value of the .npy file at path again as
// 100.0 (the size kept), putting its modification time back if restore.
func overwriteLast(path string, restore bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte{0, 0, 0, 0, 0, 0, 0x59, 0x40}, st.Size()-8)
	if err = errors.Join(err, f.Close()); err != nil || !restore {
		return err
	}
	return os.Chtimes(path, st.ModTime(), st.ModTime())
}

// replace puts a copy of the file at path in its place (renamed over it),
// with its last value changed if change.
func replace(path string, change bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if change {
		b[len(b)-1] ^= 0x40
	}
	if err := os.WriteFile(path+".new", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

// editBeforePass applies the edit editEnv names before the first pass
// (see editEnv).
func editBeforePass(args []string) error {
	name := os.Getenv(editEnv)
	if name == "" || len(args) == 0 || args[0] != "pass" {
		return nil
	}
	mark := os.Getenv(editMark)
	seen, _ := os.ReadFile(mark)
	if err := os.WriteFile(mark, append(seen, '.'), 0o644); err != nil {
		return err
	}
	if at := cmp.Or(os.Getenv(editAt), "1"); fmt.Sprint(len(seen)+1) != at {
		return nil
	}
	for _, e := range shardEdits {
		if e.name == name {
			if err := e.edit(os.Getenv(editDir)); err != nil {
				return fmt.Errorf("test edit %q: %w", name, err)
			}
			return nil
		}
	}
	return fmt.Errorf("test edit %q: unknown", name)
}

// TestFitRefusesChangedShards: a shard modified (even with its
// modification time put back), replaced (even by the same bytes), grown,
// touched, added or removed between `dplr-beam describe` and the fit's
// pass is refused with an error naming the shard, and the fit charges
// what a refused pass charges (the exit code and spend of a pass refused
// for another source identity: nothing released); the same fit on the
// unchanged shards runs and charges its ρ.
func TestFitRefusesChangedShards(t *testing.T) {
	plugins := buildPCA(t)
	fit := func(t *testing.T, edit, at string, set ...string) (code int, stderr string, spent float64) {
		glob, whole, _ := shards(t, 300, 6)
		_, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
		require.NoError(t, err)
		home := t.TempDir()
		code, _, stderr = dplr(t, "budget", "set", "--home", home, "--data", whole, "--rho", "2")
		require.Equal(t, 0, code, stderr)
		t.Setenv(editEnv, edit)
		t.Setenv(editDir, filepath.Dir(glob))
		t.Setenv(editMark, filepath.Join(t.TempDir(), "passes"))
		t.Setenv(editAt, at)
		args := []string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir(),
			"--home", home, "--plugin-dir", plugins, "--rho", "0.25", "--set", "rank=2", "--set", "center=none",
			"--seed", "5", "--json", "--quiet"}
		if len(set) == 0 {
			set = []string{"--set", "clip=3"}
		}
		code, _, stderr = dplr(t, append(args, set...)...)
		led, err := ledger.Open(context.Background(), home)
		require.NoError(t, err)
		defer led.Close()
		st, err := led.Show(context.Background(), id.Hash)
		require.NoError(t, err)
		return code, stderr, st.Spent.Rho
	}
	code, stderr, spent := fit(t, "", "")
	require.Equal(t, 0, code, stderr)
	assert.InDelta(t, 0.25, spent, 1e-12)
	// Before the one pass of a public clip (nothing released: refunded),
	// and, with clip=auto, between the norm histogram pass (whose quantile
	// is released) and the moment pass (the fit stays charged), as before.
	for _, when := range []struct {
		prefix, at string
		set        []string
		exit       int
		spent      float64
		refunded   bool
	}{
		{"", "", nil, refusedExit, refusedSpent, true},
		{"between passes/", "2", []string{"--set", "clip=auto"}, refusedLateExit, refusedLateSpent, false},
	} {
		for _, e := range shardEdits {
			t.Run(when.prefix+e.name, func(t *testing.T) {
				code, stderr, spent := fit(t, e.name, when.at, when.set...)
				tail := lastLines(stderr, 3)
				t.Logf("exit %d, spent %g\n%s", code, spent, tail)
				assert.Equal(t, when.exit, code, tail)
				assert.InDelta(t, when.spent, spent, 1e-12, "a refused pass charges what it charged before")
				assert.Contains(t, tail, e.shard, "the error names the shard")
				assert.Contains(t, tail, "changed")
				if when.refunded {
					assert.Contains(t, tail, "refunded: no privacy step was taken")
				}
			})
		}
	}
}

// refusedExit and refusedSpent are the exit code and the ρ spent of a
// fit whose one pass is refused because the data changed after the
// description, measured on main 4a976c3 (where the pass re-took the
// source identity) with a shard modified, grown, added or removed: exit 5
// (data), the reservation refunded, as no privacy step was taken.
const (
	refusedExit  = cli.ExitData
	refusedSpent = 0.0
)

// refusedLateExit and refusedLateSpent are those of a clip=auto fit whose
// second pass is refused (a shard modified, grown, added or removed after
// the first pass), measured on main 4a976c3: exit 6 (estimator), the
// full grant charged (noise may have been drawn).
const (
	refusedLateExit  = cli.ExitEstimator
	refusedLateSpent = 0.25
)

func lastLines(s string, k int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-k):], "\n")
}
