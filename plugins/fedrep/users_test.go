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

// TestRemoteEqualsLocal: through a remote view of the data (pass.Local
// behind the data set's pass runner, as on the Beam path) the FedRep
// estimators take exactly the privacy steps of the fit on the data set in
// memory and, with the same seed, release the same U (the same passes
// either way; a pipeline changes the order of the float sums only).
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
		{"private theory", PrivateFedRep{}, ds, map[string]string{"iterations": "3", "output_v": "false", "mode": "theory", "batch": "2", "holdout": "0.2"}},
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
