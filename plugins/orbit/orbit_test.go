package orbit

import (
	"context"
	"math"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

func genData(t testing.TB, n, d, k int, seed uint64) *data.Dataset {
	t.Helper()
	m, err := gen.Lookup(gen.OrbitSpikedName)
	require.NoError(t, err)
	g, err := gen.Run(m, map[string]string{"n": strconv.Itoa(n), "d": strconv.Itoa(d), "rank": strconv.Itoa(k)}, seed)
	require.NoError(t, err)
	return g.Data
}

func pure(eps float64) privacy.Grant { return privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps} }

// pinned returns raw with clip=1 and evaluate=true unless given: the
// orbit tests check the mechanisms on unit-norm rows at the public clip 1
// (clip=auto, the default, adds a quantile step; TestClipAutoOrbit covers it)
// and read the evaluation figures.
func pinned(raw map[string]string) map[string]string {
	out := map[string]string{"clip": "1", "evaluate": "true"}
	for k, v := range raw {
		out[k] = v
	}
	return out
}

func run(t testing.TB, est sdk.Estimator, ds *data.Dataset, raw map[string]string, g privacy.Grant, seed uint64) (*sdk.Result, *privacy.Accountant) {
	t.Helper()
	res, acct, err := sdk.RunLocal(context.Background(), est, ds, pinned(raw), g, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	return res, acct
}

func scalar(t testing.TB, res *sdk.Result, name string) float64 {
	t.Helper()
	for _, s := range res.Scalars {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no scalar %q", name)
	return 0
}

func matrix(t testing.TB, res *sdk.Result, name string) sdk.Matrix {
	t.Helper()
	for _, m := range res.Matrices {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no matrix %q", name)
	return sdk.Matrix{}
}

func TestEstimatorsStructureAndGuarantees(t *testing.T) {
	ds := genData(t, 500, 8, 2, 1)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	cases := []struct {
		est   sdk.Estimator
		raw   map[string]string
		grant privacy.Grant
		k     int
		kind  privacy.GuaranteeKind
	}{
		{EM{}, map[string]string{"rank": "1"}, pure(1), 1, privacy.Pure},
		{EM{}, map[string]string{"rank": "3", "spectrum": "3,2,1"}, pure(1), 3, privacy.Nominal},
		{EM{}, map[string]string{"rank": "2", "sensitivity": "paper", "iterations": "20", "noise": "pure"}, approx, 2, privacy.Nominal},
		{RankK{}, map[string]string{"rank": "1"}, pure(2), 1, privacy.Pure},
		{RankK{}, map[string]string{"rank": "3"}, pure(2), 3, privacy.Nominal},
		{Deflation{}, map[string]string{"rank": "3"}, pure(1), 3, privacy.Pure},
		{Gauss{}, map[string]string{"rank": "2"}, approx, 2, privacy.Approx}, // certified by the exact Gaussian composition
		{Gauss{}, map[string]string{"rank": "2", "noise": "analytic", "spectrum": "private"}, approx, 2, privacy.Approx},
		{NonPrivate{}, map[string]string{"rank": "2", "spectrum": "true"}, pure(1), 2, privacy.None},
	}
	for _, tc := range cases {
		t.Run(tc.est.Info().Name+"/"+tc.raw["rank"], func(t *testing.T) {
			xBefore := mat.DenseCopyOf(ds.X)
			res, acct := run(t, tc.est, ds, tc.raw, tc.grant, 7)
			assert.True(t, mat.Equal(xBefore, ds.X), "data must not be modified")
			assert.Equal(t, tc.kind, res.Guarantee.Kind, res.Guarantee.String())
			if tc.kind != privacy.None {
				assert.NotEmpty(t, acct.Steps())
			}
			if tc.kind == privacy.Pure || tc.kind == privacy.Nominal {
				// The exponential-mechanism estimators charge exactly the grant's ε.
				assert.InDelta(t, tc.grant.Epsilon, sumEps(acct), 1e-9)
				assert.InDelta(t, tc.grant.Epsilon, res.Guarantee.Epsilon, 1e-9)
			}
			u := matrix(t, res, "U")
			wantRel := sdk.Public
			if tc.kind == privacy.None {
				wantRel = sdk.Evaluation // the non-private frame is evaluation-only
			}
			assert.Equal(t, wantRel, u.Release)
			assert.Equal(t, wantRel, matrix(t, res, "Lambda").Release)
			r, c := u.M.Dims()
			require.Equal(t, 8, r)
			require.Equal(t, tc.k, c)
			var utu mat.Dense
			utu.Mul(u.M.T(), u.M)
			for i := 0; i < c; i++ {
				for j := 0; j < c; j++ {
					want := 0.0
					if i == j {
						want = 1
					}
					assert.InDelta(t, want, utu.At(i, j), 1e-12*8)
				}
			}
			lam := matrix(t, res, "Lambda").M
			for i := 1; i < tc.k; i++ {
				assert.GreaterOrEqual(t, lam.At(i-1, 0), lam.At(i, 0))
			}
			assert.GreaterOrEqual(t, scalar(t, res, "loss"), -1e-9)
			for _, s := range res.Scalars {
				if s.Name == "loss" || s.Name == "utility" || s.Name == "acceptance_rate" {
					assert.Equal(t, sdk.Evaluation, s.Release, s.Name)
				}
			}
			for _, s := range res.Series {
				if s.Name == "explained_variance_ratio" {
					assert.Equal(t, sdk.Public, s.Release, "post-processing of a private release")
					continue
				}
				assert.Equal(t, sdk.Evaluation, s.Release, s.Name)
			}
			// Same seed, same output.
			res2, _ := run(t, tc.est, ds, tc.raw, tc.grant, 7)
			assert.True(t, mat.Equal(u.M, matrix(t, res2, "U").M))
		})
	}
}

func sumEps(acct *privacy.Accountant) float64 {
	var s float64
	for _, st := range acct.Steps() {
		s += st.Epsilon
	}
	return s
}

func TestBadInputFailsBeforeSpend(t *testing.T) {
	ds := genData(t, 50, 4, 1, 2)
	bad := &data.Dataset{Kind: data.Rows, X: mat.DenseCopyOf(ds.X)}
	bad.X.Set(3, 2, math.NaN())
	cases := []struct {
		name  string
		est   sdk.Estimator
		ds    *data.Dataset
		raw   map[string]string
		grant privacy.Grant
	}{
		{"rank too large", EM{}, ds, map[string]string{"rank": "5"}, pure(1)},
		{"NaN data", EM{}, bad, map[string]string{"rank": "1"}, pure(1)},
		{"NaN data rank-k", RankK{}, bad, map[string]string{"rank": "1"}, pure(1)},
		{"spectrum too short", EM{}, ds, map[string]string{"rank": "2", "spectrum": "1"}, pure(1)},
		{"negative spectrum", EM{}, ds, map[string]string{"rank": "2", "spectrum": "1,-1"}, pure(1)},
		{"increasing spectrum", Deflation{}, ds, map[string]string{"rank": "2", "spectrum": "1,2"}, pure(1)},
		{"zCDP grant for EM", EM{}, ds, map[string]string{"rank": "1"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}},
		{"classical with ε > 1", Gauss{}, ds, map[string]string{"rank": "1", "noise": "classical"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 2, Delta: 1e-6}},
		{"NaN data gauss", Gauss{}, bad, map[string]string{"rank": "1"}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(1)
			_, acct, err := sdk.RunLocal(context.Background(), tc.est, tc.ds, pinned(tc.raw), tc.grant, sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			if acct != nil {
				assert.Empty(t, acct.Steps(), "no privacy may be spent on bad input")
			}
		})
	}
}

// logDensityD2 returns log p_A(θ) on [0, π) for u = (cos θ, sin θ) under
// exp(c·uᵀAu), normalised numerically, on the grid θ_i = (i+½)π/m.
func logDensityD2(a *mat.SymDense, c float64, m int) []float64 {
	out := make([]float64, m)
	mx := math.Inf(-1)
	for i := range out {
		th := (float64(i) + 0.5) * math.Pi / float64(m)
		x, y := math.Cos(th), math.Sin(th)
		out[i] = c * (a.At(0, 0)*x*x + 2*a.At(0, 1)*x*y + a.At(1, 1)*y*y)
		mx = math.Max(mx, out[i])
	}
	var z float64
	for _, v := range out {
		z += math.Exp(v - mx)
	}
	lz := mx + math.Log(z*math.Pi/float64(m))
	for i := range out {
		out[i] -= lz
	}
	return out
}

func maxAbsDiff(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func gramOf(rows [][2]float64) *mat.SymDense {
	a := mat.NewSymDense(2, nil)
	for _, r := range rows {
		a.SetSym(0, 0, a.At(0, 0)+r[0]*r[0])
		a.SetSym(0, 1, a.At(0, 1)+r[0]*r[1])
		a.SetSym(1, 1, a.At(1, 1)+r[1]*r[1])
	}
	return a
}

func TestPrivacyRatioD2(t *testing.T) {
	const eps = 1.0
	lambda1 := 1.0
	beta := eps / (2 * lambda1) // exact calibration
	const grid = 2000

	// Analytic: random neighbouring pairs never exceed e^ε.
	rnd := privacy.NewSeededSource(42).Rand()
	randRow := func() [2]float64 {
		th := 2 * math.Pi * rnd.Float64()
		r := math.Sqrt(rnd.Float64())
		return [2]float64{r * math.Cos(th), r * math.Sin(th)}
	}
	var worst float64
	for trial := 0; trial < 300; trial++ {
		n := 1 + rnd.IntN(50)
		rows := make([][2]float64, n)
		for i := range rows {
			rows[i] = randRow()
		}
		a := gramOf(rows)
		rows[rnd.IntN(n)] = randRow()
		a2 := gramOf(rows)
		r := maxAbsDiff(logDensityD2(a, beta*lambda1, grid), logDensityD2(a2, beta*lambda1, grid))
		worst = math.Max(worst, r)
		require.LessOrEqual(t, r, eps*(1+1e-9))
	}
	t.Logf("worst random-pair log ratio %.4f (ε = %v)", worst, eps)

	// Adversarial pair: remove a user along the top direction, add one
	// orthogonal to it. ExactCalib gets close to ε; a doubled β exceeds it.
	rows := make([][2]float64, 400)
	for i := range rows {
		rows[i] = [2]float64{1, 0}
	}
	a := gramOf(rows)
	rows[0] = [2]float64{0, 1}
	a2 := gramOf(rows)
	adv := maxAbsDiff(logDensityD2(a, beta, grid), logDensityD2(a2, beta, grid))
	assert.Greater(t, adv, 0.9*eps)
	assert.LessOrEqual(t, adv, eps*(1+1e-9))
	doubled := maxAbsDiff(logDensityD2(a, 2*beta, grid), logDensityD2(a2, 2*beta, grid))
	assert.Greater(t, doubled, 1.5*eps, "a doubled β must be flagged")

	// Empirical: the sampler's histograms match the analytic densities and
	// their bin-wise ratio stays within e^ε up to Monte-Carlo error.
	small := [][2]float64{{0.9, 0.1}, {0.6, -0.5}, {0.2, 0.7}}
	aS := gramOf(small)
	small[0] = [2]float64{-0.1, 0.95}
	aS2 := gramOf(small)
	const nDraw, bins = 40000, 24
	hist := func(a *mat.SymDense, seed uint64) []float64 {
		src := privacy.NewSeededSource(seed)
		h := make([]float64, bins)
		for i := 0; i < nDraw; i++ {
			dr, err := SampleOrbit(context.Background(), src, a, []float64{lambda1}, beta, SamplerAuto, 0, backend.Gonum{}, nil)
			require.NoError(t, err)
			th := math.Mod(math.Atan2(dr.U.At(1, 0), dr.U.At(0, 0))+2*math.Pi, math.Pi)
			h[min(int(th/math.Pi*bins), bins-1)]++
		}
		return h
	}
	binProb := func(a *mat.SymDense) []float64 {
		ld := logDensityD2(a, beta*lambda1, bins*100)
		p := make([]float64, bins)
		for i, v := range ld {
			p[i/100] += math.Exp(v) * math.Pi / float64(bins*100)
		}
		return p
	}
	h1, h2 := hist(aS, 5), hist(aS2, 6)
	p1, p2 := binProb(aS), binProb(aS2)
	chi := func(h, p []float64) float64 {
		var s float64
		for i := range h {
			e := p[i] * nDraw
			s += (h[i] - e) * (h[i] - e) / e
		}
		return s
	}
	// χ²_23 upper 0.001 quantile.
	crit := distuv.ChiSquared{K: bins - 1}.Quantile(0.999)
	assert.Less(t, chi(h1, p1), crit, "histogram under A disagrees with the analytic density")
	assert.Less(t, chi(h2, p2), crit, "histogram under A' disagrees with the analytic density")
	for i := range h1 {
		lr := math.Abs(math.Log(h1[i] / h2[i]))
		se := math.Sqrt(1/h1[i] + 1/h2[i])
		assert.LessOrEqual(t, lr, eps+4*se, "bin %d: empirical log ratio %.3f", i, lr)
		assert.LessOrEqual(t, math.Abs(math.Log(p1[i]/p2[i])), eps*(1+1e-9))
	}
}

func TestKOneAcceptanceIsReal(t *testing.T) {
	ds := genData(t, 2000, 20, 3, 3)
	var proposals, draws float64
	for s := uint64(0); s < 20; s++ {
		res, _ := run(t, EM{}, ds, map[string]string{"rank": "1"}, pure(1), s)
		proposals += scalar(t, res, "proposals")
		draws++
		assert.InDelta(t, 1/scalar(t, res, "proposals"), scalar(t, res, "acceptance_rate"), 1e-12)
	}
	assert.Greater(t, proposals/draws, 1.5, "rejections must happen at d = 20 with a strong signal")
	t.Logf("exact sampler: %.2f proposals per draw over %.0f draws", proposals/draws, draws)
}

// losses runs the orbit EM nDraw times on A and returns OPT − ⟨A, H⟩.
func losses(t testing.TB, a *mat.SymDense, lambda []float64, beta float64, sampler string, sweeps, nDraw int, seed uint64) []float64 {
	gamma, _, err := backend.Gonum{}.EigSym(a)
	require.NoError(t, err)
	opt := Optimum(gamma, lambda)
	src := privacy.NewSeededSource(seed)
	out := make([]float64, nDraw)
	for i := range out {
		dr, err := SampleOrbit(context.Background(), src, a, lambda, beta, sampler, sweeps, backend.Gonum{}, nil)
		require.NoError(t, err)
		out[i] = opt - Score(a, dr.U, lambda)
	}
	return out
}

func clippedA(t testing.TB, ds *data.Dataset) *mat.SymDense {
	a, _, err := ClippedMatrix(context.Background(), ds, 1)
	require.NoError(t, err)
	return a
}

func TestStrongSignalChiSquare(t *testing.T) {
	// High-signal prediction (DERIVATIONS.md §8): d = 20, k = 3, n = 2000, ε = 1, PCA,
	// exact calibration: L ≈ χ²_D/(2β) with D = k(d−k) = 51, β = 1/2.
	ds := genData(t, 2000, 20, 3, 11)
	a := clippedA(t, ds)
	lambda := []float64{1, 1, 1}
	beta := 0.5
	D := OrbitDim(lambda, 20)
	require.Equal(t, 51, D)
	ls := losses(t, a, lambda, beta, SamplerAuto, 100, 200, 12)
	mean, sd := meanSD(ls)
	want := float64(D) / (2 * beta)
	assert.InDelta(t, want, mean, 0.1*want, "mean loss")
	assert.InDelta(t, float64(D)/(2*beta*beta), sd*sd, 0.3*float64(D)/(2*beta*beta), "loss variance")
	scaled := make([]float64, len(ls))
	for i, l := range ls {
		scaled[i] = 2 * beta * l
	}
	chi := distuv.ChiSquared{K: float64(D)}
	assert.Less(t, ksOne(scaled, chi.CDF), 1.949, "KS of 2βL against χ²_D")
	t.Logf("mean %.2f (pred %.1f), var %.1f (pred %.1f)", mean, want, sd*sd, float64(D)/(2*beta*beta))
}

func TestGibbsEnergyStationarity(t *testing.T) {
	// Default sizes: 8 chains from Haar starts, 100 sweeps. The energy must
	// have reached its stationary level well within the fixed sweep count:
	// split-R̂ over sweeps 50..100 below 1.05, and the mean over sweeps
	// 20..60 agrees with the mean over 60..100 within 3 standard errors.
	ds := genData(t, 2000, 20, 3, 21)
	a := clippedA(t, ds)
	const chains, T = 8, 100
	var traces [][]float64
	src := privacy.NewSeededSource(22)
	for c := 0; c < chains; c++ {
		g, err := GibbsSample(context.Background(), src, a, []float64{1, 1, 1}, 0.5, GibbsConfig{Sweeps: T})
		require.NoError(t, err)
		require.Len(t, g.Energy, T)
		traces = append(traces, g.Energy)
	}
	var halves [][]float64
	for _, tr := range traces {
		halves = append(halves, tr[50:75], tr[75:100])
	}
	rhat := splitRhat(halves)
	assert.Less(t, rhat, 1.05, "split-R̂")
	var early, late []float64
	for _, tr := range traces {
		e, _ := meanSD(tr[20:60])
		l, _ := meanSD(tr[60:100])
		early = append(early, e)
		late = append(late, l)
	}
	me, se := meanSD(early)
	ml, sl := meanSD(late)
	assert.InDelta(t, me, ml, 3*math.Hypot(se, sl)/math.Sqrt(chains), "early vs late energy")
	t.Logf("R̂ = %.4f, early %.2f, late %.2f", rhat, me, ml)
}

// splitRhat is the Gelman–Rubin potential scale reduction of the given
// chain segments.
func splitRhat(ch [][]float64) float64 {
	m := float64(len(ch))
	n := float64(len(ch[0]))
	means := make([]float64, len(ch))
	var w float64
	for i, c := range ch {
		mu, sd := meanSD(c)
		means[i] = mu
		w += sd * sd
	}
	w /= m
	_, sdm := meanSD(means)
	b := n * sdm * sdm
	v := (n-1)/n*w + b/n
	return math.Sqrt(v / w)
}

func TestGibbsMatchesExactKOne(t *testing.T) {
	// For k = 1, Givens–Gibbs (30 sweeps) and the exact
	// sampler give the same law of the loss (two-sample KS).
	ds := genData(t, 300, 10, 2, 31)
	a := clippedA(t, ds)
	lambda := []float64{1}
	const n = 400
	exact := losses(t, a, lambda, 0.5, SamplerAuto, 0, n, 32)
	gibbs := losses(t, a, lambda, 0.5, SamplerGibbs, 30, n, 33)
	assert.Less(t, ksTwo(exact, gibbs)*math.Sqrt(float64(n)/2), 1.949)
}

func TestEpsilonToInfinityIsNonPrivateOptimum(t *testing.T) {
	ds := genData(t, 1000, 10, 3, 41)
	for _, raw := range []map[string]string{{"rank": "1"}, {"rank": "3"}, {"rank": "3", "spectrum": "3,2,1"}} {
		res, _ := run(t, EM{}, ds, raw, pure(1e7), 1)
		assert.Greater(t, scalar(t, res, "relative_utility_uncentred"), 1-1e-4, "%v", raw)
	}
	res, _ := run(t, RankK{}, ds, map[string]string{"rank": "3"}, pure(1e7), 1)
	assert.Greater(t, scalar(t, res, "relative_utility_uncentred"), 1-1e-4)
	assert.Less(t, scalar(t, res, "eigenvalue_error_sq"), 1e-6)
	res, _ = run(t, Deflation{}, ds, map[string]string{"rank": "3"}, pure(1e7), 1)
	assert.Greater(t, scalar(t, res, "relative_utility_uncentred"), 1-1e-4)
	res, _ = run(t, Gauss{}, ds, map[string]string{"rank": "3"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e12}, 1)
	assert.Greater(t, scalar(t, res, "relative_utility_uncentred"), 1-1e-4)
}

func TestLaplaceSpectrumTail(t *testing.T) {
	// DERIVATIONS.md §4.2: P[|λ̃_i − γ_i| > t] = e^{−tε/4} for Algorithm 2's
	// eigenvalue half (budget ε/2, sensitivity 2).
	gamma := []float64{1000, 500, 100, 3}
	const eps, n = 1.0, 4000
	src := privacy.NewSeededSource(51)
	tt := 4 / eps
	var exceed float64
	for i := 0; i < n; i++ {
		acct, err := privacy.NewAccountant(pure(eps))
		require.NoError(t, err)
		l, _, _, err := noisySpectrum(acct, src, gamma, 2, privacy.Budget{Noise: privacy.NoisePure, Epsilon: eps / 2})
		require.NoError(t, err)
		if math.Abs(l[0]-gamma[0]) > tt {
			exceed++
		}
	}
	p := exceed / n
	want := math.Exp(-tt * eps / 4)
	assert.InDelta(t, want, p, 4*math.Sqrt(want*(1-want)/n))
}

func TestGaussSigmaCalibration(t *testing.T) {
	ds := genData(t, 200, 6, 2, 61)
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.8, Delta: 1e-6}
	res, _ := run(t, Gauss{}, ds, map[string]string{"rank": "2", "noise": "classical"}, approx, 1)
	assert.InEpsilon(t, math.Sqrt2*math.Sqrt(2*math.Log(1.25/1e-6))/0.8, scalar(t, res, "sigma"), 1e-6)
	resA, _ := run(t, Gauss{}, ds, map[string]string{"rank": "2", "noise": "analytic"}, approx, 1)
	assert.Less(t, scalar(t, resA, "sigma"), scalar(t, res, "sigma"))
	resZ, _ := run(t, Gauss{}, ds, map[string]string{"rank": "2"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}, 1)
	assert.InEpsilon(t, math.Sqrt2/math.Sqrt(2*0.5), scalar(t, resZ, "sigma"), 1e-6)
}

func TestLossDecreasesWithEpsilon(t *testing.T) {
	ds := genData(t, 2000, 20, 3, 71)
	a := clippedA(t, ds)
	var prev = math.Inf(1)
	for _, eps := range []float64{0.25, 1, 4} {
		ls := losses(t, a, []float64{1, 1, 1}, eps/2, SamplerAuto, 50, 30, 72)
		m, _ := meanSD(ls)
		assert.Less(t, m, prev, "ε = %v", eps)
		prev = m
	}
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

func ksOne(xs []float64, cdf func(float64) float64) float64 {
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

// ksTwo returns the two-sample KS statistic sup|F − G| (equal sizes).
func ksTwo(a, b []float64) float64 {
	x := append([]float64(nil), a...)
	y := append([]float64(nil), b...)
	sort.Float64s(x)
	sort.Float64s(y)
	var i, j int
	var d float64
	for i < len(x) && j < len(y) {
		if x[i] <= y[j] {
			i++
		} else {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/float64(len(x))-float64(j)/float64(len(y))))
	}
	return d
}
