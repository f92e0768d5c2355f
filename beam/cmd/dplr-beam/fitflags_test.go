package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/cmd/dplr/cli"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/pass"
)

// wideCSV writes the records recs under head as one file and as shards
// (cut at the given record indexes, in a fresh directory); it returns the
// shards' glob and the file.
func wideCSV(t *testing.T, head string, recs []string, cuts ...int) (glob, whole string) {
	t.Helper()
	dir := t.TempDir()
	bounds := append(append([]int{0}, cuts...), len(recs))
	for s := 0; s+1 < len(bounds); s++ {
		body := head + "\n" + strings.Join(recs[bounds[s]:bounds[s+1]], "\n") + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.csv", s)), []byte(body), 0o644))
	}
	whole = filepath.Join(t.TempDir(), "whole.csv")
	require.NoError(t, os.WriteFile(whole, []byte(head+"\n"+strings.Join(recs, "\n")+"\n"), 0o644))
	return filepath.Join(dir, "*.csv"), whole
}

// TestFitEngineBeamColumnFlags: rows in CSV shards with extra columns (an
// id, a label, a weight; the features out of order), read through `dplr
// fit --engine beam` with --features and --scale, give the release and
// the source identity of the fit on the one file with the same flags
// (through aggregation passes); so do .npy shards with --scale alone.
func TestFitEngineBeamColumnFlags(t *testing.T) {
	const n, p = 240, 4
	npyGlob, npyWhole, x := shards(t, n, p)
	var recs []string
	for i := 0; i < n; i++ {
		r := x[i*p : (i+1)*p]
		recs = append(recs, fmt.Sprintf("%d,%v,%d,%v,%v,%v,%v", i, r[1], i%3, r[0], r[3], 0.5*float64(i%7), r[2]))
	}
	glob, whole := wideCSV(t, "id,b,label,a,d,w,c", recs, 70, 71, 160)
	plugins := buildPCA(t)
	home := t.TempDir()
	common := []string{"--home", home, "--plugin-dir", plugins, "--rho", "0.25", "--set", "rank=2", "--seed", "5", "--json", "--quiet", "--scale", "0.5"}
	for _, tc := range []struct {
		name, glob, whole, path string
		flags                   []string
	}{
		{"npy, scale", npyGlob, npyWhole, "aggregation pass", []string{"--set", "clip=3", "--set", "center=none"}},
		{"features", glob, whole, "aggregation pass", []string{"--set", "clip=3", "--features", "a,b,c,d"}},
		{"features, center=private", glob, whole, "aggregation pass", []string{"--set", "clip=3", "--set", "center=private", "--features", "a,b,c,d"}},
		{"features by index, clip=auto", glob, whole, "aggregation pass", []string{"--set", "clip=auto", "--header", "yes", "--features", "3,1,6,4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, common...), tc.flags...)
			code, beamOut, stderr := dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", tc.glob, "--engine", "beam", "--out", t.TempDir()}, args...)...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stderr, tc.path)
			srcBeam, uBeam := fitU(t, beamOut)
			code, fileOut, stderr := dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", tc.whole, "--out", t.TempDir()}, args...)...)
			require.Equal(t, 0, code, stderr)
			srcFile, uFile := fitU(t, fileOut)
			assert.Equal(t, srcFile, srcBeam, "the one file's source identity")
			e := relErr(uBeam, uFile)
			t.Logf("%s: relative difference of U %.2g", tc.name, e)
			assert.Less(t, e, 1e-9, "same seed, same release")
		})
	}

	// Without --features every column is a feature: another release (7
	// columns), still the same source identity.
	code, out, stderr := dplr(t, "fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir(),
		"--home", home, "--plugin-dir", plugins, "--rho", "0.25", "--set", "rank=2", "--set", "clip=3", "--json", "--quiet")
	require.Equal(t, 0, code, stderr)
	_, u := fitU(t, out)
	r, _ := u.Dims()
	assert.Equal(t, 7, r)

	// A column the shards do not have fails the pipeline, spending
	// nothing; the user column of rows data is refused before it runs.
	code, _, stderr = dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir(), "--set", "clip=3"},
		append(common, "--features", "a,b,e")...)...)
	assert.Equal(t, cli.ExitData, code, stderr)
	assert.Contains(t, stderr, `no column named "e"`)
	assert.Contains(t, stderr, "nothing was reserved or spent")
	code, _, stderr = dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir(), "--set", "clip=3",
		"--user-column", "id"}, common...)...)
	assert.Equal(t, cli.ExitUsage, code, stderr)
	assert.Contains(t, stderr, "--user-column names the user ids of users data")
}

