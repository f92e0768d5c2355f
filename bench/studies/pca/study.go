// Package pcastudy holds the PCA study that cannot run through the host:
// Cai–Xia–Zha and Analyze Gauss on Wishart-sampled Σ̂ at sizes (n = 10⁶,
// p = 1000) whose rows would not fit in memory. The row-based PCA studies
// are scenarios (bench/scenarios/pca-*.toml).
package pcastudy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/pca"
)

// StudyRow is the summary of one method at one ε over seeds.
type StudyRow struct {
	Method string
	// Eps is the total ε (math.Inf(1) for the non-private reference).
	Eps float64
	// SinSpec and SinFrob are the quartiles (25%, 50%, 75%) of the
	// spectral and Frobenius sin-θ distances to the truth.
	SinSpec, SinFrob [3]float64
	// Seconds is the median fit time.
	Seconds float64
	Runs    int
}

// Markdown renders study rows as a table (median [25%, 75%]); the
// covariance error column is empty (no method here releases Σ̃).
func Markdown(rows []StudyRow) string {
	var b strings.Builder
	f := func(q [3]float64) string { return fmt.Sprintf("%.4g [%.3g, %.3g]", q[1], q[0], q[2]) }
	b.WriteString("| method | ε | ‖sin Θ‖₂ | ‖sin Θ‖_F | ‖Σ̃−Σ‖ | median s | runs |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		eps := fmt.Sprintf("%g", r.Eps)
		if math.IsInf(r.Eps, 1) {
			eps = "∞"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | – | %.3g | %d |\n", r.Method, eps, f(r.SinSpec), f(r.SinFrob), r.Seconds, r.Runs)
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
	type key struct {
		name string
		eps  float64
	}
	type acc struct{ sp, fr, sec []float64 }
	res := map[key]*acc{}
	// add records one method's subspace uh against the truth u, fitted
	// since t0.
	add := func(name string, eps float64, u, uh *mat.Dense, t0 time.Time) error {
		sp, fr, err := evaluate.SinTheta(u, uh)
		a := res[key{name, eps}]
		if a == nil {
			a = &acc{}
			res[key{name, eps}] = a
		}
		a.sp, a.fr, a.sec = append(a.sp, sp), append(a.fr, fr), append(a.sec, time.Since(t0).Seconds())
		return err
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
		if err := add("nonprivate", math.Inf(1), u, uh, t0); err != nil {
			return nil, err
		}
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
				if err := add(meth.name, eps, u, out.Matrices[0].M, t0); err != nil {
					return nil, err
				}
			}
		}
	}
	eps := append([]float64{math.Inf(1)}, cfg.Eps...)
	sort.Float64s(eps)
	eps = slices.Compact(eps)
	var rows []StudyRow
	for _, name := range []string{"nonprivate", "cxz-pca-only", "analyze-gauss"} {
		for _, e := range eps {
			if a := res[key{name, e}]; a != nil {
				rows = append(rows, StudyRow{Method: name, Eps: e, SinSpec: evaluate.Quartiles(a.sp), SinFrob: evaluate.Quartiles(a.fr),
					Seconds: evaluate.Quartiles(a.sec)[1], Runs: len(a.sp)})
			}
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
