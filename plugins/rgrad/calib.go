package rgrad

import (
	"math"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Mode selects the variant of the estimator.
type Mode string

// Modes.
const (
	// Standard is DP-init + DP-RGrad with sensitivities calibrated under the
	// Gaussian design (both X_i and y_i private).
	Standard Mode = "standard"
	// Weak is the weak-DP variant: only y_i is private, the design is public.
	Weak Mode = "weak"
	// Strict is the clipped variant with worst-case (ε, δ)-DP.
	Strict Mode = "strict"
	// NonPrivate is spectral initialisation + RGrad without noise.
	NonPrivate Mode = "nonprivate"
)

// Sensitivities are the plug-in sensitivities of the model-calibrated
// modes: Subspace bounds the change of the projectors ÛÛᵀ and V̂V̂ᵀ (spec
// Δ⁽¹⁾), Core that of the r×r core ŨᵀL̂Ṽ (Δ⁽²⁾) and Iter that of one
// noisy gradient step ηP_T(G_l) (Δ_l), all in Frobenius norm when one
// observation is replaced by an independent draw from the model.
type Sensitivities struct {
	Subspace, Core, Iter float64
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

// ModelSensitivities evaluates the plug-in sensitivities. In the explicit
// (default) calibration these are the corrected formulas of the spec §2.4
// and §3.3,
//
//	Δ⁽¹⁾ = c1 √(d1∨d2) √(1/C_l) √r (√(C_u r) σ1 + σ_ξ) ln n / (n σr)
//	Δ⁽²⁾ = c2 √(1/C_l) √r (√(C_u r) σ1 + σ_ξ) ln n / n
//	Δ_l  = c3 η (σ_ξ + √C_u σr) √(C_u r (d1+d2) ln n) / n,
//
// and with Paper set the √(d1∨d2) factor of Theorem 1 is dropped (as
// published). In weak DP, √(C_u r)σ1 + σ_ξ and σ_ξ + √C_u σr become σ_ξ
// (Appendix F of the paper).
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
	return Sensitivities{
		Subspace: in.C1 * dim * il * math.Sqrt(r) * a * ln / (n * in.SigmaR),
		Core:     in.C2 * il * math.Sqrt(r) * a * ln / n,
		Iter:     in.C3 * in.Step * b * math.Sqrt(in.Cu*r*float64(in.D1+in.D2)*ln) / n,
	}
}

// PaperSigmas returns the noise standard deviations of the paper's literal
// calibration for a per-phase budget (ε, δ) (the whole run is (2ε, 2δ)):
// s1 = √(18 ln(3.75/δ)) Δ⁽¹⁾/ε for each subspace and s2 likewise for the
// core (Algorithm 1, with the appendix's 3.75), and
// s_l = √(2 ln(1.25 T/δ)) Δ_l T/ε per iteration (Algorithm 2).
func PaperSigmas(s Sensitivities, eps, delta float64, iters int) (s1, s2, sl float64) {
	c := math.Sqrt(18*math.Log(3.75/delta)) / eps
	t := float64(iters)
	return c * s.Subspace, c * s.Core, math.Sqrt(2*math.Log(1.25*t/delta)) * s.Iter * t / eps
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

// failureProbability is the part of the paper's failure probability
// (Theorems 1 and 3) with explicit constants: the events on which the
// sensitivity bounds and the noise bounds hold. The RIP event (Lemma 1) has
// unspecified constants and is not included.
func failureProbability(n, d1, d2, r int, cu float64) float64 {
	fn, fd := float64(n), float64(d1+d2)
	ln := math.Log(fn)
	b := math.Pow(fd, -10) + math.Pow(fn, -9) + math.Exp(-float64(d1)) + math.Exp(-float64(d2)) + math.Pow(10, -20*float64(r))
	b += (math.Pow(fd, -10) + math.Exp(-fd) + math.Pow(fn, -9) + math.Exp(-10*cu*fd)*math.Pow(fn, -9)) * ln
	return math.Min(b, 1)
}

// checkPositive reports a named parameter that is not a positive finite
// number.
func checkPositive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return sdk.BadRequest("parameter %s = %v must be positive and finite", name, v)
	}
	return nil
}
