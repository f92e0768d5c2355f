package pcastudy

import (
	"context"
	"fmt"
	"github.com/dplr/dplr/plugins/pca"
	"gonum.org/v1/gonum/stat/distuv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// StudyMethod is one estimator configuration of an accuracy study.
type StudyMethod struct {
	// Label names the row in reports.
	Label string
	// Est is the estimator.
	Est sdk.Estimator
	// Params are its parameters (rank is set by the study).
	Params map[string]string
	// Pure selects a pure-ε grant (otherwise (ε, δ)).
	Pure bool
}

// StudyRow is the summary of one method at one ε over seeds.
type StudyRow struct {
	Method string
	// Eps is the total ε (math.Inf(1) for the non-private reference).
	Eps float64
	// Quantiles (25%, 50%, 75%) of the spectral and Frobenius sin-θ
	// distances to the truth, of the spectral covariance error (NaN when
	// not computed) and of the captured-variance ratio (real data).
	SinSpec, SinFrob, CovErr, Captured [3]float64
	// Seconds is the median fit time.
	Seconds float64
	Runs    int
}

// SpikedStudyConfig configures a synthetic study on the spiked model.
type SpikedStudyConfig struct {
	N, P    int
	Lambda  []float64
	Sigma2  float64
	Eps     []float64
	Delta   float64
	Seeds   int
	Methods []StudyMethod
	// Covariance also computes ‖Σ̃ − Σ‖ for methods that return Sigma.
	Covariance bool
	Backend    backend.Backend
}

// DefaultSpikedMethods are the four estimators with the settings of the
// reference comparisons: Cai–Xia–Zha (explicit, zCDP), Analyze Gauss with
// γ² = τ (so clipping is rarely active), Amin et al. with the same γ, and
// the non-private reference (run once per seed, reported at ε = ∞).
func DefaultSpikedMethods(m pca.SpikedModel, beta float64) []StudyMethod {
	gamma := math.Sqrt(pca.RowNormBound(m, beta))
	lam := fmtFloats(m.LambdaLow)
	clip := fmt.Sprintf("%.6g", gamma)
	return []StudyMethod{
		{Label: "cxz", Est: pca.CXZ{}, Params: map[string]string{"sigma2": fmt.Sprint(m.Sigma2), "lambda": lam, "output_sigma": "true"}},
		{Label: "cxz-pca-only", Est: pca.CXZ{}, Params: map[string]string{"sigma2": fmt.Sprint(m.Sigma2), "lambda": lam, "pca_only": "true"}},
		{Label: "analyze-gauss", Est: pca.AnalyzeGauss{}, Params: map[string]string{"clip": clip, "output_sigma": "true"}},
		{Label: "amin", Est: pca.Amin{}, Params: map[string]string{"clip": clip, "output_sigma": "true"}, Pure: true},
	}
}

// SpikedStudy runs every method at every ε on Seeds independent data sets
// from the spiked model (data seed s, noise seed s) and summarises the
// errors against the truth; the non-private reference is reported at ε = ∞.
func SpikedStudy(ctx context.Context, cfg SpikedStudyConfig) ([]StudyRow, error) {
	r := len(cfg.Lambda)
	model, err := gen.Lookup("spiked")
	if err != nil {
		return nil, err
	}
	acc := newCells()
	add := acc.add
	opts := func(seed uint64) sdk.LocalOptions { return sdk.LocalOptions{Seed: &seed, Backend: cfg.Backend} }
	for s := 0; s < cfg.Seeds; s++ {
		g, err := gen.Run(model, map[string]string{
			"n": fmt.Sprint(cfg.N), "p": fmt.Sprint(cfg.P), "rank": fmt.Sprint(r),
			"lambda": fmtFloats(cfg.Lambda), "sigma2": fmt.Sprint(cfg.Sigma2),
		}, uint64(1000+s))
		if err != nil {
			return nil, err
		}
		truth, sigma := g.Truth["U"], g.Truth["Sigma"]
		eval := func(res *sdk.Result) (float64, float64, float64, error) {
			var u *mat.Dense
			var sg *mat.Dense
			for _, m := range res.Matrices {
				switch m.Name {
				case "U":
					u = m.M
				case "Sigma":
					sg = m.M
				}
			}
			sp, fr, err := evaluate.SinTheta(truth, u)
			if err != nil {
				return 0, 0, 0, err
			}
			ce := math.NaN()
			if cfg.Covariance && sg != nil {
				var d mat.Dense
				d.Sub(sg, sigma)
				if ce, err = evaluate.SpectralNorm(&d); err != nil {
					return 0, 0, 0, err
				}
			}
			return sp, fr, ce, nil
		}
		t0 := time.Now()
		ref, _, err := sdk.RunLocal(ctx, pca.NonPrivate{}, g.Data, map[string]string{"rank": fmt.Sprint(r), "output_sigma": "true"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, opts(uint64(s)))
		if err != nil {
			return nil, err
		}
		sp, fr, ce, err := eval(ref)
		if err != nil {
			return nil, err
		}
		add(cellKey{"nonprivate", math.Inf(1)}, sp, fr, ce, time.Since(t0).Seconds())
		for _, m := range cfg.Methods {
			for _, eps := range cfg.Eps {
				raw := map[string]string{"rank": fmt.Sprint(r)}
				for k, v := range m.Params {
					raw[k] = v
				}
				grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}
				if m.Pure {
					grant = privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps}
				}
				t0 := time.Now()
				res, _, err := sdk.RunLocal(ctx, m.Est, g.Data, raw, grant, opts(uint64(s)))
				if err != nil {
					return nil, fmt.Errorf("%s at ε = %g: %w", m.Label, eps, err)
				}
				sp, fr, ce, err := eval(res)
				if err != nil {
					return nil, err
				}
				add(cellKey{m.Label, eps}, sp, fr, ce, time.Since(t0).Seconds())
			}
		}
	}
	return acc.rows(), nil
}

