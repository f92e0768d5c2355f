package privacy

import (
	"math"
	"math/big"
	"runtime"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// chiSquareP returns the p-value of Pearson's χ² test of observed counts
// against expected probabilities, merging tail bins until every expected
// count is at least 5.
func chiSquareP(t *testing.T, obs []int, prob []float64, n int) float64 {
	t.Helper()
	var o, e []float64
	var co, ce float64
	for i := range obs {
		co += float64(obs[i])
		ce += prob[i] * float64(n)
		if ce >= 5 {
			o, e = append(o, co), append(e, ce)
			co, ce = 0, 0
		}
	}
	if len(e) > 0 {
		o[len(o)-1] += co
		e[len(e)-1] += ce
	}
	require.Greater(t, len(o), 2)
	return distuv.ChiSquared{K: float64(len(o) - 1)}.Survival(stat.ChiSquare(o, e))
}

// pmfTable returns P(v) for v in [-span, span] from unnormalised weights.
func pmfTable(span int, w func(v float64) float64) []float64 {
	p := make([]float64, 2*span+1)
	var z float64
	for i := range p {
		p[i] = w(float64(i - span))
		z += p[i]
	}
	// Mass outside the table is below 1e-30 for the spans used here.
	for i := range p {
		p[i] /= z
	}
	return p
}

// binnedGoF draws n values, bins them by v/width over [-span, span] (in
// units of width) and returns the χ² p-value.
func binnedGoF(t *testing.T, n, span int, width int64, draw func() int64, w func(v float64) float64) float64 {
	t.Helper()
	pmf := pmfTable(span*int(width), w)
	nb := 2*span + 1
	prob := make([]float64, nb)
	for i, p := range pmf {
		v := int64(i - span*int(width))
		prob[floorDiv(v, width)+int64(span)] += p
	}
	obs := make([]int, nb)
	for i := 0; i < n; i++ {
		v := draw()
		b := floorDiv(v, width) + int64(span)
		require.True(t, b >= 0 && b < int64(nb), "draw %d outside ±%d·%d", v, span, width)
		obs[b]++
	}
	return chiSquareP(t, obs, prob, n)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func TestDiscreteGaussianGoodnessOfFit(t *testing.T) {
	for i, m := range []uint64{1, 2, 3, 10, 57} {
		src := NewSeededSource(uint64(100 + i))
		mf := float64(m)
		width := int64(1 + m/8)
		span := int(14*m/uint64(width)) + 1
		p := binnedGoF(t, 60000, span, width, func() int64 { return src.discreteGaussian(m) },
			func(v float64) float64 { return math.Exp(-v * v / (2 * mf * mf)) })
		assert.Greater(t, p, 1e-3, "discrete Gaussian m=%d: χ² p = %g", m, p)
	}
}

func TestDiscreteLaplaceGoodnessOfFit(t *testing.T) {
	for i, tt := range []uint64{1, 2, 5, 33} {
		src := NewSeededSource(uint64(200 + i))
		tf := float64(tt)
		width := int64(1 + tt/6)
		span := int(40*tt/uint64(width)) + 1
		p := binnedGoF(t, 60000, span, width, func() int64 { return src.discreteLaplace(tt) },
			func(v float64) float64 { return math.Exp(-math.Abs(v) / tf) })
		assert.Greater(t, p, 1e-3, "discrete Laplace t=%d: χ² p = %g", tt, p)
	}
}

// ksStat returns the one-sample Kolmogorov–Smirnov distance between the
// sample and cdf (gonum's stat.KolmogorovSmirnov compares two samples, not
// a sample with a distribution function).
func ksStat(x []float64, cdf func(float64) float64) float64 {
	sort.Float64s(x)
	n := float64(len(x))
	var d float64
	for i, v := range x {
		c := cdf(v)
		d = math.Max(d, math.Max(c-float64(i)/n, float64(i+1)/n-c))
	}
	return d
}

// At release scales (σ/γ ≥ 2^40) the discrete noise is indistinguishable
// from its continuous counterpart; KS against N(0, σ²) and Laplace(0, b).
func TestReleaseNoiseKS(t *testing.T) {
	const n = 40000
	crit := 1.95 / math.Sqrt(n) // α = 0.001
	for i, scale := range []float64{1e-200, 3e-7, 1, 2.5, 1e6, 7e200} {
		src := NewSeededSource(uint64(300 + i))
		g := make([]float64, n)
		l := make([]float64, n)
		for j := range g {
			g[j] = src.Gaussian(scale) / scale
			l[j] = src.Laplace(scale) / scale
		}
		dg := ksStat(g, distuv.UnitNormal.CDF)
		dl := ksStat(l, distuv.Laplace{Mu: 0, Scale: 1}.CDF)
		assert.Less(t, dg, crit, "Gaussian σ=%g KS=%g", scale, dg)
		assert.Less(t, dl, crit, "Laplace b=%g KS=%g", scale, dl)
	}
}

func TestAddNoiseSnapsToGrid(t *testing.T) {
	// Mironov-style check: whatever the low bits of the input, every
	// released value is a multiple of the grid, so the output's support
	// does not depend on the data.
	src := NewSeededSource(4)
	sigma := 0.37
	gamma := Grid(sigma)
	require.Equal(t, math.Ldexp(1, -42), gamma)
	for _, x := range []float64{0, 1, math.Pi, 1 + 0x1p-52, -123.456789, 1e-300} {
		for k := 0; k < 200; k++ {
			v := []float64{x}
			src.AddGaussian(v, sigma)
			q := v[0] / gamma
			assert.Equal(t, math.Trunc(q), q, "x=%v released %v off the grid", x, v[0])
			w := []float64{x}
			src.AddLaplace(w, sigma)
			q = w[0] / Grid(sigma)
			assert.Equal(t, math.Trunc(q), q)
		}
	}
	// Huge values already on a coarser float grid are kept exactly.
	v := []float64{1e30}
	src.AddGaussian(v, 1e-3)
	assert.Equal(t, 1e30, v[0])
}

func TestInvalidScaleFailsClosed(t *testing.T) {
	src := NewSeededSource(5)
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1), 1e-300, 1e300} {
		v := []float64{1, 2}
		src.AddGaussian(v, s)
		assert.True(t, math.IsNaN(v[0]) && math.IsNaN(v[1]), "σ=%v", s)
		w := []float64{1}
		src.AddLaplace(w, s)
		assert.True(t, math.IsNaN(w[0]))
		assert.True(t, math.IsNaN(src.Gaussian(s)))
		assert.True(t, math.IsNaN(src.Laplace(s)))
		assert.ErrorIs(t, CheckScale(s), ErrInvalidBudget)
	}
	assert.NoError(t, CheckScale(1))
}

