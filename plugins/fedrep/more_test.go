package fedrep

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Property 7: the U-statistic is unbiased for w wᵀ, the implementation
// matches the textbook pair sum, and the non-private start improves like
// n^{-1/2}.
func TestUStatistic(t *testing.T) {
	const users, m0, d = 40000, 4, 6
	r := rand.New(rand.NewPCG(5, 6))
	w := make([]float64, d)
	for p := range w {
		w[p] = r.NormFloat64() / 2
	}
	x := mat.NewDense(users*m0, d, nil)
	y := make([]float64, users*m0)
	start := make([]int, users+1)
	for i := 0; i < users*m0; i++ {
		var s float64
		for p := 0; p < d; p++ {
			v := r.NormFloat64()
			x.Set(i, p, v)
			s += v * w[p]
		}
		y[i] = s
	}
	for u := 0; u <= users; u++ {
		start[u] = u * m0
	}
	ds := &data.Dataset{Kind: data.Users, X: x, Y: y, UserStart: start}
	z, _, err := testUsers(t, ds, 0, 2, math.Inf(1), lossSquared).ustatMean(context.Background(), math.Inf(1))
	require.NoError(t, err)
	// Textbook per-user pair sums, their mean and standard errors.
	mean := make([]float64, d*d)
	sq := make([]float64, d*d)
	for u := 0; u < users; u++ {
		zi := make([]float64, d*d)
		for j := 0; j < m0; j++ {
			for l := 0; l < m0; l++ {
				if j == l {
					continue
				}
				a, b := u*m0+j, u*m0+l
				for p := 0; p < d; p++ {
					for q := 0; q < d; q++ {
						zi[p*d+q] += y[a] * y[b] * x.At(a, p) * x.At(b, q) / float64(m0*(m0-1))
					}
				}
			}
		}
		for i, v := range zi {
			mean[i] += v / users
			sq[i] += v * v / users
		}
	}
	for p := 0; p < d; p++ {
		for q := 0; q < d; q++ {
			i := p*d + q
			assert.InDelta(t, mean[i], z.At(p, q), 1e-10, "matches the pair sum")
			se := math.Sqrt((sq[i] - mean[i]*mean[i]) / users)
			assert.InDelta(t, w[p]*w[q], mean[i], 4*se, "unbiased")
		}
	}

	// Non-private start: dist decays ~ n^{-1/2} (log-log slope).
	var ns, dists []float64
	for _, n := range []int{1000, 4000, 16000} {
		var ds []float64
		for seed := uint64(1); seed <= 3; seed++ {
			g := genUsers(t, n, 10, 20, 2, 0.01, seed)
			res, _ := fit(t, NonPrivateFedRep{}, g.Data, map[string]string{"iterations": "1", "step": "1e-12"}, approx(1), seed)
			dd := subspaceDist(t, matrix(t, res, "U").M, g.Truth["U"])
			ds = append(ds, dd)
		}
		sort.Float64s(ds)
		ns, dists = append(ns, math.Log(float64(n))), append(dists, math.Log(ds[1]))
	}
	slope := (dists[2] - dists[0]) / (ns[2] - ns[0])
	t.Logf("init dist log-log slope %.3f", slope)
	assert.InDelta(t, -0.5, slope, 0.2)

	// Top-k is by algebraic eigenvalue.
	vals, _, err := be.EigSymTop(mat.NewSymDense(3, []float64{-5, 0, 0, 0, 1, 0, 0, 0, 2}), 2)
	require.NoError(t, err)
	assert.Equal(t, []float64{2, 1}, vals)
}

// Property 8: non-private FedRep recovers U* on noiseless data.
func TestNonPrivateConvergence(t *testing.T) {
	for _, tc := range []struct {
		noise, tol float64
		T          string
	}{{0, 1e-6, "50"}, {0.01, 1e-2, "15"}} {
		g := genUsers(t, 2000, 20, 20, 2, tc.noise, 4)
		res, _ := fit(t, NonPrivateFedRep{}, g.Data, map[string]string{"iterations": tc.T, "step": "1", "rank": "2", "head_ridge": "0", "round_ridge": "0"}, approx(1), 1)
		dd := subspaceDist(t, matrix(t, res, "U").M, g.Truth["U"])
		assert.Less(t, dd, tc.tol, "noise %g", tc.noise)
		assert.Equal(t, privacy.None, res.Guarantee.Kind)
	}
	// Theory mode (fresh batches) converges too.
	g := genUsers(t, 2000, 200, 20, 2, 0, 4)
	res, _ := fit(t, NonPrivateFedRep{}, g.Data, map[string]string{"iterations": "10", "step": "1", "mode": "theory", "batch": "5", "rank": "2", "head_ridge": "0", "round_ridge": "0"}, approx(1), 1)
	dd := subspaceDist(t, matrix(t, res, "U").M, g.Truth["U"])
	assert.Less(t, dd, 1e-3)
}

