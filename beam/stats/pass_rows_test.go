package stats

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/pca"
)

// maxRel is max |a − b| / max |b|.
func maxRel(a, b []float64) float64 {
	var d, m float64
	for i := range b {
		d = math.Max(d, math.Abs(a[i]-b[i]))
		m = math.Max(m, math.Abs(b[i]))
	}
	return d / math.Max(m, 1e-300)
}

// rowsBeamPasser runs every pass as a Beam pipeline on prism over the shards.
type rowsBeamPasser struct {
	glob  string
	shape *data.Remote
	ro    ReadOptions
	kinds []string
}

func (b *rowsBeamPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	b.kinds = append(b.kinds, req.Kind)
	return RunPass(ctx, b.glob, b.shape, b.ro, req, Options{})
}

// TestRowsPassesMatchLocal: on prism, every rows pass kind over shards
// (npy and CSV) equals its reference implementation (pass.Local) over the
// one file holding the same rows: the norm counts exactly (with a norm on
// a grid point), sums and moments to 1e-12 relative.
func TestRowsPassesMatchLocal(t *testing.T) {
	const n, p = 1200, 9
	x := synth(n, p, 3)
	copy(x[5*p:6*p], []float64{0.5, 0, 0, 0, 0, 0, 0, 0, 0}) // norm 2⁻¹, a grid point
	dir := t.TempDir()
	whole := writeShards(t, dir, x, p, []int{400, 1, 399, 400}, true)
	ds, err := dataio.Load(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	shape := pass.ShapeOf(ds)
	glob := filepath.Join(dir, "shard-*")
	grid := kernel.DefaultGrid() // the private norm quantile's public grid
	mu := make([]float64, p)
	for j := range mu {
		mu[j] = 0.1 * float64(j-4)
	}
	for _, tc := range []struct {
		name string
		req  data.PassRequest
	}{
		{"moment", pass.RowsMomentKind.EncodeRequest(shape, pass.MomentRequest{Clip: 3})},
		{"histogram", pass.RowsNormHistogramKind.EncodeRequest(shape, pass.NormHistogramRequest{Grid: grid})},
		{"centred histogram", pass.RowsNormHistogramKind.EncodeRequest(shape, pass.NormHistogramRequest{Grid: grid, Center: mu})},
		{"clipped sum", pass.RowsClippedSumKind.EncodeRequest(shape, pass.ClippedSumRequest{Clip: 2.5})},
		{"plain sum", pass.RowsClippedSumKind.EncodeRequest(shape, pass.ClippedSumRequest{})},
		{"centred moment", pass.RowsCentredMomentKind.EncodeRequest(shape, pass.CentredMomentRequest{Clip: 3, Center: mu})},
		{"unclipped moment", pass.RowsCentredMomentKind.EncodeRequest(shape, pass.CentredMomentRequest{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := pass.Local(ds).Pass(context.Background(), tc.req)
			require.NoError(t, err)
			got, err := RunPass(context.Background(), glob, shape, ReadOptions{}, tc.req, Options{})
			require.NoError(t, err)
			assert.Equal(t, want.Records, got.Records)
			require.Len(t, got.Outputs, len(want.Outputs))
			for k, w := range want.Outputs {
				g := got.Outputs[k]
				require.Equal(t, w.Name, g.Name)
				if tc.req.Kind == pass.RowsNormHistogram {
					assert.Equal(t, w.Data, g.Data, "counts")
					continue
				}
				rel := maxRel(g.Data, w.Data)
				t.Logf("%s: relative difference %.3g", w.Name, rel)
				assert.Less(t, rel, 1e-12)
			}
			assert.Equal(t, want.Scalars, got.Scalars)
		})
	}
}

// TestRowsPassRefusesBadRequest: the Beam side validates a request as the
// host does, before any pipeline runs, and refuses shards that changed.
func TestRowsPassRefusesBadRequest(t *testing.T) {
	shape := &data.Remote{N: 10, P: 3}
	_, err := RunPass(context.Background(), "/nonexistent/*", shape, ReadOptions{},
		pass.RowsClippedSumKind.EncodeRequest(shape, pass.ClippedSumRequest{Clip: -1}), Options{})
	assert.ErrorContains(t, err, "negative")
	_, err = RunPass(context.Background(), "/nonexistent/*", shape, ReadOptions{},
		data.PassRequest{Kind: "rows.nothing"}, Options{})
	assert.ErrorContains(t, err, "unknown kind")

	dir := t.TempDir()
	writeShards(t, dir, synth(30, 3, 1), 3, []int{10, 20}, false)
	_, err = RunPass(context.Background(), filepath.Join(dir, "shard-*"), &data.Remote{N: 31, P: 3}, ReadOptions{},
		pass.RowsClippedSumKind.EncodeRequest(&data.Remote{N: 31, P: 3}, pass.ClippedSumRequest{Clip: 1}), Options{})
	assert.ErrorContains(t, err, "the data changed")
}

// TestAnalyzeGaussAutoClipThroughBeam: pca-analyze-gauss with clip=auto
// and center=private (an automatic mean clip: three private quantiles, a
// private mean in two steps, the second moment) run with every pass on prism declares
// the single-machine fit's steps and releases its values to 1e-12
// relative with the same seed.
func TestAnalyzeGaussAutoClipThroughBeam(t *testing.T) {
	const n, p = 2000, 8
	x := synth(n, p, 4)
	for i := 0; i < n; i++ {
		x[i*p] += 3
	}
	dir := t.TempDir()
	whole := writeShards(t, dir, x, p, []int{700, 600, 700}, false)
	ds, err := dataio.Load(whole, dataio.LoadOptions{})
	require.NoError(t, err)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	raw := map[string]string{"rank": "2", "center": "private"}
	seed := uint64(9)
	want, wacct, err := sdk.RunLocal(context.Background(), pca.AnalyzeGauss{}, ds, raw, grant, sdk.LocalOptions{Seed: &seed, Backend: backend.Gonum{}})
	require.NoError(t, err)
	bp := &rowsBeamPasser{glob: filepath.Join(dir, "shard-*"), shape: pass.ShapeOf(ds)}
	got, gacct, err := sdk.RunLocal(context.Background(), pca.AnalyzeGauss{}, pass.RemoteOf(ds, bp), raw, grant, sdk.LocalOptions{Seed: &seed, Backend: backend.Gonum{}})
	require.NoError(t, err)
	assert.Equal(t, []string{pass.RowsNormHistogram, pass.RowsClippedSum, pass.RowsNormHistogram, pass.RowsClippedSum, pass.RowsNormHistogram, pass.RowsCentredMoment}, bp.kinds)
	assert.Equal(t, wacct.Steps(), gacct.Steps())
	for _, name := range []string{"U", "mean"} {
		rel := maxRel(mat.DenseCopyOf(resultMatrix(t, got, name)).RawMatrix().Data, mat.DenseCopyOf(resultMatrix(t, want, name)).RawMatrix().Data)
		t.Logf("%s: relative difference %.3g", name, rel)
		assert.Less(t, rel, 1e-12)
	}
	for k, s := range want.Series {
		assert.Less(t, maxRel(got.Series[k].Values, s.Values), 1e-12, s.Name)
	}
	for k, s := range want.Scalars {
		assert.Less(t, maxRel([]float64{got.Scalars[k].Value}, []float64{s.Value}), 1e-12, s.Name)
	}
}

// TestFashionMNISTAutoClipThroughBeam is the headline fit (pca-analyze-gauss,
// rank 10, clip=auto, center=private, ε = 1, δ = 1e-6, pixels scaled by
// 1/255) with every pass a prism pipeline over the 60,000 training images in
// 6 .npy shards, beside the single-machine fit, same seed, interleaved
// rounds. It runs only when DPLR_FMNIST names the IDX file
// (bench/results/beam-host.md gives the command and the figures).
func TestFashionMNISTAutoClipThroughBeam(t *testing.T) {
	path := os.Getenv("DPLR_FMNIST")
	if path == "" {
		t.Skip("DPLR_FMNIST not set")
	}
	defer func(b int) { splitBytes = b }(splitBytes)
	splitBytes = 32 << 20
	rawds, err := dataio.Load(path, dataio.LoadOptions{})
	require.NoError(t, err)
	n, p := rawds.X.Dims()
	dir := t.TempDir()
	const shards = 6
	for k := 0; k < shards; k++ {
		a, b := k*n/shards, (k+1)*n/shards
		part := mat.DenseCopyOf(rawds.X.Slice(a, b, 0, p))
		require.NoError(t, dataio.SaveNPYFloat64(filepath.Join(dir, fmt.Sprintf("part-%d.npy", k)), []int{b - a, p}, part.RawMatrix().Data))
	}
	const scale = 1.0 / 255
	ds, err := dataio.Load(path, dataio.LoadOptions{Scale: scale})
	require.NoError(t, err)
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	raw := map[string]string{"rank": "10", "center": "private"}
	seed := uint64(7)
	for r := 0; r < 3; r++ {
		load, _ := os.ReadFile("/proc/loadavg")
		t0 := time.Now()
		want, wacct, err := sdk.RunLocal(context.Background(), pca.AnalyzeGauss{}, ds, raw, grant, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		tLocal := time.Since(t0)
		bp := &rowsBeamPasser{glob: filepath.Join(dir, "part-*.npy"), shape: pass.ShapeOf(ds), ro: ReadOptions{Scale: scale}}
		t0 = time.Now()
		got, gacct, err := sdk.RunLocal(context.Background(), pca.AnalyzeGauss{}, pass.RemoteOf(ds, bp), raw, grant, sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		tBeam := time.Since(t0)
		assert.Equal(t, wacct.Steps(), gacct.Steps())
		t.Logf("round %d: single machine %.1f s, prism (%d passes %v) %.1f s, load %s", r+1, tLocal.Seconds(), len(bp.kinds), bp.kinds, tBeam.Seconds(), strings.Fields(string(load))[0])
		if r > 0 {
			continue
		}
		u, v := resultMatrix(t, want, "U"), resultMatrix(t, got, "U")
		t.Logf("U: max |u − u'| / max |u| = %.3g; mean: relative difference %.3g", maxRel(mat.DenseCopyOf(v).RawMatrix().Data, mat.DenseCopyOf(u).RawMatrix().Data),
			maxRel(resultMatrix(t, got, "mean").RawMatrix().Data, resultMatrix(t, want, "mean").RawMatrix().Data))
		for k, s := range want.Series {
			t.Logf("%s: relative difference %.3g", s.Name, maxRel(got.Series[k].Values, s.Values))
		}
		for k, s := range want.Scalars {
			t.Logf("%s: single machine %.17g, prism %.17g", s.Name, s.Value, got.Scalars[k].Value)
		}
	}
}

// synth returns n×p rows with a few large rows (so that the clip bites).
func synth(n, p int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n*p)
	for i := range x {
		x[i] = r.NormFloat64() * 0.3
	}
	for i := 0; i < n; i += 17 {
		for j := 0; j < p; j++ {
			x[i*p+j] *= 10
		}
	}
	return x
}

// writeShards writes x as shards of the given row counts (npy, or CSV
// for every other shard when mixed) and the whole matrix as one file.
func writeShards(t *testing.T, dir string, x []float64, p int, sizes []int, mixed bool) string {
	t.Helper()
	at := 0
	for k, m := range sizes {
		part := x[at*p : (at+m)*p]
		at += m
		name := filepath.Join(dir, "shard-"+string(rune('a'+k)))
		if mixed && k%2 == 1 {
			var b strings.Builder
			for i := 0; i < m; i++ {
				for j := 0; j < p; j++ {
					if j > 0 {
						b.WriteByte(',')
					}
					b.WriteString(formatFloat(part[i*p+j]))
				}
				b.WriteByte('\n')
			}
			require.NoError(t, os.WriteFile(name+".csv", []byte(b.String()), 0o644))
			continue
		}
		require.NoError(t, dataio.SaveNPYFloat64(name+".npy", []int{m, p}, part))
	}
	whole := filepath.Join(t.TempDir(), "whole.npy")
	require.NoError(t, dataio.SaveNPYFloat64(whole, []int{len(x) / p, p}, x))
	return whole
}

func formatFloat(v float64) string { return strconvFormat(v) }

// reference computes the statistics the single-machine way: the kernels
// over the rows in memory.
func reference(x []float64, p int, c float64) (n int, sum []float64, moment *mat.SymDense) {
	n = len(x) / p
	xm := mat.NewDense(n, p, x)
	sum, err := kernel.ClippedSum(context.Background(), xm, nil, c)
	if err != nil {
		panic(err)
	}
	moment, _, err = kernel.SecondMoment(context.Background(), xm, nil, c, 1/float64(n), nil)
	if err != nil {
		panic(err)
	}
	return n, sum, moment
}

func relErr(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return mat.Norm(&d, 2) / math.Max(mat.Norm(b, 2), 1e-300)
}

// momentOf runs the rows.moment pass at clip c on prism over the shards
// matching glob (n rows of p values) and returns its count, clipped sum
// and clipped second moment divided by the count (shards read with ro).
func momentOf(glob string, n, p int, c float64, ro ReadOptions) (int64, []float64, *mat.SymDense, error) {
	req := pass.RowsMomentKind.EncodeRequest(nil, pass.MomentRequest{Clip: c})
	res, err := RunPass(context.Background(), glob, &data.Remote{N: n, P: p}, ro, req, Options{})
	if err != nil {
		return 0, nil, nil, err
	}
	sum, _ := res.Output("sum")
	mom, _ := res.Output("moment")
	m := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			m.SetSym(i, j, mom.Data[i*p+j]/float64(res.Records))
		}
	}
	return res.Records, sum.Data, m, nil
}

// TestRowsMatchesSingleMachine: on prism, the sharded rows.moment pass's
// count, clipped sum and clipped second moment and the description's
// source identity equal the single-machine path on the one file holding
// the same rows, and the pca-analyze-gauss release from the pass's second
// moment with the same seed is identical to the single-machine fit.
func TestRowsMatchesSingleMachine(t *testing.T) {
	const n, p, c = 2000, 12, 3.0
	x := synth(n, p, 1)
	for _, tc := range []struct {
		name  string
		sizes []int
		mixed bool
	}{
		{"npy shards", []int{700, 1, 599, 700}, false},
		{"npy and csv shards", []int{500, 500, 500, 500}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			whole := writeShards(t, dir, x, p, tc.sizes, tc.mixed)
			glob := filepath.Join(dir, "shard-*")
			gotN, gotSum, gotM, err := momentOf(glob, n, p, c, ReadOptions{})
			require.NoError(t, err)

			wn, wsum, wm := reference(x, p, c)
			require.EqualValues(t, wn, gotN)
			assert.Less(t, relErr(mat.NewVecDense(p, gotSum), mat.NewVecDense(p, wsum)), 1e-12)
			assert.Less(t, relErr(gotM, wm), 1e-12)

			ds, id, err := dataio.LoadIdentity(whole, dataio.LoadOptions{})
			require.NoError(t, err)
			desc, err := Describe(context.Background(), glob, data.Rows, 0, 0, Options{})
			require.NoError(t, err)
			assert.Equal(t, id, desc.Identity.Identity(), "source identity")

			seed := uint64(5)
			grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
			raw := map[string]string{"rank": "2", "clip": "3", "center": "none"}
			want, _, err := sdk.RunLocal(context.Background(), pca.AnalyzeGauss{}, ds, raw, grant, sdk.LocalOptions{Seed: &seed, Backend: backend.Gonum{}})
			require.NoError(t, err)
			acct, err := privacy.NewAccountant(grant)
			require.NoError(t, err)
			rel, err := pca.AnalyzeGaussFromCov(context.Background(), &sdk.Run{Acct: acct, Rand: privacy.NewSeededSource(seed), Backend: backend.Gonum{}}, raw, gotM, int(gotN))
			require.NoError(t, err)
			assert.True(t, mat.Equal(resultMatrix(t, want, "U"), resultMatrix(t, rel, "U")), "same seed, same release")
		})
	}
}

