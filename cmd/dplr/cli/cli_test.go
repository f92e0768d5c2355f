package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
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
		for _, pkg := range []string{"github.com/dplr/dplr/examples/meanplugin/cmd/dplr-example", "github.com/dplr/dplr/engine/transport/testdata/dplr-bad", "./testdata/dplr-leaky", "github.com/dplr/dplr/engine/host/testdata/dplr-remote"} {
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

// TestMain removes the built plugins (this file's and transform_test.go's) when the package's tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildErr == nil && plugDir != "" {
		os.RemoveAll(plugDir)
	}
	if transformErr == nil && transformDir != "" {
		os.RemoveAll(transformDir)
	}
	os.Exit(code)
}

type run struct {
	code           int
	stdout, stderr string
}

func dplr(t *testing.T, home string, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{args[0], "--plugin-dir", plugins(t), "--home", home}, args[1:]...)
	if args[0] == "fit" && !slices.Contains(args, "--out") {
		full = append(full, "--out", filepath.Join(t.TempDir(), "out")) // not dplr-out in the source tree
	}
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
	assert.Equal(t, "approx", priv["guarantee"], "a Gaussian run under an (ε, δ) grant is certified by the exact Gaussian composition")
	assert.LessOrEqual(t, priv["epsilon"].(float64), 1+1e-9)
	assert.Equal(t, false, priv["seeded"])
	assert.Equal(t, "diagnostic", rep["timings_release"], "timings depend on the data")
	led := rep["ledger"].(map[string]any)
	assert.NotContains(t, led, "remaining", "no budget set: no remaining figures to misread as zero")

	m, err := dataio.Load(filepath.Join(out, "mean.npy"), dataio.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 10, m.P())
	_, err = os.Stat(filepath.Join(out, "result.json"))
	require.NoError(t, err)
	assert.Len(t, history(t, home, data), 1)

	// With a ρ total, the remaining budget is stated in that form: 0.5 less
	// the first run's ρ (example-mean's default noise=exact spends the
	// grant's whole GDP μ, ρ = μ²/2 = 0.02801 at (1, 1e-6)) and 0.1.
	r = dplr(t, home, "budget", "set", "--data", data, "--rho", "0.5")
	require.Equal(t, ExitOK, r.code, r.stderr)
	r = dplr(t, home, "fit", "example-mean", "--data", data, "--rho", "0.1", "--set", "clip=3", "--out", t.TempDir(), "--json", "--quiet")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	led = rep["ledger"].(map[string]any)
	assert.Equal(t, "ρ = 0.372", led["remaining_text"], "the remaining budget in the total's own form")
}