// ε → ∞ (and clipping inactive) gives the non-private estimator.
func TestLargeEpsilonLimit(t *testing.T) {
	g := genUsers(t, 1000, 10, 15, 2, 0.01, 8)
	np, _ := fit(t, NonPrivateFedRep{}, g.Data, map[string]string{"rank": "2"}, approx(1), 1)
	pr, _ := fit(t, PrivateFedRep{}, g.Data, map[string]string{"rank": "2", "clip": "1e9", "init_clip": "1e9", "step": "2.5"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e30}, 1)
	dd := subspaceDist(t, matrix(t, np, "U").M, matrix(t, pr, "U").M)
	assert.Less(t, dd, 1e-6)
}

// Property 9: mean population MSE does not increase with ε and stays above
// the non-private MSE (a small configuration).
func TestMSEMonotoneInEpsilon(t *testing.T) {
	const seeds = 5
	eps := []float64{1, 2, 4, 8}
	means := make([]float64, len(eps))
	var npMean float64
	raw := map[string]string{"iterations": "10", "step": "1", "clip": "1", "init_clip": "20", "rank": "2", "head_ridge": "0", "round_ridge": "0"}
	for seed := uint64(1); seed <= seeds; seed++ {
		g := genUsers(t, 3000, 20, 20, 2, 0.01, 100+seed)
		for i, e := range eps {
			res, _ := fit(t, PrivateFedRep{}, g.Data, raw, approx(e), seed)
			mse, err := PopulationMSE(matrix(t, res, "U").M, matrix(t, res, "V").M, g.Truth["U"], g.Truth["V"], 0.01)
			require.NoError(t, err)
			means[i] += mse / seeds
		}
		res, _ := fit(t, NonPrivateFedRep{}, g.Data, map[string]string{"iterations": "10", "step": "1", "rank": "2", "head_ridge": "0", "round_ridge": "0"}, approx(1), seed)
		mse, _ := PopulationMSE(matrix(t, res, "U").M, matrix(t, res, "V").M, g.Truth["U"], g.Truth["V"], 0.01)
		npMean += mse / seeds
	}
	t.Logf("mean MSE by ε %v: %v; non-private %.5f", eps, means, npMean)
	for i := 1; i < len(eps); i++ {
		assert.LessOrEqual(t, means[i], means[i-1])
	}
	assert.GreaterOrEqual(t, means[len(eps)-1], npMean)
}

// Property 10: the closed-form population MSE matches Monte Carlo, and with
// U = U* the OLS excess risk is R²k/(m′−k−1).
func TestPopulationMSE(t *testing.T) {
	g := genUsers(t, 200, 10, 10, 2, 0.3, 9)
	r := rand.New(rand.NewPCG(1, 3))
	u, _ := orthonormalize(be, randDense(r, 10, 2))
	v := randDense(r, 200, 2)
	closed, err := PopulationMSE(u, v, g.Truth["U"], g.Truth["V"], 0.3)
	require.NoError(t, err)
	var mc float64
	const per = 500
	for i := 0; i < 200; i++ {
		var w, ws mat.VecDense
		w.MulVec(u, v.RowView(i))
		ws.MulVec(g.Truth["U"], g.Truth["V"].RowView(i))
		for s := 0; s < per; s++ {
			var pred, truth float64
			for p := 0; p < 10; p++ {
				x := r.NormFloat64()
				pred += x * w.AtVec(p)
				truth += x * ws.AtVec(p)
			}
			e := truth + 0.3*r.NormFloat64() - pred
			mc += e * e / (200 * per)
		}
	}
	assert.InDelta(t, 1, mc/closed, 0.02)

	// OLS head on m′ Gaussian points with U = U*: mean excess R²k/(m′−k−1).
	const k, mp, R, reps = 2, 10, 0.5, 20000
	var excess float64
	a := make([]float64, mp*k)
	yy := make([]float64, mp)
	vv := make([]float64, k)
	for rep := 0; rep < reps; rep++ {
		for j := 0; j < mp; j++ {
			yy[j] = R * r.NormFloat64() // v* = 0 without loss of generality
			for c := 0; c < k; c++ {
				a[j*k+c] = r.NormFloat64()
			}
		}
		kernel.PinvSolve(a, mp, k, yy, vv)
		excess += (vv[0]*vv[0] + vv[1]*vv[1]) / reps
	}
	assert.InDelta(t, R*R*k/(mp-k-1), excess, 0.03*R*R*k/(mp-k-1))
}

