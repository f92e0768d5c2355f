package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xitongsys/parquet-go-source/local"
	"github.com/xitongsys/parquet-go/writer"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/cmd/dplr/cli"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/orbit"
	"github.com/dplr/dplr/plugins/pca"
)

// asMain makes the test binary act as dplr-beam itself when the host
// runs it (DPLR_BEAM points at the test binary).
const asMain = "DPLR_BEAM_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	beam.Init()
	if os.Getenv(asMain) == "1" {
		if err := editBeforePass(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(run(os.Args[1:]))
	}
	code := m.Run()
	if pluginDir != "" && pluginErr == nil {
		os.RemoveAll(pluginDir)
	}
	os.Exit(code)
}

// shards writes n×p random rows (a few of them long, so the clip bites)
// as two .npy shards in a fresh directory, and the same rows as one file;
// it returns the shards' glob, the whole file and the rows.
func shards(t *testing.T, n, p int) (glob, whole string, x []float64) {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	x = make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for i := 0; i < n; i += 7 {
		for j := 0; j < p; j++ {
			x[i*p+j] *= 5
		}
	}
	k := n / 3
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "a.npy"), []int{k, p}, x[:k*p]))
	require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, "b.npy"), []int{n - k, p}, x[k*p:]))
	whole = filepath.Join(t.TempDir(), "whole.npy")
	require.NoError(t, dataio.SaveNPYFloat64(whole, []int{n, p}, x))
	return filepath.Join(dir, "*.npy"), whole, x
}

// relErr is max|a−b| / max|b|.
func relErr(a, b mat.Matrix) float64 {
	r, c := b.Dims()
	var d, m float64
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			d = math.Max(d, math.Abs(a.At(i, j)-b.At(i, j)))
			m = math.Max(m, math.Abs(b.At(i, j)))
		}
	}
	return d / m
}

// beamPasser runs each pass as a Beam pipeline on prism over the shards
// matching glob, as `dplr-beam pass` does.
type beamPasser struct {
	glob  string
	shape *data.Remote
}

func (b beamPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return stats.RunPass(ctx, b.glob, b.shape, stats.ReadOptions{}, req, stats.Options{})
}

// remoteOf is the rows data set of n×p values in the shards matching glob,
// reached only through passes run on Beam.
func remoteOf(glob string, n, p int) *data.Dataset {
	return &data.Dataset{Kind: data.Rows, Remote: &data.Remote{N: n, P: p, Passer: beamPasser{glob, &data.Remote{N: n, P: p}}}}
}

// TestStatsRemoved: the former stats subcommand is refused as a usage
// error (its aggregates are the rows.moment pass of a fit through passes).
func TestStatsRemoved(t *testing.T) {
	glob, _, _ := shards(t, 30, 3)
	assert.Equal(t, 2, run([]string{"stats", "--data", glob, "--clip", "1", "--out", t.TempDir()}))
	assert.Equal(t, 2, run([]string{"stats", "--help"}))
}

