package host

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// statsDir writes the statistics of n random p-dimensional rows clipped to
// clip the way dplr-beam does, lets edit change the manifest and arrays,
// and returns the directory and the rows.
func statsDir(t *testing.T, n, p int, clip float64, edit func(m *dataio.StatsManifest, sum, mom []float64)) (string, []float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	m := dataio.StatsManifest{Format: dataio.StatsFormat, Kind: data.Rows, N: int64(n), P: p, Clip: clip, Sum: "sum.npy", Moment: "moment.npy"}
	sum, mom := make([]float64, p), make([]float64, p*p)
	for i := 0; i < n; i++ {
		row := x[i*p : (i+1)*p]
		m.Identity.AddRow(row)
		var s float64
		for _, v := range row {
			s += v * v
		}
		w := 1.0
		if clip > 0 && math.Sqrt(s) > clip {
			w = clip / math.Sqrt(s)
		}
		for j := range row {
			sum[j] += w * row[j]
			for k := j; k < p; k++ {
				mom[j*p+k] += w * w * row[j] * row[k]
			}
		}
	}
	for j := 0; j < p; j++ {
		for k := 0; k < j; k++ {
			mom[j*p+k] = mom[k*p+j]
		}
	}
	if edit != nil {
		edit(&m, sum, mom)
	}
	dir := t.TempDir()
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "sum.npy"), []int{1, len(sum)}, sum))
	q := int(math.Sqrt(float64(len(mom))))
	if q*q == len(mom) {
		require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "moment.npy"), []int{q, q}, mom))
	} else {
		require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "moment.npy"), []int{p, len(mom) / p}, mom))
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, dataio.StatsManifestName), b, 0o644))
	return dir, x
}

// TestLoadStatisticsKeysTheSourceIdentity: valid statistics become a
// handle whose budget key is the source identity of the rows they
// aggregate — the key a fit on the one file holding those rows charges.
func TestLoadStatisticsKeysTheSourceIdentity(t *testing.T) {
	const n, p = 120, 5
	dir, x := statsDir(t, n, p, 2, nil)
	h, err := LoadStatistics(dir, t.TempDir())
	require.NoError(t, err)
	whole := filepath.Join(t.TempDir(), "whole.npy")
	require.NoError(t, dataio.SaveNPYFloat64(whole, []int{n, p}, x))
	_, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, id.Hash, BudgetKey(h))
	assert.Equal(t, id.Sketch, h.Source.Sketch)
	assert.Equal(t, data.Rows, h.Kind)
	assert.Equal(t, n, h.N)
	assert.Equal(t, p, h.P)
	require.NotNil(t, h.Stats)
	assert.Equal(t, 2.0, h.Stats.Clip)
	assert.Equal(t, int64(p*p), h.Stats.Moment.Count)
}

// TestLoadStatisticsRefusesHostileFiles: statistics that are malformed or
// inconsistent are refused by the host, before any budget is involved.
func TestLoadStatisticsRefusesHostileFiles(t *testing.T) {
	const n, p = 50, 4
	cases := []struct {
		name string
		edit func(m *dataio.StatsManifest, sum, mom []float64)
		want string
	}{
		{"NaN in the moment", func(_ *dataio.StatsManifest, _, mom []float64) { mom[5] = math.NaN() }, "not finite"},
		{"Inf in the sum", func(_ *dataio.StatsManifest, sum, _ []float64) { sum[1] = math.Inf(1) }, "not finite"},
		{"count mismatch", func(m *dataio.StatsManifest, _, _ []float64) { m.N = n + 1 }, "counts 50 rows but the statistics 51"},
		{"huge p", func(m *dataio.StatsManifest, _, _ []float64) { m.P = 1 << 30 }, "out of range"},
		{"p disagrees with the arrays", func(m *dataio.StatsManifest, _, _ []float64) { m.P = p + 1 }, "statistics"},
		{"not symmetric", func(_ *dataio.StatsManifest, _, mom []float64) { mom[1] += 1 }, "not symmetric"},
		{"negative diagonal", func(_ *dataio.StatsManifest, _, mom []float64) { mom[0] = -1 }, "negative"},
		{"not clipped", func(m *dataio.StatsManifest, _, _ []float64) { m.Clip = 0.01 }, "not clipped"},
		{"negative clip", func(m *dataio.StatsManifest, _, _ []float64) { m.Clip = -1 }, "clip"},
		{"path outside the directory", func(m *dataio.StatsManifest, _, _ []float64) { m.Moment = "../moment.npy" }, "plain file name"},
		{"wrong format", func(m *dataio.StatsManifest, _, _ []float64) { m.Format = "other/1" }, "format"},
		{"users kind", func(m *dataio.StatsManifest, _, _ []float64) { m.Kind = data.Users }, "only rows"},
		{"empty sketch", func(m *dataio.StatsManifest, _, _ []float64) { m.Identity.Heap = nil }, "sketch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := statsDir(t, n, p, 3, c.edit)
			_, err := LoadStatistics(dir, t.TempDir())
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("wrong moment shape", func(t *testing.T) {
		dir, _ := statsDir(t, n, p, 3, nil)
		require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "moment.npy"), []int{p, p - 1}, make([]float64, p*(p-1))))
		_, err := LoadStatistics(dir, t.TempDir())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "want 4×4")
	})
	t.Run("oversized array file", func(t *testing.T) {
		dir, _ := statsDir(t, n, p, 3, nil)
		require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "sum.npy"), []int{1, 1 << 14}, make([]float64, 1<<14)))
		_, err := LoadStatistics(dir, t.TempDir())
		require.Error(t, err)
	})
	t.Run("unknown manifest field", func(t *testing.T) {
		dir, _ := statsDir(t, n, p, 3, nil)
		require.NoError(t, os.WriteFile(filepath.Join(dir, dataio.StatsManifestName), []byte(`{"format":"dplr-statistics/1","rows":[[1,2]]}`), 0o644))
		_, err := LoadStatistics(dir, t.TempDir())
		require.Error(t, err)
	})
	t.Run("missing manifest", func(t *testing.T) {
		_, err := LoadStatistics(t.TempDir(), t.TempDir())
		require.Error(t, err)
	})
}

// TestRunnerRefusesStatisticsWithoutAPath: statistics sent to an estimator
// without a from-statistics path are refused before anything is reserved.
func TestRunnerRefusesStatisticsWithoutAPath(t *testing.T) {
	r, led := runnerFor(t, "ok")
	dir, _ := statsDir(t, 10, 2, 3, nil)
	h, err := LoadStatistics(dir, t.TempDir())
	require.NoError(t, err)
	_, err = r.Fit(context.Background(), FitRequest{Estimator: "bad-ok", Grant: zcdpGrant, Data: h})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrStatistics), err)
	assert.True(t, errors.Is(err, ErrUsage), err)
	runs, err := led.History(context.Background(), BudgetKey(h))
	require.NoError(t, err)
	assert.Empty(t, runs, "nothing reserved")
}
