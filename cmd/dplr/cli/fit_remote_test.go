package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/pass"
)

// remoteRowsFile writes a small rows data set as .npy.
func remoteRowsFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rows.npy")
	x := make([]float64, 0, 40*4)
	for i := 0; i < 40; i++ {
		for j := 0; j < 4; j++ {
			x = append(x, float64((i*7+j*3)%11)/5-1)
		}
	}
	require.NoError(t, dataio.SaveNPYFloat64(path, []int{40, 4}, x))
	return path
}

// standInPipeline replaces dplr-beam by passes over the file read in
// memory (pass.Local), with the file's own source identity, and counts
// the describe calls; fail makes describe fail.
func standInPipeline(t *testing.T, file string, fail error) *int {
	return standInPipelineWith(t, file, fail, nil)
}

// standInPipelineWith is standInPipeline with the passes run by wrap of
// the in-memory passer (when wrap is set).
func standInPipelineWith(t *testing.T, file string, fail error, wrap func(data.Passer) data.Passer) *int {
	t.Helper()
	t.Setenv("DPLR_BEAM", "/bin/true")
	calls := new(int)
	old := describeRemote
	t.Cleanup(func() { describeRemote = old })
	describeRemote = func(ctx context.Context, b client.BeamShards) (*data.Remote, dataio.Identity, data.Passer, error) {
		*calls++
		if fail != nil {
			return nil, dataio.Identity{}, nil, fail
		}
		ds, err := dataio.Load(file, dataio.LoadOptions{Kind: b.Kind})
		if err != nil {
			return nil, dataio.Identity{}, nil, err
		}
		h, err := dataio.PrepareFileContext(ctx, file, dataio.LoadOptions{Kind: b.Kind}, t.TempDir())
		if err != nil {
			return nil, dataio.Identity{}, nil, err
		}
		sh := *pass.ShapeOf(ds)
		p := pass.Local(ds)
		if wrap != nil {
			p = wrap(p)
		}
		return &sh, *h.Source, p, nil
	}
	return calls
}

func matrixValue(t *testing.T, stdout, name string) []float64 {
	t.Helper()
	var rep FitReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	for _, m := range rep.Outputs.Matrices {
		if m.Name == name {
			require.Len(t, m.Value, 1)
			return m.Value[0]
		}
	}
	t.Fatalf("no matrix %s", name)
	return nil
}

