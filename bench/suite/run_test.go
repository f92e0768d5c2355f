package suite

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeHost is a stand-in for bin/dplr: `gen` writes a dataset.json, `fit`
// prints a result.json-shaped object (or fails for the estimator named in
// $FAIL), and every call is logged to $LOG.
const fakeHost = `#!/bin/sh
echo "$@" >> "$LOG"
cmd=$1; shift
if [ "$cmd" = gen ]; then
  while [ $# -gt 0 ]; do
    if [ "$1" = --out ]; then mkdir -p "$2"; echo '{}' > "$2/dataset.json"; fi
    shift
  done
  exit 0
fi
if [ "$1" = "$FAIL" ]; then echo "progress"; echo "dplr: estimator failed: boom" >&2; exit 6; fi
cat <<JSON
{"backend": "gonum",
 "metrics": [{"name": "U.sin_theta_spectral", "value": 0.25}],
 "outputs": {"scalars": [{"name": "loss", "value": 3}, {"name": "U.sin_theta_spectral", "value": 99}]},
 "privacy": {"epsilon": 1, "delta": 1e-6, "rho": 0.02},
 "timings": {"fit_s": 0.5, "host_max_rss_kib": 1024, "plugin_max_rss_kib": 2048}}
JSON
`

func fakeEnv(t *testing.T) (host, log string) {
	t.Helper()
	dir := t.TempDir()
	host = filepath.Join(dir, "dplr")
	require.NoError(t, os.WriteFile(host, []byte(fakeHost), 0o755))
	log = filepath.Join(dir, "calls.log")
	t.Setenv("LOG", log)
	t.Setenv("FAIL", "")
	return host, log
}

func calls(t *testing.T, log, verb string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, verb+" ") {
			n++
		}
	}
	return n
}

func TestRunRecordsAndResumes(t *testing.T) {
	host, log := fakeEnv(t)
	scs, err := Load(writeScenario(t, base))
	require.NoError(t, err)
	s := scs[0]
	out := t.TempDir()
	opt := Options{Dplr: host, OutDir: out, Log: io.Discard}

	require.NoError(t, Run(context.Background(), s, opt))
	nCells := len(s.Cells(s.Repetitions)) // 3 reps × (A at 2 ε + ref once)
	assert.Equal(t, 9, nCells)
	assert.Equal(t, nCells, calls(t, log, "fit"))
	assert.Equal(t, 3, calls(t, log, "gen"), "one data set per repetition, shared by the variants and ε values")

	recs, err := ReadResults(filepath.Join(out, s.Name, "results.jsonl"))
	require.NoError(t, err)
	require.Len(t, recs, nCells)
	r := recs[0]
	assert.Equal(t, "A", r.Variant)
	assert.Equal(t, "gonum", r.Backend)
	assert.Equal(t, 0.25, r.Metrics["U.sin_theta_spectral"], "evaluation metrics win over a scalar of the same name")
	assert.Equal(t, 3.0, r.Metrics["loss"])
	assert.Equal(t, 0.5, r.Metrics["timing.fit_s"])
	assert.Equal(t, 0.02, r.Metrics["privacy.rho"])
	assert.Equal(t, 3072.0, r.MaxRSSKiB)
	assert.Empty(t, r.Error)

	// A second run finds every cell done and runs nothing.
	require.NoError(t, Run(context.Background(), s, opt))
	assert.Equal(t, nCells, calls(t, log, "fit"))

	// More repetitions: only the new cells run.
	s.Repetitions = 4
	require.NoError(t, Run(context.Background(), s, opt))
	assert.Equal(t, nCells+3, calls(t, log, "fit"))

	// --force starts over.
	opt.Force = true
	require.NoError(t, Run(context.Background(), s, opt))
	assert.Equal(t, 2*nCells+6, calls(t, log, "fit"))
	recs, err = ReadResults(filepath.Join(out, s.Name, "results.jsonl"))
	require.NoError(t, err)
	assert.Len(t, recs, 12)
}

func TestRunFailedCellsRerun(t *testing.T) {
	host, log := fakeEnv(t)
	scs, err := Load(writeScenario(t, base))
	require.NoError(t, err)
	s := scs[0]
	s.Repetitions = 1
	out := t.TempDir()
	opt := Options{Dplr: host, OutDir: out, Log: io.Discard}

	t.Setenv("FAIL", "pca-cxz")
	require.NoError(t, Run(context.Background(), s, opt), "a failing fit is recorded, not fatal")
	recs, err := ReadResults(filepath.Join(out, s.Name, "results.jsonl"))
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Contains(t, recs[0].Error, "estimator failed: boom", "the error keeps the host's last stderr line")
	assert.Empty(t, recs[1].Error)

	t.Setenv("FAIL", "")
	require.NoError(t, Run(context.Background(), s, opt))
	assert.Equal(t, 3+2, calls(t, log, "fit"), "only the two failed cells run again")

	// The report keeps the last record of a cell: nothing failed any more.
	tab := aggregate(s, append(recs, mustRead(t, filepath.Join(out, s.Name, "results.jsonl"))[3:]...), []string{"U.sin_theta_spectral"})
	for _, x := range []string{"1", "2"} {
		sm := tab.cells["U.sin_theta_spectral"]["A|"+x]
		assert.Equal(t, 0, sm.Failed)
		assert.Equal(t, 1, sm.N)
	}
}

func TestRunHostMissing(t *testing.T) {
	scs, err := Load(writeScenario(t, strings.Replace(base, "[data]\nmodel = \"spiked\"\nparams = { n = \"100\" }", "[data]\npath = \"x.csv\"", 1)))
	require.NoError(t, err)
	s := scs[0]
	s.Repetitions = 1
	out := t.TempDir()
	// The host cannot start: every cell is recorded as failed, no panic.
	require.NoError(t, Run(context.Background(), s, Options{Dplr: filepath.Join(out, "no-such-dplr"), OutDir: out, Log: io.Discard}))
	recs := mustRead(t, filepath.Join(out, s.Name, "results.jsonl"))
	require.Len(t, recs, 3)
	for _, r := range recs {
		assert.NotEmpty(t, r.Error)
	}
}

func TestRunHonoursContext(t *testing.T) {
	host, log := fakeEnv(t)
	scs, err := Load(writeScenario(t, base))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = Run(ctx, scs[0], Options{Dplr: host, OutDir: t.TempDir(), Log: io.Discard})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, calls(t, log, "fit"))
}

func TestReadResultsSkipsTornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.jsonl")
	body := `{"scenario":"s","variant":"A","x":"1","rep":0,"wall_s":1}` + "\n" + `{"scenario":"s","variant":"A","x":"2","re`
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	recs, err := ReadResults(p)
	require.NoError(t, err)
	require.Len(t, recs, 1, "a run killed mid-write leaves a partial last line")
	assert.Equal(t, 1.0, recs[0].WallS)

	recs, err = ReadResults(filepath.Join(t.TempDir(), "missing.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, recs)
}

func mustRead(t *testing.T, p string) []Record {
	t.Helper()
	recs, err := ReadResults(p)
	require.NoError(t, err)
	return recs
}