// TestBeamRunsLeaveNoTempFiles: a describe and a pass run by the host
// over CSV shards (prism, which leaves a loopback worker file in the
// temporary directory of each pipeline) leave nothing in the temporary
// directory nor in the work directory; the column flags reach both.
func TestBeamRunsLeaveNoTempFiles(t *testing.T) {
	const n, p = 60, 3
	_, _, x := shards(t, n, p)
	var recs []string
	for i := 0; i < n; i++ {
		r := x[i*p : (i+1)*p]
		recs = append(recs, fmt.Sprintf("%d,%v,%v,%v", i, r[2], r[0], r[1]))
	}
	glob, _ := wideCSV(t, "id,c,a,b", recs, 25)
	b, progress := beamData(t, glob, data.Rows, 0, 0)
	b.Features, b.Scale = []string{"a", "b", "c"}, 2
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx := context.Background()
	sh, id, err := host.DescribeBeam(ctx, b)
	require.NoError(t, err, progress.String())
	assert.Equal(t, &data.Remote{N: n, P: p}, sh)
	res, err := b.Passer(sh, id).Pass(ctx, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1000}})
	require.NoError(t, err, progress.String())
	// The scaled first feature's sum (column a).
	var sum float64
	for i := 0; i < n; i++ {
		sum += 2 * x[i*p]
	}
	assert.InDelta(t, sum, res.Outputs[0].Data[0], 1e-9)
	for _, d := range []string{tmp, b.Work} {
		left, err := os.ReadDir(d)
		require.NoError(t, err)
		assert.Empty(t, left, "%s after describe and pass", d)
	}
}