// TestReleaseEqualsSingleMachine: with the same seed, each estimator that
// had a path from aggregated statistics releases, through passes run on
// Beam over the shards, what it releases from the rows: the same privacy
// steps, the same guarantee and the same outputs (to rounding).
func TestReleaseEqualsSingleMachine(t *testing.T) {
	const n, p = 300, 6
	glob, whole, _ := shards(t, n, p)
	rows, err := dataio.Load(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	seed := uint64(11)
	cases := []struct {
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{pca.AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "3", "center": "none"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}},
		{pca.CXZ{}, map[string]string{"rank": "1", "sigma2": "1", "lambda": "2"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}},
		{pca.CXZ{}, map[string]string{"rank": "1", "sigma2": "1", "lambda": "2", "clip": "3"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}},
		{pca.Amin{}, map[string]string{"rank": "2", "clip": "3", "center": "none"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 2}},
		{pca.Amin{}, map[string]string{"rank": "2", "clip": "3", "center": "none"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 2, Delta: 1e-6}},
		{orbit.Gauss{}, map[string]string{"rank": "2", "clip": "3"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}},
		{orbit.EM{}, map[string]string{"rank": "1", "clip": "3"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 2}},
		{orbit.RankK{}, map[string]string{"rank": "1", "clip": "3"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 2}},
		{orbit.Deflation{}, map[string]string{"rank": "2", "clip": "3"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 2}},
	}
	for _, c := range cases {
		t.Run(c.est.Info().Name+"/"+string(c.grant.Kind), func(t *testing.T) {
			ds := remoteOf(glob, n, p)
			a, acctA, err := sdk.RunLocal(context.Background(), c.est, ds, c.raw, c.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			b, acctB, err := sdk.RunLocal(context.Background(), c.est, rows, c.raw, c.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			assert.Equal(t, acctB.Steps(), acctA.Steps())
			assert.Equal(t, b.Guarantee, a.Guarantee)
			byName := map[string]*mat.Dense{}
			for _, m := range b.Matrices {
				byName[m.Name] = m.M
			}
			require.NotEmpty(t, a.Matrices)
			for _, m := range a.Matrices {
				require.Contains(t, byName, m.Name)
				assert.Less(t, relErr(m.M, byName[m.Name]), 1e-9, m.Name)
			}
			pub := map[string]float64{}
			for _, s := range b.Scalars {
				pub[s.Name] = s.Value
			}
			for _, s := range a.Scalars {
				assert.InDelta(t, pub[s.Name], s.Value, 1e-9*math.Max(1, math.Abs(s.Value)), s.Name)
			}
		})
	}
}

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error
)

// buildPCA builds the pca plugin from the main module.
func buildPCA(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		pluginDir, pluginErr = os.MkdirTemp("", "dplr-beam-test")
		if pluginErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", pluginDir, "github.com/dplr/dplr/plugins/pca/cmd/dplr-pca")
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = err
			pluginDir = string(out)
		}
	})
	require.NoError(t, pluginErr, pluginDir)
	return pluginDir
}

// dplr runs the dplr command line in-process, with this test binary as
// dplr-beam.
func dplr(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("DPLR_BEAM", os.Args[0])
	t.Setenv(asMain, "1")
	var out, errb bytes.Buffer
	code := cli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// fitU reads result.json's source hash and the released U.
func fitU(t *testing.T, out string) (string, *mat.Dense) {
	t.Helper()
	var rep cli.FitReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	for _, m := range rep.Outputs.Matrices {
		if m.Name == "U" {
			u := mat.NewDense(m.Rows, m.Cols, nil)
			for i, row := range m.Value {
				u.SetRow(i, row)
			}
			return rep.Data.Source, u
		}
	}
	t.Fatalf("no U in %s", out)
	return "", nil
}

// TestFitEngineBeam: `dplr fit --engine beam` releases through the host
// what the single-machine fit releases on the same rows with the same
// seed; it charges the ledger under the rows' source identity; a failed
// pipeline spends nothing; a near copy of the rows read from a file is
// charged to the budgeted data set.
func TestFitEngineBeam(t *testing.T) {
	const n, p = 300, 6
	glob, whole, x := shards(t, n, p)
	plugins := buildPCA(t)
	home := t.TempDir()
	_, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	spent := func() float64 {
		led, err := ledger.Open(context.Background(), home)
		require.NoError(t, err)
		defer led.Close()
		st, err := led.Show(context.Background(), id.Hash)
		require.NoError(t, err)
		return st.Spent.Rho
	}
	common := []string{"--home", home, "--plugin-dir", plugins, "--rho", "0.25", "--set", "rank=2", "--set", "clip=3", "--set", "center=none", "--seed", "5", "--json", "--quiet"}

	code, _, stderr := dplr(t, "budget", "set", "--home", home, "--data", whole, "--rho", "2")
	require.Equal(t, 0, code, stderr)

	// A corrupt shard: the pipeline fails, nothing is reserved or spent.
	bad := filepath.Join(filepath.Dir(glob), "c.npy")
	require.NoError(t, os.WriteFile(bad, []byte("not an array"), 0o644))
	code, _, stderr = dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir()}, common...)...)
	assert.Equal(t, cli.ExitData, code, stderr)
	assert.Contains(t, stderr, "nothing was reserved or spent")
	assert.Zero(t, spent())
	require.NoError(t, os.Remove(bad))

	// Options that need the rows themselves (here the private feature
	// scale, which pairs rows by their position in the file) are refused
	// before any pipeline runs.
	code, _, stderr = dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir(), "--set", "feature_scale=private"}, common...)...)
	assert.Equal(t, cli.ExitUsage, code, stderr)
	assert.Contains(t, stderr, "feature_scale")
	assert.NotContains(t, stderr, "beam: pass")
	assert.Zero(t, spent())

	// The catalogue says which estimators run through passes.
	code, cat, stderr := dplr(t, "plugins", "--json", "--home", home, "--plugin-dir", plugins)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, cat, `"remote": true`)
	assert.NotContains(t, cat, `"statistics"`)

	code, beamOut, stderr := dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir()}, common...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "beam: pass rows.centred_moment", "pipeline progress on stderr")
	src, uBeam := fitU(t, beamOut)
	assert.Equal(t, id.Hash, src)
	afterBeam := spent()
	assert.InDelta(t, 0.25, afterBeam, 1e-12, "the pipeline's identity is charged")

	code, fileOut, stderr := dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", whole, "--out", t.TempDir()}, common...)...)
	require.Equal(t, 0, code, stderr)
	src, uFile := fitU(t, fileOut)
	assert.Equal(t, id.Hash, src)
	assert.Less(t, relErr(uBeam, uFile), 1e-9, "same seed, same release")
	assert.InDelta(t, 0.5, spent(), 1e-12, "both runs draw on one budget")

	// A near copy (three rows edited) read from a file is counted against
	// the budgeted data set whose rows it holds.
	y := append([]float64(nil), x...)
	for i := 0; i < 3; i++ {
		y[i*p] += 1
	}
	near := filepath.Join(t.TempDir(), "near.npy")
	require.NoError(t, dataio.SaveNPYFloat64(near, []int{n, p}, y))
	code, _, stderr = dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", near, "--out", t.TempDir()}, common...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "counted against the budgeted data set")
	assert.InDelta(t, 0.75, spent(), 1e-12)

	// A private clip or private centring takes more passes, charged as
	// usual.
	noClip := slices.Clone(common)
	i := slices.Index(noClip, "clip=3")
	noClip = slices.Delete(noClip, i-1, i+1)
	centred := slices.Clone(common)
	centred[slices.Index(centred, "center=none")] = "center=private"
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"clip=auto", append(noClip, "--set", "clip=auto")},
		{"center=private", centred},
	} {
		before := spent()
		code, _, stderr = dplr(t, append([]string{"fit", "pca-analyze-gauss", "--data", glob, "--engine", "beam", "--out", t.TempDir()}, tc.flags...)...)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "aggregation pass", tc.name)
		assert.InDelta(t, before+0.25, spent(), 1e-12, tc.name)
	}
}

