package rgrad

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/sdk"
)

// tangentCoords are the coordinates of P_T(x) in the orthogonal
// decomposition P_T(x) = UUᵀx + (I − UUᵀ)xVVᵀ: a = Uᵀx (r×d2) and
// b = (I − UUᵀ)xV (d1×r), so that ‖P_T x‖² = ‖a‖² + ‖b‖² and
// <P_T x, P_T x'> = <a, a'> + <b, b'>.
type tangentCoords struct{ a, b []float64 }

func coordsOf(pt Point, x []float64) tangentCoords {
	d1, r := pt.U.Dims()
	d2, _ := pt.V.Dims()
	xm := mat.NewDense(d1, d2, x)
	var a, xv, uuxv mat.Dense
	a.Mul(pt.U.T(), xm)
	xv.Mul(xm, pt.V)
	var utxv mat.Dense
	utxv.Mul(pt.U.T(), &xv)
	uuxv.Mul(pt.U, &utxv)
	b := mat.NewDense(d1, r, nil)
	b.Sub(&xv, &uuxv)
	return tangentCoords{a: a.RawMatrix().Data, b: b.RawMatrix().Data}
}

// changeNorm is ‖w·P_T(x) − w'·P_T(x')‖_F from the coordinates.
func changeNorm(w float64, c tangentCoords, w2 float64, c2 tangentCoords) float64 {
	s := w*w*(floats.Dot(c.a, c.a)+floats.Dot(c.b, c.b)) + w2*w2*(floats.Dot(c2.a, c2.a)+floats.Dot(c2.b, c2.b)) -
		2*w*w2*(floats.Dot(c.a, c2.a)+floats.Dot(c.b, c2.b))
	return math.Sqrt(math.Max(s, 0))
}

// iterateAt returns a rank-r point at Frobenius distance ≈ rho from the
// truth, SVD_r(M + s·E) with E Gaussian and s tuned to the distance.
func iterateAt(t testing.TB, truth Point, rho float64, rng *rand.Rand) Point {
	t.Helper()
	if rho == 0 {
		return truth
	}
	d1, r := truth.U.Dims()
	d2, _ := truth.V.Dims()
	m := truth.Dense()
	e := randn(rng, d1, d2)
	s := rho / frob(e)
	var pt Point
	for k := 0; k < 12; k++ {
		var a mat.Dense
		a.Scale(s, e)
		a.Add(&a, m)
		u, sv, v, err := backendFor().SVDTop(&a, r)
		require.NoError(t, err)
		pt = Point{U: u, S: sv, V: v}
		dist := diff(pt.Dense(), m)
		if math.Abs(dist-rho) < 1e-3*rho {
			break
		}
		s *= rho / dist
	}
	return pt
}

// neighbourCheck is the outcome of replacing many rows of one data set by
// many replacements at one iterate.
type neighbourCheck struct {
	dist             float64 // ‖M_l − M‖_F
	maxChange        float64 // max ‖ηP_T(G) − ηP_T(G')‖_F over all (row, replacement) pairs
	maxInModel       float64 // the same over in-model replacements only
	maxUnclipped     float64 // the unclipped gradient's change over in-model replacements
	pairs            int
	clippedFrac      float64 // fraction of the data's samples clipped at this iterate
	predictedClipped float64 // ClipTail at the iterate's distance
}