func TestBadInputSpendsNothing(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	nanFile := filepath.Join(t.TempDir(), "nan.csv")
	require.NoError(t, os.WriteFile(nanFile, []byte("1,2\n3,nan\n"), 0o644))
	x, err := os.ReadFile(filepath.Join(data, "X.npy"))
	require.NoError(t, err)
	truncated := filepath.Join(t.TempDir(), "truncated.npy")
	require.NoError(t, os.WriteFile(truncated, x[:len(x)/2], 0o644))
	require.Equal(t, ExitOK, dplr(t, home, "budget", "set", "--data", data, "--epsilon", "5", "--delta", "1e-5").code)
	before := dplr(t, home, "budget", "show", "--data", data, "--json")
	require.Equal(t, ExitOK, before.code, before.stderr)
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
		{"epsilon NaN", []string{"--data", data, "--epsilon", "nan", "--delta", "1e-6"}, ExitUsage, `"nan" is not a number`},
		{"delta NaN", []string{"--data", data, "--epsilon", "1", "--delta", "NaN"}, ExitUsage, `"NaN" is not a number`},
		{"epsilon trailing text", []string{"--data", data, "--epsilon", "1x", "--delta", "1e-6"}, ExitUsage, `"1x" is not a number`},
		{"epsilon infinite", []string{"--data", data, "--epsilon", "1e999", "--delta", "1e-6"}, ExitUsage, "epsilon = +Inf must be positive and finite"},
		{"seed trailing text", []string{"--data", data, "--epsilon", "1", "--delta", "1e-6", "--seed", "12abc"}, ExitUsage, `"12abc" is not an integer`},
		{"infinite param", []string{"--data", data, "--epsilon", "1", "--delta", "1e-6", "--set", "clip=inf"}, ExitUsage, "not a finite number"},
		{"truncated npy", []string{"--data", truncated, "--epsilon", "1", "--delta", "1e-6"}, ExitData, "header implies"},
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
	after := dplr(t, home, "budget", "show", "--data", data, "--json")
	assert.JSONEq(t, before.stdout, after.stdout, "refused runs leave the budget untouched")
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

// When an (ε, δ) request is refused but the same guarantee as a ρ-zCDP
// grant fits, the refusal says which --rho to pass; that run then fits, its
// guarantee implies the requested (ε, δ), and the budget stays within its
// total.
//
// example-mean is Gaussian-only, so the budget follows the Gaussian-DP
// filter (engine/ledger/doc.go): each (1, 1e-6) run holds μ_g² = 0.0560 and
// its zCDP equivalent 2ρ = 0.0487; the total (1.58, 1e-5) (μ_T² = 0.1644)
// leaves 0.052 after two runs, between the two.
func TestRefusedApproxRunSuggestsRho(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	r := dplr(t, home, "budget", "set", "--data", data, "--epsilon", "1.58", "--delta", "1e-5")
	require.Equal(t, ExitOK, r.code, r.stderr)
	fit := func(budget ...string) run {
		args := append([]string{"fit", "example-mean", "--data", data, "--quiet", "--json", "--out", t.TempDir()}, budget...)
		return dplr(t, home, args...)
	}
	for i := 0; i < 2; i++ {
		r = fit("--epsilon", "1", "--delta", "1e-6")
		require.Equal(t, ExitOK, r.code, r.stderr)
	}
	r = fit("--epsilon", "1", "--delta", "1e-6")
	require.Equal(t, ExitBudget, r.code, r.stderr)
	m := regexp.MustCompile(`--rho ([0-9.e+-]+)`).FindStringSubmatch(r.stderr)
	require.Len(t, m, 2, "the refusal names the ρ to ask for: %s", r.stderr)
	rho, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	eps := privacy.EpsilonFromRho(rho, 1e-6)
	assert.LessOrEqual(t, eps, 1.0, "the suggested ρ implies the requested (ε, δ)")
	assert.Greater(t, eps, 0.999, "and is not needlessly smaller")

	r = fit("--rho", m[1])
	require.Equal(t, ExitOK, r.code, r.stderr)
	show := dplr(t, home, "budget", "show", "--data", data, "--json")
	require.Equal(t, ExitOK, show.code, show.stderr)
	var st struct {
		Spent struct{ Epsilon, Delta float64 }
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &st))
	assert.LessOrEqual(t, st.Spent.Epsilon, 2+1e-9)
	assert.LessOrEqual(t, st.Spent.Delta, 1e-5*(1+1e-9))

	// No hint once the ρ form would not fit either.
	for i := 0; i < 20; i++ {
		if r = fit("--rho", m[1]); r.code != ExitOK {
			break
		}
	}
	require.Equal(t, ExitBudget, r.code, r.stderr)
	r = fit("--epsilon", "1", "--delta", "1e-6")
	require.Equal(t, ExitBudget, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "--rho")
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

	// A request the estimator refuses as such is a usage error, refunded.
	t.Setenv("DPLR_BAD_MODE", "bad-request")
	r = dplr(t, home, "fit", "bad-bad-request", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet")
	assert.Equal(t, ExitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "lambda lists 2 values")
	assert.Contains(t, r.stderr, "refunded")
	// A refusal after a privacy step was announced stays charged and is not
	// reported as a mere usage error.
	t.Setenv("DPLR_BAD_MODE", "late-refusal")
	r = dplr(t, home, "fit", "bad-late-refusal", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet")
	assert.Equal(t, ExitEstimator, r.code, r.stderr)
	assert.Contains(t, r.stderr, "charged its full grant")

	// A guarantee whose neighbour relation cannot be read is a plugin
	// failure after its noise was drawn: exit 4, charged.
	t.Setenv("DPLR_BAD_MODE", "bad-neighbours")
	r = dplr(t, home, "fit", "bad-bad-neighbours", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet")
	assert.Equal(t, ExitPlugin, r.code, r.stderr)
	assert.Contains(t, r.stderr, "neighbour relation")
	assert.Contains(t, r.stderr, "charged")
	runs = history(t, home, data)
	last := runs[len(runs)-1]
	assert.Equal(t, "failed", last["state"])
	assert.Equal(t, true, last["noise_drawn"])
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
	assert.InEpsilon(t, 0.01, rep.Privacy.Rho, 1e-8, "the exact Gaussian accounting, to its rounding")
	assert.Contains(t, rep.Privacy.Text, "ρ = 0.01")
}

// Help is printed to stdout with exit 0 when asked for; a usage error is
// one line on stderr naming the problem and where the help is, exit 2.
func TestHelpAndUsageErrors(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		notStdout  []string
		notStderr  []string
		emptyOther bool // the other stream stays empty
	}{
		{name: "help fit", args: []string{"help", "fit"}, code: ExitOK,
			stdout:    []string{"Usage: dplr fit ESTIMATOR", "-data PATH", "-set key=value", "-epsilon E", "-seed N", "Examples:", "dplr describe ESTIMATOR", "Exit codes"},
			notStdout: []string{"-data dplr gen", "-set dplr describe"}, emptyOther: true},
		{name: "fit -h", args: []string{"fit", "-h"}, code: ExitOK, stdout: []string{"Usage: dplr fit", "-out DIR"}, emptyOther: true},
		{name: "gen --help", args: []string{"gen", "--help"}, code: ExitOK, stdout: []string{"Usage: dplr gen MODEL", "-set key=value", "dplr gen --list"}, emptyOther: true},
		{name: "describe -h", args: []string{"describe", "-h"}, code: ExitOK, stdout: []string{"Usage: dplr describe ESTIMATOR", "-plugin-dir DIR"}, emptyOther: true},
		{name: "budget -h", args: []string{"budget", "-h"}, code: ExitOK, stdout: []string{"dplr budget set", "Examples:"}, emptyOther: true},
		{name: "help budget", args: []string{"help", "budget"}, code: ExitOK, stdout: []string{"dplr budget history"}, emptyOther: true},
		{name: "budget set -h", args: []string{"budget", "set", "-h"}, code: ExitOK, stdout: []string{"Usage: dplr budget set", "-epsilon E"}, emptyOther: true},
		{name: "budget without subcommand", args: []string{"budget"}, code: ExitUsage, stderr: []string{"needs a subcommand: set, show or history"}},
		{name: "budget unknown subcommand", args: []string{"budget", "spend"}, code: ExitUsage, stderr: []string{`unknown subcommand "spend"`}},
		{name: "bad flag value", args: []string{"fit", "example-mean", "--epsilon", "abc"}, code: ExitUsage,
			stderr: []string{`invalid value "abc" for flag -epsilon`, `(see "dplr fit -h")`}, notStderr: []string{"Flags", "-d1 int"}, emptyOther: true},
		{name: "unknown flag", args: []string{"gen", "spiked", "--bogus"}, code: ExitUsage,
			stderr: []string{"flag provided but not defined: -bogus", `(see "dplr gen -h")`}, notStderr: []string{"Flags"}, emptyOther: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(tc.args, &out, &errb)
			assert.Equal(t, tc.code, code, errb.String())
			for _, s := range tc.stdout {
				assert.Contains(t, out.String(), s)
			}
			for _, s := range tc.notStdout {
				assert.NotContains(t, out.String(), s)
			}
			for _, s := range tc.stderr {
				assert.Contains(t, errb.String(), s)
			}
			for _, s := range tc.notStderr {
				assert.NotContains(t, errb.String(), s)
			}
			if tc.emptyOther && tc.code == ExitOK {
				assert.Empty(t, errb.String())
			}
			if tc.emptyOther && tc.code != ExitOK {
				assert.Empty(t, out.String())
			}
		})
	}
}

func TestBudgetAndSeedFlagValues(t *testing.T) {
	floats := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true},
		{" 0.5 ", 0.5, true},
		{"1e-6", 1e-6, true},
		{"-1", -1, true}, // refused later, with its name, by Grant.Validate
		{"1e999", math.Inf(1), true},
		{"nan", 0, false},
		{"NaN", 0, false},
		{"1x", 0, false},
		{"", 0, false},
		{"one", 0, false},
	}
	for _, tc := range floats {
		t.Run("float "+tc.in, func(t *testing.T) {
			v := math.NaN()
			err := floatVar{&v}.Set(tc.in)
			if !tc.ok {
				assert.ErrorContains(t, err, "is not a number")
				assert.True(t, math.IsNaN(v), "a refused value leaves the flag unset")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, v)
		})
	}
	seeds := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false},
		{"-3", 0, false},
		{"12abc", 0, false},
		{"1.5", 0, false},
		{"", 0, false},
	}
	for _, tc := range seeds {
		t.Run("seed "+tc.in, func(t *testing.T) {
			var o optUint
			err := o.Set(tc.in)
			if !tc.ok {
				assert.ErrorContains(t, err, "is not an integer")
				assert.False(t, o.set)
				return
			}
			require.NoError(t, err)
			assert.True(t, o.set)
			assert.Equal(t, tc.want, o.v)
		})
	}
}