// Property 12: the Kronecker accumulation equals the naive Σ W Wᵀ (with the
// clip scales and the row-major vec order), and with no noise or clipping
// the U-step is the exact least-squares minimizer.
func TestAltMinKronecker(t *testing.T) {
	const d, k = 6, 3
	g := genUsers(t, 30, 8, d, k, 0.2, 12)
	eng := testUsers(t, g.Data, 0.5, k, math.Inf(1), lossSquared)
	r := rand.New(rand.NewPCG(4, 4))
	u, _ := orthonormalize(be, randDense(r, d, k))
	users := []int32{0, 3, 5, 7, 8, 20, 29}
	var ks kernel.Scratch
	for _, clip := range []struct{ cw, cy float64 }{{0.5, 0.3}, {1e9, 1e9}} {
		a, b, err := eng.altminStats(context.Background(), u.RawMatrix().Data, users, clip.cw, clip.cy, 3)
		require.NoError(t, err)
		na := mat.NewDense(d*k, d*k, nil)
		nb := make([]float64, d*k)
		for _, ui := range users {
			t0 := g.Data.UserStart[ui]
			m0, _ := pass.UserSplit(g.Data.UserStart[ui+1]-t0, 0.5, 0)
			xs := make([][]float64, m0)
			for j := range xs {
				xs[j] = g.Data.X.RawRowView(t0 + j)
			}
			v := ks.Head(kernel.Model{U: u.RawMatrix().Data, D: d, K: k}, xs, g.Data.Y[t0:t0+m0])
			for row := t0; row < t0+min(3, m0); row++ {
				wv := make([]float64, d*k)
				for p := 0; p < d; p++ {
					for c := 0; c < k; c++ {
						wv[p*k+c] = g.Data.X.At(row, p) * v[c]
					}
				}
				if nw := kernel.SafeNorm(wv); nw > clip.cw {
					for i := range wv {
						wv[i] *= clip.cw / nw
					}
				}
				yt := math.Max(-clip.cy, math.Min(clip.cy, g.Data.Y[row]))
				for i := range wv {
					nb[i] += yt * wv[i]
					for j := range wv {
						na.Set(i, j, na.At(i, j)+wv[i]*wv[j])
					}
				}
			}
		}
		for i := 0; i < d*k; i++ {
			assert.InDelta(t, nb[i], b[i], 1e-10)
			for j := 0; j < d*k; j++ {
				assert.InDelta(t, na.At(i, j), a.At(i, j), 1e-10)
			}
		}
		if clip.cw > 1e8 {
			// Exact LS minimizer: solve and check the normal equations.
			run := &sdk.Run{Backend: be}
			sol, err := symSolve(run, a, b, 0)
			require.NoError(t, err)
			var resid mat.VecDense
			resid.MulVec(a, mat.NewVecDense(d*k, sol))
			for i := range nb {
				assert.InDelta(t, nb[i], resid.AtVec(i), 1e-9*(1+math.Abs(nb[i])))
			}
		}
	}
}

// Bad input is an error naming the problem, before any privacy spend.
func TestInputErrors(t *testing.T) {
	g := genUsers(t, 50, 10, 5, 2, 0.01, 1)
	seed := uint64(1)
	cases := []struct {
		name string
		est  sdk.Estimator
		raw  map[string]string
		gr   privacy.Grant
		want string
	}{
		{"rank too large", PrivateFedRep{}, map[string]string{"rank": "6"}, approx(1), "rank 6 exceeds"},
		{"rank too large altmin", PrivAltMin{}, map[string]string{"rank": "6"}, approx(1), "rank 6 exceeds"},
		{"theory without a batch", PrivateFedRep{}, map[string]string{"mode": "theory"}, approx(1), "mode=theory needs an explicit batch"},
		{"bad epsilon", PrivateFedRep{}, nil, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: -1, Delta: 1e-6}, "epsilon"},
		{"bad delta", PrivateFedRep{}, nil, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 2}, "delta"},
		{"pure grant", PrivateFedRep{}, nil, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}, "does not accept"},
		{"paper needs eps-delta", PrivateFedRep{}, map[string]string{"noise": "paper"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, "noise=paper"},
		{"bad step", PrivateFedRep{}, map[string]string{"step": "-1"}, approx(1), "step"},
		{"few users for groups", PrivAltMin{}, map[string]string{"iterations": "60"}, approx(1), "groups"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, g.Data, tc.raw, tc.gr, sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if acct != nil {
				assert.Empty(t, acct.Steps(), "no spend before the error")
			}
		})
	}
	// Non-finite data is refused by validation.
	bad := *g.Data
	bad.Y = append([]float64(nil), g.Data.Y...)
	bad.Y[3] = math.NaN()
	_, _, err := sdk.RunLocal(context.Background(), PrivateFedRep{}, &bad, nil, approx(1), sdk.LocalOptions{Seed: &seed})
	assert.ErrorContains(t, err, "not finite")
}

