package rgrad

import (
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/sdk"
)

// commonOptions are the parameters of every rgrad estimator.
type commonOptions struct {
	sdk.Rank       `doc:"rank r of the estimate (at most min(d1, d2))"`
	sdk.Iterations `default:"0" min:"0" max:"1000" doc:"number T of Riemannian gradient iterations; 0 means ceil(ln n). Each iteration adds noise, but too few iterations stop before converging: on a 50×50 rank-3 matrix-sensing task at ε = 1 (n = 40000) T = 3 gave 2–4× the error of the default, T = 5 about the default's, 2× the default 1.4× more (bench/results/rgrad.md); keep the default or a little less"`
	sdk.Step       `default:"0.8" max:"1" doc:"step size η in (0, 1]"`
	Design         string `param:"design" default:"identity" doc:"known covariance Λ of vec(X_i): identity, ar1:RHO (Λ_jk = RHO^|j−k| over row-major coordinates) or file:PATH (a p×p SPD matrix as text, p = d1·d2)"`
	Retraction     string `param:"retraction" default:"fast" choices:"fast,full" doc:"fast: two thin QRs and a 2r×2r SVD; full: SVD of the projected d1×d2 matrix (reference)"`
}

// Check refuses a rank above min(d1, d2), fewer than two samples and a
// malformed design before any budget is touched (a design file is read in
// Fit, still before any spend).
func (o *commonOptions) Check(s sdk.Shape) error {
	if o.Rank.Value > min(s.D1, s.D2) {
		return fmt.Errorf("rank %d exceeds min(d1, d2) = %d", o.Rank.Value, min(s.D1, s.D2))
	}
	if s.N < 2 {
		return fmt.Errorf("need at least 2 samples, got %d", s.N)
	}
	if !strings.HasPrefix(o.Design, "file:") {
		if _, err := ParseDesign(o.Design, s.D1*s.D2, backend.Gonum{}); err != nil {
			return err
		}
	}
	return nil
}

// Footprint estimates the peak memory of a fit beyond the data: per-worker
// d1·d2 accumulators, about twenty d1×d2 temporaries of the steps and the
// retraction, and the d1×d1 and d2×d2 projectors of the private
// initialisation with their eigendecompositions.
func (o *commonOptions) Footprint(s sdk.Shape) int64 {
	p := int64(s.D1) * int64(s.D2)
	workers := int64(runtime.GOMAXPROCS(0))
	sq := int64(s.D1)*int64(s.D1) + int64(s.D2)*int64(s.D2)
	return 8 * ((workers+20)*p + 3*sq)
}

