package privacy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Connect-the-dots PLDs of Laplace, randomized response and the
// bounded-range supremum reproduce their profiles at grid points to 1e-9
// relative, never fall below them anywhere (grid or not), and are exactly
// pure: δ = 0 beyond the top loss.
func TestCTDClosedForms(t *testing.T) {
	type mk struct {
		name  string
		build func(eps, h float64) (*PLD, error)
		curve func(eps, e float64) float64
	}
	mechs := []mk{
		{"laplace", CTDLaplace, LaplaceDelta},
		{"randomized response", CTDRandomizedResponse, RandomizedResponseDelta},
		{"bounded range", CTDBoundedRange, BoundedRangeDelta},
	}
	for _, m := range mechs {
		for _, c := range []struct{ eps, h float64 }{{0.1, 1e-3}, {1, 1e-3}, {3, 1e-3}, {0.37, 1e-4}, {2.5, 1e-2}} {
			p, err := m.build(c.eps, c.h)
			require.NoError(t, err)
			assert.Zero(t, p.Err)
			assert.Zero(t, p.Inf, "%s ε=%v: bounded loss, no mass at +∞", m.name, c.eps)
			// Grid points in [0, ε): exact to 1e-9, never below.
			for f := 0.0; f < 1; f += 0.0625 {
				e := math.Floor(f*c.eps/c.h) * c.h
				want := m.curve(c.eps, e)
				got := p.Delta(e)
				assert.GreaterOrEqual(t, got, want, "%s ε=%v ε'=%v: below the curve", m.name, c.eps, e)
				assert.InEpsilon(t, want, got, 1e-9, "%s ε=%v ε'=%v", m.name, c.eps, e)
				// Off the grid: above the curve, within one grid step.
				eo := e + 0.37*c.h
				assert.GreaterOrEqual(t, p.Delta(eo), m.curve(c.eps, eo), "%s ε=%v ε'=%v (off grid)", m.name, c.eps, eo)
				assert.LessOrEqual(t, p.Delta(eo), m.curve(c.eps, eo-c.h)*(1+1e-9), "%s ε=%v ε'=%v (off grid)", m.name, c.eps, eo)
			}
			top := math.Ceil(c.eps/c.h) * c.h
			assert.Zero(t, p.Delta(top), "%s ε=%v: pure", m.name, c.eps)
			eps, err := p.Epsilon(1e-12)
			require.NoError(t, err)
			assert.LessOrEqual(t, eps, top*(1+1e-11))
		}
	}
}

// Randomized response at an ε on the grid is reproduced exactly: two
// atoms, e^ε/(1+e^ε) at ε and 1/(1+e^ε) at −ε.
func TestCTDRandomizedResponseExact(t *testing.T) {
	const eps, h = 0.5, 1.0 / 1024
	p, err := CTDRandomizedResponse(eps, h)
	require.NoError(t, err)
	for i, m := range p.Mass {
		l := float64(p.Offset+i) * h
		switch {
		case math.Abs(l-eps) < h/2:
			assert.InEpsilon(t, 1/(1+math.Exp(-eps)), m, 1e-9)
		case math.Abs(l+eps) < h/2:
			assert.InEpsilon(t, 1/(1+math.Exp(eps)), m, 1e-9)
		default:
			assert.Less(t, m, 1e-12, "loss %v", l)
		}
	}
}

// The bounded-range supremum is the supremum of the binary profiles:
// never below any of them, equal to the one at t = (ε − ε')/(2ε), and
// below randomized response at ε (what any pure step gets).
func TestBoundedRangeSupremum(t *testing.T) {
	binary := func(eps, tt, e float64) float64 {
		q := math.Expm1(tt*eps) / math.Expm1(eps)
		p := q * math.Exp((1-tt)*eps)
		return math.Max(0, p-math.Exp(e)*q) + math.Max(0, (1-p)-math.Exp(e)*(1-q))
	}
	for _, eps := range []float64{0.05, 0.5, 1, 4} {
		for _, f := range []float64{0, 0.1, 0.5, 0.9} {
			e := f * eps
			sup := BoundedRangeDelta(eps, e)
			for tt := 0.0; tt <= 1; tt += 1.0 / 64 {
				assert.LessOrEqual(t, binary(eps, tt, e), sup*(1+1e-12), "ε=%v ε'=%v t=%v", eps, e, tt)
			}
			assert.InEpsilon(t, binary(eps, (eps-e)/(2*eps), e), sup, 1e-9)
			assert.Less(t, sup, RandomizedResponseDelta(eps, e))
		}
		assert.InEpsilon(t, math.Tanh(eps/4), BoundedRangeDelta(eps, 0), 1e-12)
	}
}