func TestSymmetricExactlySymmetric(t *testing.T) {
	src := NewSeededSource(6)
	m := mat.NewSymDense(37, nil)
	src.AddSymmetricGaussian(m, 2)
	var sum, sumsq float64
	for i := 0; i < 37; i++ {
		for j := 0; j < 37; j++ {
			require.Equal(t, m.At(i, j), m.At(j, i))
			if j >= i {
				sum += m.At(i, j)
				sumsq += m.At(i, j) * m.At(i, j)
			}
		}
	}
	n := float64(37 * 38 / 2)
	assert.InDelta(t, 4, sumsq/n-(sum/n)*(sum/n), 0.8) // variance σ² = 4
	a := mat.NewSymDense(3, []float64{1, 2, 3, 2, 4, 5, 3, 5, 6})
	src.AddSymmetricGaussian(a, 0.5)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			assert.Equal(t, a.At(i, j), a.At(j, i))
		}
	}
}

func TestSeedsReproduceSecureDiffers(t *testing.T) {
	draw := func(s *Source) []float64 {
		out := make([]float64, 8)
		s.AddGaussian(out, 1)
		out = append(out, s.Laplace(2), float64(s.Uint64()))
		return out
	}
	assert.Equal(t, draw(NewSeededSource(42)), draw(NewSeededSource(42)))
	assert.NotEqual(t, draw(NewSeededSource(42)), draw(NewSeededSource(43)))
	a, err := NewSecureSource()
	require.NoError(t, err)
	b, err := NewSecureSource()
	require.NoError(t, err)
	assert.NotEqual(t, draw(a), draw(b))
	assert.False(t, a.Seeded())
	assert.True(t, NewSeededSource(1).Seeded())
	// Splits: reproducible for seeded parents, distinct from the parent.
	p1, p2 := NewSeededSource(9), NewSeededSource(9)
	c1, c2 := p1.Split(), p2.Split()
	assert.True(t, c1.Seeded())
	assert.Equal(t, draw(c1), draw(c2))
	assert.NotEqual(t, draw(c1), draw(p1))
	assert.False(t, a.Split().Seeded())
}