// modelOptions are the parameters of rgrad-dp and rgrad-weak.
type modelOptions struct {
	commonOptions
	Sigma1          *float64 `param:"sigma1" gt:"0" doc:"public value of the largest singular value σ1 of M, chosen without looking at the data; unset (the default): estimated privately from tune_share (DERIVATIONS.md §10)"`
	SigmaR          *float64 `param:"sigmar" gt:"0" doc:"public value of the r-th singular value σr of M, chosen without looking at the data; unset (the default): estimated privately from tune_share (DERIVATIONS.md §10)"`
	SigmaXi         *float64 `param:"sigma_xi" min:"0" doc:"public value of the response-noise standard deviation σ_ξ, chosen without looking at the data; unset (the default): estimated privately from tune_share (DERIVATIONS.md §10)"`
	TuneShare       float64  `param:"tune_share" default:"0.3" min:"0.01" max:"0.8" doc:"when sigma1, sigmar or sigma_xi is unset: the share of the budget spent estimating them (0.3: the best of 0.1, 0.2, 0.3 measured in bench/results/rgrad.md) (worst-case DP steps: a private median of |y_i| and the clipped moment matrix, DERIVATIONS.md §10); the estimates are released"`
	sdk.Sensitivity `default:"explicit" choices:"explicit,paper" doc:"how the initialisation's sensitivities are obtained: explicit (corrected plug-ins, with the √(d1∨d2) factor the paper's Δ⁽¹⁾ misses) or paper (the paper's literal formulas); both hold only under the model, and the iterations' clip follows the same choice (DERIVATIONS.md §2.4, §2.5)"`
	sdk.Noise       `default:"exact" doc:"how each Gaussian release is calibrated: exact (the default: all 3 + T releases composed exactly as Gaussian DP, μ² split over them, σ from the grant's exact (ε, δ) curve; the least noise any valid accounting allows), zcdp (the same split in zCDP, about 7 % more noise), classical (each release at its own (ε, δ) share by the textbook formula, per-step ε ≤ 1, basic composition: the paper's) or analytic (the same with the analytic Gaussian mechanism)"`
	C1              *float64    `param:"c1" gt:"0" doc:"constant of the subspace sensitivity Δ⁽¹⁾ (default 1)"`
	C2              *float64    `param:"c2" gt:"0" doc:"constant of the core sensitivity Δ⁽²⁾ (default 2 with sensitivity=explicit, 1 with paper)"`
	C3              *float64    `param:"c3" gt:"0" doc:"multiplier of the per-sample gradient clip τ chosen from the model (default 1: clipping rare near M); the iteration sensitivity is Δ_l = 2ητ/n. Any value keeps the guarantee; under DP a smaller clip is often far more accurate (c3 = 0.25 gave 1.7–3.4× lower error than c3 = 1 at n = 16000, ε ≤ 8), a too small one stalls a far start (DERIVATIONS.md §5.3)"`
	InitShare       float64     `param:"init_share" default:"0.5" min:"0.001" max:"0.999" doc:"share of the budget for the initialisation (split equally over Ũ, Ṽ, Σ̃); the rest is split equally over the T iterations"`
	EigSelect       string      `param:"eig_select" default:"abs" choices:"abs,algebraic" doc:"how the private subspaces pick r eigenvectors of the noisy projector: largest |λ| (the paper's SVD_r) or largest λ"`
	_               sdk.Renamed `param:"calibration" renamed:"sensitivity,noise"`
	_               sdk.Renamed `param:"gaussian" renamed:"noise"`
}

// Check refuses a given σ1 below a given σr besides the common checks.
func (o *modelOptions) Check(s sdk.Shape) error {
	if err := o.commonOptions.Check(s); err != nil {
		return err
	}
	if o.Sigma1 != nil && o.SigmaR != nil && *o.Sigma1 < *o.SigmaR {
		return fmt.Errorf("sigma1 = %v must be at least sigmar = %v", *o.Sigma1, *o.SigmaR)
	}
	return nil
}

// tune reports whether some model parameter is left to the private
// estimate.
func (o *modelOptions) tune() bool { return o.Sigma1 == nil || o.SigmaR == nil || o.SigmaXi == nil }

// calibration returns the sensitivity and noise choices.
func (o *modelOptions) calibration() (sensitivity, noise string) {
	return o.Sensitivity.Value, o.Noise.Value
}

// constants returns c1, c2, c3: the options, or the defaults 1, 2 (1 with
// sensitivity=paper) and 1.
func (o *modelOptions) constants() (c1, c2, c3 float64) {
	sens, _ := o.calibration()
	c1, c2, c3 = 1, 2, 1
	if sens == sdk.SensitivityPaper {
		c2 = 1
	}
	for _, c := range []struct {
		v   *float64
		dst *float64
	}{{o.C1, &c1}, {o.C2, &c2}, {o.C3, &c3}} {
		if c.v != nil {
			*c.dst = *c.v
		}
	}
	return c1, c2, c3
}

// modelInputs are the public inputs of the model-calibrated sensitivities
// of mode (Standard or Weak) on n samples of d1×d2 with the design; σ1, σr
// and σ_ξ must be set (given, or resolved by the private estimate).
func (o *modelOptions) modelInputs(mode Mode, n, d1, d2 int, design Design) ModelInputs {
	sens, _ := o.calibration()
	c1, c2, c3 := o.constants()
	return ModelInputs{N: n, D1: d1, D2: d2, Rank: o.Rank.Value, Sigma1: *o.Sigma1, SigmaR: *o.SigmaR,
		SigmaXi: *o.SigmaXi, Step: o.Step.Value, Cl: design.Cl, Cu: design.Cu, C1: c1, C2: c2, C3: c3,
		Weak: mode == Weak, Paper: sens == sdk.SensitivityPaper}
}