// A Gaussian PLD by connect-the-dots is exact at grid points (1e-9
// relative), above the GDP curve everywhere, never looser than the
// round-up PLD of the same grid, and its ε(δ) is within the stated bound
// (one factor: h) of the analytic curve, on the safe side.
func TestCTDGaussianAgainstGDP(t *testing.T) {
	for _, mu := range []float64{0.1, 0.5, 1, 3} {
		const h = 1e-3
		p, err := CTDGaussian(mu, h)
		require.NoError(t, err)
		old, err := roundUpGaussian(mu, h)
		require.NoError(t, err)
		assert.Less(t, p.Inf, 1e-20)
		for _, e := range []float64{0, 0.25, 0.5, 1, 2, 4, 8} {
			e = math.Round(e/h) * h
			want := GDPDelta(mu, e)
			if want < 1e-15 {
				continue
			}
			got := p.Delta(e)
			assert.GreaterOrEqual(t, got, want, "μ=%v ε=%v", mu, e)
			assert.InEpsilon(t, want, got, 1e-9, "μ=%v ε=%v", mu, e)
			eo := e + 0.5*h
			assert.GreaterOrEqual(t, p.Delta(eo), GDPDelta(mu, eo), "μ=%v ε=%v (off grid)", mu, eo)
			assert.LessOrEqual(t, p.Delta(eo), old.Delta(eo)*(1+1e-12), "μ=%v ε=%v: looser than round-up", mu, eo)
		}
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			exact, err := GDPEpsilon(mu, delta)
			require.NoError(t, err)
			got, err := p.Epsilon(delta)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, got, exact, "μ=%v δ=%v", mu, delta)
			assert.LessOrEqual(t, got, exact+h, "μ=%v δ=%v", mu, delta)
			t.Logf("μ=%v δ=%g: ε exact %.9f, connect-the-dots +%.2g, round-up +%.2g", mu, delta, exact, got-exact, mustEps(t, old, delta)-exact)
		}
	}
}

func mustEps(t *testing.T, p *PLD, delta float64) float64 {
	t.Helper()
	e, err := p.Epsilon(delta)
	require.NoError(t, err)
	return e
}

// The default PLD accountant on Gaussian-only runs agrees with the exact
// GDP curve within its stated error (k·h, one factor here) and never falls
// below it.
func TestRunPLDGaussianOnlyCTD(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 3))
	for trial := 0; trial < 8; trial++ {
		var steps []Step
		for i := 0; i < 1+r.IntN(6); i++ {
			steps = append(steps, Step{Name: "g", Mechanism: MechGaussian, Sensitivity: 0.5 + r.Float64(), Scale: 1 + 6*r.Float64()})
		}
		mu, _, err := RunGDP(steps)
		require.NoError(t, err)
		p, err := RunPLD(steps, DefaultPLDGrid)
		require.NoError(t, err)
		for _, delta := range []float64{1e-5, 1e-8} {
			exact, err := GDPEpsilon(mu, delta)
			require.NoError(t, err)
			got := mustEps(t, p, delta)
			assert.GreaterOrEqual(t, got, exact, "trial %d δ=%v", trial, delta)
			assert.LessOrEqual(t, got, exact+float64(p.Factors)*DefaultPLDGrid, "trial %d δ=%v", trial, delta)
		}
	}
}