// TestFitBeamRemote: `dplr fit EST --engine beam` for an estimator with a
// path through aggregation passes describes the shards before reserving,
// runs each pass the plugin asks for in the host, releases what the fit on
// the file releases with the same seed, and charges the file's budget
// (the same source identity).
func TestFitBeamRemote(t *testing.T) {
	home := t.TempDir()
	file := remoteRowsFile(t)
	calls := standInPipeline(t, file, nil)
	// passes=2: the fit asks for the same pass twice.
	args := []string{"--rho", "0.5", "--seed", "3", "--set", "clip=1.5", "--set", "passes=2", "--json", "--quiet"}
	r := dplr(t, home, append([]string{"fit", "remote-mean", "--data", "shards/*.npy", "--engine", "beam", "--out", t.TempDir()}, args...)...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Equal(t, 1, *calls)
	remote := matrixValue(t, r.stdout, "mean")
	l := dplr(t, home, append([]string{"fit", "remote-mean", "--data", file, "--out", t.TempDir()}, args...)...)
	require.Equal(t, ExitOK, l.code, l.stderr)
	assert.Equal(t, matrixValue(t, l.stdout, "mean"), remote, "the same release as on the file, bit for bit")
	assert.Len(t, history(t, home, file), 2, "both runs draw on the file's budget")

	r = dplr(t, home, "plugins", "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"remote": true`)
	r = dplr(t, home, "describe", "remote-mean")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "--engine beam: through aggregation passes")
}

// TestFitBeamRemoteRefusals: refusals before the reservation spend
// nothing.
func TestFitBeamRemoteRefusals(t *testing.T) {
	file := remoteRowsFile(t)
	cases := []struct {
		name string
		fail error
		args []string
		code int
		want string
	}{
		{"describe fails", errors.New("shard 2 is corrupt"), []string{"remote-mean", "--set", "passes=2"}, ExitData, "shard 2 is corrupt; nothing was reserved or spent"},
		{"no remote path", nil, []string{"leaky-mean"}, ExitUsage, "has no path through aggregation passes"},
		{"wrong kind", nil, []string{"remote-mean", "--kind", "trace"}, ExitUsage, "takes rows data"},
		{"d1 on rows", nil, []string{"remote-mean", "--d1", "2", "--d2", "2"}, ExitUsage, "for trace data"},
		{"unsupported flag", nil, []string{"remote-mean", "--delimiter", ";"}, ExitUsage, "--delimiter is not supported"},
		{"side file", nil, []string{"remote-mean", "--users", "u.npy"}, ExitUsage, "--users is not supported there (put the user ids in a column of each shard (--user-column))"},
		{"user column on rows", nil, []string{"remote-mean", "--user-column", "u"}, ExitUsage, "--user-column names the user ids of users data; remote-mean takes rows data"},
		{"response column on rows", nil, []string{"remote-mean", "--response-column", "y"}, ExitUsage, "takes rows data (name its feature columns with --features"},
		{"features twice", nil, []string{"remote-mean", "--features", "a,b,a"}, ExitUsage, `column "a" named twice`},
		{"features and list", nil, []string{"remote-mean", "--features", "a", "--feature-list", "v"}, ExitUsage, "give one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			standInPipeline(t, file, tc.fail)
			args := append([]string{"fit"}, tc.args...)
			args = append(args, "--data", "shards/*", "--engine", "beam", "--rho", "0.5", "--quiet", "--out", t.TempDir())
			r := dplr(t, home, args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Empty(t, history(t, home, file), "nothing was reserved")
		})
	}
}

// brokenPasser is a pipeline that fails every pass.
type brokenPasser struct{}

func (brokenPasser) Pass(context.Context, data.PassRequest) (*data.PassResult, error) {
	return nil, errors.New("dplr-beam pass: shard 4 changed since describe")
}

// TestFitBeamRemotePassFails: a pass the pipeline fails after the
// reservation ends the fit as a data error, refunded (no privacy step was
// taken before it).
func TestFitBeamRemotePassFails(t *testing.T) {
	home := t.TempDir()
	file := remoteRowsFile(t)
	standInPipelineWith(t, file, nil, func(data.Passer) data.Passer { return brokenPasser{} })
	r := dplr(t, home, "fit", "remote-mean", "--data", "shards/*", "--engine", "beam", "--rho", "0.5", "--set", "passes=2", "--quiet", "--out", t.TempDir())
	assert.Equal(t, ExitData, r.code, r.stderr)
	assert.Contains(t, r.stderr, "shard 4 changed since describe")
	assert.Contains(t, r.stderr, "refunded")
	runs := history(t, home, file)
	require.Len(t, runs, 1)
	assert.Equal(t, true, runs[0]["refunded"], runs[0])
}

// TestFitBeamThroughPasses: every fit with --engine beam goes through
// passes (there is no statistics pipeline): the default request and one
// selecting CSV columns with --features each describe the shards once and
// succeed.
func TestFitBeamThroughPasses(t *testing.T) {
	home := t.TempDir()
	file := remoteRowsFile(t)
	calls := standInPipeline(t, file, nil)
	for i, extra := range [][]string{nil, {"--features", "0,1,2,3"}} {
		args := append([]string{"fit", "remote-mean", "--data", "shards/*", "--engine", "beam", "--rho", "0.5", "--quiet", "--out", t.TempDir()}, extra...)
		r := dplr(t, home, args...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		assert.NotContains(t, r.stderr, "statistics")
		assert.Equal(t, i+1, *calls, "described for passes")
	}
}

// TestFitBeamReadFlags: the shard-reading flags of `dplr fit --engine
// beam` reach the pipeline with dplr fit's meaning (here the stand-in
// sees them), and --feature-list needs --engine beam.
func TestFitBeamReadFlags(t *testing.T) {
	home := t.TempDir()
	file := remoteRowsFile(t)
	standInPipeline(t, file, nil)
	var got client.BeamShards
	inner := describeRemote
	describeRemote = func(ctx context.Context, b client.BeamShards) (*data.Remote, dataio.Identity, data.Passer, error) {
		got = b
		return inner(ctx, b)
	}
	r := dplr(t, home, "fit", "remote-mean", "--data", "shards/*.csv", "--engine", "beam", "--rho", "0.5", "--set", "clip=1.5", "--set", "passes=2",
		"--quiet", "--out", t.TempDir(), "--format", "csv", "--header", "yes", "--scale", "0.5", "--features", "a,3")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Equal(t, "csv", got.Format)
	assert.Equal(t, "yes", got.Header)
	assert.Equal(t, 0.5, got.Scale)
	assert.Equal(t, []string{"a", "3"}, got.Features)
	assert.NotEmpty(t, got.Work)
	assert.NoDirExists(t, got.Work, "the work directory is removed after the fit")

	r = dplr(t, home, "fit", "remote-mean", "--data", file, "--rho", "0.5", "--feature-list", "v", "--quiet")
	assert.Equal(t, ExitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "need --engine beam")
}
