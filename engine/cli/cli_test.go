package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

var (
	once     sync.Once
	plugDir  string
	buildErr error
)

// plugins builds the example plugin and the misbehaving test plugin once.
func plugins(t *testing.T) string {
	t.Helper()
	once.Do(func() {
		plugDir, buildErr = os.MkdirTemp("", "dplr-cli-test")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{"../../examples/meanplugin/cmd/dplr-example", "../host/testdata/dplr-bad"} {
			out, err := exec.Command("go", "build", "-o", plugDir+"/", pkg).CombinedOutput()
			if err != nil {
				buildErr = err
				plugDir = string(out)
				return
			}
		}
	})
	require.NoError(t, buildErr, plugDir)
	return plugDir
}

type run struct {
	code           int
	stdout, stderr string
}

func dplr(t *testing.T, home string, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{args[0], "--plugin-dir", plugins(t), "--home", home}, args[1:]...)
	if args[0] == "gen" || args[0] == "budget" || args[0] == "version" {
		full = args
		if args[0] == "budget" {
			full = append([]string{args[0], args[1], "--home", home}, args[2:]...)
		}
	}
	code := Main(full, &out, &errb)
	return run{code, out.String(), errb.String()}
}

func genSpiked(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "spiked")
	r := dplr(t, "", "gen", "spiked", "--out", dir, "--set", "n=2000", "--set", "p=10", "--seed", "7")
	require.Equal(t, ExitOK, r.code, r.stderr)
	return dir
}

func history(t *testing.T, home, data string) []map[string]any {
	r := dplr(t, home, "budget", "history", "--data", data, "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &runs))
	return runs
}

func TestFitEndToEnd(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	out := filepath.Join(t.TempDir(), "out")
	r := dplr(t, home, "fit", "example-mean", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--set", "clip=3", "--out", out, "--json", "--quiet")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	for _, k := range []string{"estimator", "plugin", "backend", "privacy", "outputs", "metrics", "timings"} {
		assert.Contains(t, rep, k)
	}
	priv := rep["privacy"].(map[string]any)
	for _, k := range []string{"epsilon", "delta", "rho", "guarantee", "assumptions", "steps"} {
		assert.Contains(t, priv, k)
	}
	assert.Equal(t, "zcdp", priv["guarantee"])
	assert.LessOrEqual(t, priv["epsilon"].(float64), 1+1e-9)
	assert.Equal(t, false, priv["seeded"])
	m, err := dataio.Load(filepath.Join(out, "mean.npy"), dataio.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 10, m.P())
	_, err = os.Stat(filepath.Join(out, "result.json"))
	require.NoError(t, err)
	assert.Len(t, history(t, home, data), 1)
}

func TestBadInputSpendsNothing(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	nanFile := filepath.Join(t.TempDir(), "nan.csv")
	require.NoError(t, os.WriteFile(nanFile, []byte("1,2\n3,nan\n"), 0o644))
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"epsilon zero", []string{"--data", data, "--epsilon", "0", "--delta", "1e-6"}, ExitUsage, "epsilon"},
		{"epsilon negative", []string{"--data", data, "--epsilon", "-1", "--delta", "1e-6"}, ExitUsage, "epsilon"},
		{"delta one", []string{"--data", data, "--epsilon", "1", "--delta", "1"}, ExitUsage, "delta"},
		{"no budget", []string{"--data", data}, ExitUsage, "privacy budget is required"},
		{"unknown param", []string{"--data", data, "--epsilon", "1", "--delta", "1e-6", "--set", "rnak=2"}, ExitUsage, "unknown parameter"},
		{"param out of range", []string{"--data", data, "--epsilon", "1", "--delta", "1e-6", "--set", "clip=-1"}, ExitUsage, "below its minimum"},
		{"pure budget refused", []string{"--data", data, "--epsilon", "1"}, ExitUsage, "does not accept a pure budget"},
		{"nan data", []string{"--data", nanFile, "--epsilon", "1", "--delta", "1e-6"}, ExitData, "not finite"},
		{"missing data", []string{"--data", "/nonexistent.npy", "--epsilon", "1", "--delta", "1e-6"}, ExitData, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dplr(t, home, append([]string{"fit", "example-mean", "--quiet"}, tc.args...)...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.msg)
		})
	}
	r := dplr(t, home, "fit", "no-such-estimator", "--data", data, "--epsilon", "1", "--delta", "1e-6")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "known: ")
	assert.Empty(t, history(t, home, data), "no run was recorded, nothing was charged")
}

