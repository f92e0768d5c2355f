package fedrep

import (
	"math"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The options structs of the plugin's estimators. The SDK derives each
// catalogue from the tags, validates and binds every request, and calls
// the Check hooks with the data's public shape before any budget is
// touched. Under user-level neighbours only the number of users and the
// dimension are public: the Check hooks never read the shape's row count
// (DERIVATIONS.md §1).

// splitOptions are the per-user split and head parameters every estimator
// of the plugin shares.
type splitOptions struct {
	LocalFraction float64 `param:"local_fraction" default:"0" min:"0" max:"0.9" doc:"fraction of each user's (non-hold-out) rows kept out of the private training (S¹, the last rows): used for the user's own head (head_data=local) and to score candidates in a private selection. 0 (default) = every row trains (S⁰ = all, the better choice with few rows per user); 0.5 = the paper's halves"`
	Holdout       float64 `param:"holdout" default:"0" min:"0" max:"0.9" doc:"fraction of each user's rows (the very last ones) held out to evaluate training curves and test errors; those outputs are computed from raw data (release class evaluation)"`
	HeadData      string  `param:"head_data" default:"all" choices:"local,all" doc:"rows each user fits its final head v_i on: all (default) = S⁰ ∪ S¹ (all of the user's own non-hold-out rows; the head is per-user and never published, so the guarantee on U is unchanged); local = its held-back half S¹ only (the paper, needed for its analysis)"`
	OutputV       bool    `param:"output_v" default:"true" doc:"return the users' heads v_i (n×k) fitted on their own rows (see head_data), one row per user in increasing user-id order (non-integer ids: order of first appearance); each row is meant only for its user (release class per-user)"`
}

// ridgeOptions are the heads' ridges of the squared-loss estimators
// (fedrep-classify's logistic heads carry their own, kernel.LogisticRidge).
type ridgeOptions struct {
	HeadRidge  float64 `param:"head_ridge" default:"0.1" min:"0" max:"1e6" doc:"ridge of each user's final head relative to the user's rows projected on U: λ = head_ridge·tr(AᵀA)/k. It removes the least-squares heads' error peak where the rank is near the user's row count; each user computes it from its own rows and the released U, so the guarantee on U is unchanged (DERIVATIONS.md §3.7). 0 = plain least squares (the paper's)"`
	RoundRidge float64 `param:"round_ridge" default:"0.001" min:"0" max:"1e6" doc:"the same relative ridge for the heads fitted inside the rounds. The paper's least squares (0) interpolates a user with at most k rows exactly, so its gradient is zero and the rounds add noise only; a small ridge keeps their signal and hardly moves the heads of users with many rows (DERIVATIONS.md §3.7). The per-user clip bounds the sensitivity whatever it is"`
}

// headAll reports whether the heads are fitted on S⁰ ∪ S¹.
func (s *splitOptions) headAll() bool { return s.HeadData == "all" }

// roundOptions are the parameters of the FedRep rounds shared by
// fedrep-private, fedrep-nonprivate and fedrep-classify (the step, whose
// default differs, is in each estimator's options).
type roundOptions struct {
	sdk.Rank       `default:"0" min:"0" doc:"rank k of the shared representation U (d×k); k ≤ d. 0 (the default) = min(9, d) (and at most batch in theory mode): the best rank measured, or within 0.003 of it, on every image users task with 2, 6 and 20 rows per user once the heads carry a ridge (bench/results/fedrep-defaults.md §6); give the rank when the truth is known to be low-rank"`
	sdk.Iterations `default:"10" max:"1e5" doc:"number of rounds T (10: on the synthetic shared-representation task T = 5 left the error growing with ε and T = 20 gained nothing, DERIVATIONS.md §12)"`
	Mode           string  `param:"mode" default:"experiment" choices:"experiment,theory" doc:"experiment: each round fits v and takes the gradient on the whole training half (as the paper's experiment code); theory: fresh disjoint batches B, B′ of size batch every round (the paper's Algorithm 1); a user whose training half holds fewer than 2·batch·(t+1) rows sits out round t (DERIVATIONS.md §3.3)"`
	StepGuard      bool    `param:"step_guard" default:"true" doc:"guards of the step (DERIVATIONS.md §3.6): halve η when a released step opposes the previous one, and shorten a step longer than max_move·√k; false = the plain update (the paper's)"`
	MaxMove        float64 `param:"max_move" default:"1" gt:"0" doc:"guard against a diverging step: when a round's step would move U by more than max_move·√k in Frobenius norm (√k = ‖U‖_F), i.e. η‖q̂‖_F > max_move·√k, the step is scaled down to that length and the round is reported (relative_step, notes); post-processing of the released mean"`
	Batch          int     `param:"batch" default:"0" min:"0" doc:"theory mode: the public batch size b (b ≥ rank), required with mode=theory; choose it from what every user is expected to hold (2·b·iterations training rows), never from the data"`
}

// defaultRank is the rank of rank=0, at most the working dimension: the
// best measured, or within 0.003 of it, on every image users task
// (bench/results/fedrep-defaults.md §4–§6).
const defaultRank = 9

// check sets rank 0 to def (at most d, when d is known) and refuses, from
// public quantities only (the rank, the working dimension d and the
// declared batch), the requests FedRep cannot run.
func (o *roundOptions) check(d, def int) error {
	if o.Rank.Value == 0 {
		o.Rank.Value = def
		if d > 0 {
			o.Rank.Value = min(def, d)
		}
		if o.Mode == "theory" && o.Batch > 0 {
			o.Rank.Value = min(o.Rank.Value, o.Batch) // a batch's least squares needs b ≥ k
		}
	}
	if o.Rank.Value > d {
		return sdk.BadRequest("rank %d exceeds the working dimension %d", o.Rank.Value, d)
	}
	if o.Mode != "theory" {
		return nil
	}
	// The batch is a public parameter: it is never derived from the users'
	// row counts, which are private under user-level neighbours.
	if o.Batch == 0 {
		return sdk.BadRequest("mode=theory needs an explicit batch (the public size b of each of the two fresh batches per round, b ≥ rank %d); it is never derived from the data", o.Rank.Value)
	}
	if o.Batch < o.Rank.Value {
		return sdk.BadRequest("mode=theory: batch %d < rank %d (the local least squares would be singular)", o.Batch, o.Rank.Value)
	}
	return nil
}

// planNoise is the privacy package's calibration of a plan for the noise
// option: exact and zcdp as named; paper keeps zCDP, because its fixed
// per-step costs are set in ρ (and an exact plan refuses fixed shares).
func planNoise(noise string) string {
	if noise == privacy.NoiseExact {
		return privacy.NoiseExact
	}
	return privacy.NoiseZCDP
}

// noiseNote says how a run's Gaussian steps were calibrated and which
// accountant produced the guarantee's figures (its accounting field).
func noiseNote(noise string) string {
	switch noise {
	case privacy.NoiseExact:
		return "noise=exact: the plan splits μ² of Gaussian DP (Dong, Roth & Su 2022) over the Gaussian steps and takes σ from the grant's exact (ε, δ) curve; a plan with a non-Gaussian step (the selection's exponential mechanism) scales the split by the largest factor its privacy loss distribution allows. The ρ figures below are the split in zCDP units (ρ = μ²/2 per step); the guarantee's figures come from the accountant named in its accounting field (gdp: exact Gaussian composition, pld: privacy loss distribution)"
	case "paper":
		return "noise=paper: the paper's σ̂, charged at its true zCDP cost; the guarantee's figures come from the tightest valid accounting of the same steps (its accounting field)"
	}
	return "noise=zcdp: ρ split over the steps, composed in zCDP; the guarantee's figures come from the tightest valid accounting of the same steps (its accounting field)"
}

// autoOptions are the parameters of the private defaults of fedrep-private
// and fedrep-classify: a clip that is not given is chosen privately (a
// private quantile of the users' norms, DERIVATIONS.md §12) from a declared
// share of the budget, and a step that is not given is matched to the clip.
type autoOptions struct {
	Step         *float64 `param:"step" gt:"0" max:"1e6" doc:"step size η of the U update (default: step_scale/ψ, matched to the clip ψ)"`
	StepScale    float64  `param:"step_scale" default:"1" gt:"0" max:"1e6" doc:"η·ψ when step is not given: the largest move of U per round that the mean clipped gradient can cause (1 = at most the size of one column of U)"`
	Clip         *float64 `param:"clip" gt:"0" doc:"ψ: Frobenius bound on each user's gradient (default: chosen privately as the clip_quantile quantile of the users' gradient norms at the start, by the exponential mechanism paid from tune_share; DERIVATIONS.md §12)"`
	InitClip     *float64 `param:"init_clip" gt:"0" doc:"ψ_init: Frobenius bound on each user's U-statistic Z_i (default: chosen privately as the clip_quantile quantile of the users' ‖Z_i‖_F, paid from tune_share; DERIVATIONS.md §12)"`
	ClipQuantile float64  `param:"clip_quantile" default:"0.5" gt:"0" lt:"1" doc:"quantile of the users' norms a privately chosen clip sits at (0.5: half the users are clipped)"`
	TuneShare    *float64 `param:"tune_share" min:"0.001" max:"0.5" doc:"fraction of the budget spent on the private clip quantiles (split evenly between them; nothing is spent when both clips are given). Default: 0.04, raised up to 0.2 when the users are too few for each quantile to find its value at 0.04 (a function of the number of users, the quantiles and the grant only; DERIVATIONS.md §12)"`
}

// fill copies the auto options into the algorithm's configuration.
func (a *autoOptions) fill(c *fedrepConfig) {
	if a.Clip != nil {
		c.clip = *a.Clip
	}
	if a.InitClip != nil {
		c.initClip = *a.InitClip
	}
	if a.Step != nil {
		c.step = *a.Step
	}
	c.stepScale, c.clipQ, c.tuneShare = a.StepScale, a.ClipQuantile, a.TuneShare
}

// privateFedRepOptions are the parameters of fedrep-private.
type privateFedRepOptions struct {
	roundOptions
	autoOptions
	Init      string  `param:"init" default:"private" choices:"private,random" doc:"private: the paper's Algorithm 2 (noisy average of clipped U-statistics, top-k eigenvectors; DERIVATIONS.md §2), costs init_share of the budget; random: a data-independent random orthonormal U (free, but FedRep then converges slowly)"`
	InitShare float64 `param:"init_share" default:"0.5" min:"0.001" max:"0.999" doc:"fraction of the budget (after tune_share) spent on the initialization (noise=exact or zcdp)"`
	sdk.Noise `choices:"exact,zcdp,paper" default:"exact" doc:"exact (the default): the budget split tune_share, then init_share / (1 − init_share), the rounds' share evenly over T, in Gaussian DP (μ² split, σ from the grant's exact (ε, δ) curve; with a private selection, whose exponential mechanism is not Gaussian, the split is scaled by the privacy loss distribution): the least noise any valid accounting allows; zcdp: the same split in replace-one zCDP (about 7 % more noise at (1, 1e-6)); paper: the rounds use the paper experiment's σ̂ = ψ√(48T ln(1.25/δ))/(nε) (needs an (ε, δ) grant; it over-noises, and its true zCDP cost under the worst-case sensitivity 2ψ/n is what is charged), the initialization gets the rest; the paper's ψ = 10 and ψ_init = 50 are then the defaults (DERIVATIONS.md §3.4)"`
	selectOptions
	splitOptions
	ridgeOptions

	_ sdk.Renamed `param:"calibration" renamed:"noise"`
}

// Check implements sdk.Checker.
func (o *privateFedRepOptions) Check(s sdk.Shape) error {
	if err := o.roundOptions.check(s.P, defaultRank); err != nil {
		return err
	}
	return o.selectOptions.check(o.Clip != nil, o.Noise.Value)
}

// config is the algorithm's view of the options.
func (o *privateFedRepOptions) config() *fedrepConfig {
	c := &fedrepConfig{rounds: &o.roundOptions, splitOpts: &o.splitOptions, ridges: &o.ridgeOptions,
		init: o.Init, initShare: o.InitShare, noise: o.Noise.Value}
	if o.Noise.Value == "paper" {
		c.clip, c.initClip = 10, 50 // the paper experiment's values
	}
	o.autoOptions.fill(c)
	return c
}

// nonPrivateFedRepOptions are the parameters of fedrep-nonprivate.
type nonPrivateFedRepOptions struct {
	roundOptions
	sdk.Step `default:"2.5" max:"1e6" doc:"step size η of the U update"`
	Init     string `param:"init" default:"ustat" choices:"ustat,random" doc:"ustat: top-k eigenvectors of the average U-statistic (the paper's Algorithm 2 without clipping or noise); random: a random orthonormal U"`
	splitOptions
	ridgeOptions
}

// Check implements sdk.Checker.
func (o *nonPrivateFedRepOptions) Check(s sdk.Shape) error {
	return o.roundOptions.check(s.P, defaultRank)
}

// config is the algorithm's view of the options.
func (o *nonPrivateFedRepOptions) config() *fedrepConfig {
	return &fedrepConfig{rounds: &o.roundOptions, splitOpts: &o.splitOptions, ridges: &o.ridgeOptions, step: o.Step.Value, clip: math.Inf(1), initClip: math.Inf(1), init: o.Init}
}

// classifyOptions are the parameters of fedrep-classify.
type classifyOptions struct {
	roundOptions
	autoOptions
	Init      string  `param:"init" default:"private" choices:"private,random" doc:"private: the private U-statistic start on the projected features (DERIVATIONS.md §2), costs init_share of the budget; random: a data-independent random orthonormal U"`
	InitShare float64 `param:"init_share" default:"0.5" min:"0.001" max:"0.999" doc:"fraction of the budget (after tune_share) spent on the initialization"`
	sdk.Noise `choices:"exact,zcdp" default:"exact" doc:"exact (the default): the budget split tune_share, then init_share / (1 − init_share), in Gaussian DP (μ² split, σ from the grant's exact (ε, δ) curve; with a private selection the split is scaled by the privacy loss distribution); zcdp: the same split in replace-one zCDP (about 7 % more noise at (1, 1e-6))"`
	KPrime    int `param:"kprime" default:"0" min:"0" doc:"k′: dimension of the public Johnson–Lindenstrauss projection M (entries ±1/√k′, data independent); 0 = no projection"`
	selectOptions
	splitOptions

	_ sdk.Renamed `param:"calibration" renamed:"noise"`
}

// Check implements sdk.Checker.
func (o *classifyOptions) Check(s sdk.Shape) error {
	d := s.P
	if o.KPrime > 0 && o.KPrime < d {
		d = o.KPrime // the projected dimension k′
	}
	if err := o.roundOptions.check(d, defaultRank); err != nil {
		return err
	}
	return o.selectOptions.check(o.Clip != nil, o.Noise.Value)
}

// config is the algorithm's view of the options.
func (o *classifyOptions) config() *fedrepConfig {
	c := &fedrepConfig{rounds: &o.roundOptions, splitOpts: &o.splitOptions, init: o.Init, initShare: o.InitShare, noise: o.Noise.Value}
	o.autoOptions.fill(c)
	return c
}

// altminOptions are the parameters of fedrep-privaltmin.
type altminOptions struct {
	sdk.Rank       `default:"2" doc:"rank k of the shared representation U (d×k); k ≤ d and d·k ≤ 4096 (the dk×dk statistics are the scaling wall)"`
	sdk.Iterations `default:"5" max:"1e4" doc:"number of U-steps T"`
	ClipW          float64  `param:"clip_w" default:"1e-4" min:"1e-300" doc:"c_W: ℓ2 bound on each W = vec(x vᵀ) (public); the paper's experiment uses 1e-4 for both clips, which normalizes every sample"`
	ClipY          float64  `param:"clip_y" default:"1e-4" min:"1e-300" doc:"c_y: bound on |y| (public)"`
	Portion        int      `param:"portion" default:"5" min:"1" doc:"at most this many training rows per user enter the U-step statistics (public: the sensitivity scales with it)"`
	Groups         string   `param:"groups" default:"disjoint" choices:"disjoint,all" doc:"disjoint: T disjoint random groups of about n/T users, one per iteration (Jain et al.; parallel composition, each iteration gets the whole loop budget); all: every user in every iteration (the public experiment code; sequential composition over T)"`
	Init           string   `param:"init" default:"private" choices:"private,random" doc:"private: the same private U-statistic start as fedrep-private (DERIVATIONS.md §2); random: data-independent"`
	InitClip       *float64 `param:"init_clip" gt:"0" doc:"ψ_init: Frobenius bound on each user's U-statistic (default: chosen privately as the clip_quantile quantile of the users' ‖Z_i‖_F, paid from tune_share, DERIVATIONS.md §12; noise=paper: 50)"`
	ClipQuantile   float64  `param:"clip_quantile" default:"0.5" gt:"0" lt:"1" doc:"quantile of the users' U-statistic norms a privately chosen init_clip sits at"`
	TuneShare      *float64 `param:"tune_share" min:"0.001" max:"0.5" doc:"fraction of the budget spent on the private init_clip quantile (nothing when init_clip is given or init=random). Default: 0.04, raised up to 0.2 when the users are too few for the quantile to find its value at 0.04 (DERIVATIONS.md §12)"`
	InitShare      float64  `param:"init_share" default:"0.2" min:"0.001" max:"0.999" doc:"fraction of the budget spent on the initialization"`
	AShare         float64  `param:"a_share" default:"0.5" min:"0.01" max:"0.99" doc:"fraction of the loop's budget spent on the dk×dk statistic A (the rest goes to b)"`
	sdk.Noise      `choices:"exact,zcdp,paper" default:"exact" doc:"exact (the default): the budget split init_share / (1 − init_share) and a_share between A and b in Gaussian DP (μ² split, σ from the grant's exact (ε, δ) curve), the least noise any valid accounting allows; zcdp: the same split in replace-one zCDP (about 7 % more noise at (1, 1e-6)); paper: Jain et al.'s noise multiplier √(8 ln(1/δ))/ε on both statistics (σ = sensitivity × multiplier; needs an (ε, δ) grant with ε ≤ ln(1/δ), and with groups=all it is multiplied by √T); their true zCDP cost is what is charged and the initialization gets the rest (DERIVATIONS.md §5.4)"`
	Ridge          float64 `param:"ridge" default:"1" min:"0" doc:"ridge added to the noisy A before the solve, in units of c_W²·portion per user of the group (public quantities only; post-processing; DERIVATIONS.md §5.5). 1 matches the public experiment code (ridge 1e-8 on its normalized statistics with c = 1e-4); it dominates the noisy A, so the U-step then behaves like U ∝ reshape(b). 0 = plain solve, which the noise ruins at n = 20000"`
	splitOptions
	ridgeOptions

	_ sdk.Renamed `param:"calibration" renamed:"noise"`
}

// initClip returns ψ_init: the given value, the paper's 50 with
// noise=paper, 0 (chosen privately) otherwise.
func (o *altminOptions) initClip() float64 {
	switch {
	case o.InitClip != nil:
		return *o.InitClip
	case o.Noise.Value == "paper":
		return 50
	}
	return 0
}

// autoInitClip reports whether ψ_init is chosen privately.
func (o *altminOptions) autoInitClip() bool { return o.Init == "private" && o.initClip() == 0 }

// disjoint reports whether the users are split into disjoint groups.
func (o *altminOptions) disjoint() bool { return o.Groups == "disjoint" }

// sensitivities returns Δ_A = √2·portion·c_W² and Δ_b = 2·portion·c_W·c_y
// (DERIVATIONS.md §5.1).
func (o *altminOptions) sensitivities() (sensA, sensB float64) {
	return math.Sqrt2 * float64(o.Portion) * o.ClipW * o.ClipW, 2 * float64(o.Portion) * o.ClipW * o.ClipY
}

// Check implements sdk.Checker: it refuses, from public quantities only,
// the requests Priv-AltMin cannot run.
func (o *altminOptions) Check(s sdk.Shape) error {
	d, k := s.P, o.Rank.Value
	if k > d {
		return sdk.BadRequest("rank %d exceeds the feature dimension %d", k, d)
	}
	if d*k > 4096 {
		return sdk.BadRequest("d·k = %d exceeds 4096: the dk×dk statistics would need %.0f MB and an O((dk)³) solve per iteration (use fedrep-private)", d*k, 8*float64(d*k)*float64(d*k)/1e6)
	}
	if o.disjoint() && s.Users < o.Iterations.Value {
		return sdk.BadRequest("disjoint groups: %d users cannot form %d non-empty groups", s.Users, o.Iterations.Value)
	}
	sensA, sensB := o.sensitivities()
	if math.IsInf(sensA, 0) || math.IsInf(sensB, 0) || sensA == 0 || sensB == 0 {
		return sdk.BadRequest("clip_w = %g, clip_y = %g give a sensitivity that is zero or not finite", o.ClipW, o.ClipY)
	}
	return nil
}

// exactOptions are the parameters of fedrep-classify-exact.
type exactOptions struct {
	KPrime    int     `param:"kprime" default:"2" min:"0" doc:"k′: dimension of the public Johnson–Lindenstrauss projection M (entries ±1/√k′, data independent); 0 = no projection (k′ = d); at most 4"`
	NetStep   float64 `param:"net_step" default:"0.25" min:"1e-3" max:"10" doc:"γ: the net is a cubic grid whose cells have half-diagonal γ (a Frobenius γ-cover)"`
	Margin    float64 `param:"margin" default:"0.1" min:"0" doc:"ρ: margin of the loss 1[y⟨Mx, Ũv⟩ ≤ ρ] used in the score"`
	HeadBound float64 `param:"head_bound" default:"1" min:"1e-12" doc:"Γ: bound on the heads |v_i|"`
	MaxNet    int     `param:"max_net" default:"200000" min:"1" max:"1e7" doc:"refuse nets larger than this (the cost is exponential in k′·k)"`
	splitOptions
}

// projected returns the working dimension k′ for data of dimension d.
func (o *exactOptions) projected(d int) int {
	if o.KPrime == 0 {
		return d
	}
	return o.KPrime
}

// Check implements sdk.Checker.
func (o *exactOptions) Check(s sdk.Shape) error {
	if kp := o.projected(s.P); kp > 4 {
		return sdk.BadRequest("the exact mechanism enumerates a net exponential in k′: k′ = %d > 4 is refused (use fedrep-classify)", kp)
	}
	return nil
}
