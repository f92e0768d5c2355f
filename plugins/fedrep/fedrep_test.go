package fedrep

import (
	"context"
	"math"
	"math/rand/v2"
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

func randDense(r *rand.Rand, rows, cols int) *mat.Dense {
	m := mat.NewDense(rows, cols, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = r.NormFloat64()
	}
	return m
}

// Property 1: QR re-orthonormalization is orthonormal and keeps the span.
func TestOrthonormalize(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ d, k int }{{50, 2}, {20, 5}, {3, 3}, {200, 1}} {
		a := randDense(r, tc.d, tc.k)
		q, err := orthonormalize(be, a)
		require.NoError(t, err)
		var g mat.Dense
		g.Mul(q.T(), q)
		for i := 0; i < tc.k; i++ {
			for j := 0; j < tc.k; j++ {
				want := 0.0
				if i == j {
					want = 1
				}
				assert.InDelta(t, want, g.At(i, j), 1e-12)
			}
		}
		assert.Less(t, subspaceDist(t, a, q), 1e-7, "same span (the metric resolves ~√ε_mach)")
	}
	// A rank-deficient iterate falls back to the polar factor.
	a := mat.NewDense(4, 2, []float64{1, 1, 2, 2, 3, 3, 4, 4})
	q, err := orthonormalize(be, a)
	require.NoError(t, err)
	assert.Equal(t, 4, q.RawMatrix().Rows)
	_, err = orthonormalize(be, mat.NewDense(2, 1, []float64{math.NaN(), 1}))
	assert.Error(t, err)
}