// kFoldBinary is the exact δ(ε') of k compositions of the binary ε-BR
// pair with losses (1−t)ε and −tε: a genuine ε-BR mechanism, so no
// accountant may report less for k exponential-mechanism steps.
func kFoldBinary(k int, eps, tt, e float64) float64 {
	q := math.Expm1(tt*eps) / math.Expm1(eps)
	p := q * math.Exp((1-tt)*eps)
	var d float64
	for i := 0; i <= k; i++ { // i steps land on the high loss
		l := float64(i)*(1-tt)*eps - float64(k-i)*tt*eps
		if l > e {
			d += binom(k, i) * math.Pow(p, float64(i)) * math.Pow(1-p, float64(k-i)) * -math.Expm1(e-l)
		}
	}
	return d
}

// k-fold bounded-range composition: the PLD is never worse than kε
// (pure) and randomized response's PLD, and better than the ε²/8-zCDP
// conversion up to k = 10 (not for k = 40: the supremum pairs compose
// loosely); TightEpsilon is never worse than any of them;
// never below the exact curve of a genuine ε-BR mechanism composed k times
// (the binary pairs, for a grid of t).
func TestBoundedRangeComposition(t *testing.T) {
	const delta = 1e-6
	ks := []int{1, 2, 5, 10, 40}
	if testing.Short() {
		ks = []int{1, 5, 10}
	}
	for _, eps := range []float64{0.05, 0.3, 1} {
		for _, k := range ks {
			steps := make([]Step, k)
			for i := range steps {
				steps[i] = Step{Name: "em", Mechanism: MechExponential, Sensitivity: 1, Scale: eps / 2, Epsilon: eps, Rho: RhoOfExponential(eps)}
			}
			p, err := RunPLD(steps, DefaultPLDGrid)
			require.NoError(t, err)
			got := mustEps(t, p, delta)
			pure := float64(k) * eps
			zc := EpsilonFromRho(float64(k)*RhoOfExponential(eps), delta)
			old, err := roundUpRun(steps, DefaultPLDGrid)
			require.NoError(t, err)
			rr := mustEps(t, old, delta)
			assert.LessOrEqual(t, got, pure, "ε=%v k=%d", eps, k)
			assert.LessOrEqual(t, got, rr, "ε=%v k=%d", eps, k)
			if k <= 10 {
				assert.LessOrEqual(t, got, zc, "ε=%v k=%d", eps, k)
			}
			// TightEpsilon is never worse than any of them (it takes the
			// zCDP figure when the supremum pairs compose worse).
			tight, _, err := tightEpsilon(steps, delta)
			require.NoError(t, err)
			assert.LessOrEqual(t, tight, math.Min(math.Min(pure, zc), math.Min(rr, got))*(1+1e-12), "ε=%v k=%d", eps, k)
			// Lower bound: at every ε' the accountant's δ is at least that
			// of a genuine ε-BR mechanism composed k times, and so is the
			// ε TightEpsilon reports.
			for tt := 0.0; tt <= 1; tt += 0.125 {
				for _, e := range []float64{0, 0.5 * got, 0.9 * got, got} {
					assert.GreaterOrEqual(t, p.Delta(e), kFoldBinary(k, eps, tt, e), "ε=%v k=%d t=%v ε'=%v", eps, k, tt, e)
				}
				assert.LessOrEqual(t, kFoldBinary(k, eps, tt, tight), delta, "ε=%v k=%d t=%v: TightEpsilon below a genuine mechanism's ε", eps, k, tt)
			}
			t.Logf("ε=%v k=%2d: ε(1e-6) bounded range %.4f, randomized response %.4f, zCDP ε²/8 %.4f, pure %.4f", eps, k, got, rr, zc, pure)
		}
	}
}

// roundDown is an optimistic PLD from a round-up one: every mass moved
// one grid step down, the lowest bucket (the folded lower tail) dropped.
// Its composition's δ is at most the true composition's (every composed
// loss is at most the true one).
func roundDown(p *PLD) *PLD {
	q := &PLD{H: p.H, Offset: p.Offset - 1, Mass: append([]float64(nil), p.Mass...), Factors: p.Factors}
	q.Mass[0] = 0
	q.Mass[len(q.Mass)-1] += p.Inf
	q.Mass = append(q.Mass, 0)
	return q
}