func resultMatrix(t *testing.T, res *sdk.Result, name string) *mat.Dense {
	t.Helper()
	for _, m := range res.Matrices {
		if m.Name == name {
			return m.M
		}
	}
	t.Fatalf("no matrix %q", name)
	return nil
}

// TestRowsReaderErrors: an empty shard, a corrupt shard and a NaN row fail
// the rows.moment pass with the single-machine reader's error for that file.
func TestRowsReaderErrors(t *testing.T) {
	const p = 4
	x := synth(40, p, 2)
	for _, tc := range []struct {
		name  string
		write func(path string) string // writes the bad shard, returns its name
	}{
		{"empty shard", func(dir string) string {
			f := filepath.Join(dir, "shard-z.npy")
			require.NoError(t, os.WriteFile(f, nil, 0o644))
			return f
		}},
		{"corrupt shard", func(dir string) string {
			f := filepath.Join(dir, "shard-z.npy")
			require.NoError(t, os.WriteFile(f, []byte("\x93NUMPY\x01\x00garbage"), 0o644))
			return f
		}},
		{"NaN row", func(dir string) string {
			f := filepath.Join(dir, "shard-z.csv")
			require.NoError(t, os.WriteFile(f, []byte("1,2,3,4\n1,NaN,3,4\n"), 0o644))
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeShards(t, dir, x, p, []int{20, 20}, false)
			bad := tc.write(dir)
			_, want := dataio.Load(bad, dataio.LoadOptions{})
			require.Error(t, want)
			_, _, _, err := momentOf(filepath.Join(dir, "shard-*"), 40, p, 1, ReadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), want.Error())
		})
	}
}
