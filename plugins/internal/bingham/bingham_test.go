package bingham

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/privacy"
)

// ksCrit001 is the asymptotic one-sample Kolmogorov–Smirnov critical value
// of sqrt(n)·D at significance 0.001.
const ksCrit001 = 1.949

// circleCDF returns the CDF on [0, π) of θ with density ∝ exp(κ cos(2θ−μ)),
// by cumulative trapezoid on a fine grid.
func circleCDF(kappa, mu float64) func(float64) float64 {
	const m = 1 << 15
	h := math.Pi / m
	logf := func(t float64) float64 { return kappa * math.Cos(2*t-mu) }
	cum := make([]float64, m+1)
	for i := 1; i <= m; i++ {
		t0, t1 := float64(i-1)*h, float64(i)*h
		cum[i] = cum[i-1] + 0.5*h*(math.Exp(logf(t0)-kappa)+math.Exp(logf(t1)-kappa))
	}
	tot := cum[m]
	return func(t float64) float64 {
		x := t / h
		i := int(x)
		if i >= m {
			return 1
		}
		fr := x - float64(i)
		return (cum[i] + fr*(cum[i+1]-cum[i])) / tot
	}
}

// ksStat returns sqrt(n)·sup|F_n − F|.
func ksStat(xs []float64, cdf func(float64) float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := float64(len(s))
	var d float64
	for i, x := range s {
		f := cdf(x)
		d = math.Max(d, math.Max(math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n)))
	}
	return math.Sqrt(n) * d
}

func angleModPi(x []float64) float64 {
	t := math.Atan2(x[1], x[0])
	t = math.Mod(t, math.Pi)
	if t < 0 {
		t += math.Pi
	}
	return t
}

func TestCircleGoodnessOfFit(t *testing.T) {
	cases := []struct {
		name           string
		a11, a12, a22  float64
		beta           float64
		expectRawFails bool
	}{
		{"weak", 1, 0.2, 0.5, 0.6, false},
		{"moderate", 3, 1, -1, 1.5, true},
		{"strong", 40, 10, 5, 0.5, true},
		{"negative beta", 2, -1, 0, -2, true},
		{"zero beta", 2, 1, 0, 0, false},
	}
	const n = 20000
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := mat.NewSymDense(2, []float64{tc.a11, tc.a12, tc.a12, tc.a22})
			kappa := tc.beta * math.Hypot((tc.a11-tc.a22)/2, tc.a12)
			mu := math.Atan2(tc.a12, (tc.a11-tc.a22)/2)
			if kappa < 0 {
				kappa, mu = -kappa, mu+math.Pi
			}
			cdf := circleCDF(kappa, mu)
			s, err := New(a, tc.beta, backend.Gonum{})
			require.NoError(t, err)
			rnd := privacy.NewSeededSource(uint64(100 + ci))
			xs, diag, err := s.SampleN(context.Background(), rnd, n)
			require.NoError(t, err)
			require.Equal(t, n, diag.Draws)
			th := make([]float64, n)
			for i := range th {
				th[i] = angleModPi(xs.RawRowView(i))
			}
			assert.Less(t, ksStat(th, cdf), ksCrit001, "exact sampler rejected by KS")

			// The same KS test must reject raw ACG proposals (no accept step)
			// where the envelope differs visibly from the target.
			r := privacy.NewSeededSource(uint64(200 + ci)).Rand()
			x := make([]float64, 2)
			for i := range th {
				s.rawProposal(r, x)
				th[i] = angleModPi(x)
			}
			if tc.expectRawFails {
				assert.Greater(t, ksStat(th, cdf), ksCrit001, "KS test has no power against raw proposals")
			}
		})
	}
}