// Property: on random mixed runs (fixed seeds) the default PLD accountant
// never reports an ε below a certified lower bound on the true ε of a
// genuine mechanism with those steps (Gaussian and Laplace steps as they
// are, every exponential step realised by randomized response at ε/2, an
// ε-BR mechanism; the lower bound composes their round-down PLDs), is never
// looser than the old round-up + randomized response PLD nor than zCDP (ρ =
// ε²/8 for the exponential mechanism) or pure composition, and for runs
// without exponential steps is within the stated k·h of the truth (whose
// lower bound is itself within k·h).
func TestPLDPropertyMixed(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 4))
	trials := 24
	if testing.Short() {
		trials = 10
	}
	const h = DefaultPLDGrid
	for trial := 0; trial < trials; trial++ {
		delta := math.Pow(10, -4-5*r.Float64())
		var steps []Step
		var rho, pureSum float64
		allPure, hasExp, hasGauss := true, false, false
		var lowFactors []*PLD
		var gmu2 float64
		n := 1 + r.IntN(6)
		for i := 0; i < n; i++ {
			switch r.IntN(3) {
			case 0:
				s := Step{Name: "g", Mechanism: MechGaussian, Sensitivity: 1, Scale: 1.5 + 6*r.Float64()}
				s.Rho = RhoOfGaussian(s.Sensitivity, s.Scale)
				steps = append(steps, s)
				rho += s.Rho
				gmu2 += 1 / (s.Scale * s.Scale)
				allPure, hasGauss = false, true
			case 1:
				e := 0.05 + 0.6*r.Float64()
				steps = append(steps, Step{Name: "l", Mechanism: MechLaplace, Sensitivity: 1, Scale: 1 / e, Epsilon: e, Rho: RhoOfPure(e)})
				rho += RhoOfPure(e)
				pureSum += e
				f, err := roundUpLaplace(e, h)
				require.NoError(t, err)
				lowFactors = append(lowFactors, roundDown(f))
			default:
				e := 0.05 + 0.6*r.Float64()
				steps = append(steps, Step{Name: "e", Mechanism: MechExponential, Sensitivity: 1, Scale: e / 2, Epsilon: e, Rho: RhoOfExponential(e)})
				rho += RhoOfExponential(e)
				pureSum += e
				hasExp = true
				f, err := roundUpPure(e/2, h)
				require.NoError(t, err)
				lowFactors = append(lowFactors, roundDown(f))
			}
		}
		if hasGauss {
			f, err := roundUpGaussian(math.Sqrt(gmu2), h)
			require.NoError(t, err)
			lowFactors = append(lowFactors, roundDown(f))
		}
		low := lowFactors[0]
		for _, f := range lowFactors[1:] {
			var err error
			low, err = low.Compose(f)
			require.NoError(t, err)
		}
		p, err := RunPLD(steps, h)
		require.NoError(t, err)
		got, err := p.Epsilon(delta)
		require.NoError(t, err)
		old, err := roundUpRun(steps, DefaultPLDGrid)
		require.NoError(t, err)
		oldEps := mustEps(t, old, delta)
		lowEps := 0.0
		if low.Delta(0) > delta {
			lowEps = mustEps(t, low, delta)
		}
		assert.GreaterOrEqual(t, got, lowEps, "trial %d: below a genuine mechanism's ε", trial)
		assert.LessOrEqual(t, got, oldEps*(1+1e-9)+1e-12, "trial %d: looser than the round-up PLD", trial)
		assert.LessOrEqual(t, got, EpsilonFromRho(rho, delta), "trial %d: looser than zCDP", trial)
		if allPure {
			assert.LessOrEqual(t, got, pureSum, "trial %d: looser than pure composition", trial)
		}
		if !hasExp {
			assert.LessOrEqual(t, got-lowEps, 2*float64(p.Factors)*h+1e-9, "trial %d: outside the stated error", trial)
		}
		tight, _, err := tightEpsilon(steps, delta)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, tight, lowEps, "trial %d: TightEpsilon", trial)
		cert, err := Certify(Guarantee{Kind: Approx}, Grant{Kind: GrantApprox, Epsilon: 100, Delta: delta}, steps)
		require.NoError(t, err)
		ce := cert.Epsilon
		if cert.Kind == Pure {
			if e, _, ok := cert.Tighter(); ok {
				ce = e
			}
		}
		assert.GreaterOrEqual(t, ce, lowEps, "trial %d: Certify", trial)
		assert.LessOrEqual(t, ce, got*(1+1e-12), "trial %d: Certify states the PLD's ε or better", trial)
	}
}

