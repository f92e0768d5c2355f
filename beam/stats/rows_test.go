package stats

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	sum, err := kernel.ClippedSum(context.Background(), xm, c)
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
