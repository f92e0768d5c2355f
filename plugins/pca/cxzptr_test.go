package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// worstParams ask for the worst-case mode on the spiked test data (rows of
// squared norm about 56 against clip² = 144).
var worstParams = map[string]string{"rank": "2", "sensitivity": "worst-case", "clip": "12"}

// clippedGram is the second moment of the rows of x clipped to c, with
// its eigenvalues (descending) and top-r projector.
func clippedGram(t *testing.T, x *mat.Dense, c float64, r int) ([]float64, *mat.SymDense) {
	t.Helper()
	n, p := x.Dims()
	s := mat.NewSymDense(p, nil)
	for i := 0; i < n; i++ {
		row := mat.VecDenseCopyOf(x.RowView(i))
		if nr := mat.Norm(row, 2); nr > c {
			row.ScaleVec(c/nr, row)
		}
		s.SymRankOne(s, 1/float64(n), row)
	}
	var es mat.EigenSym
	require.True(t, es.Factorize(s, true))
	vals := descending(es.Values(nil))
	var v mat.Dense
	es.VectorsTo(&v)
	proj := mat.NewSymDense(p, nil)
	proj.SymOuterK(1, v.Slice(0, p, p-r, p)) // ascending: the last r are the top
	return vals, proj
}

// Replacing one row of norm ≤ C by any row of norm ≤ C (random rows and
// rows along the top eigenvectors, the worst directions for the gap) moves
// the eigengap ĝ = λ_r − λ_{r+1} by at most 2C²/n, the test's distance by
// at most 1, and the projector by at most WorstCaseDelta1 at the gap of
// either data set (DERIVATIONS.md §13.1–13.2).
func TestCXZWorstCaseNeighbours(t *testing.T) {
	const n, p, r, c = 400, 12, 2, 12.0
	g := spiked(t, n, p, r, "24,20", "gaussian", 81)
	vals, proj := clippedGram(t, g.Data.X, c, r)
	gap := vals[r-1] - vals[r]
	rng := rand.New(rand.NewPCG(81, 1))
	var worstGap, worstProj float64
	for trial := 0; trial < 60; trial++ {
		x := mat.DenseCopyOf(g.Data.X)
		y := make([]float64, p)
		switch trial % 3 {
		case 0: // a random direction
			for j := range y {
				y[j] = rng.NormFloat64()
			}
		case 1: // along the truth's r-th spike, which widens the gap most
			mat.Col(y, r-1, g.Truth["U"])
		default: // zero: the row removed
		}
		if nr := norm(y); nr > 0 {
			for j := range y {
				y[j] *= c / nr
			}
		}
		x.SetRow(rng.IntN(n), y)
		v2, proj2 := clippedGram(t, x, c, r)
		gap2 := v2[r-1] - v2[r]
		worstGap = math.Max(worstGap, math.Abs(gap2-gap)/(2*c*c/n))
		for _, g0 := range []float64{gap / 2, gap - 3*c*c/n, gap} {
			assert.LessOrEqual(t, math.Abs(GapDistance(v2, r, n, c, g0)-GapDistance(vals, r, n, c, g0)), 1.0)
		}
		var diff mat.Dense
		diff.Sub(proj, proj2)
		worstProj = math.Max(worstProj, mat.Norm(&diff, 2)/WorstCaseDelta1(n, r, c, math.Max(gap, gap2)))
	}
	t.Logf("largest gap change %.3g × 2C²/n, projector change %.3g × Δ1", worstGap, worstProj)
	assert.LessOrEqual(t, worstGap, 1.0, "|Δĝ| ≤ 2C²/n")
	assert.Greater(t, worstGap, 0.2, "the targeted rows come near the bound")
	assert.LessOrEqual(t, worstProj, 1.0, "‖P̂ − P̂′‖_F ≤ Δ1")
}