// TestFitEngineBeamUserColumns: users data in CSV shards whose columns
// are named by --user-column, --response-column and --features (with
// extra columns, the features out of order, a user's rows spread over the
// shards) give, through `dplr fit --engine beam`, the release and source
// identity of the fit on the one file with the same flags.
func TestFitEngineBeamUserColumns(t *testing.T) {
	const users, per, d = 24, 8, 4
	r := rand.New(rand.NewPCG(21, 22))
	w := make([]float64, users*d)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	var recs []string
	for i := 0; i < users*per; i++ {
		u := r.IntN(users)
		x := make([]float64, d)
		y := 0.1 * r.NormFloat64()
		for j := range x {
			x[j] = r.NormFloat64() / 2
			y += x[j] * w[u*d+j]
		}
		recs = append(recs, fmt.Sprintf("%d,%v,u%d,%v,%v,%v,%v,%d", i, x[2], u, x[0], y, x[1], x[3], i%5))
	}
	glob, whole := wideCSV(t, "row,c,uid,a,label,b,d,w", recs, 60, 130)
	plugins := buildPlugin(t, "github.com/dplr/dplr/plugins/fedrep/cmd/dplr-fedrep")
	home := t.TempDir()
	args := []string{"--home", home, "--plugin-dir", plugins, "--epsilon", "2", "--delta", "1e-6", "--seed", "3", "--json", "--quiet",
		"--set", "iterations=2", "--set", "rank=2", "--set", "output_v=false", "--set", "clip_w=1", "--set", "clip_y=3",
		"--user-column", "uid", "--response-column", "label", "--features", "a,b,c,d", "--scale", "2"}
	code, beamOut, stderr := dplr(t, append([]string{"fit", "fedrep-privaltmin", "--data", glob, "--engine", "beam", "--out", t.TempDir()}, args...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "aggregation pass")
	srcBeam, uBeam := fitU(t, beamOut)
	code, fileOut, stderr := dplr(t, append([]string{"fit", "fedrep-privaltmin", "--data", whole, "--out", t.TempDir()}, args...)...)
	require.Equal(t, 0, code, stderr)
	srcFile, uFile := fitU(t, fileOut)
	assert.Equal(t, srcFile, srcBeam, "the one file's source identity")
	e := relErr(uBeam, uFile)
	t.Logf("fedrep-privaltmin: relative difference of U %.2g", e)
	assert.Less(t, e, 1e-9, "same seed, same release")
}

// TestFitEngineBeamResponseColumn: trace data in CSV shards (the
// sample matrices' entries in shuffled columns, named by --features; the
// response by --response-column; an id and a weight besides) give,
// through `dplr fit --engine beam`, the release and source identity of
// the fit on the one file with the same flags.
func TestFitEngineBeamResponseColumn(t *testing.T) {
	const n, d1, d2 = 200, 3, 3
	r := rand.New(rand.NewPCG(31, 32))
	perm := r.Perm(d1 * d2)
	head := []string{"id"}
	for _, j := range perm {
		head = append(head, fmt.Sprintf("e%d", j))
	}
	head = append(head, "resp", "w")
	var recs []string
	for i := 0; i < n; i++ {
		x := make([]float64, d1*d2)
		y := 0.1 * r.NormFloat64()
		for j := range x {
			x[j] = r.NormFloat64()
			if j%(d2+1) == 0 {
				y += x[j]
			}
		}
		f := []string{fmt.Sprint(i)}
		for _, j := range perm {
			f = append(f, fmt.Sprint(x[j]))
		}
		recs = append(recs, strings.Join(append(f, fmt.Sprint(y), fmt.Sprint(i%4)), ","))
	}
	glob, whole := wideCSV(t, strings.Join(head, ","), recs, 90)
	var feats []string
	for j := 0; j < d1*d2; j++ {
		feats = append(feats, fmt.Sprintf("e%d", j))
	}
	plugins := buildPlugin(t, "github.com/dplr/dplr/plugins/rgrad/cmd/dplr-rgrad")
	home := t.TempDir()
	args := []string{"--home", home, "--plugin-dir", plugins, "--rho", "1", "--seed", "3", "--json", "--quiet",
		"--set", "rank=2", "--set", "clip_y=3", "--set", "clip=6", "--set", "iterations=4",
		"--d1", fmt.Sprint(d1), "--d2", fmt.Sprint(d2), "--response-column", "resp", "--features", strings.Join(feats, ","), "--scale", "0.5"}
	code, beamOut, stderr := dplr(t, append([]string{"fit", "rgrad-strict", "--data", glob, "--engine", "beam", "--out", t.TempDir()}, args...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "aggregation pass")
	srcBeam, uBeam := fitU(t, beamOut)
	code, fileOut, stderr := dplr(t, append([]string{"fit", "rgrad-strict", "--data", whole, "--out", t.TempDir()}, args...)...)
	require.Equal(t, 0, code, stderr)
	srcFile, uFile := fitU(t, fileOut)
	assert.Equal(t, srcFile, srcBeam, "the one file's source identity")
	e := relErr(uBeam, uFile)
	t.Logf("rgrad-strict: relative difference of U %.2g", e)
	assert.Less(t, e, 1e-9, "same seed, same release")
}

// buildPlugin builds the plugin command cmd of the main module into a
// fresh directory.
func buildPlugin(t *testing.T, cmd string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir, cmd).CombinedOutput()
	require.NoError(t, err, string(out))
	return dir
}