// sphereMoments integrates E[x xᵀ] and E[(xᵀAx)²] under exp(β xᵀAx) on S²
// by a product midpoint rule in spherical coordinates.
func sphereMoments(a *mat.SymDense, beta float64) (*mat.Dense, float64) {
	const nt, np = 600, 1200
	var z, q2 float64
	m := mat.NewDense(3, 3, nil)
	x := make([]float64, 3)
	var maxLog float64
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < nt; i++ {
			th := (float64(i) + 0.5) * math.Pi / nt
			for j := 0; j < np; j++ {
				ph := (float64(j) + 0.5) * 2 * math.Pi / np
				x[0], x[1], x[2] = math.Sin(th)*math.Cos(ph), math.Sin(th)*math.Sin(ph), math.Cos(th)
				q := mat.Inner(mat.NewVecDense(3, x), a, mat.NewVecDense(3, x))
				if pass == 0 {
					maxLog = math.Max(maxLog, beta*q)
					continue
				}
				w := math.Exp(beta*q-maxLog) * math.Sin(th)
				z += w
				q2 += w * q * q
				for r := 0; r < 3; r++ {
					for c := 0; c < 3; c++ {
						m.Set(r, c, m.At(r, c)+w*x[r]*x[c])
					}
				}
			}
		}
	}
	m.Scale(1/z, m)
	return m, q2 / z
}

func TestSphereMomentsAgainstQuadrature(t *testing.T) {
	a := mat.NewSymDense(3, []float64{
		4, 1, -0.5,
		1, 2, 0.3,
		-0.5, 0.3, -1,
	})
	const beta, n = 1.3, 20000
	want, wantQ2 := sphereMoments(a, beta)

	check := func(xs *mat.Dense) (maxZ float64) {
		// z-scores of the six second moments and of E[(xᵀAx)²].
		stats := make([][]float64, 7)
		for i := 0; i < n; i++ {
			x := xs.RawRowView(i)
			k := 0
			for r := 0; r < 3; r++ {
				for c := r; c < 3; c++ {
					stats[k] = append(stats[k], x[r]*x[c])
					k++
				}
			}
			q := mat.Inner(mat.NewVecDense(3, x), a, mat.NewVecDense(3, x))
			stats[6] = append(stats[6], q*q)
		}
		targets := []float64{want.At(0, 0), want.At(0, 1), want.At(0, 2), want.At(1, 1), want.At(1, 2), want.At(2, 2), wantQ2}
		for k, s := range stats {
			mean, sd := meanSD(s)
			z := math.Abs(mean-targets[k]) / (sd / math.Sqrt(n))
			maxZ = math.Max(maxZ, z)
		}
		return maxZ
	}

	s, err := New(a, beta, nil)
	require.NoError(t, err)
	xs, diag, err := s.SampleN(context.Background(), privacy.NewSeededSource(7), n)
	require.NoError(t, err)
	assert.Less(t, check(xs), 4.5, "sample moments disagree with quadrature")
	assert.Less(t, diag.AcceptanceRate, 0.95, "acceptance should not be unconditional here")

	raw := mat.NewDense(n, 3, nil)
	r := privacy.NewSeededSource(8).Rand()
	for i := 0; i < n; i++ {
		s.rawProposal(r, raw.RawRowView(i))
	}
	assert.Greater(t, check(raw), 6.0, "moment test has no power against raw proposals")
}

func meanSD(s []float64) (float64, float64) {
	var m float64
	for _, v := range s {
		m += v
	}
	m /= float64(len(s))
	var v float64
	for _, x := range s {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(s)-1))
}

func TestAcceptStepIsReal(t *testing.T) {
	// A strongly anisotropic target: the ACG envelope is far from the
	// target, so a real accept step must reject a sizeable share.
	d := 20
	vals := make([]float64, d)
	for i := range vals {
		vals[i] = float64(d - i)
	}
	s, err := FromEigen(vals, eye(d), 2)
	require.NoError(t, err)
	_, diag, err := s.SampleN(context.Background(), privacy.NewSeededSource(3), 2000)
	require.NoError(t, err)
	assert.Equal(t, 2000, diag.Draws)
	assert.Greater(t, diag.Proposals, 2200)
	assert.InDelta(t, float64(diag.Draws)/float64(diag.Proposals), diag.AcceptanceRate, 1e-12)
	assert.Greater(t, diag.B, 0.0)
	assert.LessOrEqual(t, diag.B, float64(d))

	// With β = 0 the envelope is the target: every proposal is accepted.
	s0, err := FromEigen(vals, eye(d), 0)
	require.NoError(t, err)
	_, diag0, err := s0.SampleN(context.Background(), privacy.NewSeededSource(3), 500)
	require.NoError(t, err)
	assert.Equal(t, 500, diag0.Proposals)
}