// writeWideParquet writes the rows x (p = 4 features) as a Parquet file
// whose columns are, in order: an INT64 id, the features in the order
// c, a, d, b, a text note, a numeric weight, and a list column holding
// the features in their order a, b, c, d and another list column; the
// id, the weight and the other list are numeric columns that are not
// features.
func writeWideParquet(t *testing.T, path string, x []float64, first int) {
	t.Helper()
	type wideRow struct {
		ID    int64     `parquet:"name=id, type=INT64"`
		C     float64   `parquet:"name=c, type=DOUBLE"`
		A     float64   `parquet:"name=a, type=DOUBLE"`
		D     float64   `parquet:"name=d, type=DOUBLE"`
		B     float64   `parquet:"name=b, type=DOUBLE"`
		Note  string    `parquet:"name=note, type=BYTE_ARRAY, convertedtype=UTF8"`
		W     float64   `parquet:"name=w, type=DOUBLE"`
		V     []float64 `parquet:"name=v, type=LIST, valuetype=DOUBLE"`
		Other []float64 `parquet:"name=other, type=LIST, valuetype=DOUBLE"`
	}
	fw, err := local.NewLocalFileWriter(path)
	require.NoError(t, err)
	defer fw.Close()
	pw, err := writer.NewParquetWriter(fw, new(wideRow), 1)
	require.NoError(t, err)
	for i := 0; i < len(x)/4; i++ {
		r := x[i*4 : (i+1)*4]
		require.NoError(t, pw.Write(wideRow{ID: int64(first + i), A: r[0], B: r[1], C: r[2], D: r[3],
			Note: fmt.Sprintf("row %d", first+i), W: float64(i % 5), V: slices.Clone(r), Other: []float64{1, float64(i)}}))
	}
	require.NoError(t, pw.WriteStop())
}

// aggregates are a shards data set's source identity (describe) and its
// clipped sum and second moment (the rows.moment pass).
type aggregates struct {
	id     dataio.Identity
	n      int64
	sum    *mat.Dense
	moment *mat.Dense
}