// A fit still running at --timeout is a hung plugin: exit 4, named, and
// charged (noise may have been drawn).
func TestFitTimeoutIsAPluginFailure(t *testing.T) {
	home := t.TempDir()
	data := genSpiked(t)
	t.Setenv("DPLR_BAD_MODE", "hang-fit")
	r := dplr(t, home, "fit", "bad-hang-fit", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--quiet", "--timeout", "300ms")
	assert.Equal(t, ExitPlugin, r.code, r.stderr)
	assert.Contains(t, r.stderr, "did not finish within the timeout of 300ms")
	assert.Contains(t, r.stderr, "charged its full grant")
	runs := history(t, home, data)
	require.Len(t, runs, 1)
	assert.Equal(t, true, runs[0]["noise_drawn"])
}

// `dplr budget` on a directory written by `dplr gen` reads it as the kind
// it holds (trace, users), so it names the same data set, by the same hash,
// that `dplr fit` charges.
func TestBudgetOnGeneratedDirectories(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct{ model, size, kind string }{
		{"trace-regression", "n=200", "trace"},
		{"users-lowrank", "users=40", "users"},
		{"spiked", "n=200", "rows"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.model)
			r := dplr(t, "", "gen", tc.model, "--out", dir, "--set", tc.size, "--seed", "3")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var man struct{ Hash, Kind string }
			b, err := os.ReadFile(filepath.Join(dir, "dataset.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &man))
			require.Equal(t, tc.kind, man.Kind)

			r = dplr(t, home, "budget", "set", "--data", dir, "--epsilon", "1", "--delta", "1e-6")
			require.Equal(t, ExitOK, r.code, r.stderr)
			r = dplr(t, home, "budget", "show", "--data", dir, "--json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var st struct {
				Hash string `json:"data_hash"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
			assert.Equal(t, man.Hash, st.Hash, "the budget names the data set dplr fit charges")
			if tc.kind != "rows" {
				r = dplr(t, home, "budget", "show", "--data", dir, "--kind", "rows")
				assert.Equal(t, ExitData, r.code)
				assert.Contains(t, r.stderr, "holds "+tc.kind+" data")
			}
		})
	}
}

// A plugin installed where an earlier directory of the search path already
// has one of the same name is reported, not silently ignored.
func TestShadowedPluginIsReported(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "plugins"), 0o755))
	b, err := os.ReadFile(filepath.Join(plugins(t), "dplr-example"))
	require.NoError(t, err)
	hidden := filepath.Join(home, "plugins", "dplr-example")
	require.NoError(t, os.WriteFile(hidden, b, 0o755))
	for _, args := range [][]string{{"plugins"}, {"describe", "example-mean"}} {
		r := dplr(t, home, args...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		assert.Contains(t, r.stderr, hidden+" is not used", args)
	}
	r := dplr(t, home, "plugins", "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var cat []map[string]any
	assert.NoError(t, json.Unmarshal([]byte(r.stdout), &cat), "the note goes to stderr; stdout stays JSON")
}

// `dplr budget` on data files infers the kind from the flags a fit would
// need (user ids: users; a response or matrix shape: trace), says what it
// assumed, and so names the data set by the hash the fits charge.
func TestBudgetInfersKindOfDataFiles(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct{ model, size string }{
		{"trace-regression", "n=200"},
		{"users-lowrank", "users=40"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.model)
			r := dplr(t, "", "gen", tc.model, "--out", dir, "--set", tc.size, "--seed", "5")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var man struct {
				Hash  string
				Kind  string
				Files map[string]string
			}
			b, err := os.ReadFile(filepath.Join(dir, "dataset.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &man))
			args := []string{"budget", "show", "--data", filepath.Join(dir, man.Files["x"]), "--response", filepath.Join(dir, man.Files["y"]), "--json"}
			if u, ok := man.Files["users"]; ok {
				args = append(args, "--users", filepath.Join(dir, u))
			}
			r = dplr(t, home, args...)
			require.Equal(t, ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stderr, "as "+man.Kind+" data", "the assumed kind is said")
			var st struct {
				Hash string `json:"data_hash"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
			assert.Equal(t, man.Hash, st.Hash, "the file names the same data set as its gen directory")

			if man.Kind != "users" {
				return
			}
			// The same users data as a CSV with a user column and no flags.
			x, err := dataio.Load(filepath.Join(dir, man.Files["x"]), dataio.LoadOptions{})
			require.NoError(t, err)
			y, err := dataio.Load(filepath.Join(dir, man.Files["y"]), dataio.LoadOptions{})
			require.NoError(t, err)
			u, err := dataio.Load(filepath.Join(dir, man.Files["users"]), dataio.LoadOptions{})
			require.NoError(t, err)
			var csv strings.Builder
			n, p := x.X.Dims()
			csv.WriteString("user")
			for j := 0; j < p; j++ {
				fmt.Fprintf(&csv, ",x%d", j)
			}
			csv.WriteString(",y\n")
			for i := 0; i < n; i++ {
				fmt.Fprintf(&csv, "%d", int64(u.X.At(i, 0)))
				for j := 0; j < p; j++ {
					csv.WriteString("," + strconv.FormatFloat(x.X.At(i, j), 'g', -1, 64))
				}
				csv.WriteString("," + strconv.FormatFloat(y.X.At(i, 0), 'g', -1, 64) + "\n")
			}
			path := filepath.Join(t.TempDir(), "users.csv")
			require.NoError(t, os.WriteFile(path, []byte(csv.String()), 0o644))
			r = dplr(t, home, "budget", "show", "--data", path, "--json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stderr, "user column")
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
			// The source identity follows the file's own columns (user id
			// first here, last in the array files), so the CSV is another
			// identity until it is linked to the data set it copies.
			assert.NotEqual(t, man.Hash, st.Hash)
			r = dplr(t, home, "budget", "set", "--hash", man.Hash, "--epsilon", "5", "--delta", "1e-6")
			require.Equal(t, ExitOK, r.code, r.stderr)
			r = dplr(t, home, "budget", "link", "--data", path, "--to", man.Hash)
			require.Equal(t, ExitOK, r.code, r.stderr)
			r = dplr(t, home, "budget", "show", "--data", path, "--json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
			assert.Equal(t, man.Hash, st.Hash, "a linked users CSV names the same data set")
		})
	}
}