// checkNeighbours measures the change of the released statistic ηP_T(G_l)
// of the clipped gradient step at pt when one of rows (the largest
// per-sample projected gradients plus random rows) is replaced by each of
// the replacements: fresh in-model pairs (X', y') for standard DP, or, for
// weak DP, the same X_i with a fresh response <X_i, M> + ξ'; plus a few
// adversarial ones.
func checkNeighbours(t testing.TB, g *gen.Generated, pt Point, weak bool, tau, eta float64, rows, reps int, rng *rand.Rand) neighbourCheck {
	t.Helper()
	d := g.Data
	n, d1, d2 := d.N(), d.D1, d.D2
	_, r := pt.U.Dims()
	p := d1 * d2
	mvec := pt.Dense().RawMatrix().Data
	truth := g.Truth["M"].RawMatrix().Data
	sx := g.Scalars["sigma_xi"]
	tg := tangentOf(pt.U, pt.V)
	scratch := make([]float64, r*(d1+d2))
	weight := func(x []float64, y float64) (float64, float64, bool) {
		res := floats.Dot(x, mvec) - y
		w, c := tg.ProjectedWeight(x, res, tau, scratch)
		return w, res, c
	}
	// Rank the rows by their unclipped per-sample projected gradient.
	type rowNorm struct {
		i int
		g float64
	}
	all := make([]rowNorm, n)
	clipped := 0
	for i := 0; i < n; i++ {
		x := d.X.RawRowView(i)
		_, res, c := weight(x, d.Y[i])
		if c {
			clipped++
		}
		all[i] = rowNorm{i, math.Abs(res) * tg.ProjectedNorm(x, scratch)}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].g > all[b].g })
	pick := make([]int, 0, rows)
	for k := 0; k < rows/2; k++ {
		pick = append(pick, all[k].i)
	}
	for len(pick) < rows {
		pick = append(pick, rng.IntN(n))
	}
	// Replacement pool (standard DP): fresh model draws, then adversarial.
	type repl struct {
		x []float64
		y float64
	}
	pool := make([]repl, 0, reps)
	fresh := func() []float64 {
		x := make([]float64, p)
		for j := range x {
			x[j] = rng.NormFloat64()
		}
		return x
	}
	for len(pool) < reps {
		x := fresh()
		y := floats.Dot(x, truth) + sx*rng.NormFloat64()
		if k := len(pool); k >= reps-10 {
			// Adversarial: a scaled-up design and an extreme response.
			floats.Scale(math.Pow(10, float64(k%4)), x)
			y = math.Copysign(math.Pow(10, float64(k%5)), rng.NormFloat64())
		}
		pool = append(pool, repl{x, y})
	}
	out := neighbourCheck{dist: diff(pt.Dense(), g.Truth["M"])}
	if !weak {
		type prep struct {
			w, res float64
			c      tangentCoords
		}
		pp := make([]prep, len(pool))
		for j, rp := range pool {
			w, res, _ := weight(rp.x, rp.y)
			pp[j] = prep{w, res, coordsOf(pt, rp.x)}
		}
		for _, i := range pick {
			x := d.X.RawRowView(i)
			w, res, _ := weight(x, d.Y[i])
			ci := coordsOf(pt, x)
			for j, q := range pp {
				ch := eta * changeNorm(w, ci, q.w, q.c) / float64(n)
				out.maxChange = math.Max(out.maxChange, ch)
				if j < reps-10 {
					out.maxInModel = math.Max(out.maxInModel, ch)
					out.maxUnclipped = math.Max(out.maxUnclipped, eta*changeNorm(res, ci, q.res, q.c)/float64(n))
				}
				out.pairs++
			}
		}
	} else {
		for _, i := range pick {
			x := d.X.RawRowView(i)
			w, res, _ := weight(x, d.Y[i])
			pn := tg.ProjectedNorm(x, scratch)
			mean := floats.Dot(x, truth)
			for j := 0; j < reps; j++ {
				y := mean + sx*rng.NormFloat64()
				if j >= reps-10 {
					y = math.Copysign(math.Pow(10, float64(j%5)), rng.NormFloat64())
				}
				w2, res2, _ := weight(x, y)
				ch := eta * math.Abs(w-w2) * pn / float64(n)
				out.maxChange = math.Max(out.maxChange, ch)
				if j < reps-10 {
					out.maxInModel = math.Max(out.maxInModel, ch)
					out.maxUnclipped = math.Max(out.maxUnclipped, eta*math.Abs(res-res2)*pn/float64(n))
				}
				out.pairs++
			}
		}
	}
	out.clippedFrac = float64(clipped) / float64(n)
	out.predictedClipped = ClipTail(tau, sx, out.dist, 1, d1, d2, r)
	return out
}

// fullPassChange recomputes the released statistic's change for one
// (row, replacement) pair through the kernel the fit's pass uses and the
// dense tangent projection, as a cross-check of the coordinate shortcut.
func fullPassChange(t testing.TB, g *gen.Generated, pt Point, tau, eta float64, i int, x []float64, y float64) (full, short float64) {
	t.Helper()
	d := g.Data
	n, d1, d2 := d.N(), d.D1, d.D2
	p := d1 * d2
	m := pt.Dense().RawMatrix().Data
	tg := tangentOf(pt.U, pt.V)
	g0 := make([]float64, p)
	kernel.ProjectedGradient(g0, mat.DenseCopyOf(d.X).RawMatrix().Data, p, d.Y, m, tg, tau)
	xn := mat.DenseCopyOf(d.X)
	yn := append([]float64(nil), d.Y...)
	xn.SetRow(i, x)
	yn[i] = y
	g1 := make([]float64, p)
	kernel.ProjectedGradient(g1, xn.RawMatrix().Data, p, yn, m, tg, tau)
	dg := mat.NewDense(d1, d2, nil)
	for j := range g1 {
		dg.RawMatrix().Data[j] = eta * (g1[j] - g0[j]) / float64(n) // the kernel's sums, not means
	}
	full = frob(TangentProject(pt.U, pt.V, dg))
	xi := d.X.RawRowView(i)
	w0, _ := tg.ProjectedWeight(xi, floats.Dot(xi, m)-d.Y[i], tau, nil)
	w1, _ := tg.ProjectedWeight(x, floats.Dot(x, m)-y, tau, nil)
	short = eta * changeNorm(w0, coordsOf(pt, xi), w1, coordsOf(pt, x)) / float64(n)
	return full, short
}

