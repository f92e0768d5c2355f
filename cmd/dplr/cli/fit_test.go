package cli

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/ledger"
)

// TestFitRefusesBeforeReserving: absurd budgets, parameters, timeouts,
// unusable output locations and homes, pre-flight refusals and memory
// footprints are usage errors (exit 2) with nothing reserved.
func TestFitRefusesBeforeReserving(t *testing.T) {
	data := genSpiked(t)
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	budget := []string{"--epsilon", "1", "--delta", "1e-6"}
	cases := []struct {
		name, mode string
		args       []string
		want       string
	}{
		{"ε = 1e308", "", []string{"example-mean", "--epsilon", "1e308", "--delta", "1e-6"}, "usable range"},
		{"ε = 1e-300", "", []string{"example-mean", "--epsilon", "1e-300", "--delta", "1e-6"}, "usable range"},
		{"ρ = 1e300", "", []string{"example-mean", "--rho", "1e300"}, "usable range"},
		{"clip = 1e-300", "", append([]string{"example-mean", "--set", "clip=1e-300"}, budget...), "clip = 1e-300 is outside the range"},
		{"clip = 1e300", "", append([]string{"example-mean", "--set", "clip=1e300"}, budget...), "clip = 1e+300 is outside the range"},
		{"negative timeout", "", append([]string{"example-mean", "--timeout", "-1s"}, budget...), "--timeout -1s is negative"},
		{"--out is a file", "", append([]string{"example-mean", "--out", file}, budget...), "--out"},
		{"--out under a file", "", append([]string{"example-mean", "--out", filepath.Join(file, "sub")}, budget...), "--out"},
		{"pre-flight refusal", "check-refuse", append([]string{"bad-check-refuse"}, budget...), "no representable noise scale"},
		{"footprint above --max-memory", "footprint", append([]string{"bad-footprint", "--max-memory", "1GiB"}, budget...), "--max-memory"},
		{"unreadable --max-memory", "", append([]string{"example-mean", "--max-memory", "lots"}, budget...), "not a memory size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("DPLR_BAD_MODE", tc.mode)
			args := append([]string{"fit"}, tc.args...)
			args = append(args, "--data", data, "--quiet")
			r := dplr(t, home, args...)
			assert.Equal(t, ExitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Empty(t, history(t, home, data), "nothing was reserved")
		})
	}
	t.Run("a dplr home that is a file", func(t *testing.T) {
		r := dplr(t, file, append([]string{"fit", "example-mean", "--data", data, "--quiet"}, budget...)...)
		assert.Equal(t, ExitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "is not a directory")
		r = dplr(t, file, "budget", "show", "--data", data)
		assert.Equal(t, ExitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "is not a directory")
	})
}

// TestFitRefusesHostilePlugins: through the command line, each hostile
// plugin is a plugin failure (exit 4), nothing is written, and the ledger
// charges the full grant; a well-behaved one is charged its verified cost.
func TestFitRefusesHostilePlugins(t *testing.T) {
	data := genSpiked(t)
	for _, mode := range []string{"tenfold", "none-public", "rho-mismatch", "swap-steps"} {
		t.Run(mode, func(t *testing.T) {
			home, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
			t.Setenv("DPLR_BAD_MODE", mode)
			r := dplr(t, home, "fit", "bad-"+mode, "--data", data, "--rho", "0.5", "--quiet", "--out", out)
			assert.Equal(t, ExitPlugin, r.code, r.stderr)
			assert.Contains(t, r.stderr, "charged its full grant")
			assert.NoFileExists(t, filepath.Join(out, "result.json"))
			runs := history(t, home, data)
			require.Len(t, runs, 1)
			assert.Equal(t, map[string]any{"rho": 0.5}, withoutMu(runs[0]["charge"]))
		})
	}
	t.Run("tiny-epsilon", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("DPLR_BAD_MODE", "tiny-epsilon")
		r := dplr(t, home, "fit", "bad-tiny-epsilon", "--data", data, "--epsilon", "1", "--quiet", "--out", t.TempDir())
		assert.Equal(t, ExitPlugin, r.code, r.stderr)
		runs := history(t, home, data)
		require.Len(t, runs, 1)
		assert.Equal(t, map[string]any{"epsilon": 1.0, "rho": 0.5}, withoutMu(runs[0]["charge"]), "charged the grant, not the 1e-6 it announced")
	})
	t.Run("ok is charged its verified steps", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("DPLR_BAD_MODE", "ok")
		r := dplr(t, home, "fit", "bad-ok", "--data", data, "--rho", "0.5", "--quiet", "--out", t.TempDir())
		require.Equal(t, ExitOK, r.code, r.stderr)
		runs := history(t, home, data)
		require.Len(t, runs, 1)
		assert.Equal(t, map[string]any{"rho": 0.01}, withoutMu(runs[0]["charge"]))
		assert.InDelta(t, 0.02, runs[0]["charge"].(map[string]any)["mu2"], 1e-6, "a Gaussian-only run's GDP statement, μ² = 2ρ")
	})
}

