package rgrad

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// remoteCases are the four estimators with parameters that make every
// clip bite at least once on genTrace's data, and rgrad-dp and
// rgrad-strict given only the rank (the private estimate of §10 runs).
func remoteCases(g *gen.Generated) []struct {
	name   string
	params map[string]string
} {
	return []struct {
		name   string
		params map[string]string
	}{
		{"rgrad-dp", modelParamsFor(g, map[string]string{"iterations": "4"})},
		{"rgrad-weak", modelParamsFor(g, map[string]string{"iterations": "4", "noise": "zcdp"})},
		{"rgrad-strict", map[string]string{"rank": "2", "clip_y": "3", "clip": "6", "iterations": "4"}},
		{"rgrad-nonprivate", map[string]string{"rank": "2", "iterations": "4"}},
		{"rgrad-dp", map[string]string{"rank": "2", "iterations": "4", "c3": "0.3"}},
		{"rgrad-strict", map[string]string{"rank": "2", "iterations": "4", "tune_share": "0.1"}},
	}
}

// relDiff is ‖a − b‖/‖b‖ (‖a − b‖ when b = 0).
func relDiff(a, b []float64) float64 {
	d := make([]float64, len(a))
	floats.SubTo(d, a, b)
	if nb := floats.Norm(b, 2); nb > 0 {
		return floats.Norm(d, 2) / nb
	}
	return floats.Norm(d, 2)
}