// A release of more than two chunks draws them on several goroutines from
// streams split in chunk order: for a seeded source the same values for
// any GOMAXPROCS, the same values however the parts cut the chunks, and
// chunks that are not copies or correlated images of one another.
func TestChunkedNoiseIndependentOfThreads(t *testing.T) {
	const n = 400 // 80,200 values: chunks of 32,768, 32,768 and 14,664
	sym := func(procs int) *mat.SymDense {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m := mat.NewSymDense(n, nil)
		NewSeededSource(11).AddSymmetricGaussian(m, 1.5)
		return m
	}
	ref := sym(1)
	for _, procs := range []int{2, 4} {
		assert.True(t, mat.Equal(ref, sym(procs)), "GOMAXPROCS %d", procs)
	}
	var upper []float64
	for _, row := range upperRows(ref) {
		upper = append(upper, row...)
	}
	flat := make([]float64, len(upper))
	NewSeededSource(11).addAll((*Source).AddGaussian, 1.5, flat)
	assert.Equal(t, upper, flat, "the rows' cuts do not change the draws")
	small := make([]float64, 2*drawChunk)
	NewSeededSource(11).addAll((*Source).AddGaussian, 1.5, small)
	serial := make([]float64, len(small))
	NewSeededSource(11).AddGaussian(serial, 1.5)
	assert.Equal(t, serial, small, "up to two chunks: one stream, as before")
	c0, c1, c2 := upper[:drawChunk], upper[drawChunk:2*drawChunk], upper[2*drawChunk:]
	assert.NotEqual(t, c0, c1)
	bound := 4 / math.Sqrt(float64(len(c2))) // four standard errors of a null correlation
	assert.Less(t, math.Abs(stat.Correlation(c0, c1, nil)), bound)
	assert.Less(t, math.Abs(stat.Correlation(c0[:len(c2)], c2, nil)), bound)
	assert.Less(t, math.Abs(stat.Correlation(c1[:len(c2)], c2, nil)), bound)
}

// The comparison slow paths (ties on all 64 fast bits) must be exact too:
// force the tie and check the conditional probability.
func TestLazyTieSlowPaths(t *testing.T) {
	const n = 4000
	const tieBits = uint64(0x9e3779b97f4a7c15)
	// z < p/q with z's first 64 bits equal to those of p/q: the answer is
	// z's remaining bits < the fractional remainder rem/q.
	r := newRatio(1, 3) // 0.0101…, rem/q = 1/3
	less := 0
	for i := 0; i < n; i++ {
		s := NewSeededSource(uint64(1000 + i))
		s.br = bitReader{b: r.q64}
		if s.lessRatio(&r, &lazy{}) {
			less++
		}
	}
	assert.InDelta(t, 1.0/3, float64(less)/n, 4*math.Sqrt(2.0/9/n))

	// z < y with 64 known equal bits: a fair coin.
	less = 0
	for i := 0; i < n; i++ {
		s := NewSeededSource(uint64(9000 + i))
		s.br = bitReader{b: tieBits}
		y := lazy{b: tieBits, n: 64}
		var z lazy
		if s.lessLazy(&y, &z) {
			less++
			require.NotNil(t, z.long)
			// z continues on the slow path; comparing a fresh deviate to it
			// must still work.
			var w lazy
			s.lessLazy(&z, &w)
		}
	}
	assert.InDelta(t, 0.5, float64(less)/n, 4*math.Sqrt(0.25/n))
}