// TestFitRefundsWhatNeverStarted: a plugin that dies before its first
// privacy step (as on an out-of-memory error while loading) is refunded;
// so is a fit interrupted (SIGINT) before it, which exits 130.
func TestFitRefundsWhatNeverStarted(t *testing.T) {
	data := genSpiked(t)
	t.Run("death", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("DPLR_BAD_MODE", "die-before-step")
		r := dplr(t, home, "fit", "bad-die-before-step", "--data", data, "--rho", "0.5", "--quiet", "--out", t.TempDir())
		assert.Equal(t, ExitPlugin, r.code, r.stderr)
		assert.Contains(t, r.stderr, "refunded")
		runs := history(t, home, data)
		require.Len(t, runs, 1)
		assert.Equal(t, true, runs[0]["refunded"])
	})
	t.Run("interrupted", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("DPLR_BAD_MODE", "hang-before-step")
		done := make(chan run)
		go func() {
			done <- dplr(t, home, "fit", "bad-hang-before-step", "--data", data, "--rho", "0.5", "--quiet", "--out", t.TempDir())
		}()
		waitForReservation(t, home)
		// Main is inside the fit, with its signal handler installed.
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
		r := <-done
		assert.Equal(t, ExitInterrupted, r.code, r.stderr)
		runs := history(t, home, data)
		require.Len(t, runs, 1)
		assert.Equal(t, true, runs[0]["refunded"])
	})
}

// waitForReservation polls the ledger in home until a run is reserved.
func waitForReservation(t *testing.T, home string) {
	t.Helper()
	for {
		if reservedRuns(home) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func reservedRuns(home string) int {
	if _, err := os.Stat(filepath.Join(home, "ledger.db")); err != nil {
		return 0
	}
	ctx := context.Background()
	led, err := ledger.Open(ctx, home)
	if err != nil {
		return 0
	}
	defer led.Close()
	sets, err := led.Datasets(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, d := range sets {
		runs, _ := led.History(ctx, d.Hash)
		for _, r := range runs {
			if r.State == ledger.Reserved {
				n++
			}
		}
	}
	return n
}

// TestReorderUsesTheFlagSet: flags after the estimator are recognised as
// boolean or valued from the command's own flag set, including flags no
// hand-kept list knew about.
func TestReorderUsesTheFlagSet(t *testing.T) {
	env := &Env{Stdout: &discard{}, Stderr: &discard{}}
	fs := newFlags("fit", "", env)
	fs.Bool("quiet", false, "")
	fs.Bool("fresh-bool", false, "")
	fs.String("out", "", "")
	var m byteSize
	fs.Var(&m, "max-memory", "")
	cases := []struct {
		in, want []string
	}{
		{[]string{"est", "--quiet", "--out", "d"}, []string{"--quiet", "--out", "d", "est"}},
		{[]string{"--fresh-bool", "est", "--max-memory", "1G"}, []string{"--fresh-bool", "--max-memory", "1G", "est"}},
		{[]string{"--out=d", "est", "-h"}, []string{"--out=d", "-h", "est"}},
		{[]string{"est", "--unknown", "x"}, []string{"--unknown", "est", "x"}},
		{[]string{"--quiet", "--", "-est"}, []string{"--quiet", "--", "-est"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, reorder(fs, tc.in), "%v", tc.in)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestByteSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1024", 1024, true}, {"8GiB", 8 << 30, true}, {"512M", 512 << 20, true},
		{"1.5k", 1536, true}, {"2 TB", 2 << 40, true}, {"lots", 0, false}, {"-1G", 0, false}, {"1e30P", 0, false},
	}
	for _, tc := range cases {
		var b byteSize
		err := b.Set(tc.in)
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, int64(b), tc.in)
	}
}

// A plugin that fails to start is a plugin failure (exit 4) when it is the
// one named after the estimator; an estimator nobody serves is a usage
// error.
func TestFitPluginThatDoesNotStart(t *testing.T) {
	data := genSpiked(t)
	home := t.TempDir()
	t.Setenv("DPLR_BAD_MODE", "exit-start")
	r := dplr(t, home, "fit", "bad-anything", "--data", data, "--rho", "0.5", "--quiet")
	assert.Equal(t, ExitPlugin, r.code, r.stderr)
	assert.Contains(t, r.stderr, "starting plugin")
	assert.Contains(t, r.stderr, "exited with status 2", "the plugin's exit status is shown")
	r = dplr(t, home, "fit", "nosuch-estimator", "--data", data, "--rho", "0.5", "--quiet")
	assert.Equal(t, ExitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no plugin serves")
}

// withoutMu drops a charge's GDP statement (mu2, which the ledger keeps for
// Gaussian-only runs and reservations; engine/ledger tests it).
func withoutMu(c any) any {
	m, ok := c.(map[string]any)
	if !ok {
		return c
	}
	out := map[string]any{}
	for k, v := range m {
		if k != "mu2" {
			out[k] = v
		}
	}
	return out
}
