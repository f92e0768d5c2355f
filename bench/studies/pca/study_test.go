package pcastudy

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
)

// Bartlett-sampled Σ̂ has mean Σ and Var(Σ̂_jj) = 2Σ_jj²/n (Wishart).
func TestSampleWishartCov(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	u := randomBasis(5, 2, rng)
	lam := []float64{4, 2}
	n, reps := 50, 4000
	sig := lowRank(u, lam, 1)
	mean := mat.NewDense(5, 5, nil)
	var v00 float64
	for i := 0; i < reps; i++ {
		s, err := SampleWishartCov(backend.Gonum{}, u, lam, 1, n, rng)
		require.NoError(t, err)
		d := mat.DenseCopyOf(s)
		mean.Add(mean, d)
		e := d.At(0, 0) - sig.At(0, 0)
		v00 += e * e
	}
	mean.Scale(1/float64(reps), mean)
	for i := 0; i < 5; i++ {
		for j := 0; j < 5; j++ {
			sd := math.Sqrt((sig.At(i, i)*sig.At(j, j) + sig.At(i, j)*sig.At(i, j)) / float64(n*reps))
			assert.InDelta(t, sig.At(i, j), mean.At(i, j), 4*sd, "(%d,%d)", i, j)
		}
	}
	want := 2 * sig.At(0, 0) * sig.At(0, 0) / float64(n)
	assert.InDelta(t, 1, v00/float64(reps)/want, 0.1)
}

// randomBasis returns a p×r matrix with orthonormal columns.
func randomBasis(p, r int, rng *rand.Rand) *mat.Dense {
	g := mat.NewDense(p, r, nil)
	for i := 0; i < p; i++ {
		for k := 0; k < r; k++ {
			g.Set(i, k, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	return mat.DenseCopyOf(q.Slice(0, p, 0, r))
}

// lowRank returns U·diag(d)·Uᵀ + s·I.
func lowRank(u *mat.Dense, d []float64, s float64) *mat.Dense {
	p, _ := u.Dims()
	var um, out mat.Dense
	um.Mul(u, mat.NewDiagDense(len(d), d))
	out.Mul(&um, u.T())
	for j := 0; j < p; j++ {
		out.Set(j, j, out.At(j, j)+s)
	}
	return &out
}

// A small Wishart study reports the non-private reference, then each
// private method at every ε in increasing ε.
func TestCovStudyRows(t *testing.T) {
	rows, err := CovStudy(context.Background(), CovStudyConfig{N: 5000, P: 20, Lambda: []float64{8, 6}, Sigma2: 1,
		Eps: []float64{4, 1}, Delta: 1e-5, Seeds: 2, Backend: backend.Gonum{}})
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, r.Method+" "+strconv.FormatFloat(r.Eps, 'g', -1, 64))
		assert.Equal(t, 2, r.Runs)
		assert.True(t, r.SinSpec[1] >= 0 && r.SinSpec[1] <= 1, r.Method)
	}
	assert.Equal(t, []string{"nonprivate +Inf", "cxz-pca-only 1", "cxz-pca-only 4", "analyze-gauss 1", "analyze-gauss 4"}, got)
	assert.Contains(t, Markdown(rows), "| nonprivate | ∞ |")
}