func TestBudgetIsEnforcedAcrossRuns(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	r := dplr(t, home, "budget", "set", "--data", data, "--epsilon", "1", "--delta", "1e-5")
	require.Equal(t, ExitOK, r.code, r.stderr)
	fit := func() run {
		return dplr(t, home, "fit", "example-mean", "--data", data, "--epsilon", "0.4", "--delta", "1e-6", "--quiet", "--out", t.TempDir())
	}
	ok := 0
	var last run
	for i := 0; i < 20; i++ {
		if last = fit(); last.code != ExitOK {
			break
		}
		ok++
	}
	// zCDP composition of runs fits more than basic composition's two.
	assert.GreaterOrEqual(t, ok, 2)
	assert.Less(t, ok, 20)
	assert.Equal(t, ExitBudget, last.code, last.stderr)
	assert.Contains(t, last.stderr, "nothing was run or spent")
	assert.Len(t, history(t, home, data), ok)
	show := dplr(t, home, "budget", "show", "--data", data, "--json")
	require.Equal(t, ExitOK, show.code, show.stderr)
	var st struct {
		Spent struct{ Epsilon, Delta float64 }
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &st))
	assert.LessOrEqual(t, st.Spent.Epsilon, 1+1e-9)
	assert.LessOrEqual(t, st.Spent.Delta, 1e-5*(1+1e-9))
}

func TestSeededRunsReproduceAndSaySo(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	var means [2][]float64
	for i := range means {
		out := t.TempDir()
		r := dplr(t, home, "fit", "example-mean", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--seed", "42", "--out", out, "--json", "--quiet")
		require.Equal(t, ExitOK, r.code, r.stderr)
		assert.Contains(t, r.stderr, "NOT private against anyone who knows the seed")
		var rep FitReport
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		assert.True(t, rep.Privacy.Seeded)
		assert.Contains(t, rep.Privacy.Text, "NOT private against anyone who knows the seed")
		m, err := dataio.Load(filepath.Join(out, "mean.npy"), dataio.LoadOptions{})
		require.NoError(t, err)
		means[i] = m.X.RawRowView(0)
	}
	assert.Equal(t, means[0], means[1])
}

func TestPluginCrashIsReportedAndStaysCharged(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	t.Setenv("DPLR_BAD_MODE", "crash-fit")
	r := dplr(t, home, "fit", "bad-crash-fit", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet")
	assert.Equal(t, ExitPlugin, r.code, r.stderr)
	assert.Contains(t, r.stderr, "crashed")
	runs := history(t, home, data)
	require.Len(t, runs, 1)
	assert.Equal(t, "failed", runs[0]["state"])
	assert.Equal(t, true, runs[0]["noise_drawn"])

	t.Setenv("DPLR_BAD_MODE", "estimator-error")
	r = dplr(t, home, "fit", "bad-estimator-error", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet")
	assert.Equal(t, ExitEstimator, r.code, r.stderr)
	runs = history(t, home, data)
	require.Len(t, runs, 2)
	refunded := 0
	for _, x := range runs {
		if x["refunded"] == true {
			refunded++
		}
	}
	assert.Equal(t, 1, refunded, "an estimator error before any privacy step is refunded")
}

func TestPluginsListingAndHelp(t *testing.T) {
	home := t.TempDir()
	r := dplr(t, home, "plugins", "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var ps []pluginJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ps))
	names := []string{}
	for _, p := range ps {
		names = append(names, p.Name)
		assert.NotEmpty(t, p.Backend)
		assert.NotEmpty(t, p.Path)
	}
	assert.Contains(t, names, "example")
	r = dplr(t, home, "describe", "example-mean")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "clip")
	var out, errb bytes.Buffer
	assert.Equal(t, ExitOK, Main([]string{"help"}, &out, &errb))
	assert.True(t, strings.Contains(out.String(), "Exit codes"))
	assert.Equal(t, ExitUsage, Main([]string{"frobnicate"}, &out, &errb))
}

func TestNonPrivateEstimatorPolicy(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	r := dplr(t, home, "fit", "example-mean-nonprivate", "--data", data, "--quiet", "--out", t.TempDir())
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "--non-private")
	r = dplr(t, home, "fit", "example-mean-nonprivate", "--data", data, "--non-private", "--quiet", "--out", t.TempDir(), "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep FitReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, "none", rep.Privacy.Guarantee)
	assert.Empty(t, history(t, home, data), "a non-private run is not a budget spend")
	require.Equal(t, ExitOK, dplr(t, home, "budget", "set", "--data", data, "--epsilon", "1", "--delta", "1e-6").code)
	r = dplr(t, home, "fit", "example-mean-nonprivate", "--data", data, "--non-private", "--quiet", "--out", t.TempDir())
	assert.Equal(t, ExitBudget, r.code, r.stderr)
}

// The host reports its own composition of the announced steps, never the
// privacy figures a plugin claims.
func TestHostStatesItsOwnPrivacyFigures(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	t.Setenv("DPLR_BAD_MODE", "understate")
	r := dplr(t, home, "fit", "bad-understate", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet", "--json", "--out", t.TempDir())
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep FitReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.InDelta(t, 0.01, rep.Privacy.Rho, 1e-12)
	assert.Contains(t, rep.Privacy.Text, "ρ = 0.01")
}