// The worst-case mode's charge in closed form (noise=zcdp, a given clip):
// the test's (ε_t, δ_t) = (ptr_share·ε, δ/2) plus the zCDP composition of
// the other steps, which use all of ρ(ε − ε_t, δ − δ_t), at δ − δ_t; the
// steps are the estimate's, the test, stage 1 and stage 2; the guarantee
// is worst-case (ε, δ)-DP, not model-based.
func TestCXZWorstCaseCharge(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 82)
	grant := approx(2, 1e-6)
	res, acct := fit(t, CXZ{}, g, with(worstParams, "noise", "zcdp"), grant, 9)
	var names []string
	for _, s := range acct.Steps() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{estimateSteps[1], estimateSteps[2], estimateSteps[3], sharePTR,
		"eigenvectors (projector ÛÛᵀ + Z)", "eigenvalues (Ũᵀ(Σ̂−σ²I)Ũ + E)"}, names)
	rho, err := privacy.RhoForEpsDelta(1.8, 5e-7)
	require.NoError(t, err)
	ach, err := privacy.Compose(grant, acct.Steps())
	require.NoError(t, err)
	assert.InEpsilon(t, 0.2+privacy.EpsilonFromRho(rho, 5e-7), ach.Epsilon, 1e-9)
	assert.InEpsilon(t, 2, ach.Epsilon, 1e-6, "the whole grant, no less")
	assert.InEpsilon(t, 1e-6, ach.Delta, 1e-12)
	assert.NotEqual(t, privacy.Model, res.Guarantee.Kind)
	assert.Equal(t, "one row replaced by an arbitrary row", res.Guarantee.Neighbours)
	assert.Greater(t, scalar(t, res, "ptr_distance"), scalar(t, res, "ptr_threshold"))
	_, k := matrix(t, res, "U").Dims()
	assert.Equal(t, 2, k)
	assert.InDelta(t, WorstCaseDelta1(4000, 2, 12, scalar(t, res, "ptr_gap")), scalar(t, res, "delta1"), 1e-15)
	assert.InDelta(t, WorstCaseDelta2(4000, 2, 12), scalar(t, res, "delta2"), 1e-15)
}

// As ε grows the worst-case mode returns the non-private top-r subspace
// of the clipped second moment: the distance falls like the noise, about
// 1/√ε for large ε (the Gaussian μ grows like √(2ε)).
func TestCXZWorstCaseNoiseless(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 83)
	_, proj := clippedGram(t, g.Data.X, 12, 2)
	var dist []float64
	for _, eps := range []float64{1e2, 1e6} {
		res, _ := fit(t, CXZ{}, g, worstParams, approx(eps, 1e-6), 10)
		u := matrix(t, res, "U")
		var got, diff mat.Dense
		got.Mul(u, u.T())
		diff.Sub(&got, proj)
		dist = append(dist, mat.Norm(&diff, 2))
	}
	assert.Less(t, dist[1], 1e-3)
	assert.Less(t, dist[1], dist[0]/30)
}

// On data whose eigengap after component r is tiny (two equal spikes,
// rank 1) the test stops the fit: a planned stop that releases the test's
// distance and is charged the test alone (closed form: (ε_t, δ_t)), with
// a proposed gap the data do not have; ptr_gap=auto stops too, charged
// the estimate and the test, less than the grant.
func TestCXZWorstCaseStop(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "20,20", "gaussian", 84)
	grant := approx(1, 1e-6)
	given := map[string]string{"rank": "1", "sensitivity": "worst-case", "clip": "12", "sigma2": "1", "lambda": "20", "ptr_gap": "5"}
	res, acct := fit(t, CXZ{}, g, given, grant, 11)
	require.Len(t, acct.Steps(), 1)
	assert.Equal(t, sharePTR, acct.Steps()[0].Name)
	ach, err := privacy.Compose(grant, acct.Steps())
	require.NoError(t, err)
	assert.Equal(t, privacy.Achieved{Epsilon: 0.1, Delta: 5e-7, Composition: "basic"}, ach)
	assert.LessOrEqual(t, scalar(t, res, "ptr_distance"), scalar(t, res, "ptr_threshold"))
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "planned stop")
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "eigengap test did not pass")
	for _, m := range res.Matrices {
		assert.NotEqual(t, "U", m.Name)
	}

	res, acct = fit(t, CXZ{}, g, with(worstParams, "rank", "1"), grant, 12)
	assert.Len(t, acct.Steps(), 4, "the estimate and the test")
	ach, err = privacy.Compose(grant, acct.Steps())
	require.NoError(t, err)
	assert.Less(t, ach.Epsilon, 0.6*grant.Epsilon, "the estimate's part of what the test leaves, plus the test")
	assert.Greater(t, ach.Epsilon, 0.1)
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "planned stop")
}