// Property 1 on the estimator: the released U has orthonormal columns.
func TestReleasedUOrthonormal(t *testing.T) {
	g := genUsers(t, 500, 10, 20, 3, 0.01, 1)
	for _, est := range []sdk.Estimator{PrivateFedRep{}, NonPrivateFedRep{}, PrivAltMin{}} {
		res, _ := fit(t, est, g.Data, map[string]string{"rank": "3"}, approx(2), 7)
		u := matrix(t, res, "U").M
		var gm mat.Dense
		gm.Mul(u.T(), u)
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				assert.InDelta(t, b2f(i == j), gm.At(i, j), 1e-12, est.Info().Name)
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Property 3: the per-user gradient passes a finite-difference check, and is
// orthogonal to span(U) when v is the exact least squares on the same batch.
func TestGradientFiniteDifference(t *testing.T) {
	g := genUsers(t, 3, 12, 8, 2, 0.3, 5)
	r := rand.New(rand.NewPCG(9, 9))
	u, _ := orthonormalize(be, randDense(r, 8, 2))
	// user 1's training half (the passes' rows of its term)
	lo := g.Data.UserStart[1]
	m0, _ := pass.UserSplit(g.Data.UserStart[2]-lo, 0.5, 0)
	gRows := make([]int, m0)
	xs := make([][]float64, m0)
	for j := range gRows {
		gRows[j] = lo + j
		xs[j] = g.Data.X.RawRowView(lo + j)
	}
	ys := g.Data.Y[lo : lo+m0]
	var ks kernel.Scratch
	g0, v0 := ks.UserGradient(kernel.Model{U: u.RawMatrix().Data, D: 8, K: 2}, xs, ys, xs, ys)
	v := append([]float64(nil), v0...)
	grad := mat.NewDense(8, 2, nil)
	for p := 0; p < 8; p++ {
		for a := 0; a < 2; a++ {
			grad.Set(p, a, g0[p]*v[a])
		}
	}
	loss := func(um *mat.Dense) float64 {
		var s float64
		for _, rr := range gRows {
			x := g.Data.X.RawRowView(rr)
			var pred float64
			for p := 0; p < 8; p++ {
				for a := 0; a < 2; a++ {
					pred += x[p] * um.At(p, a) * v[a]
				}
			}
			s += (pred - g.Data.Y[rr]) * (pred - g.Data.Y[rr])
		}
		return s / float64(len(gRows))
	}
	h := 1e-6
	fd := mat.NewDense(8, 2, nil)
	for p := 0; p < 8; p++ {
		for a := 0; a < 2; a++ {
			up, um := mat.DenseCopyOf(u), mat.DenseCopyOf(u)
			up.Set(p, a, up.At(p, a)+h)
			um.Set(p, a, um.At(p, a)-h)
			fd.Set(p, a, (loss(up)-loss(um))/(2*h))
		}
	}
	var diff mat.Dense
	diff.Sub(fd, grad)
	assert.Less(t, mat.Norm(&diff, 2)/mat.Norm(grad, 2), 1e-6)
	var ug mat.Dense
	ug.Mul(u.T(), grad)
	assert.Less(t, mat.Norm(&ug, 2), 1e-10*mat.Norm(grad, 2), "Uᵀ∇ = 0 for the exact least-squares head")
}

// Property 4 (clipping) is tested with the kernel (engine/kernel).

// adversarial returns a copy of ds whose user `victim` holds hostile data.
func adversarial(ds *data.Dataset, victim int, kind int) *data.Dataset {
	x := mat.DenseCopyOf(ds.X)
	y := append([]float64(nil), ds.Y...)
	r := rand.New(rand.NewPCG(uint64(kind), 77))
	for row := ds.UserStart[victim]; row < ds.UserStart[victim+1]; row++ {
		xr := x.RawRowView(row)
		for p := range xr {
			switch kind {
			case 0: // huge
				xr[p] = 1e150 * r.NormFloat64()
			case 1: // aligned with a fixed direction, big labels
				xr[p] = 1e3
			case 2: // tiny
				xr[p] = 1e-150 * r.NormFloat64()
			default: // one enormous sample among ordinary ones
				if row == ds.UserStart[victim] {
					xr[p] = 1e200
				}
			}
		}
		switch kind {
		case 0:
			y[row] = -1e150
		case 1:
			y[row] = 1e6
		case 2:
			y[row] = 1e-150
		default:
			y[row] = 1e100
		}
	}
	out := *ds
	out.X, out.Y = x, y
	return &out
}

// Property 4: replacing one user's data by arbitrary, even adversarial data
// moves the pre-noise aggregates by at most the stated sensitivities.
func TestSensitivityAdversarial(t *testing.T) {
	g := genUsers(t, 40, 10, 12, 2, 0.1, 11)
	r := rand.New(rand.NewPCG(2, 2))
	u, _ := orthonormalize(be, randDense(r, 12, 2))
	ur := u.RawMatrix().Data
	const psi, psiInit, cw, cy, portion = 0.5, 0.7, 0.3, 0.9, 5
	n := 40
	for kind := 0; kind < 4; kind++ {
		for _, victim := range []int{0, 17, 39} {
			adv := adversarial(g.Data, victim, kind)
			require.NoError(t, adv.Validate())
			// FedRep rounds.
			e1 := testUsers(t, g.Data, 0.5, 2, psi, lossSquared)
			e2 := testUsers(t, adv, 0.5, 2, psi, lossSquared)
			s1, _, err := e1.aggregate(context.Background(), ur, 0)
			require.NoError(t, err)
			s2, _, err := e2.aggregate(context.Background(), ur, 0)
			require.NoError(t, err)
			diff := make([]float64, len(s1))
			for i := range s1 {
				diff[i] = (s1[i] - s2[i]) / float64(n)
			}
			assert.True(t, kernel.AllFinite(s2))
			assert.LessOrEqual(t, kernel.SafeNorm(diff), 2*psi/float64(n)*(1+1e-9), "FedRep kind %d victim %d", kind, victim)
			// Initialization.
			z1, _, err := e1.ustatMean(context.Background(), psiInit)
			require.NoError(t, err)
			z2, _, err := e2.ustatMean(context.Background(), psiInit)
			require.NoError(t, err)
			var dz mat.Dense
			dz.Sub(z1, z2)
			assert.True(t, kernel.AllFinite(z2.RawSymmetric().Data))
			assert.LessOrEqual(t, mat.Norm(&dz, 2), 2*psiInit/float64(n)*(1+1e-9), "init kind %d victim %d", kind, victim)
			// Priv-AltMin statistics.
			users := allUsers(n)
			a1, b1, err := e1.altminStats(context.Background(), ur, users, cw, cy, portion)
			require.NoError(t, err)
			a2, b2, err := e2.altminStats(context.Background(), ur, users, cw, cy, portion)
			require.NoError(t, err)
			var da mat.Dense
			da.Sub(a1, a2)
			db := make([]float64, len(b1))
			for i := range b1 {
				db[i] = b1[i] - b2[i]
			}
			assert.LessOrEqual(t, mat.Norm(&da, 2), math.Sqrt2*portion*cw*cw*(1+1e-9), "altmin A kind %d", kind)
			assert.LessOrEqual(t, kernel.SafeNorm(db), 2*portion*cw*cy*(1+1e-9), "altmin b kind %d", kind)
		}
	}
}

// Property 5: accountant round trip and composition.
func TestAccountingRoundTrip(t *testing.T) {
	for _, eps := range []float64{0.1, 1, 2, 4, 8} {
		delta := 1e-6
		n, T, psi := 20000, 5, 10.0
		rho, err := privacy.RhoForEpsDelta(eps, delta)
		require.NoError(t, err)
		sigma := (psi / float64(n)) * math.Sqrt(2*float64(T)/rho) // DERIVATIONS.md §4
		back := float64(T) * privacy.RhoOfGaussian(2*psi/float64(n), sigma)
		assert.InDelta(t, eps, privacy.EpsilonFromRho(back, delta), 1e-9)
	}
	// The estimator's steps add up to the grant and its σ matches the
	// formula: under noise=zcdp exactly ρ; under noise=exact (the default)
	// the μ² of Gaussian DP, more ρ than zCDP allows (less noise), certified
	// by the exact Gaussian composition.
	g := genUsers(t, 300, 10, 10, 2, 0.01, 1)
	rho, _ := privacy.RhoForEpsDelta(2, 1e-6)
	for _, noise := range []string{"zcdp", "exact"} {
		res, acct := fit(t, PrivateFedRep{}, g.Data, map[string]string{"iterations": "4", "clip": "2", "init_clip": "5", "init_share": "0.2", "noise": noise}, approx(2), 1)
		steps := acct.Steps()
		require.Len(t, steps, 5)
		var total float64
		for _, s := range steps {
			total += s.Rho
		}
		assert.InDelta(t, 0.2*total, steps[0].Rho, 1e-12, noise)
		want := (2.0 / 300) * math.Sqrt(2*4/(0.8*total))
		assert.InDelta(t, want, scalar(t, res, "sigma"), 1e-9*want, noise)
		// The accountant certifies the composition; it may state a tighter ε
		// than the grant's, never a larger one.
		assert.LessOrEqual(t, res.Guarantee.Epsilon, 2*(1+1e-9), noise)
		if noise == "zcdp" {
			assert.InDelta(t, rho, total, 1e-12)
			assert.Contains(t, []privacy.GuaranteeKind{privacy.ZCDP, privacy.Approx}, res.Guarantee.Kind)
			continue
		}
		assert.Greater(t, total, 1.05*rho, "exact: at least 5 %% more ρ than zCDP")
		assert.Equal(t, "gdp", res.Guarantee.Accounting)
		assert.InDelta(t, 2, res.Guarantee.Epsilon, 0.02, "exact: the grant is used up to the lattice margin")
	}
	// Bun–Steinke conversion is monotone.
	prev := 0.0
	for _, r := range []float64{1e-4, 1e-3, 1e-2, 0.1, 1} {
		e := privacy.EpsilonFromRho(r, 1e-6)
		assert.Greater(t, e, prev)
		prev = e
	}
	// The paper calibration records its true (smaller) cost.
	_, acct := fit(t, PrivateFedRep{}, g.Data, map[string]string{"noise": "paper"}, approx(1), 1)
	var fr float64
	for _, s := range acct.Steps()[1:] {
		fr += s.Rho
	}
	sig := 10 * math.Sqrt(48*5*math.Log(1.25/1e-6)) / 300
	assert.InDelta(t, 5*privacy.RhoOfGaussian(20.0/300, sig), fr, 1e-12)
}

// Property 6: the released noise has the accountant's scale; same seed gives
// identical output, another seed changes it.
func TestNoiseScaleAndDeterminism(t *testing.T) {
	g := genUsers(t, 60, 6, 100, 4, 0.01, 2)
	var pre []float64
	var draws []float64
	roundHook = func(_ int, v []float64) {
		if pre == nil {
			pre = v
			return
		}
		for i := range v {
			draws = append(draws, v[i]-pre[i])
		}
		pre = nil
	}
	defer func() { roundHook = nil }()
	res, _ := fit(t, PrivateFedRep{}, g.Data, map[string]string{"rank": "4", "iterations": "100", "step": "0.01", "init": "random"}, approx(1), 3)
	roundHook = nil
	sigma := scalar(t, res, "sigma")
	require.Len(t, draws, 40000)
	var m, s2 float64
	for _, v := range draws {
		m += v
	}
	m /= float64(len(draws))
	for _, v := range draws {
		s2 += (v - m) * (v - m)
	}
	sd := math.Sqrt(s2 / float64(len(draws)-1))
	assert.InDelta(t, 1, sd/sigma, 0.01)
	assert.Less(t, math.Abs(m), 4*sigma/math.Sqrt(float64(len(draws))))

	small := genUsers(t, 200, 10, 10, 2, 0.01, 2)
	r1, _ := fit(t, PrivateFedRep{}, small.Data, nil, approx(1), 42)
	r2, _ := fit(t, PrivateFedRep{}, small.Data, nil, approx(1), 42)
	r3, _ := fit(t, PrivateFedRep{}, small.Data, nil, approx(1), 43)
	assert.True(t, mat.Equal(matrix(t, r1, "U").M, matrix(t, r2, "U").M))
	assert.False(t, mat.Equal(matrix(t, r1, "U").M, matrix(t, r3, "U").M))
	assert.True(t, r1.Guarantee.Seeded)
}
