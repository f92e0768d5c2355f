package suite

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/plugins/orbit"
)

// theory is a rate curve up to a constant: f(x) where x is ε or the swept
// parameter (xName), the other data parameters and ε given. The report
// adds "delta" (the scenario's δ) to params.
type theory func(x float64, xName string, params map[string]string, eps float64) float64

func param(p map[string]string, k string, def float64) float64 {
	if v, err := strconv.ParseFloat(p[k], 64); err == nil {
		return v
	}
	return def
}

// minList returns the smallest number of a comma-separated list (e.g. the
// spiked model's lambda = "24,20"), or def.
func minList(p map[string]string, k string, def float64) float64 {
	out := math.Inf(1)
	for _, f := range strings.Split(p[k], ",") {
		if v, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil && v < out {
			out = v
		}
	}
	if math.IsInf(out, 1) {
		return def
	}
	return out
}

// at returns the value of the data parameter name, taking x when x is
// that parameter's axis.
func at(x float64, xName string, p map[string]string, name string, def float64) float64 {
	if xName == name {
		return x
	}
	return param(p, name, def)
}

// epsAt returns the ε of a point: x on an ε axis, else the sweep's ε.
func epsAt(x float64, xName string, eps float64) float64 {
	if xName == "epsilon" {
		return x
	}
	return eps
}

// theories are the named rate curves scenarios can draw. Each is the
// rate's shape; the report fits its constant.
var theories = map[string]theory{
	// 1/ε: the privacy-dominated regime of every estimator here.
	"inv-eps": func(x float64, _ string, _ map[string]string, _ float64) float64 { return 1 / x },
	// 1/n at fixed ε.
	"inv-n": func(x float64, _ string, _ map[string]string, _ float64) float64 { return 1 / x },
	// Linear growth in the swept size (cost of a pass over the data).
	"linear": func(x float64, _ string, _ map[string]string, _ float64) float64 { return x },
	// Trace regression (Zha): σ_ξ·sqrt(r(d1+d2)/n) + (σ_ξ+σ_r)·r(d1+d2)/(nε),
	// with x either ε or n.
	"rgrad": sumOf(rgradTerms),
	// DP PCA in the spiked model (Cai, Xia, Zha, Theorem 1): (σ²/λ + √(σ²/λ))·(√(p/n) + p·√(r + log n)·√log(2.5/δ)/(nε)),
	// λ the smallest spike, with x = ε, n or p.
	"pca": pcaRate,
}

// pcaRate is the sum of pcaTerms.
var pcaRate = sumOf(pcaTerms)

// terms is a rate split into additive terms (statistical, privacy).
type terms func(x float64, xName string, params map[string]string, eps float64) []float64

// rateTerms are the rates whose terms the report fits with one constant
// each ("up to constants" for every term), rather than one constant for
// the sum: with unit constants one term can swamp the other.
var rateTerms = map[string]terms{
	"rgrad": rgradTerms,
	"pca":   pcaTerms,
}

func sumOf(f terms) theory {
	return func(x float64, xName string, p map[string]string, eps float64) float64 {
		return floats.Sum(f(x, xName, p, eps))
	}
}

// rgradTerms: σ_ξ·sqrt(r(d1+d2)/n) and (σ_ξ+σ_r)·r(d1+d2)/(nε).
func rgradTerms(x float64, xName string, p map[string]string, eps float64) []float64 {
	n, e := at(x, xName, p, "n", 16000), epsAt(x, xName, eps)
	r, d1, d2 := param(p, "rank", 2), param(p, "d1", 30), param(p, "d2", 20)
	sx, sr := param(p, "sigma_xi", 0.5), param(p, "sigmar", 1)
	return []float64{sx * math.Sqrt(r*(d1+d2)/n), (sx + sr) * r * (d1 + d2) / (n * e)}
}

// pcaTerms: (σ²/λ + √(σ²/λ))·√(p/n) and
// (σ²/λ + √(σ²/λ))·p·√(r + log n)·√log(2.5/δ)/(nε).
func pcaTerms(x float64, xName string, p map[string]string, eps float64) []float64 {
	n, d := at(x, xName, p, "n", 10000), at(x, xName, p, "p", 30)
	r, s2 := at(x, xName, p, "rank", 2), at(x, xName, p, "sigma2", 1)
	lam := minList(p, "lambda", 20)
	if xName == "lambda" {
		lam = x
	}
	e, delta := epsAt(x, xName, eps), param(p, "delta", 1e-6)
	snr := s2/lam + math.Sqrt(s2/lam)
	return []float64{snr * math.Sqrt(d/n), snr * d * math.Sqrt(r+math.Log(n)) * math.Sqrt(math.Log(2.5/delta)) / (n * e)}
}