// The worst-case mode is refused before any spend without a clip, under
// a ρ grant, with guarded, with ptr_gap=auto but no estimate to propose
// it, and ptr_gap is refused in the model-based mode.
func TestCXZWorstCaseRefusals(t *testing.T) {
	g := spiked(t, 1000, 12, 2, "24,20", "gaussian", 85)
	cases := []struct {
		name  string
		raw   map[string]string
		grant privacy.Grant
		want  string
	}{
		{"no-clip", map[string]string{"rank": "2", "sensitivity": "worst-case"}, approx(1, 1e-6), "needs clip"},
		{"rho", worstParams, zcdp(0.5), "(ε, δ) grant"},
		{"guarded", with(worstParams, "guarded", "true"), approx(1, 1e-6), "guarded"},
		{"auto-without-estimate", with(worstParams, "sigma2", "1", "lambda", "20"), approx(1, 1e-6), "give ptr_gap"},
		{"gap-text", with(worstParams, "ptr_gap", "wide"), approx(1, 1e-6), "ptr_gap"},
		{"gap-model", map[string]string{"rank": "2", "ptr_gap": "3"}, approx(1, 1e-6), "ptr_gap applies"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), CXZ{}, g.Data, uncentred(CXZ{}, tc.raw), tc.grant, sdk.LocalOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
	_, err := (&cxzOptions{cal: CalWorstCase}).Plan(sdk.Shape{N: 10, P: 5}, zcdp(1))
	require.Error(t, err)
}

// Too few rows for the eigengap test to pass on any data set is refused
// before any spend, from n, ε and δ alone: at (1, 1e-6) with ptr_share 0.1
// the test needs a distance of about b·(ln(1/δ_t) − ln 10) = 122.1 rows
// to pass with probability 0.05, and the distance is below n/2.
func TestCXZWorstCaseTooFewRows(t *testing.T) {
	for _, tc := range []struct {
		n      int
		refuse bool
	}{{200, true}, {250, false}} {
		o, _, err := sdk.Prepare(CXZ{}.Info(), uncentred(CXZ{}, worstParams), sdk.Shape{Kind: data.Rows, N: tc.n, P: 12})
		require.NoError(t, err)
		_, err = o.(sdk.Planner).Plan(sdk.Shape{Kind: data.Rows, N: tc.n, P: 12}, approx(1, 1e-6))
		if tc.refuse {
			require.Error(t, err, "n = %d", tc.n)
			assert.Contains(t, err.Error(), "too few for the eigengap test")
		} else {
			assert.NoError(t, err, "n = %d", tc.n)
		}
	}
	g := spiked(t, 200, 12, 2, "24,20", "gaussian", 86)
	_, acct, err := sdk.RunLocal(context.Background(), CXZ{}, g.Data, uncentred(CXZ{}, worstParams), approx(1, 1e-6), sdk.LocalOptions{})
	require.Error(t, err)
	if acct != nil {
		assert.Empty(t, acct.Steps(), "nothing spent")
	}
}

// The worst-case mode, centred and not, passes the conformance suite.
func TestCXZWorstCaseConformance(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 86)
	sdktest.Run(t, CXZ{},
		sdktest.Case{Name: "worst-case", Data: g.Data, Params: uncentred(CXZ{}, worstParams), Grant: approx(2, 1e-6)},
		sdktest.Case{Name: "worst-case, centred, auto", Data: g.Data, Params: with(worstParams, "rank", "auto", "center", "private"), Grant: approx(2, 1e-6)},
	)
}