// momentArgs parses the shard flags args as describe does, then describes
// the shards and runs the rows.moment pass at clip 3 over them.
func momentArgs(t *testing.T, args ...string) aggregates {
	t.Helper()
	f := newPassFlags("describe", false)
	require.Equal(t, 0, f.parse(args))
	opt, ro := f.options()
	ctx := context.Background()
	desc, err := stats.Describe(ctx, *f.data, data.Rows, 0, 0, opt)
	require.NoError(t, err)
	res, err := stats.RunPass(ctx, *f.data, desc.Remote(), ro, pass.RowsMomentKind.EncodeRequest(nil, pass.MomentRequest{Clip: 3}), opt)
	require.NoError(t, err)
	sum, _ := res.Output("sum")
	mom, _ := res.Output("moment")
	return aggregates{id: desc.Identity.Identity(), n: res.Records, sum: mat.NewDense(1, desc.P, sum.Data), moment: mat.NewDense(desc.P, desc.P, mom.Data)}
}

// TestColumnFlags: Parquet shards with extra columns (an id, a note, a
// weight, a second list), and CSV shards with extra columns, read with
// their feature columns named on the command line, give the clipped sum
// and second moment (rows.moment) of the same rows as one .npy file. The Parquet shards' source identity is
// that of the .npy file (their records are the equivalent array source);
// the CSV shards' is that of their whole records, as dplr fit computes it
// for the one CSV file holding them with the same flags (and dplr-beam
// describe for the shards), not that of the selected columns.
func TestColumnFlags(t *testing.T) {
	const n, p = 240, 4
	_, whole, x := shards(t, n, p)
	want := momentArgs(t, "--data", whole)
	k := n / 3
	pqDir := t.TempDir()
	writeWideParquet(t, filepath.Join(pqDir, "s0.parquet"), x[:k*p], 0)
	writeWideParquet(t, filepath.Join(pqDir, "s1.parquet"), x[k*p:], k)
	csvDir := t.TempDir()
	const header = "id,b,w,a,d,c\n"
	var all strings.Builder // the one CSV file holding the shards' records
	all.WriteString(header)
	for s, part := range [][]float64{x[:k*p], x[k*p:]} {
		var b strings.Builder
		b.WriteString(header)
		for i := 0; i < len(part)/p; i++ {
			r := part[i*p : (i+1)*p]
			fmt.Fprintf(&b, "%d,%v,%d,%v,%v,%v\n", i, r[1], i%3, r[0], r[3], r[2])
		}
		all.WriteString(strings.TrimPrefix(b.String(), header))
		require.NoError(t, os.WriteFile(filepath.Join(csvDir, fmt.Sprintf("s%d.csv", s)), []byte(b.String()), 0o644))
	}
	oneCSV := filepath.Join(t.TempDir(), "all.csv")
	require.NoError(t, os.WriteFile(oneCSV, []byte(all.String()), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		// csv: the single-machine reader's options for the one CSV file
		// (nil: the identity is the .npy file's).
		csv *dataio.LoadOptions
	}{
		{"parquet scalar columns", []string{"--data", filepath.Join(pqDir, "*.parquet"), "--features", "a,b,c,d"}, nil},
		{"parquet list column", []string{"--data", filepath.Join(pqDir, "*.parquet"), "--feature-list", "v"}, nil},
		{"parquet forced format", []string{"--data", filepath.Join(pqDir, "s*"), "--format", "parquet", "--features", "a, b, c, d"}, nil},
		{"csv named columns", []string{"--data", filepath.Join(csvDir, "*.csv"), "--features", "a,b,c,d"},
			&dataio.LoadOptions{FeatureColumns: []string{"a", "b", "c", "d"}}},
		{"csv column indexes", []string{"--data", filepath.Join(csvDir, "*.csv"), "--header", "yes", "--features", "3,1,5,4"},
			&dataio.LoadOptions{Header: dataio.HeaderYes, FeatureColumns: []string{"3", "1", "5", "4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := momentArgs(t, tc.args...)
			if tc.csv == nil {
				assert.Equal(t, want.id, got.id, "source identity")
			} else {
				ds, id, err := dataio.LoadIdentity(oneCSV, *tc.csv)
				require.NoError(t, err)
				assert.Equal(t, id, got.id, "source identity: the one CSV file's")
				assert.NotEqual(t, want.id.Hash, got.id.Hash, "not the selected columns' identity")
				assert.Less(t, relErr(ds.X, mat.NewDense(n, p, x)), 1e-15, "the one CSV file's rows")
			}
			assert.Equal(t, want.n, got.n)
			assert.Less(t, relErr(got.moment, want.moment), 1e-12)
			assert.Less(t, relErr(got.sum, want.sum), 1e-12)
		})
	}
	// Without the flags the features are ambiguous (scalar and list
	// numeric columns): refused. In the CSV shards every column is one.
	assert.Equal(t, 1, run([]string{"describe", "--data", filepath.Join(pqDir, "*.parquet")}))
	got := momentArgs(t, "--data", filepath.Join(csvDir, "*.csv"))
	_, cols := got.moment.Dims()
	assert.Equal(t, 6, cols)
}

// TestReadFlags: the shard-reading flags give the read options, and
// inconsistent ones are usage errors; the usage texts list them.
func TestReadFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	registerReadFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		assert.Contains(t, readUsage, "--"+f.Name+" ")
	})
	for _, tc := range []struct {
		args []string
		want stats.ReadOptions
		err  string
	}{
		{nil, stats.ReadOptions{}, ""},
		{[]string{"--format", "Parquet", "--features", "a, b ,c", "--user-column", "uid", "--response-column", "label"},
			stats.ReadOptions{Format: "parquet", Parquet: stats.ParquetSchema{Features: []string{"a", "b", "c"}, User: "uid", Response: "label"}}, ""},
		{[]string{"--feature-list", "x", "--header", "no", "--scale", "0.5"},
			stats.ReadOptions{Header: "no", Scale: 0.5, Parquet: stats.ParquetSchema{List: "x"}}, ""},
		{[]string{"--format", "csv", "--features", "0,2"}, stats.ReadOptions{Format: "csv", Parquet: stats.ParquetSchema{Features: []string{"0", "2"}}}, ""},
		{[]string{"--format", "xls"}, stats.ReadOptions{}, "--format"},
		{[]string{"--header", "maybe"}, stats.ReadOptions{}, "--header"},
		{[]string{"--scale", "NaN"}, stats.ReadOptions{}, "--scale"},
		{[]string{"--features", "a", "--feature-list", "x"}, stats.ReadOptions{}, "give one"},
		{[]string{"--features", "a,,b"}, stats.ReadOptions{}, "empty column"},
		{[]string{"--features", "a,b,a"}, stats.ReadOptions{}, "named twice"},
		{[]string{"--user-column", "u", "--response-column", "u"}, stats.ReadOptions{}, "both name"},
		{[]string{"--features", "a,y", "--response-column", "y"}, stats.ReadOptions{}, "both a feature"},
		{[]string{"--format", "csv", "--feature-list", "x"}, stats.ReadOptions{}, "needs Parquet"},
		{[]string{"--format", "npy", "--features", "a"}, stats.ReadOptions{}, "no named columns"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			rf := registerReadFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			got, err := rf.options()
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestReadFlagRefusals: describe refuses inconsistent read flags as
// usage errors; a column name wrong for a CSV shard fails the pipeline
// with the reader's message.
func TestReadFlagRefusals(t *testing.T) {
	glob, _, _ := shards(t, 30, 3)
	for _, args := range [][]string{
		{"--features", "a", "--feature-list", "x"},
		{"--format", "xls"},
	} {
		assert.Equal(t, 2, run(append([]string{"describe", "--data", glob}, args...)), "%v", args)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.csv"), []byte("a,b\n1,2\n3,4\n"), 0o644))
	_, err := stats.Describe(context.Background(), filepath.Join(dir, "*.csv"), data.Rows, 0, 0, stats.Options{Read: stats.ReadOptions{Parquet: stats.ParquetSchema{Features: []string{"a", "c"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no column named "c" (columns: a, b)`)
}

// TestPassReadFlags: describe and pass take the same shard-reading flags
// (registerReadFlags), refusing inconsistent ones as usage
// errors.
func TestPassReadFlags(t *testing.T) {
	f := newPassFlags("describe", false)
	require.Equal(t, 0, f.parse([]string{"--data", "x/*.parquet", "--kind", "users", "--features", "a,b", "--user-column", "uid", "--response-column", "label", "--scale", "2"}))
	_, ro := f.options()
	assert.Equal(t, stats.ReadOptions{Scale: 2, Parquet: stats.ParquetSchema{Features: []string{"a", "b"}, User: "uid", Response: "label"}}, ro)
	f = newPassFlags("pass", true)
	assert.Equal(t, 2, f.parse([]string{"--data", "x", "--request", "r", "--out", "o", "--features", "a", "--feature-list", "v"}))
}
