package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

const tD1, tD2, tR = 4, 3, 2

// traceBlock draws n samples X_i (4×3, row-major rows of x) with y_i =
// <X_i, M> + noise, scaled so that every clip below bites on some.
func traceBlock(n int, seed uint64) (x, y []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := tD1 * tD2
	x = make([]float64, n*p)
	y = make([]float64, n)
	for i := 0; i < n; i++ {
		xi := x[i*p : (i+1)*p]
		for j := range xi {
			xi[j] = rng.NormFloat64()
		}
		y[i] = 2*xi[1] - xi[5] + 0.3*rng.NormFloat64()
	}
	return x, y
}

// tangentPoint returns an iterate m and its tangent space, from the SVD
// of a random matrix.
func tangentPoint(seed uint64) ([]float64, Tangent) {
	rng := rand.New(rand.NewPCG(seed, 3))
	a := mat.NewDense(tD1, tD2, nil)
	for i := 0; i < tD1; i++ {
		for j := 0; j < tD2; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		panic("svd")
	}
	var uu, vv mat.Dense
	svd.UTo(&uu)
	svd.VTo(&vv)
	s := svd.Values(nil)
	ur := mat.DenseCopyOf(uu.Slice(0, tD1, 0, tR))
	vr := mat.DenseCopyOf(vv.Slice(0, tD2, 0, tR))
	var us, mm mat.Dense
	us.Mul(ur, mat.NewDiagDense(tR, s[:tR]))
	mm.Mul(&us, vr.T())
	return mat.DenseCopyOf(&mm).RawMatrix().Data,
		Tangent{D1: tD1, D2: tD2, R: tR, U: ur.RawMatrix().Data, Vt: mat.DenseCopyOf(vr.T()).RawMatrix().Data}
}

// projDense is P_T(a) by gonum products: the reference for Project.
func projDense(a []float64, t Tangent) []float64 {
	A := mat.NewDense(t.D1, t.D2, a)
	U := mat.NewDense(t.D1, t.R, t.U)
	Vt := mat.NewDense(t.R, t.D2, t.Vt)
	var uu, vv, t1, t2, t3 mat.Dense
	uu.Mul(U, U.T())
	vv.Mul(Vt.T(), Vt)
	t1.Mul(&uu, A)
	t2.Mul(A, &vv)
	t3.Mul(&t1, &vv)
	t1.Add(&t1, &t2)
	t1.Sub(&t1, &t3)
	return mat.DenseCopyOf(&t1).RawMatrix().Data
}

// TestTangent: the projection equals the matrix formula and is idempotent,
// the projected norm is the norm of the projection, and Check refuses
// factors that are not orthonormal.
func TestTangent(t *testing.T) {
	_, tg := tangentPoint(1)
	require.NoError(t, tg.Check())
	rng := rand.New(rand.NewPCG(2, 2))
	a := make([]float64, tD1*tD2)
	for j := range a {
		a[j] = rng.NormFloat64()
	}
	pa := tg.Project(a)
	assert.InDeltaSlice(t, projDense(a, tg), pa, 1e-13)
	assert.InDeltaSlice(t, pa, tg.Project(pa), 1e-13)
	assert.InDelta(t, Norm(pa), tg.ProjectedNorm(a, nil), 1e-12)

	bad := tg
	bad.U = append([]float64(nil), tg.U...)
	bad.U[0] *= 2
	assert.ErrorContains(t, bad.Check(), "orthonormal columns")
	bad = tg
	bad.Vt = append([]float64(nil), tg.Vt...)
	bad.Vt[1] += 0.1
	assert.ErrorContains(t, bad.Check(), "orthonormal rows")
	bad = tg
	bad.R = 3
	assert.ErrorContains(t, bad.Check(), "want")
}