// cellKey identifies one (method, ε) cell of a spiked study.
type cellKey struct {
	m   string
	eps float64
}

// cells accumulates the per-run figures of each cell, in first-seen order:
// spectral and Frobenius sin-θ, covariance error, (unused), seconds.
type cells struct {
	acc   map[cellKey]*[5][]float64
	order []cellKey
}

func newCells() *cells { return &cells{acc: map[cellKey]*[5][]float64{}} }

// add records one run of cell k (ce NaN: no covariance error).
func (c *cells) add(k cellKey, sp, fr, ce, sec float64) {
	a, ok := c.acc[k]
	if !ok {
		a = &[5][]float64{}
		c.acc[k] = a
		c.order = append(c.order, k)
	}
	a[0] = append(a[0], sp)
	a[1] = append(a[1], fr)
	if !math.IsNaN(ce) {
		a[2] = append(a[2], ce)
	}
	a[4] = append(a[4], sec)
}

// rows summarises every cell by its quartiles.
func (c *cells) rows() []StudyRow {
	var rows []StudyRow
	for _, k := range c.order {
		a := c.acc[k]
		rows = append(rows, StudyRow{Method: k.m, Eps: k.eps, SinSpec: evaluate.Quartiles(a[0]), SinFrob: evaluate.Quartiles(a[1]),
			CovErr: evaluate.Quartiles(a[2]), Captured: evaluate.Quartiles(nil), Seconds: evaluate.Quartiles(a[4])[1], Runs: len(a[0])})
	}
	return rows
}

// RealStudyConfig configures a study on a real data set: the
// captured-variance ratio tr(ŨᵀSŨ)/tr(ÛᵀSÛ) of each private subspace,
// where S is the (uncentred) second-moment matrix XᵀX/n and Û the
// non-private top-r subspace.
type RealStudyConfig struct {
	Data    *data.Dataset
	Rank    int
	Eps     []float64
	Delta   float64
	Seeds   int
	Methods []StudyMethod
	Backend backend.Backend
}

// RealStudy runs the methods on a real data set and reports the
// captured-variance ratio against non-private PCA (evaluation only: the
// ratio is computed from the raw data).
func RealStudy(ctx context.Context, cfg RealStudyConfig) ([]StudyRow, error) {
	be := cfg.Backend
	if be == nil {
		be = backend.Default()
	}
	s, _, err := pca.Gram(ctx, be, cfg.Data.X, nil, 0)
	if err != nil {
		return nil, err
	}
	seed0 := uint64(0)
	t0 := time.Now()
	ref, _, err := sdk.RunLocal(ctx, pca.NonPrivate{}, cfg.Data, map[string]string{"rank": fmt.Sprint(cfg.Rank)}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, sdk.LocalOptions{Seed: &seed0, Backend: be})
	if err != nil {
		return nil, err
	}
	refSec := time.Since(t0).Seconds()
	uref := ref.Matrices[0].M
	best := evaluate.CapturedVariance(s, uref)
	rows := []StudyRow{{Method: "nonprivate", Eps: math.Inf(1), Captured: [3]float64{1, 1, 1}, Seconds: refSec, Runs: 1,
		SinSpec: [3]float64{0, 0, 0}, SinFrob: [3]float64{0, 0, 0}, CovErr: evaluate.Quartiles(nil)}}
	for _, m := range cfg.Methods {
		for _, eps := range cfg.Eps {
			var capt, sps, frs, secs []float64
			for sd := 0; sd < cfg.Seeds; sd++ {
				raw := map[string]string{"rank": fmt.Sprint(cfg.Rank)}
				for k, v := range m.Params {
					raw[k] = v
				}
				grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}
				if m.Pure {
					grant = privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps}
				}
				seed := uint64(sd)
				t0 := time.Now()
				res, _, err := sdk.RunLocal(ctx, m.Est, cfg.Data, raw, grant, sdk.LocalOptions{Seed: &seed, Backend: be})
				if err != nil {
					return nil, fmt.Errorf("%s at ε = %g: %w", m.Label, eps, err)
				}
				secs = append(secs, time.Since(t0).Seconds())
				var u *mat.Dense
				for _, mm := range res.Matrices {
					if mm.Name == "U" {
						u = mm.M
					}
				}
				capt = append(capt, evaluate.CapturedVariance(s, u)/best)
				sp, fr, err := evaluate.SinTheta(uref, u)
				if err != nil {
					return nil, err
				}
				sps, frs = append(sps, sp), append(frs, fr)
			}
			rows = append(rows, StudyRow{Method: m.Label, Eps: eps, Captured: evaluate.Quartiles(capt), SinSpec: evaluate.Quartiles(sps),
				SinFrob: evaluate.Quartiles(frs), CovErr: evaluate.Quartiles(nil), Seconds: evaluate.Quartiles(secs)[1], Runs: cfg.Seeds})
		}
	}
	return rows, nil
}