// Training curves and hold-out outputs carry the evaluation class.
func TestHoldoutCurve(t *testing.T) {
	g := genUsers(t, 2000, 20, 20, 2, 0.01, 3)
	res, _ := fit(t, PrivateFedRep{}, g.Data, map[string]string{"holdout": "0.25", "clip": "1", "step": "1", "iterations": "8"}, approx(4), 1)
	var curve *sdk.Series
	for i := range res.Series {
		if res.Series[i].Name == "holdout_curve" {
			curve = &res.Series[i]
		}
	}
	require.NotNil(t, curve)
	assert.Equal(t, sdk.Evaluation, curve.Release)
	require.Len(t, curve.Values, 9)
	assert.Less(t, curve.Values[8], curve.Values[0])
	assert.Equal(t, sdk.PerUser, matrix(t, res, "V").Release)
	assert.Equal(t, sdk.Public, matrix(t, res, "U").Release)
}

// Cancellation is honoured.
func TestCancel(t *testing.T) {
	g := genUsers(t, 500, 10, 10, 2, 0.01, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	seed := uint64(1)
	_, _, err := sdk.RunLocal(ctx, PrivateFedRep{}, g.Data, nil, approx(1), sdk.LocalOptions{Seed: &seed})
	assert.ErrorIs(t, err, context.Canceled)
}

// The users.ustat pass equals the explicit per-user loop that forms every
// user's matrix (with and without clipping, few and many rows per user).
func TestUStatPassEqualsLoop(t *testing.T) {
	for _, tc := range []struct{ n, m, d int }{{300, 10, 12}, {40, 60, 8}, {5000, 6, 20}} {
		g := genUsers(t, tc.n, tc.m, tc.d, 2, 0.1, 3)
		lay := testLayout(t, g.Data, 0.5)
		eng := testUsers(t, g.Data, 0.5, 2, math.Inf(1), lossSquared)
		for _, psi := range []float64{math.Inf(1), 0.5} {
			z1, c1, err := eng.ustatMean(context.Background(), psi)
			require.NoError(t, err)
			z2, c2, err := ustatAggregateLoop(context.Background(), g.Data.X, g.Data.Y, lay, psi)
			require.NoError(t, err)
			assert.Equal(t, c2, c1)
			var diff mat.Dense
			diff.Sub(z1, z2)
			assert.Less(t, mat.Norm(&diff, 2), 1e-10*mat.Norm(z2, 2), "n=%d m=%d d=%d ψ=%g", tc.n, tc.m, tc.d, psi)
		}
	}
}

// head_data=all fits the heads on all of each user's non-hold-out rows and
// does not change the released U.
func TestHeadDataAll(t *testing.T) {
	g := genUsers(t, 500, 20, 10, 2, 0.5, 6)
	r1, _ := fit(t, PrivateFedRep{}, g.Data, map[string]string{"holdout": "0.25", "head_data": "local", "local_fraction": "0.5"}, approx(4), 2)
	r2, _ := fit(t, PrivateFedRep{}, g.Data, map[string]string{"holdout": "0.25", "head_data": "all", "local_fraction": "0.5"}, approx(4), 2)
	assert.True(t, mat.Equal(matrix(t, r1, "U").M, matrix(t, r2, "U").M))
	assert.False(t, mat.Equal(matrix(t, r1, "V").M, matrix(t, r2, "V").M))
	assert.Less(t, scalar(t, r2, "holdout_loss"), scalar(t, r1, "holdout_loss"), "more rows per head, lower hold-out error")
}
