package pca

import (
	"context"
	"errors"
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

// shifted returns a spiked data set moved away from the origin (so that
// centring matters) with a few long rows (so that the clip bites).
func shifted(t testing.TB, n, p int, seed uint64) *data.Dataset {
	g := spiked(t, n, p, 2, "30,10", "gaussian", seed)
	x := mat.DenseCopyOf(g.Data.X)
	for i := 0; i < n; i++ {
		x.Set(i, 0, x.At(i, 0)+4)
		x.Set(i, 1, x.At(i, 1)-2)
		if i%23 == 0 {
			row := x.RawRowView(i)
			for j := range row {
				row[j] *= 6
			}
		}
	}
	return &data.Dataset{Kind: data.Rows, X: x, Name: "shifted"}
}

// relDiff is max |a − b| / max(max |b|, tiny) over the entries.
func relDiff(a, b []float64) float64 {
	var d, m float64
	for i := range b {
		d = math.Max(d, math.Abs(a[i]-b[i]))
		m = math.Max(m, math.Abs(b[i]))
	}
	return d / math.Max(m, 1e-300)
}

// compareResults returns the largest relative difference between the
// released outputs of two results with the same output names and checks
// that they carry the same outputs, guarantee and notes.
func compareResults(t *testing.T, got, want *sdk.Result) float64 {
	t.Helper()
	var worst float64
	require.Len(t, got.Matrices, len(want.Matrices))
	for k, m := range want.Matrices {
		g := got.Matrices[k]
		require.Equal(t, m.Name, g.Name)
		worst = math.Max(worst, relDiff(mat.DenseCopyOf(g.M).RawMatrix().Data, mat.DenseCopyOf(m.M).RawMatrix().Data))
	}
	require.Len(t, got.Series, len(want.Series))
	for k, s := range want.Series {
		require.Equal(t, s.Name, got.Series[k].Name)
		worst = math.Max(worst, relDiff(got.Series[k].Values, s.Values))
	}
	require.Len(t, got.Scalars, len(want.Scalars))
	for k, s := range want.Scalars {
		require.Equal(t, s.Name, got.Scalars[k].Name)
		assert.Equal(t, s.Release, got.Scalars[k].Release, s.Name)
		worst = math.Max(worst, relDiff([]float64{got.Scalars[k].Value}, []float64{s.Value}))
	}
	assert.Equal(t, want.Guarantee, got.Guarantee)
	assert.Equal(t, want.Notes, got.Notes)
	return worst
}

// TestRemoteEqualsLocal: through aggregation passes (pass.Local under the
// remote view an estimator gets on the Beam path) pca-analyze-gauss and
// pca-amin with clip=auto, center=private and an automatic mean clip
// declare exactly the local fit's privacy steps and, with the same seed,
// release the local fit's values up to summation order; with evaluate=true
// the evaluation figures agree too.
func TestRemoteEqualsLocal(t *testing.T) {
	ds := shifted(t, 1500, 12, 3)
	for _, tc := range []struct {
		name  string
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
	}{
		{"analyze-gauss clip=auto", AnalyzeGauss{}, map[string]string{"rank": "2"}, approx(1, 1e-6)},
		{"analyze-gauss clip=auto zcdp", AnalyzeGauss{}, map[string]string{"rank": "3", "noise": "zcdp", "output_sigma": "true"}, zcdp(0.1)},
		{"analyze-gauss center=private auto mean clip", AnalyzeGauss{}, map[string]string{"rank": "2", "center": "private"}, approx(1, 1e-6)},
		{"analyze-gauss center=private numeric clip", AnalyzeGauss{}, map[string]string{"rank": "2", "center": "private", "clip": "8", "mean_clip": "10"}, approx(2, 1e-6)},
		{"analyze-gauss numeric clip", AnalyzeGauss{}, map[string]string{"rank": "2", "clip": "5"}, approx(1, 1e-6)},
		{"analyze-gauss feature_scale=released", AnalyzeGauss{}, map[string]string{"rank": "2", "center": "private", "feature_scale": "released", "evaluate": "true", "output_sigma": "true"}, approx(1, 1e-6)},
		{"amin clip=auto pure", Amin{}, map[string]string{"rank": "2"}, pure(4)},
		{"amin center=private approx", Amin{}, map[string]string{"rank": "3", "center": "private", "output_sigma": "true"}, approx(4, 1e-6)},
		{"analyze-gauss evaluate", AnalyzeGauss{}, map[string]string{"rank": "2", "evaluate": "true"}, approx(1, 1e-6)},
		{"analyze-gauss center=private evaluate", AnalyzeGauss{}, map[string]string{"rank": "2", "center": "private", "evaluate": "true"}, approx(1, 1e-6)},
		{"amin evaluate", Amin{}, map[string]string{"rank": "2", "evaluate": "true"}, pure(4)},
		{"nonprivate", NonPrivate{}, map[string]string{"rank": "2"}, approx(1, 1e-6)},
		{"nonprivate empirical clip evaluate", NonPrivate{}, map[string]string{"rank": "3", "center": "empirical", "clip": "9", "evaluate": "true", "output_sigma": "true"}, approx(1, 1e-6)},
		{"cxz public model", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "25,8"}, approx(2, 1e-6)},
		{"cxz private estimate", CXZ{}, map[string]string{"rank": "1"}, approx(8, 1e-6)},
		{"cxz private estimate with clip", CXZ{}, map[string]string{"rank": "1", "clip": "20", "evaluate": "true"}, approx(8, 1e-6)},
		{"cxz center=private guarded", CXZ{}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "25,8", "center": "private", "mean_clip": "10", "guarded": "true"}, approx(2, 1e-6)},
		{"cxz center=private estimate guarded", CXZ{}, map[string]string{"rank": "1", "center": "private", "mean_clip": "10", "guarded": "true", "output_sigma": "true"}, approx(8, 1e-6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(11)
			want, wacct, err := sdk.RunLocal(context.Background(), tc.est, ds, tc.raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			got, gacct, err := sdk.RunLocal(context.Background(), tc.est, pass.RemoteOf(ds, nil), tc.raw, tc.grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			assert.Equal(t, wacct.Steps(), gacct.Steps(), "the same privacy steps")
			worst := compareResults(t, got, want)
			t.Logf("largest relative difference of a released value: %.3g", worst)
			assert.Less(t, worst, 1e-12)
		})
	}
}

// TestRemotePasses: the kinds each option set requests, and the options
// that need the rows refused before any budget is reserved.
func TestRemotePasses(t *testing.T) {
	ds := shifted(t, 200, 6, 1)
	for _, tc := range []struct {
		name string
		raw  map[string]string
		want []string
		err  string
	}{
		{"numeric clip", map[string]string{"rank": "1", "clip": "3"}, []string{pass.RowsCentredMoment}, ""},
		{"clip=auto", map[string]string{"rank": "1"}, []string{pass.RowsCentredMoment, pass.RowsNormHistogram}, ""},
		{"center=private", map[string]string{"rank": "1", "clip": "3", "center": "private"}, []string{pass.RowsCentredMoment, pass.RowsClippedSum}, ""},
		{"feature_scale", map[string]string{"rank": "1", "feature_scale": "private"}, nil, "feature_scale=private"},
		{"center=pairs", map[string]string{"rank": "1", "center": "pairs"}, nil, "center=pairs"},
		{"evaluate", map[string]string{"rank": "1", "clip": "3", "evaluate": "true"}, []string{pass.RowsCentredMoment, pass.RowsMoment}, ""},
	} {
		for _, est := range []sdk.Estimator{AnalyzeGauss{}, Amin{}} {
			t.Run(est.Info().Name+" "+tc.name, func(t *testing.T) {
				opts, _, err := sdk.Prepare(est.Info(), uncentred(est, tc.raw), sdk.ShapeOf(ds))
				require.NoError(t, err)
				kinds, err := sdk.PassesOf(est, opts, sdk.ShapeOf(pass.RemoteOf(ds, nil)))
				if tc.err == "" {
					require.NoError(t, err)
					assert.ElementsMatch(t, tc.want, kinds)
					return
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				seed := uint64(1)
				_, acct, err := sdk.RunLocal(context.Background(), est, pass.RemoteOf(ds, nil), tc.raw, approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
				require.Error(t, err)
				if acct != nil {
					assert.Empty(t, acct.Steps())
				}
			})
		}
	}
}

// pca-cxz requests the norm counts only for the private model estimate
// without a clip or for mean_clip=auto, the clipped sum for center=private
// (the default).
func TestRemotePassesCXZ(t *testing.T) {
	ds := shifted(t, 200, 6, 1)
	for _, tc := range []struct {
		raw  map[string]string
		want []string
	}{
		{map[string]string{"rank": "1", "sigma2": "1", "lambda": "5", "center": "none"}, []string{pass.RowsCentredMoment}},
		{map[string]string{"rank": "1", "center": "none"}, []string{pass.RowsCentredMoment, pass.RowsNormHistogram}},
		{map[string]string{"rank": "1"}, []string{pass.RowsCentredMoment, pass.RowsNormHistogram, pass.RowsClippedSum}},
		{map[string]string{"rank": "1", "clip": "3", "center": "private", "mean_clip": "4", "evaluate": "true"}, []string{pass.RowsCentredMoment, pass.RowsClippedSum, pass.RowsMoment}},
		{map[string]string{"rank": "1", "sigma2": "1", "lambda": "5", "center": "private"}, []string{pass.RowsCentredMoment, pass.RowsNormHistogram, pass.RowsClippedSum}},
	} {
		opts, _, err := sdk.Prepare(CXZ{}.Info(), tc.raw, sdk.ShapeOf(ds))
		require.NoError(t, err)
		kinds, err := sdk.PassesOf(CXZ{}, opts, sdk.ShapeOf(pass.RemoteOf(ds, nil)))
		require.NoError(t, err)
		assert.Equal(t, tc.want, kinds, "%v", tc.raw)
	}
}

// breaking is a Passer that runs the reference passes and then breaks
// the result of one kind.
type breaking struct {
	inner  data.Passer
	kind   string
	break_ func(*data.PassResult)
}

func (b breaking) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	res, err := b.inner.Pass(ctx, req)
	if err != nil || req.Kind != b.kind {
		return res, err
	}
	b.break_(res)
	return res, nil
}

// TestRemoteRefusesBrokenPasses: a pass result that breaks its kind's
// bounds (counts that do not add up to n, a sum or a moment larger than
// the clip allows) stops the fit before the step that would read it.
func TestRemoteRefusesBrokenPasses(t *testing.T) {
	ds := shifted(t, 300, 6, 2)
	for _, tc := range []struct {
		name   string
		raw    map[string]string
		kind   string
		break_ func(*data.PassResult)
		steps  int // steps declared before the refusal
		want   string
	}{
		{"counts off by one", map[string]string{"rank": "1"}, pass.RowsNormHistogram,
			func(r *data.PassResult) { r.Outputs[0].Data[100]++ }, 0, "sum to"},
		{"negative count", map[string]string{"rank": "1"}, pass.RowsNormHistogram,
			func(r *data.PassResult) { r.Outputs[0].Data[100] = -1 }, 0, "non-negative integer"},
		{"fractional count", map[string]string{"rank": "1"}, pass.RowsNormHistogram,
			func(r *data.PassResult) { r.Outputs[0].Data[100] += 0.5; r.Outputs[0].Data[101] -= 0.5 }, 0, "non-negative integer"},
		{"unclipped sum", map[string]string{"rank": "1", "clip": "3", "center": "private"}, pass.RowsClippedSum,
			func(r *data.PassResult) { r.Outputs[0].Data[0] = 300 * 3 * 2 }, 0, "not clipped"},
		{"unclipped moment", map[string]string{"rank": "1"}, pass.RowsCentredMoment,
			func(r *data.PassResult) { r.Outputs[0].Data[0] *= 1e6 }, 1, "not clipped"},
		{"record count", map[string]string{"rank": "1", "clip": "3"}, pass.RowsCentredMoment,
			func(r *data.PassResult) { r.Records-- }, 0, "records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(1)
			rd := pass.RemoteOf(ds, breaking{inner: pass.Local(ds), kind: tc.kind, break_: tc.break_})
			_, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, rd, uncentred(AnalyzeGauss{}, tc.raw), approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			require.NotNil(t, acct)
			assert.Len(t, acct.Steps(), tc.steps)
		})
	}
}

// A failed pass is the fit's error, with no step after it.
func TestRemotePassFailure(t *testing.T) {
	ds := shifted(t, 100, 4, 2)
	seed := uint64(1)
	failing := passerFunc(func(context.Context, data.PassRequest) (*data.PassResult, error) {
		return nil, errors.New("pipeline failed")
	})
	_, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, pass.RemoteOf(ds, failing), map[string]string{"rank": "1"}, approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
	require.ErrorContains(t, err, "pipeline failed")
	assert.Empty(t, acct.Steps())
}

type passerFunc func(context.Context, data.PassRequest) (*data.PassResult, error)

func (f passerFunc) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return f(ctx, req)
}

// A non-finite entry fails the fit through passes as it fails the fit on
// the rows, naming the entry, before any step.
func TestRemoteNonFinite(t *testing.T) {
	ds := shifted(t, 100, 4, 2)
	ds.X.Set(37, 2, math.NaN())
	for _, raw := range []map[string]string{
		{"rank": "1"},
		{"rank": "1", "clip": "3"},
		{"rank": "1", "clip": "3", "center": "private"},
	} {
		for _, d := range []*data.Dataset{ds, pass.RemoteOf(ds, nil)} {
			seed := uint64(1)
			_, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, d, raw, approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
			require.Error(t, err, "%v remote=%v", raw, d.X == nil)
			assert.Contains(t, err.Error(), "data row 37, column 2: value NaN is not finite", "%v remote=%v", raw, d.X == nil)
			assert.Empty(t, acct.Steps())
		}
	}
}

// Every pca estimator has a path through aggregation passes, marked in
// the catalogue.
func TestEveryEstimatorRemote(t *testing.T) {
	for _, est := range Estimators() {
		info, err := sdk.InfoOf(est)
		require.NoError(t, err)
		assert.True(t, info.Remote, info.Name)
	}
}