func TestBernoulliExpRates(t *testing.T) {
	const n = 200000
	src := NewSeededSource(77)
	cases := []struct {
		name string
		p    float64
		f    func() bool
	}{
		{"exp(-1)", math.Exp(-1), func() bool { return src.bernExpRatio(nil, true) }},
		{"exp(-2/7)", math.Exp(-2.0 / 7), func() bool { r := newRatio(2, 7); return src.bernExpRatio(&r, false) }},
		{"karneyB k=1 x=3/5", math.Exp(-0.6 * 2.6 / 4), func() bool {
			xr, fr := newRatio(3, 5), newRatio(13, 20)
			return src.karneyB(&xr, &fr, 1, 3, 5)
		}},
	}
	for _, c := range cases {
		k := 0
		for i := 0; i < n; i++ {
			if c.f() {
				k++
			}
		}
		sd := math.Sqrt(c.p * (1 - c.p) / n)
		assert.InDelta(t, c.p, float64(k)/n, 4.5*sd, c.name)
	}
}

func TestUniformN(t *testing.T) {
	src := NewSeededSource(8)
	const m = 7
	obs := make([]int, m)
	for i := 0; i < 70000; i++ {
		obs[src.uniformN(m)]++
	}
	prob := make([]float64, m)
	for i := range prob {
		prob[i] = 1.0 / m
	}
	assert.Greater(t, chiSquareP(t, obs, prob, 70000), 1e-3)
}

// Empirical sensitivity: rounding neighbouring inputs to the grid moves
// them apart by at most γ·sqrt(dim) in ℓ2 and γ·dim in ℓ1, the allowance
// the Spend helpers add.
func TestSnapSensitivityAllowance(t *testing.T) {
	src := NewSeededSource(12)
	const dim = 50
	for _, sigma := range []float64{1e-3, 0.7, 42} {
		gamma := Grid(sigma)
		inv := 1 / gamma
		for trial := 0; trial < 2000; trial++ {
			x, y := make([]float64, dim), make([]float64, dim)
			var d2, d1 float64
			for i := range x {
				x[i] = src.NormFloat64() * 10
				// neighbour: a perturbation of a few grid steps
				y[i] = x[i] + (src.Float64()-0.5)*4*gamma
				d := y[i] - x[i]
				d2 += d * d
				d1 += math.Abs(d)
			}
			var r2, r1 float64
			for i := range x {
				d := snap(y[i], gamma, inv) - snap(x[i], gamma, inv)
				r2 += d * d
				r1 += math.Abs(d)
			}
			require.LessOrEqual(t, math.Sqrt(r2), math.Sqrt(d2)+gamma*math.Sqrt(dim)*(1+1e-12))
			require.LessOrEqual(t, r1, d1+gamma*dim*(1+1e-12))
		}
	}
}

func kProb(k int) float64 {
	var z float64
	for i := 0; i < 40; i++ {
		z += math.Exp(-float64(i*i) / 2)
	}
	return math.Exp(-float64(k*k)/2) / z
}

func TestSampleKDistribution(t *testing.T) {
	src := NewSeededSource(21)
	const n = 400000
	obs := make([]int, 8)
	prob := make([]float64, 8)
	for k := range prob {
		prob[k] = kProb(k)
	}
	for i := 0; i < n; i++ {
		k := src.sampleK()
		if k >= 8 {
			t.Fatalf("k = %d", k)
		}
		obs[k]++
	}
	p := chiSquareP(t, obs, prob, n)
	assert.Greater(t, p, 1e-3, "k counts %v", obs)
}