func eye(d int) *mat.Dense {
	m := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		m.Set(i, i, 1)
	}
	return m
}

func TestSampleVectorBasics(t *testing.T) {
	a := mat.NewSymDense(4, []float64{
		3, 1, 0, 0,
		1, 2, 0, 0,
		0, 0, 1, 0.5,
		0, 0, 0.5, 0,
	})
	x1, d1, err := SampleVector(context.Background(), privacy.NewSeededSource(11), a, 2)
	require.NoError(t, err)
	x2, _, err := SampleVector(context.Background(), privacy.NewSeededSource(11), a, 2)
	require.NoError(t, err)
	assert.Equal(t, x1, x2, "same seed must give the same draw")
	assert.InDelta(t, 1, floatsNorm(x1), 1e-12)
	assert.Equal(t, 1, d1.Draws)
	assert.GreaterOrEqual(t, d1.Proposals, 1)
	assert.Equal(t, 4, d1.Dim)

	// d = 1: ±1.
	x, _, err := SampleVector(context.Background(), privacy.NewSeededSource(1), mat.NewSymDense(1, []float64{5}), 3)
	require.NoError(t, err)
	assert.InDelta(t, 1, math.Abs(x[0]), 1e-15)
}

func floatsNorm(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func TestInputErrors(t *testing.T) {
	good := mat.NewSymDense(2, []float64{1, 0, 0, 1})
	bad := mat.NewSymDense(2, []float64{1, math.NaN(), math.NaN(), 1})
	src := privacy.NewSeededSource(1)
	cases := []struct {
		name string
		a    *mat.SymDense
		beta float64
		rnd  *privacy.Source
	}{
		{"nil matrix", nil, 1, src},
		{"NaN entry", bad, 1, src},
		{"infinite beta", good, math.Inf(1), src},
		{"NaN beta", good, math.NaN(), src},
		{"nil source", good, 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := SampleVector(context.Background(), tc.rnd, tc.a, tc.beta)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInput)
		})
	}
	_, err := FromEigen([]float64{1, 2}, eye(3), 1)
	assert.ErrorIs(t, err, ErrInput)
}

func TestCancelledContext(t *testing.T) {
	// A target so concentrated that acceptance is rare, and a cancelled
	// context: the draw either succeeds quickly or reports cancellation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	vals := make([]float64, 50)
	for i := range vals {
		vals[i] = float64(50 - i)
	}
	s, err := FromEigen(vals, eye(50), 1e4)
	require.NoError(t, err)
	_, _, err = s.SampleN(ctx, privacy.NewSeededSource(1), 100000)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestVonMisesGoodnessOfFit(t *testing.T) {
	cases := []struct{ mu, kappa float64 }{
		{0, 0}, {1, 0.3}, {-2, 2}, {3, 25}, {0.5, 400},
	}
	const n = 20000
	for ci, tc := range cases {
		r := privacy.NewSeededSource(uint64(500 + ci)).Rand()
		// θ ~ vM(μ, κ) on (−π, π]; θ/2 + π/2 ∈ (0, π] has density ∝
		// exp(κ cos(2t − μ − π)), which circleCDF handles.
		cdf := circleCDF(tc.kappa, tc.mu+math.Pi)
		xs := make([]float64, n)
		for i := range xs {
			th := VonMises(r, tc.mu, tc.kappa)
			require.True(t, th > -math.Pi && th <= math.Pi)
			xs[i] = th/2 + math.Pi/2
		}
		assert.Less(t, ksStat(xs, cdf), ksCrit001, "von Mises μ=%v κ=%v", tc.mu, tc.kappa)
	}
}

// A tiny concentration (κ ≈ 7e-9, met by the orbit Gibbs sampler) returns
// instead of looping: the Best–Fisher ρ is computed without cancellation.
func TestVonMisesTinyKappa(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []float64{7.3e-9, 1e-10, 2e-12, 1e-6} {
		for i := 0; i < 100; i++ {
			th := VonMises(r, -0.5, k)
			assert.True(t, th > -math.Pi-1e-12 && th <= math.Pi, "κ=%g θ=%g", k, th)
		}
	}
}
