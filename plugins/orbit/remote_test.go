package orbit

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// relDiff is max |a − b| / max |b|.
func relDiff(a, b []float64) float64 {
	var d, m float64
	for i := range b {
		d = math.Max(d, math.Abs(a[i]-b[i]))
		m = math.Max(m, math.Abs(b[i]))
	}
	return d / math.Max(m, 1e-300)
}

// varied returns the orbit test data with rows of varied norms (so that
// clip=auto's quantile and the clip both matter).
func varied(t testing.TB) *data.Dataset {
	ds := genData(t, 600, 8, 2, 4)
	x := mat.DenseCopyOf(ds.X)
	n, _ := x.Dims()
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		for j := range row {
			row[j] *= 0.5 + float64(i%7)/4
		}
	}
	return &data.Dataset{Kind: data.Rows, X: x, Name: "varied"}
}

// TestRemoteEqualsLocal: the private orbit estimators through aggregation
// passes (clip=auto: the norm counts, then A) declare the local fit's
// steps and, with the same seed, release its values up to summation order.
func TestRemoteEqualsLocal(t *testing.T) {
	ds := varied(t)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	for _, tc := range []struct {
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{Gauss{}, map[string]string{"rank": "2"}, approx},
		{Gauss{}, map[string]string{"rank": "2", "clip": "1.2", "spectrum": "private"}, approx},
		{EM{}, map[string]string{"rank": "1"}, pure(2)},
		{RankK{}, map[string]string{"rank": "2"}, pure(2)},
		{Deflation{}, map[string]string{"rank": "2"}, pure(2)},
		{EM{}, map[string]string{"rank": "2", "evaluate": "true"}, pure(2)},
		{Gauss{}, map[string]string{"rank": "2", "evaluate": "true"}, approx},
	} {
		t.Run(tc.est.Info().Name+" "+tc.raw["clip"], func(t *testing.T) {
			seed := uint64(13)
			want, wacct, err := sdk.RunLocal(context.Background(), tc.est, ds, tc.raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			got, gacct, err := sdk.RunLocal(context.Background(), tc.est, pass.RemoteOf(ds, nil), tc.raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			assert.Equal(t, wacct.Steps(), gacct.Steps())
			var worst float64
			require.Len(t, got.Matrices, len(want.Matrices))
			for k, m := range want.Matrices {
				require.Equal(t, m.Name, got.Matrices[k].Name)
				worst = math.Max(worst, relDiff(mat.DenseCopyOf(got.Matrices[k].M).RawMatrix().Data, mat.DenseCopyOf(m.M).RawMatrix().Data))
			}
			require.Len(t, got.Series, len(want.Series))
			for k, s := range want.Series {
				worst = math.Max(worst, relDiff(got.Series[k].Values, s.Values))
			}
			require.Len(t, got.Scalars, len(want.Scalars))
			for k, s := range want.Scalars {
				require.Equal(t, s.Name, got.Scalars[k].Name)
				worst = math.Max(worst, relDiff([]float64{got.Scalars[k].Value}, []float64{s.Value}))
			}
			assert.Equal(t, want.Guarantee, got.Guarantee)
			t.Logf("largest relative difference of a released value: %.3g", worst)
			assert.Less(t, worst, 1e-12)
		})
	}
}

// The kinds follow clip and evaluate; orbit-nonprivate needs the rows.
func TestRemotePasses(t *testing.T) {
	ds := varied(t)
	rd := pass.RemoteOf(ds, nil)
	opts, _, err := sdk.Prepare(Gauss{}.Info(), map[string]string{"rank": "1", "evaluate": "true"}, sdk.ShapeOf(rd))
	require.NoError(t, err)
	kinds, err := sdk.PassesOf(Gauss{}, opts, sdk.ShapeOf(rd))
	require.NoError(t, err)
	assert.Equal(t, []string{pass.RowsCentredMoment, pass.RowsNormHistogram, pass.RowsMoment}, kinds)
	opts, _, err = sdk.Prepare(EM{}.Info(), map[string]string{"rank": "1", "clip": "2"}, sdk.ShapeOf(rd))
	require.NoError(t, err)
	kinds, err = sdk.PassesOf(EM{}, opts, sdk.ShapeOf(rd))
	require.NoError(t, err)
	assert.Equal(t, []string{pass.RowsCentredMoment}, kinds)
	_, err = sdk.PassesOf(NonPrivate{}, opts, sdk.ShapeOf(rd))
	assert.ErrorContains(t, err, "needs the rows")
}