// A pure run under an (ε, δ) grant: Certify states the PLD's tighter
// (ε', δ) beside the pure Σε, and an exact plan of exponential shares,
// sized by the PLD, is admitted and meets the grant.
func TestPureRunTighterAndExactPlan(t *testing.T) {
	g := Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6}
	steps := make([]Step, 8)
	for i := range steps {
		steps[i] = Step{Name: "em", Mechanism: MechExponential, Sensitivity: 1, Scale: 0.125 / 2, Epsilon: 0.125, Rho: RhoOfExponential(0.125)}
	}
	cert, err := Certify(Guarantee{Kind: Pure}, g, steps)
	require.NoError(t, err)
	assert.Equal(t, Pure, cert.Kind)
	assert.InDelta(t, 1, cert.Epsilon, 1e-12)
	e, d, ok := cert.Tighter()
	require.True(t, ok)
	assert.Equal(t, 1e-6, d)
	assert.Less(t, e, 0.75)
	pe, _, err := tightEpsilon(steps, 1e-6)
	require.NoError(t, err)
	assert.InDelta(t, pe, e, 1e-12)

	for _, m := range []Mechanism{MechExponential, MechLaplace} {
		a, err := NewAccountant(g)
		require.NoError(t, err)
		az, err := NewAccountant(g)
		require.NoError(t, err)
		shares := []Share{{Name: "x", Weight: 1, Steps: 5, Mechanism: m}}
		p, err := NewPlan(a, NoiseExact, shares...)
		require.NoError(t, err)
		pz, err := NewPlan(az, NoiseZCDP, shares...)
		require.NoError(t, err)
		b, err := p.Budget("x")
		require.NoError(t, err)
		bz, err := pz.Budget("x")
		require.NoError(t, err)
		assert.Greater(t, b.Rho, bz.Rho, "%s: the exact plan allows more", m)
		spendPlan(t, a, p)
		ach := a.Achieved()
		assert.LessOrEqual(t, ach.Epsilon, 1.0, "%s", m)
		assert.Equal(t, MethodPLD, ach.Composition, "%s", m)
		pureEps, _ := b.pureEpsilon(m)
		t.Logf("%s ×5 at (1, 1e-6): per-step ε exact %.4f, zCDP %.4f, pure 0.2", m, pureEps, mustPure(t, bz, m))
	}
}

func mustPure(t *testing.T, b Budget, m Mechanism) float64 {
	t.Helper()
	e, err := b.pureEpsilon(m)
	require.NoError(t, err)
	return e
}

// A profile that is not convex, or noisy, still yields a PLD at or above
// it at every grid point (the construction raises the polygon).
func TestPLDFromProfileNonConvex(t *testing.T) {
	wobbly := func(e float64) float64 {
		return math.Max(0, BoundedRangeDelta(1, e)*(1+0.01*math.Sin(40*e)))
	}
	const h = 1e-3
	p, err := PLDFromProfile(wobbly, -1, 1, h)
	require.NoError(t, err)
	for e := 0.0; e < 1; e += 0.01 {
		eg := math.Round(e/h) * h
		assert.GreaterOrEqual(t, p.Delta(eg), wobbly(eg), "ε'=%v", eg)
	}
	var total float64
	for _, m := range p.Mass {
		assert.GreaterOrEqual(t, m, 0.0)
		total += m
	}
	assert.InDelta(t, 1, total+p.Inf, 1e-9)
	_, err = PLDFromProfile(wobbly, 0.5, 1, h)
	assert.ErrorIs(t, err, ErrInvalidBudget)
	_, err = PLDFromProfile(func(float64) float64 { return math.NaN() }, -1, 1, h)
	assert.ErrorIs(t, err, ErrInvalidBudget)
}

