package rgrad

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplr/dplr/engine/privacy"
)

// Mode selects the variant of the estimator.
type Mode string

// Modes.
const (
	// Standard is DP-init with model-calibrated sensitivities + clipped
	// DP-RGrad (both X_i and y_i private).
	Standard Mode = "standard"
	// Weak is the weak-DP variant: only y_i is private, the design is public.
	Weak Mode = "weak"
	// Strict is the clipped variant with worst-case (ε, δ)-DP.
	Strict Mode = "strict"
	// NonPrivate is spectral initialisation + RGrad without noise.
	NonPrivate Mode = "nonprivate"
)

// Sensitivities are the sensitivities of the model-calibrated modes.
// Subspace bounds the change of the projectors ÛÛᵀ and V̂V̂ᵀ (Δ⁽¹⁾) and Core
// that of the r×r core ŨᵀL̂Ṽ (Δ⁽²⁾), in Frobenius norm when one observation
// is replaced by an independent draw from the model (DERIVATIONS.md §4).
// Clip is the public per-sample bound τ on ‖res_i·P_T(X_i)‖_F and Iter =
// 2ητ/n the resulting worst-case sensitivity of one gradient step ηP_T(G_l)
// (DERIVATIONS.md §5): it holds at every iterate and for every replacement.
type Sensitivities struct {
	Subspace, Core, Iter, Clip float64
}

// ModelInputs are the public inputs the model-calibrated sensitivities are
// computed from.
type ModelInputs struct {
	N, D1, D2, Rank int
	Sigma1, SigmaR  float64 // extreme non-zero singular values of M
	SigmaXi         float64 // response noise standard deviation
	Step            float64 // η
	Cl, Cu          float64 // design eigenvalue bounds
	C1, C2, C3      float64 // constants multiplying the three formulas
	Weak            bool    // weak DP: only y private
	Paper           bool    // the paper's literal formulas (no √(d1∨d2) factor in Δ⁽¹⁾)
}

// ClipRadius is the distance ‖M_l − M‖_F, as a fraction of σr, at which the
// model-chosen clip τ of rgrad-dp lets one sample in expectation be clipped
// per iteration (DERIVATIONS.md §5.3). rgrad-weak takes the clip at M itself
// (radius 0), so that its clip scales with σ_ξ alone.
const ClipRadius = 0.25

// ClipRadiusOf returns the radius ρ at which the model-chosen clip is set:
// ClipRadius·σr in standard DP, 0 in weak DP.
func ClipRadiusOf(in ModelInputs) float64 {
	if in.Weak {
		return 0
	}
	return ClipRadius * in.SigmaR
}

// ModelSensitivities evaluates the sensitivities of the model-calibrated
// modes: the initialisation's Δ⁽¹⁾ and Δ⁽²⁾ (the corrected plug-ins, or the
// paper's literal formulas with Paper; DERIVATIONS.md §4) and the
// iterations' clip τ (c3·ModelClip, or the paper's Δ_l as a clip), so that
// Δ_l = 2ητ/n holds for any data (§5).
func ModelSensitivities(in ModelInputs) Sensitivities {
	n := float64(in.N)
	r := float64(in.Rank)
	ln := math.Log(n)
	a := math.Sqrt(in.Cu*r)*in.Sigma1 + in.SigmaXi
	b := in.SigmaXi + math.Sqrt(in.Cu)*in.SigmaR
	if in.Weak {
		a, b = in.SigmaXi, in.SigmaXi
	}
	dim := math.Sqrt(float64(max(in.D1, in.D2)))
	if in.Paper {
		dim = 1
	}
	il := math.Sqrt(1 / in.Cl)
	tau := in.C3 * ModelClip(in.N, in.D1, in.D2, in.Rank, in.SigmaXi, ClipRadiusOf(in), in.Cu, 1)
	if in.Paper {
		tau = in.C3 * b * math.Sqrt(in.Cu*r*float64(in.D1+in.D2)*ln) / 2
	}
	return Sensitivities{
		Subspace: in.C1 * dim * il * math.Sqrt(r) * a * ln / (n * in.SigmaR),
		Core:     in.C2 * il * math.Sqrt(r) * a * ln / n,
		Iter:     2 * in.Step * tau / n,
		Clip:     tau,
	}
}

