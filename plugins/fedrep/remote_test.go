package fedrep

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

// unevenUsers keeps m − (u mod 5) rows of user u (user 3 keeps one row:
// no U-statistic term), so that the users' row counts and splits differ.
func unevenUsers(t testing.TB, ds *data.Dataset) *data.Dataset {
	t.Helper()
	p := ds.P()
	out := &data.Dataset{Kind: data.Users, Name: "uneven", Hash: "uneven"}
	var xs, ys []float64
	out.UserStart = []int{0}
	for u := 0; u < ds.NumUsers(); u++ {
		lo, hi := ds.UserStart[u], ds.UserStart[u+1]
		keep := hi - lo - u%5
		if u == 3 {
			keep = 1
		}
		for i := lo; i < lo+keep; i++ {
			xs = append(xs, ds.X.RawRowView(i)...)
			ys = append(ys, ds.Y[i])
		}
		out.UserStart = append(out.UserStart, len(ys))
		out.UserIDs = append(out.UserIDs, int64(100+u))
	}
	out.X = mat.NewDense(len(ys), p, xs)
	out.Y = ys
	require.NoError(t, out.Validate())
	return out
}

// relDiff is ‖a − b‖_F / ‖b‖_F.
func relDiff(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / den)
}

// TestRemoteEqualsLocal: through the users passes (pass.Local behind the
// remote view) the FedRep estimators take exactly the privacy steps of the
// fit on the rows and, with the same seed, release the same U up to the
// order of the float sums (measured: below 1e-12 relative).
func TestRemoteEqualsLocal(t *testing.T) {
	g := genUsers(t, 80, 12, 6, 2, 0.05, 41)
	ds := unevenUsers(t, g.Data)
	cls := unevenUsers(t, signed(g.Data))
	for _, tc := range []struct {
		name string
		est  sdk.Estimator
		ds   *data.Dataset
		raw  map[string]string
	}{
		{"private defaults", PrivateFedRep{}, ds, map[string]string{"iterations": "4", "output_v": "false"}},
		{"private split and hold-out", PrivateFedRep{}, ds, map[string]string{"iterations": "3", "output_v": "false", "local_fraction": "0.3", "holdout": "0.2", "head_data": "local"}},
		{"private given clips zcdp", PrivateFedRep{}, ds, map[string]string{"iterations": "3", "output_v": "false", "clip": "0.5", "init_clip": "2", "noise": "zcdp", "holdout": "0.25"}},
		{"private paper noise random start", PrivateFedRep{}, ds, map[string]string{"iterations": "3", "output_v": "false", "noise": "paper", "init": "random"}},
		{"nonprivate", NonPrivateFedRep{}, ds, map[string]string{"iterations": "3", "output_v": "false", "holdout": "0.2"}},
		{"altmin disjoint", PrivAltMin{}, ds, map[string]string{"iterations": "3", "output_v": "false", "holdout": "0.2", "clip_w": "1", "clip_y": "2"}},
		{"altmin all users zcdp given clip", PrivAltMin{}, ds, map[string]string{"iterations": "2", "output_v": "false", "groups": "all", "noise": "zcdp", "init_clip": "1", "portion": "3"}},
		{"classify", Classify{}, cls, map[string]string{"iterations": "3", "output_v": "false", "holdout": "0.2"}},
		{"classify projected", Classify{}, cls, map[string]string{"iterations": "3", "output_v": "false", "kprime": "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(7)
			grant := approx(2)
			local, lacct := fit(t, tc.est, tc.ds, tc.raw, grant, seed)
			cp := &countingPasser{inner: pass.Local(tc.ds), kinds: map[string]int{}}
			remote, racct, err := sdk.RunLocal(context.Background(), tc.est, pass.RemoteOf(tc.ds, cp), tc.raw, grant, sdk.LocalOptions{Seed: &seed})
			require.NoError(t, err)
			ls, rs := lacct.Steps(), racct.Steps()
			require.Equal(t, len(ls), len(rs))
			for i := range ls {
				assert.Equal(t, ls[i], rs[i], "step %d", i)
			}
			lu, ru := matrix(t, local, "U").M, matrix(t, remote, "U").M
			rel := relDiff(ru.RawMatrix().Data, lu.RawMatrix().Data)
			t.Logf("%s: %d steps, passes %v, relative difference of U = %.3g", tc.name, len(ls), cp.kinds, rel)
			assert.Less(t, rel, 1e-12)
			assert.Equal(t, local.Guarantee, remote.Guarantee)
			for _, s := range local.Scalars {
				r := scalar(t, remote, s.Name)
				if math.IsNaN(s.Value) {
					assert.True(t, math.IsNaN(r), s.Name)
					continue
				}
				assert.InDelta(t, s.Value, r, 1e-10*math.Max(1, math.Abs(s.Value)), s.Name)
			}
			for _, s := range local.Series {
				var found bool
				for _, o := range remote.Series {
					if o.Name == s.Name {
						found = true
						assert.InDeltaSlice(t, s.Values, o.Values, 1e-10, s.Name)
					}
				}
				assert.True(t, found, s.Name)
			}
		})
	}
}