func TestKBoundsRigorous(t *testing.T) {
	NewSeededSource(0) // builds the tables
	for _, prec := range []uint{64, 192, 1024} {
		lo, hi := kBounds(6, prec)
		cum := 0.0
		for j := 0; j < 6; j++ {
			cum += kProb(j)
			l, _ := lo[j].Float64()
			h, _ := hi[j].Float64()
			assert.InDelta(t, cum, l, 1e-15)
			assert.InDelta(t, cum, h, 1e-15)
			assert.LessOrEqual(t, lo[j].Cmp(hi[j]), 0)
			w := new(big.Float).Sub(hi[j], lo[j])
			wf, _ := w.Float64()
			assert.Less(t, wf, math.Ldexp(1, -int(prec)+12), "interval width at %d bits", prec)
		}
	}
	// Higher precision intervals nest inside lower precision ones.
	lo1, hi1 := kBounds(3, 128)
	lo2, hi2 := kBounds(3, 512)
	for j := 0; j < 3; j++ {
		assert.LessOrEqual(t, lo1[j].Cmp(lo2[j]), 0)
		assert.GreaterOrEqual(t, hi1[j].Cmp(hi2[j]), 0)
	}
	covered := 0
	for c := range uint64(1 << 16) {
		if _, ok := kCell(c); ok {
			covered++
		}
	}
	assert.Greater(t, covered, 65500, "16-bit prefix coverage")
	assert.GreaterOrEqual(t, kThr.n, 9)
}

// kThr is what the rigorous bounds give: each boundary's lower bound
// rounded down and upper bound rounded up to 64 bits, up to the first
// whose upper bound does not fit. kCell settles a 16-bit cell exactly when
// it lies between two boundaries' bounds, scanning them one by one.
func TestKThresholdsFromBounds(t *testing.T) {
	var want kThresholds
	lo, hi := kBounds(kBoundaries, 192)
	two64 := new(big.Float).SetMantExp(big.NewFloat(1), 64)
	for j := 0; j < kBoundaries; j++ {
		l, _ := new(big.Float).SetPrec(256).Mul(lo[j], two64).Int(nil) // floor: positive
		h, acc := new(big.Float).SetPrec(256).Mul(hi[j], two64).Int(nil)
		if acc == big.Below {
			h.Add(h, big.NewInt(1)) // ceil
		}
		if !l.IsUint64() || !h.IsUint64() {
			break
		}
		want.lo64[j], want.hi64[j], want.n = l.Uint64(), h.Uint64(), j+1
	}
	assert.Equal(t, want, kThr)
	for c := range uint64(1 << 16) {
		start, end := c<<48, (c+1)<<48
		var k uint64
		settled := false
		for j := 0; j < kThr.n; j++ {
			if end != 0 && end <= kThr.lo64[j] {
				k, settled = uint64(j), true
				break
			}
			if start < kThr.hi64[j] {
				break
			}
		}
		got, ok := kCell(c)
		require.Equal(t, settled, ok, "cell %d", c)
		if ok {
			require.Equal(t, k, got, "cell %d", c)
		}
	}
}

// Force U's 64-bit prefix onto a boundary so that the arbitrary-precision
// path decides: the conditional probability of k = 0 must be the fraction
// of the cell [u, u+1)/2^64 below F_1.
func TestSampleKSlowPath(t *testing.T) {
	NewSeededSource(0)
	lo, _ := kBounds(1, 256)
	f1 := new(big.Float).SetPrec(256).SetMantExp(lo[0], 64) // F_1·2^64
	fi, _ := f1.Int(nil)
	u := fi.Uint64() // the cell containing F_1
	frac := new(big.Float).Sub(f1, new(big.Float).SetInt(fi))
	want, _ := frac.Float64()
	require.True(t, u >= kThr.lo64[0] && u < kThr.hi64[0], "the cell must be ambiguous at 64 bits")
	src := NewSeededSource(22)
	const n = 3000
	zero := 0
	for i := 0; i < n; i++ {
		k := src.sampleKFrom64(u)
		require.LessOrEqual(t, k, uint64(1))
		if k == 0 {
			zero++
		}
	}
	assert.InDelta(t, want, float64(zero)/n, 4*math.Sqrt(want*(1-want)/n)+1e-9)
	// Beyond the last 64-bit boundary: k ≥ kThr.n, decided by the slow path.
	k := src.sampleKFrom64(^uint64(0))
	assert.GreaterOrEqual(t, k, uint64(kThr.n-1))
}