// fitTerms returns non-negative constants c minimising the squared
// relative error Σ_i (Σ_j c_j·f[i][j]/m[i] − 1)² of the fitted sum against
// the medians m (every subset of terms is tried; the best feasible wins).
func fitTerms(f [][]float64, m []float64) []float64 {
	k := len(f[0])
	best, bestErr := make([]float64, k), math.Inf(1)
	for mask := 1; mask < 1<<k; mask++ {
		var idx []int
		for j := 0; j < k; j++ {
			if mask&(1<<j) != 0 {
				idx = append(idx, j)
			}
		}
		q := len(idx)
		a := mat.NewDense(len(m), q, nil)
		b := mat.NewVecDense(len(m), nil)
		for i := range m {
			for c, j := range idx {
				a.Set(i, c, f[i][j]/m[i])
			}
			b.SetVec(i, 1)
		}
		var sol mat.VecDense
		if err := sol.SolveVec(a, b); err != nil {
			continue
		}
		c := make([]float64, k)
		ok := true
		for ci, j := range idx {
			if c[j] = sol.AtVec(ci); !(c[j] >= 0) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		e := 0.0
		for i := range m {
			s := 0.0
			for j := 0; j < k; j++ {
				s += c[j] * f[i][j]
			}
			e += (s/m[i] - 1) * (s/m[i] - 1)
		}
		if e < bestErr {
			best, bestErr = c, e
		}
	}
	if math.IsInf(bestErr, 1) {
		return nil
	}
	return best
}

// formulas are curves drawn with their own constants (no fit): proven
// bounds and sharp predictions evaluated by formula, named in a scenario's
// report.formulas. Each entry documents where it comes from.
var formulas = map[string]struct {
	f     theory
	label string
}{
	// DP PCA upper bound of Cai, Xia, Zha (Theorem 1)
	// with its absolute constant C4 set to 1 and capped at 1 (sin-θ ≤ 1):
	// measured errors are expected within a small factor of it.
	"pca-rate": {func(x float64, xName string, p map[string]string, eps float64) float64 {
		return math.Min(1, pcaRate(x, xName, p, eps))
	}, "Cai–Xia–Zha Thm 1 rate, C4 = 1, capped at 1"},
	// Orbit exponential mechanism, rank-k PCA (public projection spectrum,
	// λ_1 = 1, exact calibration β = ε/2, rows of norm ≤ 1 so Γ = tr A ≤
	// n): the explicit high-probability upper bound τ*(β_f = 0.05) of
	// plugins/orbit/DERIVATIONS.md §8 — the smallest τ ≥ λ_1 with
	// exp(−βτ/2 + dk·log(1 + 16λ_1Γ/τ)) ≤ β_f.
	"orbit-ub": {orbitUB, "upper bound τ*(0.05), orbit DERIVATIONS.md §8"},
	// Orbit EM, strong-signal prediction E[L] ≈ D/(2β) with D = k(d−k)
	// the orbit dimension (plugins/orbit/DERIVATIONS.md §8): k(d−k)/ε.
	"orbit-em-mean": {func(x float64, xName string, p map[string]string, eps float64) float64 {
		d, k := at(x, xName, p, "d", 20), at(x, xName, p, "rank", 3)
		ones := make([]float64, int(k))
		for i := range ones {
			ones[i] = 1
		}
		return orbit.PredictedEMLoss(ones, int(d), epsAt(x, xName, eps)/2)
	}, "orbit EM prediction k(d−k)/ε, orbit DERIVATIONS.md §8"},
	// Deflation with ε/k per vector (plugins/orbit/DERIVATIONS.md §8):
	// Σ_{i=1..k} (d−i)·k/ε.
	"orbit-deflation-mean": {func(x float64, xName string, p map[string]string, eps float64) float64 {
		d, k := at(x, xName, p, "d", 20), at(x, xName, p, "rank", 3)
		return orbit.PredictedDeflationLoss(int(d), int(k), epsAt(x, xName, eps))
	}, "deflation prediction Σ(d−i)k/ε, orbit DERIVATIONS.md §8"},
}

// orbitUB is the τ* of plugins/orbit/DERIVATIONS.md §8 (exact calibration
// β = ε/2, λ_1 = 1, Γ = n, m = dk, β_f = 0.05).
func orbitUB(x float64, xName string, p map[string]string, eps float64) float64 {
	d, k, n := at(x, xName, p, "d", 20), at(x, xName, p, "rank", 3), at(x, xName, p, "n", 2000)
	return orbit.TauStar(epsAt(x, xName, eps)/2, 1, n, int(d*k), 0, 0.05)
}
