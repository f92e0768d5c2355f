package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// offsetTable is a table in mixed units whose columns sit far from zero,
// seen through public column scales known to within a factor of 2: z (the
// standardised-space rows of multiScale, 2 spikes) shifted by 300
// deviations in every other column, divided by scales d_j·2^u_j, u_j
// uniform on [−1, 1]. It returns the rows the estimator sees, the
// centred z, and the scales of z's space relative to them (for standardRatio).
func offsetTable(n, p int, seed uint64) (x, z *mat.Dense, d, s []float64) {
	_, z, _ = multiScale(n, p, []float64{12, 6}, seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	x = mat.NewDense(n, p, nil)
	d, s = make([]float64, p), make([]float64, p)
	for j := 0; j < p; j++ {
		d[j] = 1
		s[j] = math.Pow(2, 2*rng.Float64()-1) // the factor-2 error of the public scale
	}
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			off := 0.0
			if j%2 == 0 {
				off = 300
			}
			x.Set(i, j, (z.At(i, j)+off)/s[j])
		}
	}
	return x, z, d, s
}

// On a table whose columns sit 300 deviations from zero, center=pairs (no
// mean) keeps most of the standardised structure at ε = 1 (rank 2, 1000
// rows, 10 columns), and center=private (a mean in two steps: the second
// clips the offsets from the first, not from zero) keeps more than half.
// Medians of 7 fresh-noise runs; measured 0.73 (pairs) and 0.55 (private,
// runs 0.49–0.76); a one-step private mean, whose clip must cover the
// offsets, scored 0.29 (the factor-2 scale errors cost some of the
// standardised structure whatever the centring). Offsets this large still
// favour pairs: the first step's error is what the second step's clip
// must cover.
func TestCenterOffsets(t *testing.T) {
	var pairs, private []float64
	for seed := uint64(1); seed <= 7; seed++ {
		x, z, d, s := offsetTable(1000, 10, seed)
		ds := &data.Dataset{Kind: data.Rows, X: x}
		sd := seed
		for _, c := range []struct {
			center string
			out    *[]float64
		}{{"pairs", &pairs}, {"private", &private}} {
			res, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, ds, map[string]string{"rank": "2", "center": c.center}, approx(1, 1e-6), sdk.LocalOptions{Seed: &sd})
			require.NoError(t, err)
			*c.out = append(*c.out, standardRatio(t, z, d, s, matrix(t, res, "U")))
		}
	}
	t.Logf("standardised centred captured-variance ratio, median of 7: center=pairs %.3f, center=private %.3f (%.3f)", medianOf(pairs), medianOf(private), private)
	assert.Greater(t, medianOf(pairs), 0.6)
	assert.Greater(t, medianOf(private), 0.45)
}

// The release of center=pairs is invariant under a common offset of the
// rows (same seed, same pairs, same noise), it releases the number of pair
// rows and no mean, and it charges no mean step.
func TestCenterPairsTranslationInvariant(t *testing.T) {
	x, _, _, _ := offsetTable(600, 6, 9)
	shifted := mat.DenseCopyOf(x)
	n, p := x.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			shifted.Set(i, j, x.At(i, j)+1e4)
		}
	}
	var us []*mat.Dense
	for _, m := range []*mat.Dense{x, shifted} {
		seed := uint64(4)
		res, acct, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, &data.Dataset{Kind: data.Rows, X: m}, map[string]string{"rank": "2", "center": "pairs"}, approx(1, 1e-6), sdk.LocalOptions{Seed: &seed})
		require.NoError(t, err)
		us = append(us, matrix(t, res, "U"))
		var names []string
		for _, s := range acct.Steps() {
			names = append(names, s.Name)
		}
		assert.Equal(t, []string{"clip quantile", "second-moment matrix Σ̂ + E"}, names)
		for _, mm := range res.Matrices {
			assert.NotEqual(t, "mean", mm.Name)
		}
		var rows float64
		for _, sc := range res.Scalars {
			if sc.Name == outPairRows {
				rows = sc.Value
			}
		}
		assert.Equal(t, 300.0, rows)
	}
	assert.True(t, mat.EqualApprox(us[0], us[1], 1e-6), "the release does not depend on the offset")
}

// center=pairs passes the conformance suite on both estimators that offer
// it, and is refused before any step where it cannot run.
func TestCenterPairsConformance(t *testing.T) {
	x, _, _, _ := offsetTable(800, 6, 3)
	ds := &data.Dataset{Kind: data.Rows, X: x}
	tiny := &data.Dataset{Kind: data.Rows, X: mat.NewDense(3, 6, []float64{1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1, 1, 1, 2, 2, 3, 3})}
	pairs := map[string]string{"rank": "2", "center": "pairs", "evaluate": "true"}
	sdktest.Run(t, AnalyzeGauss{},
		sdktest.Case{Name: "pairs", Data: ds, Params: pairs, Grant: approx(1, 1e-6)},
		sdktest.Case{Name: "pairs, too few rows", Data: tiny, Params: map[string]string{"rank": "1", "center": "pairs"}, Grant: approx(1, 1e-6), Refuse: "at least 4 rows"},
	)
	sdktest.Run(t, Amin{},
		sdktest.Case{Name: "pairs", Data: ds, Params: pairs, Grant: pure(2)},
	)
}

// The mean-error warning (post-processing of released values): it fires
// when the private mean's expected squared error reaches half the largest
// released eigenvalue, on rows sitting 300 deviations from zero with 1000
// rows at ε = 1 (scores 0.49–0.74 against 0.73 for center=pairs), and
// stays silent on the same rows centred and scaled. Measured: 5 of 5 seeds
// at 1000 rows; 3 of 5 at 400 rows, where the second step's clip leaves a
// bias its noise variance does not count.
func TestMeanErrorWarning(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		x, z, _, _ := offsetTable(1000, 10, seed)
		for _, c := range []struct {
			x    *mat.Dense
			warn bool
		}{{x, true}, {z, false}} {
			sd := seed
			res, _, err := sdk.RunLocal(context.Background(), AnalyzeGauss{}, &data.Dataset{Kind: data.Rows, X: c.x},
				map[string]string{"rank": "2"}, approx(1, 1e-6), sdk.LocalOptions{Seed: &sd})
			require.NoError(t, err)
			var hit bool
			for _, w := range res.Warnings {
				hit = hit || strings.Contains(w, "the private mean's expected squared error")
			}
			assert.Equal(t, c.warn, hit, "seed %d, offsets %v: %v", seed, c.warn, res.Warnings)
		}
	}
}
