package orbit

import (
	"github.com/dplr/dplr/engine/sdk"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
)

// base holds the parameters every orbit estimator takes, with the same
// names, meanings and defaults as the pca plugin's: rank (required), clip
// (default auto: a private median of the row norms), evaluate (opt-in).
type base struct {
	sdk.Rank `max:"100000" doc:"output rank k (number of non-zero target eigenvalues); k ≤ d"`
	rowclip.Options
	sdk.Evaluate `doc:"also report captured_variance_ratio (the share of the best rank-k variance of the raw rows, centred at their mean, that U captures: scikit-learn's convention), captured_variance_ratio_uncentred, and the orbit objective figures utility, optimum, loss, relative_utility_uncentred = ⟨A, H⟩/OPT and frobenius_error_sq on the clipped uncentred A. EVALUATION ONLY: computed from the raw data, NOT private"`
}

// checkRank validates k against the public dimension d and parses clip.
func (b *base) checkRank(s sdk.Shape) error {
	if err := b.Options.Parse(); err != nil {
		return err
	}
	if s.P > 0 {
		return checkRank(b.Rank.Value, s.P)
	}
	return nil
}

// spectrum is the target spectrum Λ of an orbit estimator.
type spectrum struct {
	Spectrum string `param:"spectrum" default:"projection" doc:"public target spectrum λ_1 ≥ … ≥ λ_k ≥ 0: projection (all ones: rank-k PCA) or a comma-separated list of k non-negative numbers in decreasing order with λ_1 > 0"`

	lambda []float64
}

// check checks the base parameters (checkRank) and reads the spectrum for
// their rank, unless it is the estimator's alternative named special (""
// for none).
func (sp *spectrum) check(b *base, s sdk.Shape, special string) (err error) {
	if err := b.checkRank(s); err != nil {
		return err
	}
	if special == "" || sp.Spectrum != special {
		sp.lambda, err = parseSpectrum(sp.Spectrum, b.Rank.Value)
	}
	return err
}

// pureNoise is the noise option of the pure estimators (orbit-em,
// orbit-rank-k, orbit-deflation): how ε is split among their pure steps
// (privacy.NewPurePlan).
type pureNoise struct {
	sdk.Noise `choices:"exact,pure,zcdp" default:"exact" doc:"how ε is split among the pure steps: exact (the default): under an (ε, δ) grant, each step's share of the pure split scaled up by the largest common factor the tightest valid accounting certifies (zCDP, where an exponential-mechanism draw costs ε²/8, or the privacy loss distribution), never below the pure split (a single draw gets about 1.002×, 8 draws at (1, 1e-6) 1.31×); under a pure grant, the pure split. pure: basic composition (δ unused). zcdp: the pure split's proportions scaled to the grant's zCDP budget (comparison)"`
}

// emSampling holds the exponential-mechanism parameters of orbit-em and
// orbit-rank-k.
type emSampling struct {
	sdk.Sensitivity `choices:"worst-case,paper,add-remove" default:"worst-case" doc:"inverse temperature β of the exponential mechanism (DERIVATIONS.md §4.1): worst-case = ε/(2λ_1) (standard mechanism, replace-one neighbours); paper = ε/(4λ_1) (Algorithm 1 as printed, which reserves half the budget for sampler error); add-remove = ε/λ_1 (valid only for add/remove-one neighbours)"`
	Sampler         string `param:"sampler" default:"auto" choices:"auto,gibbs" doc:"auto: exact rejection sampler for k = 1, Givens–Gibbs for k > 1; gibbs: Givens–Gibbs always (a cross-check)"`
	sdk.Iterations  `default:"100" max:"1000000" doc:"Givens–Gibbs sweeps for k > 1 (fixed in advance, data-independent; every sweep updates each pair of columns with distinct target eigenvalues once)"`
	pureNoise

	_ sdk.Renamed `param:"calibration" renamed:"sensitivity"`

	cal string // resolved calibration: CalibExact, CalibPaper or CalibAddRemove
}

// sensitivityCalib maps sensitivity= onto the calibration names.
var sensitivityCalib = map[string]string{sdk.SensitivityWorstCase: CalibExact, sdk.SensitivityPaper: CalibPaper, CalibAddRemove: CalibAddRemove}

// resolve maps sensitivity= onto the calibration names.
func (e *emSampling) resolve() { e.cal = sensitivityCalib[e.Sensitivity.Value] }

// emOptions are orbit-em's parameters.
type emOptions struct {
	base
	spectrum
	emSampling
}

// Check implements sdk.Checker: rank against d, the spectrum, the
// calibration.
func (o *emOptions) Check(s sdk.Shape) error {
	o.resolve()
	return o.spectrum.check(&o.base, s, "")
}

// rankKOptions are orbit-rank-k's parameters.
type rankKOptions struct {
	base
	emSampling
}

// Check implements sdk.Checker.
func (o *rankKOptions) Check(s sdk.Shape) error {
	o.resolve()
	return o.checkRank(s)
}

// deflationOptions are orbit-deflation's parameters.
type deflationOptions struct {
	base
	spectrum
	pureNoise
}

// Check implements sdk.Checker.
func (o *deflationOptions) Check(s sdk.Shape) error { return o.spectrum.check(&o.base, s, "") }

// gaussOptions are orbit-gauss's parameters.
type gaussOptions struct {
	base
	spectrum  `doc:"public target spectrum λ_1 ≥ … ≥ λ_k ≥ 0: projection (all ones: rank-k PCA) or a comma-separated list of k non-negative numbers in decreasing order with λ_1 > 0; or private: the top-k eigenvalues of A + E clamped at 0"`
	sdk.Noise `choices:"exact,zcdp,classical,analytic" default:"exact" doc:"σ of E: exact (the default) = √2/μ with μ from the grant's exact Gaussian-DP (ε, δ) curve when the clip is a number (about 7 % less noise than zcdp at (1, 1e-6)); with clip=auto the pure quantile step is composed in by the privacy loss distribution (the exponential mechanism as bounded range), which saves a little less; zcdp = √2/sqrt(2ρ) with ρ the grant's zCDP budget; classical = √2·sqrt(2 ln(1.25/δ))/ε (ε ≤ 1); analytic: Balle–Wang"`

	_ sdk.Renamed `param:"calibration" renamed:"noise"`

	private bool
}

// Check implements sdk.Checker.
func (o *gaussOptions) Check(s sdk.Shape) error {
	o.private = o.Spectrum == "private"
	return o.spectrum.check(&o.base, s, "private")
}

// nonPrivateOptions are orbit-nonprivate's parameters.
type nonPrivateOptions struct {
	base
	spectrum `doc:"public target spectrum λ_1 ≥ … ≥ λ_k ≥ 0: projection (all ones: rank-k PCA) or a comma-separated list of k non-negative numbers in decreasing order with λ_1 > 0; or true: A's own top-k eigenvalues"`
}

// Check implements sdk.Checker.
func (o *nonPrivateOptions) Check(s sdk.Shape) error { return o.spectrum.check(&o.base, s, "true") }
