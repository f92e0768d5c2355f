package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// base is a valid accuracy scenario; tests append or replace lines.
const base = `
name = "t"
kind = "accuracy"
repetitions = 3
epsilons = [1, 2]

[data]
model = "spiked"
params = { n = "100" }

[[variants]]
name = "A"
estimator = "pca-cxz"

[[variants]]
name = "ref"
estimator = "pca-nonprivate"
non_private = true

[report]
metric = "U.sin_theta_spectral"
`

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.toml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestLoadValidation(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"no name", `name = "t"`, ``, "no name"},
		{"bad kind", `kind = "accuracy"`, `kind = "speed"`, "want accuracy or timing"},
		{"no repetitions", `repetitions = 3`, `repetitions = 0`, "repetitions"},
		{"delta too large", `epsilons = [1, 2]`, "epsilons = [1, 2]\ndelta = 1.5", "delta"},
		{"no epsilons", `epsilons = [1, 2]`, ``, "give epsilons or a sweep"},
		{"negative epsilon", `epsilons = [1, 2]`, `epsilons = [-1, 2]`, "positive and finite"},
		{"infinite epsilon", `epsilons = [1, 2]`, `epsilons = [1, inf]`, "positive and finite"},
		{"model and path", `model = "spiked"`, "model = \"spiked\"\npath = \"x.csv\"", "exactly one of model or path"},
		{"sweep on a file", "[data]\nmodel = \"spiked\"\nparams = { n = \"100\" }", "[sweep]\nparam = \"n\"\nvalues = [\"1\"]\nepsilon = 1\n[data]\npath = \"x.csv\"", "data.model is required"},
		{"sweep without epsilon", "[data]", "[sweep]\nparam = \"n\"\nvalues = [\"1\"]\n[data]", "sweep needs"},
		{"duplicate variant", `name = "ref"`, `name = "A"`, "twice"},
		{"variant without estimator", `estimator = "pca-cxz"`, ``, "needs name and estimator"},
		{"accuracy without metric", `metric = "U.sin_theta_spectral"`, ``, "report.metric is required"},
		{"unknown theory", `metric = "U.sin_theta_spectral"`, "metric = \"x\"\ntheory = \"nope\"", "unknown theory"},
		{"unknown formula", `metric = "U.sin_theta_spectral"`, "metric = \"x\"\nformulas = [\"orbit-ub\", \"nope\"]", "unknown formula"},
		{"unknown key", `kind = "accuracy"`, "kind = \"accuracy\"\nrepetition = 4", "unknown keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, base, c.old)
			_, err := Load(writeScenario(t, strings.Replace(base, c.old, c.new, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	scs, err := Load(writeScenario(t, base))
	require.NoError(t, err)
	s := scs[0]
	assert.Equal(t, 2, s.QuickRepetitions, "quick repetitions default to min(2, repetitions)")
	assert.Equal(t, 1e-6, s.Delta)
	assert.Equal(t, 600.0, s.TimeoutSeconds)
	for _, v := range s.Variants {
		assert.Equal(t, "bin/plugins", v.PluginDir)
	}

	timing := strings.Replace(strings.Replace(base, `kind = "accuracy"`, `kind = "timing"`, 1), `metric = "U.sin_theta_spectral"`, ``, 1)
	scs, err = Load(writeScenario(t, timing))
	require.NoError(t, err)
	assert.Equal(t, "wall_s", scs[0].Report.Metric, "timing scenarios default to wall time")
}

// TestShippedScenarios checks every scenario in bench/scenarios: they load,
// their names are unique, the quick subset runs on the pure-Go build only
// (make bench builds nothing else) and covers every estimator plugin.
func TestShippedScenarios(t *testing.T) {
	scs, err := LoadDir(filepath.Join("..", "scenarios"))
	require.NoError(t, err)
	require.NotEmpty(t, scs)
	names := map[string]bool{}
	plugins := map[string]bool{}
	for _, s := range scs {
		assert.False(t, names[s.Name], "scenario name %q twice", s.Name)
		names[s.Name] = true
		assert.Equal(t, s.Name, strings.TrimSuffix(filepath.Base(s.file), ".toml"), "file name should match the scenario name")
		if s.Kind == "accuracy" {
			assert.GreaterOrEqual(t, s.Repetitions, 10, "%s: accuracy cells need ≥ 10 seeds", s.Name)
		} else {
			assert.GreaterOrEqual(t, s.Repetitions, 5, "%s: timing cells need ≥ 5 runs", s.Name)
		}
		if !s.Quick {
			continue
		}
		for _, v := range s.Variants {
			assert.Equal(t, "bin/plugins", v.PluginDir, "%s/%s: quick scenarios must use the default build", s.Name, v.Name)
			plugins[strings.SplitN(v.Estimator, "-", 2)[0]] = true
		}
	}
	for _, p := range []string{"pca", "rgrad", "fedrep", "orbit"} {
		assert.True(t, plugins[p], "no quick scenario covers the %s plugin", p)
	}
}

func TestCellsInterleaveVariants(t *testing.T) {
	scs, err := Load(writeScenario(t, strings.Replace(base, `name = "ref"`, "name = \"ref\"\n", 1)))
	require.NoError(t, err)
	s := scs[0]
	cells := s.Cells(2)
	var got []string
	for _, c := range cells {
		got = append(got, c.Key())
	}
	// Per repetition: each ε with the variants back to back; the
	// non-private reference only once (at the first ε).
	want := []string{"A|1|0", "ref|1|0", "A|2|0", "A|1|1", "ref|1|1", "A|2|1"}
	assert.Equal(t, want, got)
	assert.Equal(t, 2.0, cells[2].Epsilon)
}

func TestCellsSweep(t *testing.T) {
	body := strings.Replace(base, `epsilons = [1, 2]`, "[sweep]\nparam = \"n\"\nvalues = [\"10\", \"20\"]\nepsilon = 0.5\n", 1)
	scs, err := Load(writeScenario(t, body))
	require.NoError(t, err)
	s := scs[0]
	cells := s.Cells(1)
	var got []string
	for _, c := range cells {
		got = append(got, c.Key())
		assert.Equal(t, 0.5, c.Epsilon)
	}
	// In a sweep the reference depends on x: it runs at every value.
	assert.Equal(t, []string{"A|10|0", "ref|10|0", "A|20|0", "ref|20|0"}, got)
	assert.Equal(t, "n", s.xName())
	assert.Equal(t, "20", s.dataParams(cells[2])["n"])
	assert.Equal(t, "100", s.Data.Params["n"], "the sweep must not change the scenario's own parameters")
}