// Markdown renders study rows as a table (median [25%, 75%]).
func Markdown(rows []StudyRow, captured bool) string {
	var b strings.Builder
	f := func(q [3]float64) string {
		if math.IsNaN(q[1]) {
			return "–"
		}
		return fmt.Sprintf("%.4g [%.3g, %.3g]", q[1], q[0], q[2])
	}
	if captured {
		b.WriteString("| method | ε | captured-variance ratio | sin θ (spectral) vs non-private | median s | runs |\n|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| method | ε | ‖sin Θ‖₂ | ‖sin Θ‖_F | ‖Σ̃−Σ‖ | median s | runs |\n|---|---|---|---|---|---|---|\n")
	}
	for _, r := range rows {
		eps := fmt.Sprintf("%g", r.Eps)
		if math.IsInf(r.Eps, 1) {
			eps = "∞"
		}
		if captured {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.3g | %d |\n", r.Method, eps, f(r.Captured), f(r.SinSpec), r.Seconds, r.Runs)
		} else {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.3g | %d |\n", r.Method, eps, f(r.SinSpec), f(r.SinFrob), f(r.CovErr), r.Seconds, r.Runs)
		}
	}
	return b.String()
}

// SampleWishartCov draws Σ̂ = (1/n)·Σ_{i≤n} x_ix_iᵀ for i.i.d. x_i ~ N(0, Σ),
// Σ = U·diag(λ)·Uᵀ + σ²I, without materialising the rows: by Bartlett's
// decomposition nΣ̂ = Σ^{1/2}LLᵀΣ^{1/2} in law, with L lower triangular,
// L_ii = √χ²_{n−i+1} (1-indexed) and L_ij ~ N(0, 1) below the diagonal
// The cost is O(p³) instead of O(np²). It needs n ≥ p. The
// result is exact in distribution but has no rows, so it cannot serve
// clipping, centring or sensitivity audits.
func SampleWishartCov(be backend.Backend, u *mat.Dense, lambda []float64, sigma2 float64, n int, rng *rand.Rand) (*mat.SymDense, error) {
	p, r := u.Dims()
	if len(lambda) != r || n < p || !(sigma2 > 0) {
		return nil, fmt.Errorf("SampleWishartCov: need len(λ) = r, n ≥ p and σ² > 0 (p=%d, r=%d, n=%d)", p, r, n)
	}
	l := mat.NewDense(p, p, nil)
	for i := 0; i < p; i++ {
		l.Set(i, i, math.Sqrt(distuv.ChiSquared{K: float64(n - i), Src: rng}.Rand()))
		for j := 0; j < i; j++ {
			l.Set(i, j, rng.NormFloat64())
		}
	}
	// A = Σ^{1/2}L = σL + U·diag(√(λ_k+σ²) − σ)·(UᵀL).
	s := math.Sqrt(sigma2)
	utl := mat.NewDense(r, p, nil)
	if err := be.Mul(utl, u, true, l, false); err != nil {
		return nil, err
	}
	for k := 0; k < r; k++ {
		f := math.Sqrt(lambda[k]+sigma2) - s
		row := utl.RawRowView(k)
		for j := range row {
			row[j] *= f
		}
	}
	a := mat.NewDense(p, p, nil)
	if err := be.Mul(a, u, false, utl, false); err != nil {
		return nil, err
	}
	for i := 0; i < p; i++ {
		ar, lr := a.RawRowView(i), l.RawRowView(i)
		for j := range ar {
			ar[j] += s * lr[j]
		}
	}
	return be.Gram(1/float64(n), a.T()), nil
}