// legacyIter is the per-iteration sensitivity rgrad-dp and rgrad-weak
// declared before the gradient was clipped (992c541): c3 η (σ_ξ + σr)
// √(r(d1+d2) ln n)/n, σ_ξ alone in weak DP.
func legacyIter(n, d1, d2, r int, sx, sr, eta float64, weak bool) float64 {
	b := sx + sr
	if weak {
		b = sx
	}
	return eta * b * math.Sqrt(float64(r*(d1+d2))*math.Log(float64(n))) / float64(n)
}

// The per-iteration sensitivity Δ_l = 2ητ/n that rgrad-dp and rgrad-weak
// declare covers every observed change of the released gradient step when
// one observation (standard DP) or one response (weak DP) is replaced: many
// rows (the largest per-sample gradients and random ones), many fresh
// in-model replacements and a few adversarial ones, at iterates 0, ¼, 1 and
// 2 σr from M and at the iterates the estimator itself visits at ε = 0.5, 1
// and 4. The unclipped gradient under the previous model plug-in (992c541)
// fails the same check. The 16000 × 30×20 configuration runs unless -short.
func TestIterationSensitivityCoversNeighbours(t *testing.T) {
	cases := []struct {
		name          string
		n, d1, d2     int
		rows, reps    int
		big           bool
		seed, seedFit uint64
	}{
		{"4000x10x8", 4000, 10, 8, 120, 200, false, 41, 5},
		{"16000x30x20", 16000, 30, 20, 120, 200, true, 42, 6},
	}
	const r, sx, sr, s1, eta = 2, 0.5, 1.0, 2.0, 0.8
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.big && testing.Short() {
				t.Skip("big configuration: run without -short")
			}
			g := genTrace(t, tc.seed, map[string]string{"n": itoa(tc.n), "d1": itoa(tc.d1), "d2": itoa(tc.d2)})
			truth := Point{U: g.Truth["U"], S: []float64{s1, sr}, V: g.Truth["V"]}
			for _, mode := range []Mode{Standard, Weak} {
				weak := mode == Weak
				sens := ModelSensitivities(ModelInputs{N: tc.n, D1: tc.d1, D2: tc.d2, Rank: r, Sigma1: s1, SigmaR: sr, SigmaXi: sx,
					Step: eta, Cl: 1, Cu: 1, C1: 1, C2: 2, C3: 1, Weak: weak})
				legacy := legacyIter(tc.n, tc.d1, tc.d2, r, sx, sr, eta, weak)
				rng := newRng(tc.seed + 100)
				type visit struct {
					label string
					pt    Point
				}
				var visits []visit
				for _, rho := range []float64{0, 0.25, 1, 2} {
					visits = append(visits, visit{fmt.Sprintf("%.2gσr from M", rho), iterateAt(t, truth, rho*sr, rng)})
				}
				for _, eps := range []float64{0.5, 1, 4} {
					est := &estimator{mode: mode, observe: func(l int, pt Point) {
						if l == 0 || l == 1 || l == 3 {
							visits = append(visits, visit{fmt.Sprintf("ε=%g iterate %d", eps, l), pt})
						}
					}}
					seed := tc.seedFit
					_, _, err := sdk.RunLocal(context.Background(), est, g.Data, modelParamsFor(g, map[string]string{"step": ftoa(eta)}),
						approx(eps, 1e-6), sdk.LocalOptions{Seed: &seed})
					require.NoError(t, err)
				}
				for k, v := range visits {
					c := checkNeighbours(t, g, v.pt, weak, sens.Clip, eta, tc.rows, tc.reps, rng)
					t.Logf("%s %-18s ‖M_l−M‖_F=%.3f: max change/Δ_l = %.3f (in-model %.3f) over %d pairs; unclipped in-model/legacy Δ_l = %.2f; clipped %.3f%% (model %.3f%%)",
						mode, v.label, c.dist, c.maxChange/sens.Iter, c.maxInModel/sens.Iter, c.pairs, c.maxUnclipped/legacy, 100*c.clippedFrac, 100*c.predictedClipped)
					assert.LessOrEqual(t, c.maxChange, sens.Iter*(1+1e-9), "%s %s: declared Δ_l must cover every change", mode, v.label)
					if k == 3 || (weak && k == 0) {
						assert.Greater(t, c.maxUnclipped, legacy, "%s %s: the unclipped step under the legacy plug-in is not covered", mode, v.label)
					}
				}
				// Cross-check the shortcut against the fit's own pass and the
				// dense tangent projection on a few pairs at the farthest iterate.
				far := visits[3].pt
				for j := 0; j < 3; j++ {
					i := rng.IntN(tc.n)
					x := make([]float64, tc.d1*tc.d2)
					for k := range x {
						x[k] = float64(1+2*j) * rng.NormFloat64()
					}
					y := 10 * rng.NormFloat64()
					if weak {
						copy(x, g.Data.X.RawRowView(i))
					}
					full, short := fullPassChange(t, g, far, sens.Clip, eta, i, x, y)
					assert.InDelta(t, full, short, 1e-6*sens.Iter, "shortcut vs full pass")
					assert.LessOrEqual(t, full, sens.Iter*(1+1e-9))
				}
			}
		})
	}
}
