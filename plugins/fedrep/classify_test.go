package fedrep

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
)

func genClass(t testing.TB, n, m, d, k int, seed uint64) *gen.Generated {
	t.Helper()
	mod, err := gen.Lookup(gen.UsersLowRankName)
	require.NoError(t, err)
	g, err := gen.Run(mod, map[string]string{"users": fmt.Sprint(n), "samples": fmt.Sprint(m), "dim": fmt.Sprint(d),
		"rank": fmt.Sprint(k), "noise": "0", "labels": "classification"}, seed)
	require.NoError(t, err)
	return g
}

// Property 11: the exponential mechanism's log-probabilities differ between
// neighbours by at most ε (exact check on the enumerated net), and the JL
// matrix has entries ±1/√k′ with E‖Mx‖² = ‖x‖².
func TestExactMechanismPrivacy(t *testing.T) {
	g := genClass(t, 30, 8, 2, 1, 3)
	net, err := netPoints(2, 0.2, math.Sqrt2, 100000)
	require.NoError(t, err)
	lay := testLayout(t, g.Data, 0.5)
	const eps = 0.7
	beta := eps / (2 * (1.0 / 30))
	logp := func(s []float64) []float64 {
		mx := math.Inf(-1)
		for _, v := range s {
			mx = math.Max(mx, beta*v)
		}
		var z float64
		for _, v := range s {
			z += math.Exp(beta*v - mx)
		}
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = beta*v - mx - math.Log(z)
		}
		return out
	}
	s1, err := exactScores(context.Background(), g.Data.X, g.Data.Y, lay, net, 0.1, 1)
	require.NoError(t, err)
	l1 := logp(s1)
	for _, victim := range []int{0, 11, 29} {
		for kind := 0; kind < 3; kind++ {
			adv := adversarial(g.Data, victim, kind)
			for r := adv.UserStart[victim]; r < adv.UserStart[victim+1]; r++ {
				adv.Y[r] = []float64{1, -1}[(r+kind)%2] // arbitrary labels
			}
			lay2 := testLayout(t, adv, 0.5)
			s2, err := exactScores(context.Background(), adv.X, adv.Y, lay2, net, 0.1, 1)
			require.NoError(t, err)
			l2 := logp(s2)
			var worst float64
			for i := range l1 {
				worst = math.Max(worst, math.Abs(l1[i]-l2[i]))
			}
			assert.LessOrEqual(t, worst, eps*(1+1e-12))
		}
	}
	// γ-cover: every point of the ball is within γ of the net.
	for _, p := range [][]float64{{1.4, 0.1}, {-0.3, 1.37}, {0.05, -0.02}, {-1, -1}} {
		best := math.Inf(1)
		for _, q := range net {
			best = math.Min(best, math.Hypot(p[0]-q[0], p[1]-q[1]))
		}
		assert.LessOrEqual(t, best, 0.2+1e-12)
	}
	// JL matrix.
	src := privacy.NewSeededSource(5)
	x := []float64{1, -2, 0.5, 3, 0, 1, 1, -1, 2, 0.3}
	nx := mat.Dot(mat.NewVecDense(10, x), mat.NewVecDense(10, x))
	var mean float64
	const draws = 4000
	for i := 0; i < draws; i++ {
		m := jlMatrix(src, 3, 10)
		for _, v := range m.RawMatrix().Data {
			require.InDelta(t, 1/math.Sqrt(3), math.Abs(v), 1e-15)
		}
		var mx mat.VecDense
		mx.MulVec(m, mat.NewVecDense(10, x))
		mean += mat.Dot(&mx, &mx) / draws
	}
	assert.InDelta(t, 1, mean/nx, 0.05)
	// Large nets are refused before any spend.
	_, err = netPoints(4, 0.01, math.Sqrt2, 1000)
	assert.ErrorIs(t, err, errNetTooLarge)
}

// The exact mechanism recovers a planted separator at large ε; the
// surrogate learns a useful representation.
func TestClassifyUtility(t *testing.T) {
	g := genClass(t, 300, 20, 2, 1, 4)
	res, acct := fit(t, ClassifyExact{}, g.Data, map[string]string{"kprime": "0", "holdout": "0.25"}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 5}, 1)
	u := matrix(t, res, "U").M
	dd := subspaceDist(t, u, g.Truth["U"])
	assert.Less(t, dd, 0.3)
	assert.Equal(t, privacy.Nominal, res.Guarantee.Kind)
	assert.InDelta(t, 5, res.Guarantee.Epsilon, 1e-12)
	require.Len(t, acct.Steps(), 1)
	t.Logf("exact: dist %.3f holdout error %.3f", dd, scalar(t, res, "holdout_loss"))

	gc := genClass(t, 2000, 40, 20, 2, 5)
	for _, kp := range []string{"0", "10"} {
		res, _ := fit(t, Classify{}, gc.Data, map[string]string{"rank": "2", "holdout": "0.25", "kprime": kp, "iterations": "10"}, approx(8), 1)
		e := scalar(t, res, "holdout_loss")
		t.Logf("surrogate k′=%s: holdout 0-1 error %.3f", kp, e)
		if kp == "0" {
			assert.Less(t, e, 0.1)
		} else {
			assert.Less(t, e, 0.45, "a 10-dimensional projection of 20 features loses part of U*")
		}
		r, c := matrix(t, res, "U").M.Dims()
		assert.Equal(t, []int{20, 2}, []int{r, c})
	}
	// Real-valued responses are read as their sign, never refused (a
	// refusal would be decided from private data).
	gr := genUsers(t, 50, 10, 5, 1, 0.1, 1)
	seed := uint64(1)
	raw, _, err := runLocal(ClassifyExact{}, gr, &seed)
	require.NoError(t, err)
	assert.Contains(t, raw.Notes, labelNote)
	same, _, err := runLocal(ClassifyExact{}, &gen.Generated{Data: signed(gr.Data)}, &seed)
	require.NoError(t, err)
	assert.True(t, mat.Equal(matrix(t, raw, "U").M, matrix(t, same, "U").M), "sign(y) labels give the same fit")
}