// CovStudyConfig configures a study on Wishart-sampled Σ̂ (large n·p).
type CovStudyConfig struct {
	N, P    int
	Lambda  []float64
	Sigma2  float64
	Eps     []float64
	Delta   float64
	Seeds   int
	Backend backend.Backend
}

// CovStudy compares, on Σ̂ drawn with SampleWishartCov, the non-private
// subspace, Cai–Xia–Zha stage 1 alone (pca_only, explicit calibration) and
// Analyze Gauss with clip γ = √τ (the rows are not materialised, so the
// clip is assumed inactive, which holds with probability ≥ 1−δ under the
// model). Both private methods spend the full (ε, δ).
func CovStudy(ctx context.Context, cfg CovStudyConfig) ([]StudyRow, error) {
	be := cfg.Backend
	if be == nil {
		be = backend.Default()
	}
	r := len(cfg.Lambda)
	m := pca.SpikedModel{N: cfg.N, P: cfg.P, LambdaLow: cfg.Lambda, LambdaHigh: cfg.Lambda, Sigma2: cfg.Sigma2}
	clip := math.Sqrt(pca.RowNormBound(m, cfg.Delta))
	type acc struct{ sp, fr, sec []float64 }
	res := map[string]map[float64]*acc{}
	get := func(name string, eps float64) *acc {
		if res[name] == nil {
			res[name] = map[float64]*acc{}
		}
		if res[name][eps] == nil {
			res[name][eps] = &acc{}
		}
		return res[name][eps]
	}
	for s := 0; s < cfg.Seeds; s++ {
		rng := rand.New(rand.NewPCG(uint64(2000+s), 0x70636121))
		u := gen.RandomOrthonormal(cfg.P, r, rng)
		sh, err := SampleWishartCov(be, u, cfg.Lambda, cfg.Sigma2, cfg.N, rng)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		_, uh, err := be.EigSymTop(sh, r)
		if err != nil {
			return nil, err
		}
		sp, fr, _ := evaluate.SinTheta(u, uh)
		a := get("nonprivate", math.Inf(1))
		a.sp, a.fr, a.sec = append(a.sp, sp), append(a.fr, fr), append(a.sec, time.Since(t0).Seconds())
		for _, eps := range cfg.Eps {
			for _, meth := range []struct {
				name string
				raw  map[string]string
				fit  func(context.Context, *sdk.Run, map[string]string, *mat.SymDense, int) (*sdk.Result, error)
			}{
				{"cxz-pca-only", map[string]string{"rank": fmt.Sprint(r), "sigma2": fmt.Sprint(cfg.Sigma2), "lambda": fmtFloats(cfg.Lambda), "pca_only": "true", "center": "none"}, pca.CXZFromCov},
				{"analyze-gauss", map[string]string{"rank": fmt.Sprint(r), "clip": fmt.Sprintf("%.17g", clip), "center": "none"}, pca.AnalyzeGaussFromCov},
			} {
				acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta})
				if err != nil {
					return nil, err
				}
				run := &sdk.Run{Acct: acct, Rand: privacy.NewSeededSource(uint64(s)), Backend: be}
				t0 := time.Now()
				out, err := meth.fit(ctx, run, meth.raw, sh, cfg.N)
				if err != nil {
					return nil, fmt.Errorf("%s at ε = %g: %w", meth.name, eps, err)
				}
				sp, fr, err := evaluate.SinTheta(u, out.Matrices[0].M)
				if err != nil {
					return nil, err
				}
				a := get(meth.name, eps)
				a.sp, a.fr, a.sec = append(a.sp, sp), append(a.fr, fr), append(a.sec, time.Since(t0).Seconds())
			}
		}
	}
	var rows []StudyRow
	for _, name := range []string{"nonprivate", "cxz-pca-only", "analyze-gauss"} {
		keys := make([]float64, 0, len(res[name]))
		for e := range res[name] {
			keys = append(keys, e)
		}
		sort.Float64s(keys)
		for _, e := range keys {
			a := res[name][e]
			rows = append(rows, StudyRow{Method: name, Eps: e, SinSpec: evaluate.Quartiles(a.sp), SinFrob: evaluate.Quartiles(a.fr),
				CovErr: evaluate.Quartiles(nil), Captured: evaluate.Quartiles(nil), Seconds: evaluate.Quartiles(a.sec)[1], Runs: len(a.sp)})
		}
	}
	return rows, nil
}

// fmtFloats formats a list of numbers for a method label.
func fmtFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.6g", x)
	}
	return strings.Join(parts, ",")
}