// TestRemoteRefuses: what the remote path cannot do is refused before any
// step, with the reason.
func TestRemoteRefuses(t *testing.T) {
	g := genUsers(t, 30, 8, 5, 2, 0.05, 3)
	r := pass.RemoteOf(g.Data, nil)
	for _, tc := range []struct {
		name string
		raw  map[string]string
		want string
	}{
		{"heads", map[string]string{}, "output_v=true"},
		{"theory", map[string]string{"output_v": "false", "mode": "theory", "batch": "2"}, "mode=theory"},
		{"selection", map[string]string{"output_v": "false", "select": "rank=1,2"}, "selection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(1)
			_, acct, err := sdk.RunLocal(context.Background(), PrivateFedRep{}, r, tc.raw, approx(1), sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
	_, _, err := sdk.RunLocal(context.Background(), ClassifyExact{}, r, map[string]string{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, sdk.LocalOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no path through aggregation passes")
}

// countingPasser counts the passes per kind.
type countingPasser struct {
	inner data.Passer
	kinds map[string]int
}

// Pass implements data.Passer.
func (c *countingPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	c.kinds[req.Kind]++
	return c.inner.Pass(ctx, req)
}

// TestRemoteStatistics: each pass returns the statistic the local engine
// computes from the rows, up to the order of the float sums (measured and
// logged); histograms and clipped counts are equal.
func TestRemoteStatistics(t *testing.T) {
	ctx := context.Background()
	g := genUsers(t, 90, 14, 7, 3, 0.05, 5)
	ds := unevenUsers(t, g.Data)
	sp := &splitOptions{LocalFraction: 0.3, Holdout: 0.2, HeadData: "local"}
	lay, err := newLayout(ds, sp.LocalFraction, sp.Holdout)
	require.NoError(t, err)
	k := 3
	u := mat.NewDense(7, k, nil)
	for i := range 7 {
		u.Set(i, i%k, 1)
	}
	uw := u.RawMatrix().Data
	rem, err := newRemoteUsers(pass.RemoteOf(ds, nil), sp, k, 0.5, nil, lossSquared)
	require.NoError(t, err)

	for _, psi := range []float64{0.05, math.Inf(1)} {
		z, zc, err := ustatAggregate(ctx, be, ds.X, ds.Y, lay, psi, nil)
		require.NoError(t, err)
		rz, rc, err := rem.ustatMean(ctx, psi)
		require.NoError(t, err)
		assert.Equal(t, zc, rc)
		var a, b []float64
		for i := range 7 {
			for j := i; j < 7; j++ {
				a, b = append(a, rz.At(i, j)), append(b, z.At(i, j))
			}
		}
		rel := relDiff(a, b)
		t.Logf("U-statistic mean, ψ_init = %g: relative difference %.3g (%d clipped)", psi, rel, zc)
		assert.Less(t, rel, 1e-13)
	}
	norms := make([]float64, lay.n())
	_, _, err = ustatAggregate(ctx, be, ds.X, ds.Y, lay, math.Inf(1), norms)
	require.NoError(t, err)
	rh, err := rem.ustatHist(ctx)
	require.NoError(t, err)
	assert.Equal(t, quantileHistogram(norms, quantileEdges()), rh)

	eng := newFedrepEngine(ds.X, ds.Y, lay, k, 0.5, lossSquared)
	sum, clipped, err := eng.aggregate(ctx, uw, 0)
	require.NoError(t, err)
	rsum, rclipped, err := rem.aggregate(ctx, uw, 0)
	require.NoError(t, err)
	assert.Equal(t, clipped, rclipped)
	rel := relDiff(rsum, sum)
	t.Logf("clipped gradient sum: relative difference %.3g (%d of %d clipped)", rel, clipped, lay.n())
	assert.Less(t, rel, 1e-13)
	lh, err := eng.gradHist(ctx, uw)
	require.NoError(t, err)
	rgh, err := rem.gradHist(ctx, uw)
	require.NoError(t, err)
	assert.Equal(t, lh, rgh)
	group := []int32{0, 3, 5, 8, 13, 21, 34, 55, 89}
	la, lb, err := altminStats(ctx, eng, uw, group, 0.3, 1, 4)
	require.NoError(t, err)
	ra, rb, err := rem.altminStats(ctx, uw, group, 0.3, 1, 4)
	require.NoError(t, err)
	var a, b []float64
	for i := range 21 {
		for j := i; j < 21; j++ {
			a, b = append(a, ra.At(i, j)), append(b, la.At(i, j))
		}
	}
	relA, relB := relDiff(a, b), relDiff(rb, lb)
	t.Logf("Priv-AltMin statistics of a group of %d: relative difference A %.3g, b %.3g", len(group), relA, relB)
	assert.Less(t, relA, 1e-13)
	assert.Less(t, relB, 1e-13)
	ll, err := eng.fitHeads(ctx, uw, nil)
	require.NoError(t, err)
	rl, err := rem.fitHeads(ctx, uw, nil)
	require.NoError(t, err)
	t.Logf("hold-out loss: local %.17g, passes %.17g", ll, rl)
	assert.InDelta(t, ll, rl, 1e-13*ll)
}