// TestRemoteFitMatchesLocal: every estimator run on a data set it reaches
// only through aggregation passes (pass.Local behind pass.RemoteOf, what
// the Beam path hands it) declares exactly the privacy steps of the fit on
// the file — names, sensitivities, scales, ε, δ, ρ — and with the same
// seed releases the same matrices. Both fits now read the samples through
// the same in-process passes, so the releases are bit-identical (measured:
// 0 for all four); the tolerance is that of a Passer summing in another
// order (beam/stats TestRgradThroughBeam compares with the pipelines).
// Scalars, series, notes and the guarantee are the same.
func TestRemoteFitMatchesLocal(t *testing.T) {
	g := genTrace(t, 31, nil)
	grant := approx(2, 1e-6)
	for _, tc := range remoteCases(g) {
		t.Run(tc.name, func(t *testing.T) {
			est := estimatorByName(t, tc.name)
			assert.True(t, mustInfo(t, est).Remote)
			seed := uint64(17)
			loc, la, err := sdk.RunLocal(context.Background(), est, g.Data, tc.params, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			rem, ra, err := sdk.RunLocal(context.Background(), est, pass.RemoteOf(g.Data, nil), tc.params, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)

			require.Equal(t, la.Steps(), ra.Steps(), "privacy steps")
			assert.Equal(t, loc.Guarantee, rem.Guarantee)
			assert.Equal(t, loc.Notes, rem.Notes)
			require.Len(t, rem.Matrices, len(loc.Matrices))
			worst := 0.0
			for k, m := range loc.Matrices {
				rm := rem.Matrices[k]
				require.Equal(t, m.Name, rm.Name)
				assert.Equal(t, m.Release, rm.Release)
				d := relDiff(rm.M.RawMatrix().Data, m.M.RawMatrix().Data)
				worst = math.Max(worst, d)
				assert.Less(t, d, 1e-12, "matrix %s", m.Name)
			}
			t.Logf("%s: largest relative difference of a released matrix %.2g", tc.name, worst)
			require.Len(t, rem.Scalars, len(loc.Scalars))
			for k, s := range loc.Scalars {
				rs := rem.Scalars[k]
				require.Equal(t, s.Name, rs.Name)
				assert.InDelta(t, s.Value, rs.Value, 1e-12*math.Max(1, math.Abs(s.Value)), "scalar %s", s.Name)
			}
			require.Len(t, rem.Series, len(loc.Series))
			for k, s := range loc.Series {
				rs := rem.Series[k]
				require.Equal(t, s.Name, rs.Name)
				assert.Less(t, relDiff(rs.Values, s.Values), 1e-12, "series %s", s.Name)
			}
			if tc.name != "rgrad-nonprivate" {
				clipped := series(t, rem, "clipped_samples")
				assert.Greater(t, floats.Sum(clipped), 0.0, "the iteration clip bites")
			}
		})
	}
}

func mustInfo(t *testing.T, est sdk.Estimator) sdk.Info {
	t.Helper()
	info, err := sdk.InfoOf(est)
	require.NoError(t, err)
	return info
}

func series(t *testing.T, res *sdk.Result, name string) []float64 {
	t.Helper()
	for _, s := range res.Series {
		if s.Name == name {
			return s.Values
		}
	}
	t.Fatalf("no series %q", name)
	return nil
}

// TestPassesDeclared: each estimator declares the kinds its fit requests,
// and only those run (sdk.RunLocal refuses an undeclared kind).
func TestPassesDeclared(t *testing.T) {
	g := genTrace(t, 3, map[string]string{"n": "400"})
	s := sdk.ShapeOf(pass.RemoteOf(g.Data, nil))
	want := map[string][]string{
		"rgrad-dp":         {pass.TraceResponseCounts, pass.TraceClippedMoment, pass.TraceMoment, pass.TraceClippedGradient},
		"rgrad-weak":       {pass.TraceResponseCounts, pass.TraceClippedMoment, pass.TraceMoment, pass.TraceClippedGradient},
		"rgrad-strict":     {pass.TraceResponseCounts, pass.TraceClippedMoment, pass.TraceClippedGradient},
		"rgrad-nonprivate": {pass.TraceMoment, pass.TraceGradient},
	}
	for name, kinds := range want {
		est := estimatorByName(t, name)
		got, err := sdk.PassesOf(est, nil, s)
		require.NoError(t, err)
		assert.Equal(t, kinds, got, name)
		assert.True(t, mustInfo(t, est).Remote, name)
	}
	_, err := sdk.PassesOf(estimatorByName(t, "rgrad-dp"), nil, sdk.Shape{Kind: data.Rows, N: 10, P: 4})
	assert.ErrorContains(t, err, "trace data")
}

// recordingPasser runs the passes of an inner Passer, counting them by
// kind, and lets a test corrupt the results of one kind.
type recordingPasser struct {
	inner   data.Passer
	counts  map[string]int
	corrupt map[string]func(*data.PassResult)
}

func (r *recordingPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	res, err := r.inner.Pass(ctx, req)
	if err != nil {
		return nil, err
	}
	r.counts[req.Kind]++
	if f := r.corrupt[req.Kind]; f != nil {
		f(res)
	}
	return res, nil
}

// TestRemoteRefusesBrokenBounds: a Passer whose result breaks its kind's
// bound (an unclipped sum) is refused by the estimator before the step
// that would noise it is declared, so nothing is spent on it and no
// noise is drawn; the error names the bound, not the private value.
func TestRemoteRefusesBrokenBounds(t *testing.T) {
	g := genTrace(t, 5, map[string]string{"n": "500"})
	n := float64(g.Data.N())
	blowUp := func(r *data.PassResult) { floats.Scale(1e6*n, r.Outputs[0].Data) }
	for _, tc := range []struct {
		name, est string
		params    map[string]string
		kind      string
		steps     int // steps declared before the refused one
		want      string
	}{
		{"strict init", "rgrad-strict", map[string]string{"rank": "2", "clip_y": "3", "clip": "6", "iterations": "3"},
			pass.TraceClippedMoment, 0, "exceeds n·cx·cy"},
		{"strict iteration", "rgrad-strict", map[string]string{"rank": "2", "clip_y": "3", "clip": "6", "iterations": "3"},
			pass.TraceClippedGradient, 1, "above n·τ"},
		{"dp iteration", "rgrad-dp", modelParamsFor(g, map[string]string{"iterations": "3"}),
			pass.TraceClippedGradient, 3, "above n·τ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := &recordingPasser{inner: pass.Local(g.Data), counts: map[string]int{},
				corrupt: map[string]func(*data.PassResult){tc.kind: blowUp}}
			seed := uint64(1)
			_, acct, err := sdk.RunLocal(context.Background(), estimatorByName(t, tc.est), pass.RemoteOf(g.Data, rp), tc.params,
				approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			require.NotNil(t, acct)
			assert.Len(t, acct.Steps(), tc.steps, "steps declared before the refusal")
			assert.Empty(t, acct.Undrawn(), "every declared step drew its noise; the refused one was never declared")
			assert.Equal(t, 1, rp.counts[tc.kind], "the fit stops at the first broken result")
		})
	}

	// A Passer that fails: the fit fails with the pass named, nothing more.
	fail := &recordingPasser{inner: failingPasser{}, counts: map[string]int{}}
	seed := uint64(1)
	_, acct, err := sdk.RunLocal(context.Background(), estimatorByName(t, "rgrad-dp"), pass.RemoteOf(g.Data, fail),
		modelParamsFor(g, nil), approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pass trace.moment: pipeline failed")
	assert.Empty(t, acct.Steps())
}

type failingPasser struct{}

func (failingPasser) Pass(context.Context, data.PassRequest) (*data.PassResult, error) {
	return nil, errPipeline
}

var errPipeline = errors.New("pipeline failed")