// TestTraceKernels: each kernel equals its sum written term by term with
// gonum, over one block and over two blocks added (the order of the
// blocks only changes rounding), its clips bite, and its sum passes its
// check while a sum scaled past the bound fails it.
func TestTraceKernels(t *testing.T) {
	const n = 200
	p := tD1 * tD2
	x, y := traceBlock(n, 1)
	m, tg := tangentPoint(5)
	const cx, cy, tau = 3.5, 1.5, 2.0
	row := func(i int) []float64 { return x[i*p : (i+1)*p] }
	want := map[string][]float64{}
	wantLoss, wantClipped := map[string]float64{}, map[string]int{}
	for _, name := range []string{"moment", "clipped moment", "gradient", "projected gradient"} {
		want[name] = make([]float64, p)
	}
	for i := 0; i < n; i++ {
		xi, yi := row(i), y[i]
		floats.AddScaled(want["moment"], yi, xi)
		nx := floats.Norm(xi, 2)
		cxi, cyi := math.Min(1, cx/nx), math.Max(-cy, math.Min(cy, yi))
		if cxi < 1 || cyi != yi {
			wantClipped["clipped moment"]++
		}
		floats.AddScaled(want["clipped moment"], cxi*cyi, xi)
		res := floats.Dot(xi, m) - yi
		for _, k := range []string{"gradient", "projected gradient"} {
			wantLoss[k] += res * res
		}
		floats.AddScaled(want["gradient"], res, xi)
		if g := math.Abs(res) * Norm(projDense(xi, tg)); g > tau {
			wantClipped["projected gradient"]++
			floats.AddScaled(want["projected gradient"], res*tau/g, xi)
		} else {
			floats.AddScaled(want["projected gradient"], res, xi)
		}
	}
	run := map[string]func(sum, x, y []float64) (float64, int){
		"moment":         func(sum, x, y []float64) (float64, int) { Moment(sum, x, p, y); return 0, 0 },
		"clipped moment": func(sum, x, y []float64) (float64, int) { return 0, ClippedMoment(sum, x, p, y, cx, cy) },
		"gradient":       func(sum, x, y []float64) (float64, int) { return Gradient(sum, x, p, y, m), 0 },
		"projected gradient": func(sum, x, y []float64) (float64, int) {
			return ProjectedGradient(sum, x, p, y, m, tg, tau)
		},
	}
	for name, f := range run {
		t.Run(name, func(t *testing.T) {
			sum := make([]float64, p)
			loss, clipped := f(sum, x, y)
			assert.InDeltaSlice(t, want[name], sum, 1e-11)
			assert.InDelta(t, wantLoss[name], loss, 1e-10)
			assert.Equal(t, wantClipped[name], clipped)
			if name != "moment" && name != "gradient" {
				assert.Positive(t, clipped, "the clip bites")
			}
			// Two blocks added equal one block.
			halves := make([]float64, p)
			l1, c1 := f(halves, x[:n/2*p], y[:n/2])
			l2, c2 := f(halves, x[n/2*p:], y[n/2:])
			assert.InDeltaSlice(t, sum, halves, 1e-11)
			assert.InDelta(t, loss, l1+l2, 1e-10)
			assert.Equal(t, clipped, c1+c2)
		})
	}
	assert.NoError(t, CheckClippedMoment(want["clipped moment"], n, cx, cy))
	floats.Scale(float64(n)*cx*cy*1.01/Norm(want["clipped moment"]), want["clipped moment"])
	assert.ErrorContains(t, CheckClippedMoment(want["clipped moment"], n, cx, cy), "n·cx·cy")
	assert.NoError(t, CheckProjectedGradient(want["projected gradient"], n, tg, tau))
	floats.Scale(float64(n)*tau*1.01/Norm(tg.Project(want["projected gradient"])), want["projected gradient"])
	assert.ErrorContains(t, CheckProjectedGradient(want["projected gradient"], n, tg, tau), "n·τ")
}

// TestTraceSensitivity: replacing one sample by an arbitrary one (scaled
// designs, extreme responses) changes the clipped moment sum by at most
// ClippedMomentSensitivity and the projection of the projected-gradient
// sum by at most ProjectedGradientSensitivity; the bounds are attained to
// within 25 % by the worst replacement.
func TestTraceSensitivity(t *testing.T) {
	const n = 60
	p := tD1 * tD2
	x, y := traceBlock(n, 9)
	m, tg := tangentPoint(3)
	const cx, cy, tau = 2.0, 1.0, 1.5
	rng := rand.New(rand.NewPCG(4, 4))
	sums := func(x, y []float64) (cm, pg []float64) {
		cm, pg = make([]float64, p), make([]float64, p)
		ClippedMoment(cm, x, p, y, cx, cy)
		ProjectedGradient(pg, x, p, y, m, tg, tau)
		return cm, pg
	}
	cm0, pg0 := sums(x, y)
	var worst [2]float64
	for k := 0; k < 300; k++ {
		i := rng.IntN(n)
		x1, y1 := append([]float64(nil), x...), append([]float64(nil), y...)
		scale := math.Pow(10, float64(k%4))
		for j := 0; j < p; j++ {
			x1[i*p+j] = scale * rng.NormFloat64()
		}
		y1[i] = math.Copysign(math.Pow(10, float64(k%5)), rng.NormFloat64())
		cm1, pg1 := sums(x1, y1)
		d := make([]float64, p)
		floats.SubTo(d, cm1, cm0)
		worst[0] = math.Max(worst[0], Norm(d)/ClippedMomentSensitivity(cx, cy))
		floats.SubTo(d, pg1, pg0)
		worst[1] = math.Max(worst[1], Norm(tg.Project(d))/ProjectedGradientSensitivity(tau))
	}
	t.Logf("largest change / sensitivity: clipped moment %.3f, projected gradient %.3f", worst[0], worst[1])
	for _, w := range worst {
		assert.LessOrEqual(t, w, 1+1e-12)
		assert.Greater(t, w, 0.75)
	}
}