// FFT compositions carry an error bound that covers the measured error.
func TestFFTErrorBound(t *testing.T) {
	g, err := CTDGaussian(1, 1e-3)
	require.NoError(t, err)
	br, err := CTDBoundedRange(0.8, 1e-3)
	require.NoError(t, err)
	br4, err := br.SelfCompose(4)
	require.NoError(t, err)
	viaFFT, err := g.Compose(br4)
	require.NoError(t, err)
	require.Positive(t, viaFFT.Err)
	assert.Less(t, viaFFT.Err, 1e-12)
	direct := convolveDirect(br4.Mass, g.Mass)
	var l1 float64
	for i := range direct {
		l1 += math.Abs(direct[i] - viaFFT.Mass[i])
	}
	assert.LessOrEqual(t, l1, viaFFT.Err)
}

// The bounded-range parameter of an exponential step is its ε for both
// calibrations (2Δβ in general, Δβ for a monotone utility), and the larger
// of the declared ε and the one its Δ and β imply when they disagree.
func TestExponentialBRParameter(t *testing.T) {
	cases := []struct {
		name string
		step Step
		want float64
	}{
		{"general, β = ε/(2Δ)", Step{Mechanism: MechExponential, Sensitivity: 2, Scale: 0.5 / 4, Epsilon: 0.5}, 0.5},
		{"monotone, β = ε/Δ", Step{Mechanism: MechExponential, Calibration: CalibMonotone, Sensitivity: 2, Scale: 0.5 / 2, Epsilon: 0.5}, 0.5},
		{"declared ε below the implied one", Step{Mechanism: MechExponential, Sensitivity: 1, Scale: 0.5, Epsilon: 0.3}, 1},
		{"declared ε above the implied one", Step{Mechanism: MechExponential, Sensitivity: 1, Scale: 0.1, Epsilon: 0.3}, 0.3},
		{"no scale recorded", Step{Mechanism: MechExponential, Epsilon: 0.3}, 0.3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := stepPureEps(c.step)
			require.NoError(t, err)
			assert.InEpsilon(t, c.want, got, 1e-12)
		})
	}
	// Releases declared through the accountant carry the same ε either
	// way, and their PLD is the bounded-range one at that ε.
	a, err := NewAccountant(Grant{Kind: GrantApprox, Epsilon: 1, Delta: 1e-6})
	require.NoError(t, err)
	b := Budget{Noise: NoisePure, Epsilon: 0.4}
	r1, err := a.Exponential("general", 3, b)
	require.NoError(t, err)
	r2, err := a.ExponentialMonotone("monotone", 3, b)
	require.NoError(t, err)
	assert.InEpsilon(t, 2*r1.Beta(), r2.Beta(), 1e-12, "monotone β is twice the general one")
	for _, s := range a.Steps() {
		require.NoError(t, VerifyStep(s))
		e, err := stepPureEps(s)
		require.NoError(t, err)
		assert.InEpsilon(t, 0.4, e, 1e-12, s.Name)
	}
	p, err := RunPLD(a.Steps(), DefaultPLDGrid)
	require.NoError(t, err)
	br, err := CTDBoundedRange(0.4, DefaultPLDGrid)
	require.NoError(t, err)
	two, err := br.SelfCompose(2)
	require.NoError(t, err)
	for _, e := range []float64{0, 0.2, 0.5} {
		assert.InEpsilon(t, two.Delta(e), p.Delta(e), 1e-12)
	}
}

// A Laplace step's ℓ1 sensitivity may be spread over coordinates; the
// accountant models it by one coordinate carrying all of it. Spreading the
// shift composes to a profile no larger (checked on a grid of splits).
func TestLaplaceSingleCoordinateWorst(t *testing.T) {
	const h = 1e-4
	for _, eps := range []float64{0.1, 1, 3} {
		one, err := CTDLaplace(eps, h)
		require.NoError(t, err)
		for _, f := range []float64{0.5, 0.25, 0.1} {
			a, err := CTDLaplace(eps*f, h)
			require.NoError(t, err)
			b, err := CTDLaplace(eps*(1-f), h)
			require.NoError(t, err)
			split, err := a.Compose(b)
			require.NoError(t, err)
			for e := 0.0; e < eps; e += eps / 25 {
				assert.LessOrEqual(t, split.Delta(e), one.Delta(e)*(1+1e-9)+split.Err, "ε=%v split %v ε'=%v", eps, f, e)
			}
		}
	}
}