// weakOptions are rgrad-weak's parameters: those of rgrad-dp, with a given
// σ_ξ > 0.
type weakOptions struct {
	modelOptions
}

// Check refuses a given σ_ξ = 0: weak DP's sensitivities are proportional
// to it.
func (o *weakOptions) Check(s sdk.Shape) error {
	if err := o.modelOptions.Check(s); err != nil {
		return err
	}
	if o.SigmaXi != nil && *o.SigmaXi == 0 {
		return fmt.Errorf("weak DP needs sigma_xi > 0: its sensitivities are proportional to the response noise")
	}
	return nil
}

// strictOptions are rgrad-strict's parameters.
type strictOptions struct {
	commonOptions
	ClipX      *float64 `param:"clip_x" gt:"0" doc:"public bound on ‖X_i‖_F for the initialisation (default sqrt(tr Λ) + 3·sqrt(C_u): under the Gaussian design about four standard deviations of ‖X_i‖_F above its typical value, so rarely binding)"`
	ClipY      *float64 `param:"clip_y" gt:"0" doc:"public bound on |y_i| for the initialisation, chosen without looking at the data; unset (the default): 2·ŝ_y, with ŝ_y the response scale from a private median of |y_i| bought with tune_share (DERIVATIONS.md §10)"`
	Tau        *float64 `param:"clip" gt:"0" doc:"public bound τ on each per-sample projected gradient ‖(<X_i,M_l>−y_i)·P_T(X_i)‖_F, chosen without looking at the data; a good value is about (σ_ξ + σr)·sqrt(r(d1+d2)·ln n)/2 (DERIVATIONS.md §6). Unset (the default): that value with σr and σ_ξ estimated from the released initialisation and the private median of |y_i| (DERIVATIONS.md §10)"`
	TuneShare  float64  `param:"tune_share" default:"0.05" min:"0.01" max:"0.8" doc:"when clip_y or clip is unset: the share of the budget spent on the private median of |y_i| (one exponential-mechanism step)"`
	InitShare  float64  `param:"init_share" default:"0.5" min:"0.001" max:"0.999" doc:"share of the budget (μ² with noise=exact, ρ with noise=zcdp) for the initialisation; the rest is split equally over the T iterations"`
	sdk.Noise  `default:"exact" choices:"exact,zcdp" doc:"how the Gaussian releases are calibrated: exact (the default: composed exactly as Gaussian DP, the least noise any valid accounting allows) or zcdp (composed in zCDP, about 7 % more noise at (1, 1e-6))"`
	InitShrink bool `param:"init_shrink" default:"true" doc:"soft-threshold the singular values of the noisy L̂ by the noise's operator-norm scale σ(√d1+√d2) (post-processing)"`
}

// tune reports whether clip_y or clip is left to the private estimate.
func (o *strictOptions) tune() bool { return o.ClipY == nil || o.Tau == nil }

// clipX returns clip_x: the option, or defaultClipX.
func (o *strictOptions) clipX(design Design, d1, d2 int) float64 {
	if o.ClipX != nil {
		return *o.ClipX
	}
	return defaultClipX(design, d1, d2)
}

// defaultClipX is sqrt(tr Λ) + 3·sqrt(C_u) for the design on d1×d2
// samples: about four standard deviations of ‖X_i‖_F above its typical
// value under the Gaussian design.
func defaultClipX(design Design, d1, d2 int) float64 {
	tr := float64(d1 * d2)
	if design.Kind == "file" {
		tr = 0
		for i := 0; i < design.Lambda.SymmetricDim(); i++ {
			tr += design.Lambda.At(i, i)
		}
	}
	return math.Sqrt(tr) + 3*math.Sqrt(design.Cu)
}