// ClipTail is the probability that one in-model sample's projected gradient
// ‖res·P_T(X)‖_F exceeds tau at a fixed iterate at Frobenius distance rho
// from M, with the residual res ~ N(0, σ_ξ² + C_u ρ²) and ‖P_T(X)‖_F² ~
// C_u·χ²_k, k = r(d1 + d2 − r), treated as independent (exact for an
// isotropic design at ρ = 0; DERIVATIONS.md §5.3). It integrates
// P(χ²_k > t²/(C_u s² z²)) against the half-normal density of |z|.
func ClipTail(tau, sigmaXi, rho, cu float64, d1, d2, r int) float64 {
	s := math.Sqrt(sigmaXi*sigmaXi + cu*rho*rho)
	if !(tau > 0) {
		return 1
	}
	if s == 0 {
		return 0
	}
	chi := distuv.ChiSquared{K: float64(r * (d1 + d2 - r))}
	c := tau * tau / (cu * s * s)
	// Simpson's rule on |z| ∈ [0, 12]; beyond 12 the half-normal mass is < 1e-32.
	const m, zmax = 600, 12.0
	h := zmax / m
	f := func(z float64) float64 {
		if z == 0 {
			return 0
		}
		return 2 * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) * chi.Survival(c/(z*z))
	}
	sum := f(0) + f(zmax)
	for j := 1; j < m; j++ {
		w := 2.0
		if j%2 == 1 {
			w = 4
		}
		sum += w * f(float64(j)*h)
	}
	return math.Min(1, math.Max(0, sum*h/3))
}

// ModelClip returns the per-sample clip τ at which, in the model and at a
// fixed iterate at Frobenius distance rho from M, the expected number of
// clipped samples per iteration is count: n·ClipTail(τ) = count
// (DERIVATIONS.md §5.3). It depends on public inputs only.
func ModelClip(n, d1, d2, r int, sigmaXi, rho, cu, count float64) float64 {
	target := count / float64(n)
	s := math.Sqrt(sigmaXi*sigmaXi + cu*rho*rho)
	if s == 0 {
		return 0
	}
	// ClipTail decreases in τ; bracket and bisect on log τ.
	lo, hi := 1e-6*s, s*math.Sqrt(cu*float64(r*(d1+d2)))
	for ClipTail(hi, sigmaXi, rho, cu, d1, d2, r) > target {
		lo, hi = hi, 2*hi
	}
	for k := 0; k < 60 && hi/lo > 1+1e-6; k++ {
		mid := math.Sqrt(lo * hi)
		if ClipTail(mid, sigmaXi, rho, cu, d1, d2, r) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// basicSigma is the σ of a Gaussian release at (eps, delta) under the
// paper's classical calibration, or the analytic one where the classical
// formula does not hold (ε > 1). It reports which it used.
func basicSigma(sens, eps, delta float64) (float64, string, error) {
	if eps <= 1 {
		s, err := privacy.ClassicalGaussianSigma(sens, eps, delta)
		return s, "classical", err
	}
	s, err := privacy.AnalyticGaussianSigma(sens, eps, delta)
	return s, "analytic", err
}

// failureProbability is the probability, under the model, that the
// initialisation's sensitivity bounds Δ⁽¹⁾ and Δ⁽²⁾ fail: the event of
// Theorem 1 of the paper, (d1+d2)^−10 + n^−9 (DERIVATIONS.md §4.5). The
// gradient iterations are clipped and their sensitivity holds for any data
// (DERIVATIONS.md §5), so they add nothing.
func failureProbability(n, d1, d2 int) float64 {
	return math.Min(math.Pow(float64(d1+d2), -10)+math.Pow(float64(n), -9), 1)
}
