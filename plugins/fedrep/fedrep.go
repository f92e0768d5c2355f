package fedrep

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/clip"
)

// Names of the FedRep estimators.
const (
	NamePrivateFedRep    = "fedrep-private"
	NameNonPrivateFedRep = "fedrep-nonprivate"
)

var refFedRep = []string{
	"C. Snedeker, X. Zhou, R. Bassily. Private Model Personalization Revisited. ICML 2025 (Algorithms 1 and 2).",
	"M. Bun, T. Steinke. Concentrated Differential Privacy: Simplifications, Extensions, and Lower Bounds. TCC 2016.",
}

// PrivateFedRep is Private FedRep (Snedeker, Zhou & Bassily 2025, Alg. 1)
// with the private U-statistic initialization of their Alg. 2, user-level
// zCDP.
type PrivateFedRep struct{ rounds }

// NonPrivateFedRep is FedRep without clipping or noise: the reference.
type NonPrivateFedRep struct{ rounds }

// Info implements sdk.Estimator.
func (PrivateFedRep) Info() sdk.Info {
	return sdk.Info{
		Name: NamePrivateFedRep, Version: "0.1.0",
		Summary:  "Private FedRep: user-level DP shared d×k representation for personalized linear regression (clipped gradients + Gaussian noise, private spectral init)",
		DataKind: data.Users,
		Description: `Private FedRep (Snedeker, Zhou & Bassily 2025, Algorithm 1). n users hold m samples each with
y ≈ ⟨x, U* v_i*⟩. Each round every user fits its head v_i by a k-dimensional least squares (here a lightly
ridged one, §3.7) on its training half for the current U and computes the gradient of its squared loss with respect to U;
the server clips each d×k gradient to Frobenius norm ψ, averages, adds N(0, σ̂²) noise per entry,
steps by η and re-orthonormalizes by QR. The start is Algorithm 2: the noisy average of clipped
U-statistics Z_i (unbiased for w_i w_iᵀ), symmetric noise, top-k eigenvectors by algebraic eigenvalue.

Privacy: user-level, replace-one neighbours (one user's whole data set replaced, n public).
Clipping bounds every user's contribution whatever its data, so the guarantee is worst case:
the average moves by at most 2ψ/n per round (2ψ_init/n for the start). Rounds compose adaptively
(exact Gaussian composition by default, or zCDP); the start and the rounds share one budget (init_share). Only U is published; each user's
head v_i, fitted on its own rows, is returned as a per-user output (predict new rows of a user
with dplr transform, the plugin's own transform). The algorithm boxes, sensitivities and the
neighbour relation are in the plugin's DERIVATIONS.md (§2–§4).

Defaults that need no tuning (DERIVATIONS.md §12): when clip / init_clip are not given they are
chosen privately, as the clip_quantile quantile of the users' norms (the exponential mechanism on a public log grid, paid from
tune_share), and the step is step_scale/ψ; a released step that opposes the previous one halves
the step, and a step longer than max_move·√k is shortened (§3.6). Both guards are post-processing
and are reported. T = 10 rounds by default: with 5 the error grew with ε on a synthetic
shared-representation task, 20 gained nothing (§12). The heads are ridge regressions
(head_ridge for the heads users keep, a small round_ridge inside the rounds; 0 and 0 give the
paper's least squares, which interpolate a user with at most k rows so that its gradient vanishes;
§3.7). The default rank min(9, d) was the best of 2, 3, 5, 9 on Fashion-MNIST and digits users with
2, 6 and 20 rows each (bench/results/fedrep-defaults.md §6); give the rank when the truth is known
to be low-rank.
Rank and clip can be chosen privately too (select=rank=2,3,5 or select=clip_quantile=…;
§13): candidates fitted on slices of the budget and on part of the users, one chosen by the
exponential mechanism on the other users' leave-one-out validation score, refitted on every user
with the rest; the whole cost is in the plan.

Accounting: noise=exact (the default) splits μ² of Gaussian DP over the steps (exact composition,
σ from the grant's (ε, δ) curve; a selection's exponential mechanism makes it a PLD-scaled split);
noise=zcdp splits ρ; the result's guarantee names the accountant that produced its figures.

Remote data (dplr fit --engine beam): the same steps run on users passes computed by the pipeline
(each user's term bounded after its rows are grouped), releasing with the same seed the same U;
the per-user heads are not gathered through the host there (output_v=false is required;
DERIVATIONS.md §14).`,
		Guarantee:  "(ε, δ)-DP for U by exact Gaussian composition (noise=exact, the default) or ρ-zCDP (noise=zcdp), user level, worst case (replace one user's whole data)",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:    privateFedRepOptions{},
		References: refFedRep,
	}
}

// Info implements sdk.Estimator.
func (NonPrivateFedRep) Info() sdk.Info {
	return sdk.Info{
		Name: NameNonPrivateFedRep, Version: "0.1.0",
		Summary:     "Non-private FedRep (no clipping, no noise): the reference for the private estimators",
		DataKind:    data.Users,
		Description: "FedRep alternating minimization (local least-squares heads, gradient step on U, QR) without clipping or noise, from the non-private U-statistic start. NOT private: a reference output.",
		Guarantee:   "none (non-private reference)",
		Grants:      []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP, privacy.GrantPure},
		Options:     nonPrivateFedRepOptions{},
		References:  refFedRep,
		NonPrivate:  true,
	}
}

// fedrepConfig is the algorithm's view of the options of the three
// FedRep-type estimators.
type fedrepConfig struct {
	rounds     *roundOptions
	splitOpts  *splitOptions
	ridges     *ridgeOptions // nil: logistic heads (kernel.LogisticRidge)
	step, clip float64       // η (0: step_scale/ψ); ψ (+Inf: no clipping; 0: chosen privately)
	initClip   float64       // ψ_init (+Inf: no clipping; 0: chosen privately)
	init       string        // private, random or ustat
	initShare  float64
	// The private defaults (DERIVATIONS.md §12): the step's scale η·ψ, the
	// quantile a private clip sits at, and the budget share for the quantiles.
	stepScale, clipQ float64
	tuneShare        *float64 // tune_share, or nil for tuneWeight's default
	noise            string   // exact, zcdp or paper (private estimators)
}

// rank, iterations, theory and split read the bound options.
func (c *fedrepConfig) rank() int            { return c.rounds.Rank.Value }
func (c *fedrepConfig) iterations() int      { return c.rounds.Iterations.Value }
func (c *fedrepConfig) theory() bool         { return c.rounds.Mode == "theory" }
func (c *fedrepConfig) split() *splitOptions { return c.splitOpts }

// fedrepProblem is what a FedRep fit runs on: the users' data reached
// through passes (users.go), in the data set's features or a public
// projection of them, the loss and, for a projection, the map back to the
// data's dimension.
type fedrepProblem struct {
	data *usersData
	back *mat.Dense // d×k′ (Mᵀ), nil without projection
	loss lossKind
}

// n is the number of users.
func (p *fedrepProblem) n() int { return p.data.n }

// dim is the working dimension.
func (p *fedrepProblem) dim() int { return p.data.d }

// newFedrepProblem reaches the users' data and checks the options against
// the working dimension.
func newFedrepProblem(run *sdk.Run, c *fedrepConfig, back *mat.Dense, loss lossKind) (*fedrepProblem, error) {
	ud, err := newUsersData(run.Data, c.split(), c.ridges, back, loss)
	if err != nil {
		return nil, err
	}
	if err := c.rounds.check(ud.d, c.rank()); err != nil {
		return nil, err
	}
	return &fedrepProblem{data: ud, back: back, loss: loss}, nil
}

// stepCosine returns the cosine between the steps q Uᵀ and q′ U′ᵀ (d×d,
// invariant to rotations of U's columns), computed in k×k:
// ⟨q Uᵀ, q′ U′ᵀ⟩_F = tr(qᵀ q′ U′ᵀ U), with ‖q Uᵀ‖_F = ‖q‖_F for orthonormal U.
func stepCosine(q, u, qp, up []float64, k int) float64 {
	d := len(q) / k
	a := make([]float64, k*k) // qᵀ q′
	b := make([]float64, k*k) // U′ᵀ U
	for p := 0; p < d; p++ {
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				a[i*k+j] += q[p*k+i] * qp[p*k+j]
				b[i*k+j] += up[p*k+i] * u[p*k+j]
			}
		}
	}
	var tr float64
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			tr += a[i*k+j] * b[j*k+i]
		}
	}
	den := kernel.SafeNorm(q) * kernel.SafeNorm(qp)
	if den == 0 {
		return 0
	}
	return tr / den
}

// maxOf returns the largest value (0 when empty).
func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// randomOrthonormal draws a data-independent random d×k orthonormal matrix.
func randomOrthonormal(run *sdk.Run, d, k int) (*mat.Dense, error) {
	g := mat.NewDense(d, k, nil)
	for i := range g.RawMatrix().Data {
		g.RawMatrix().Data[i] = run.Rand.NormFloat64()
	}
	return orthonormalize(run.Backend, g)
}

// fedrepPlan holds the per-step budgets of a private FedRep run.
type fedrepPlan struct {
	init, round privacy.Budget // init is zero without a private start
	tune        privacy.Budget // each private clip quantile (zero when none)
	tunes       int            // number of private clip quantiles
}

// autoClips reports which clips the run chooses privately.
func (c *fedrepConfig) autoClips() (clip, initClip bool) {
	return c.clip == 0, c.initClip == 0 && c.init == "private"
}

// fedrepSpec is the plan of a private FedRep fit on n users under g: the
// grant split between the private clips, the start and the rounds
// (DERIVATIONS.md §3.4, §4): the clips are exponential-mechanism quantiles,
// every other step a Gaussian release. Every refusal
// here is decided from public quantities, before any spend.
func fedrepSpec(c *fedrepConfig, n int, g privacy.Grant) (sdk.PlanSpec, error) {
	gauss := func(name string, weight float64, steps int) privacy.Share {
		return privacy.Share{Name: name, Weight: weight, Steps: steps, Mechanism: privacy.MechGaussian}
	}
	T := c.iterations()
	privInit := c.init == "private"
	var shares []privacy.Share
	tunes := c.tunes()
	rest := 1.0 // the share left for the start and the rounds
	if tunes > 0 {
		w := tuneWeight(c.tuneShare, n, tunes, g)
		shares = append(shares, privacy.Share{Name: "tune", Weight: w, Steps: tunes, Mechanism: privacy.MechExponential})
		rest = 1 - w
	}
	switch c.noise {
	case "paper":
		if g.Kind != privacy.GrantApprox {
			return sdk.PlanSpec{}, sdk.BadRequest("noise=paper needs an (ε, δ) grant, got a %s grant", g.Kind)
		}
		rho, err := totalRho(g)
		if err != nil {
			return sdk.PlanSpec{}, err
		}
		sigma := c.clip * math.Sqrt(48*float64(T)*math.Log(1.25/g.Delta)) / (float64(n) * g.Epsilon)
		w := float64(T) * privacy.RhoOfGaussian(2*c.clip/float64(n), sigma) / rho
		if w >= rest {
			return sdk.PlanSpec{}, sdk.BadRequest("noise=paper: the paper's σ̂ = %.4g costs ρ = %.4g over %d rounds, more than the grant's ρ = %.4g under replace-one neighbours: %w", sigma, w*rho, T, rho, privacy.ErrOverBudget)
		}
		shares = append(shares, gauss("rounds", w, T))
		if privInit {
			shares = append(shares, gauss("init", (rest-w)*(1-1e-9), 0))
		}
	default:
		if !privInit {
			shares = append(shares, gauss("rounds", rest, T))
			break
		}
		shares = append(shares, gauss("init", rest*c.initShare, 0), gauss("rounds", rest*(1-c.initShare), T))
	}
	return sdk.PlanSpec{Noise: planNoise(c.noise), Shares: shares}, nil
}

// The bounds of tune_share's default (tuneWeight).
const (
	tuneShareMin = 0.04
	tuneShareMax = 0.2
)

// tuneWeight is tune_share, or its default for k private clip quantiles
// over n users under g: clip.DefaultShare between tuneShareMin and
// tuneShareMax (DERIVATIONS.md §12).
func tuneWeight(share *float64, n, k int, g privacy.Grant) float64 {
	if share != nil {
		return *share
	}
	return clip.DefaultShare(n, k, g, false, tuneShareMin, tuneShareMax)
}

// totalRho is the zCDP budget of grant g (privacy.Accountant.TotalRho).
func totalRho(g privacy.Grant) (float64, error) {
	a, err := privacy.NewAccountant(g)
	if err != nil {
		return 0, err
	}
	return a.TotalRho()
}

// tunes is the number of clips the run chooses privately.
func (c *fedrepConfig) tunes() int {
	autoClip, autoInit := c.autoClips()
	t := 0
	if autoClip {
		t++
	}
	if autoInit {
		t++
	}
	return t
}

// fedrepBudgets reads the per-step budgets of a fit from its plan.
func fedrepBudgets(plan *privacy.Plan, c *fedrepConfig) (*fedrepPlan, error) {
	p := &fedrepPlan{tunes: c.tunes()}
	var err error
	if p.round, err = plan.Budget("rounds"); err != nil {
		return nil, err
	}
	if p.tunes > 0 {
		if p.tune, err = plan.Budget("tune"); err != nil {
			return nil, err
		}
	}
	if c.init == "private" {
		if p.init, err = plan.Budget("init"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Fit implements sdk.Estimator.
func (PrivateFedRep) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[privateFedRepOptions](run)
	res, _, err := fitFedRep(ctx, run, o.config(), true, nil, lossSquared)
	return res, err
}

// Fit implements sdk.Estimator.
func (NonPrivateFedRep) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[nonPrivateFedRepOptions](run)
	res, _, err := fitFedRep(ctx, run, o.config(), false, nil, lossSquared)
	return res, err
}

// fitFedRep is bind → plan → algorithm for the FedRep estimators: it runs
// (Private) FedRep on the data set's features (projected by the public
// Mᵀ = back when not nil), with U returned as back·U, spending run.Plan
// (a private selection's fit: its view of the selection's plan).
func fitFedRep(ctx context.Context, run *sdk.Run, c *fedrepConfig, private bool, back *mat.Dense, loss lossKind) (*sdk.Result, *fedrepTrace, error) {
	prob, err := newFedrepProblem(run, c, back, loss)
	if err != nil {
		return nil, nil, err
	}
	var plan *fedrepPlan // nil for the non-private reference
	if private {
		if plan, err = fedrepBudgets(run.Plan, c); err != nil {
			return nil, nil, err
		}
	}
	tr, err := privateFedRep(ctx, run, prob, c, plan)
	if err != nil {
		return nil, nil, err
	}
	return tr.result(run, prob, c, plan), tr, nil
}

// fedrepTrace is what a FedRep run produces: the released U, the per-user
// heads, and the per-round evaluation series.
type fedrepTrace struct {
	u, heads           *mat.Dense
	uWork              *mat.Dense // U in the working space (before the map back)
	curve              []float64  // hold-out loss after the start and each round
	final              float64    // final hold-out loss
	clipFrac, skipFrac []float64
	moves              []float64 // per round, η‖q̂‖_F/√k before the guard
	eta                float64   // the step in use (η, halved on oscillation)
	halved             []int     // rounds at which η was halved
	prevStep, prevU    []float64 // the previous round's released mean and U
	capped             []int     // rounds whose step the guard shortened
	sigma, sigmaInit   float64
	initClipFrac       float64
	initClip           float64 // ψ_init used by the start (given or chosen privately)
}

// privateFedRep is Private FedRep (DERIVATIONS.md §3): the start of §2,
// then T rounds of clipped, noised gradient steps on U with a QR after each,
// then every user's head on its own rows. With plan == nil it is the
// non-private reference (no clipping, no noise).
func privateFedRep(ctx context.Context, run *sdk.Run, prob *fedrepProblem, c *fedrepConfig, plan *fedrepPlan) (*fedrepTrace, error) {
	tr := &fedrepTrace{}
	eng := prob.data
	eng.psi, eng.k = c.clip, c.rank()
	eng.theory(0, 0)
	if c.theory() {
		// Data-independent randomness: the seed of every user's random
		// order of its training rows, which carves the disjoint batches.
		eng.theory(c.rounds.Batch, run.Rand.Split().Uint64()>>11)
	}
	run.Progress("init", 0, 1)
	u, err := initialU(ctx, run, prob, c, plan, tr)
	if err != nil {
		return nil, err
	}
	run.Progress("init", 1, 1)
	if err := chooseClip(ctx, run, eng, u, c, plan, tr); err != nil {
		return nil, err
	}
	if err := tr.evaluate(ctx, eng, u, c.split()); err != nil {
		return nil, err
	}
	T := c.iterations()
	for t := 0; t < T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if u, err = fedrepRound(ctx, run, eng, u, t, c, plan, tr); err != nil {
			return nil, fmt.Errorf("round %d: %w", t+1, err)
		}
		if err := tr.evaluate(ctx, eng, u, c.split()); err != nil {
			return nil, err
		}
		run.Progress("rounds", t+1, T)
	}
	return tr, tr.finish(ctx, run, eng, u, prob, c.split(), c.rank())
}

// chooseClip sets the clip ψ, when it is chosen privately, to the private
// clip_quantile quantile of the users' gradient norms at the start U_0 (a
// post-processing of the earlier releases, so the norms are a function of
// each user's own rows and public quantities; DERIVATIONS.md §12), and the
// step, when not given, to step_scale/ψ.
func chooseClip(ctx context.Context, run *sdk.Run, eng *usersData, u *mat.Dense, c *fedrepConfig, plan *fedrepPlan, tr *fedrepTrace) error {
	if c.clip == 0 {
		if plan == nil {
			return fmt.Errorf("internal error: a private clip without a plan")
		}
		hist, err := eng.gradHist(ctx, u.RawMatrix().Data)
		if err != nil {
			return fmt.Errorf("clip quantile: %w", err)
		}
		if c.clip, err = clip.PrivateNorm(run.Acct, run.Rand, fmt.Sprintf("clip: %g-quantile of the users' gradient norms at the start", c.clipQ), plan.tune, hist, c.clipQ); err != nil {
			return err
		}
		eng.psi = c.clip
	}
	if c.step == 0 {
		c.step = c.stepScale / c.clip
		if math.IsInf(c.clip, 1) {
			c.step = c.stepScale
		}
	}
	tr.eta = c.step
	return nil
}

// fedrepRound is one round of the box of DERIVATIONS.md §3: the mean of the
// users' clipped gradients (sensitivity 2ψ/n, §3.2 there), Gaussian noise
// when private, a step of size η and a QR.
func fedrepRound(ctx context.Context, run *sdk.Run, eng *usersData, u *mat.Dense, t int, c *fedrepConfig, plan *fedrepPlan, tr *fedrepTrace) (*mat.Dense, error) {
	n, d, k := eng.n, eng.d, eng.k
	sum, clipped, err := eng.aggregate(ctx, u.RawMatrix().Data, t)
	if err != nil {
		return nil, err
	}
	if c.theory() {
		tr.skipFrac = append(tr.skipFrac, float64(eng.skipped())/float64(n))
	}
	for i := range sum {
		sum[i] /= float64(n)
	}
	if plan != nil {
		rel, err := run.Acct.Gaussian(fmt.Sprintf("round %d: mean of clipped gradients", t+1), 2*c.clip/float64(n), len(sum), plan.round)
		if err != nil {
			return nil, err
		}
		if roundHook != nil {
			roundHook(t, append([]float64(nil), sum...))
		}
		if err := rel.Add(run.Rand, sum); err != nil {
			return nil, err
		}
		if roundHook != nil {
			roundHook(t, append([]float64(nil), sum...))
		}
		tr.sigma = rel.Scale()
		tr.clipFrac = append(tr.clipFrac, float64(clipped)/float64(n))
	}
	// The guards of DERIVATIONS.md §3.6, post-processing of the released
	// mean: when this step opposes the previous one (oscillation: η too
	// large for the data), η is halved from now on; a step longer than
	// max_move·√k (√k = ‖U‖_F) is scaled down to it. Both are reported.
	if c.rounds.StepGuard && tr.prevStep != nil && stepCosine(sum, u.RawMatrix().Data, tr.prevStep, tr.prevU, k) < 0 {
		tr.eta /= 2
		tr.halved = append(tr.halved, t+1)
	}
	tr.prevStep, tr.prevU = append(tr.prevStep[:0], sum...), append(tr.prevU[:0], u.RawMatrix().Data...)
	move := tr.eta * kernel.SafeNorm(sum) / math.Sqrt(float64(k))
	tr.moves = append(tr.moves, move)
	scale := tr.eta
	if c.rounds.StepGuard && move > c.rounds.MaxMove {
		scale *= c.rounds.MaxMove / move
		tr.capped = append(tr.capped, t+1)
	}
	step := mat.NewDense(d, k, sum)
	step.Scale(-scale, step)
	step.Add(u, step)
	return orthonormalize(run.Backend, step)
}

// evaluate appends the hold-out loss at U to the curve (with hold-out rows).
func (tr *fedrepTrace) evaluate(ctx context.Context, eng *usersData, u *mat.Dense, sp *splitOptions) error {
	if sp.Holdout <= 0 {
		return nil
	}
	l, err := eng.fitHeads(ctx, u.RawMatrix().Data, nil)
	if err != nil {
		return err
	}
	tr.curve = append(tr.curve, l)
	return nil
}

// finish fits every user's final head for U and maps U back through the
// public projection.
func (tr *fedrepTrace) finish(ctx context.Context, run *sdk.Run, eng *usersData, u *mat.Dense, prob *fedrepProblem, sp *splitOptions, k int) error {
	if sp.OutputV {
		tr.heads = mat.NewDense(prob.n(), k, nil)
	}
	var err error
	if tr.final, err = eng.fitHeads(ctx, u.RawMatrix().Data, tr.heads); err != nil {
		return err
	}
	tr.u, tr.uWork = u, u
	if prob.back != nil {
		tr.u = mat.NewDense(prob.back.RawMatrix().Rows, k, nil)
		if err := run.Backend.Mul(tr.u, prob.back, false, u, false); err != nil {
			return fmt.Errorf("mapping U back: %w", err)
		}
	}
	return nil
}

// headsDoc describes the per-user heads of every FedRep-type estimator.
const headsDoc = "row i is the head v_i of the i-th user in increasing user-id order, fitted locally on the user's own rows (S¹, or S⁰ ∪ S¹ with head_data=all) for the released U; meant for user i only (not covered by the public guarantee, which is about U)"

// result assembles the outputs, the guarantee and the notes of a FedRep run.
func (tr *fedrepTrace) result(run *sdk.Run, prob *fedrepProblem, c *fedrepConfig, plan *fedrepPlan) *sdk.Result {
	res := &sdk.Result{}
	uDoc := "shared representation U (d×k, orthonormal columns)"
	if prob.back != nil {
		uDoc = "shared representation U = Mᵀ Ũ (d×k) mapped back from the public projection"
	}
	res.AddMatrix("U", tr.u, sdk.Public, uDoc)
	if tr.heads != nil {
		res.AddMatrix("V", tr.heads, sdk.PerUser, headsDoc)
		addUserIDs(res, run.Data)
	}
	lossName := "mean squared error"
	if prob.loss == lossLogistic {
		lossName = "0-1 error"
	}
	if c.split().Holdout > 0 {
		res.AddSeries("holdout_curve", tr.curve, sdk.Evaluation, "per-round "+lossName+" on the users' hold-out rows (index 0 = after initialization), heads refitted on S¹ each round; computed from raw data: NOT private")
		res.AddScalar("holdout_loss", tr.final, sdk.Evaluation, "final "+lossName+" on the users' hold-out rows; computed from raw data: NOT private")
	}
	if plan != nil {
		tr.addPrivate(res, prob, c, plan)
	} else {
		res.Guarantee = privacy.Guarantee{Kind: privacy.None}
		res.Notes = append(res.Notes, "non-private reference: computed from the raw data without clipping or noise")
	}
	res.AddSeries("relative_step", tr.moves, sdk.Public, fmt.Sprintf("per round, η‖q̂‖_F/√k: the length of the step relative to U (‖U‖_F = √k), computed from the released mean; above max_move = %g the step was shortened to max_move (DERIVATIONS.md §3.6)", c.rounds.MaxMove))
	if len(tr.halved) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("oscillation guard: the released step of round(s) %v opposed the previous one (the step size was too large for the data); η was halved each time, from %.4g to %.4g (DERIVATIONS.md §3.6)", tr.halved, c.step, tr.eta))
	}
	if len(tr.capped) > 0 {
		res.AddWarning(fmt.Sprintf("diverging step guard: in round(s) %v the step would have moved U by more than %g·√k (largest relative step %.3g); it was shortened to that length. A step that long is dominated by noise or too large for the data: a smaller step_scale (or step), more users or a larger budget avoid it", tr.capped, c.rounds.MaxMove, maxOf(tr.moves)))
	}
	if c.theory() {
		res.AddSeries("skipped_fraction", tr.skipFrac, sdk.Diagnostic, "theory mode: per round, the fraction of users whose training half could not feed the round's two fresh batches and who contributed zero (computed from raw data: NOT private)")
		res.Notes = append(res.Notes, fmt.Sprintf("theory mode: fresh disjoint batches of %d rows per round; a user without 2·%d·(t+1) training rows sits out round t (DERIVATIONS.md §3.3)", c.rounds.Batch, c.rounds.Batch))
	}
	return res
}

// addPrivate adds the noise scales, the guarantee and the budget note of a
// private FedRep run.
func (tr *fedrepTrace) addPrivate(res *sdk.Result, prob *fedrepProblem, c *fedrepConfig, plan *fedrepPlan) {
	n, T := prob.n(), c.iterations()
	if c.init == "private" {
		res.AddScalar("sigma_init", tr.sigmaInit, sdk.Public, "std of the symmetric Gaussian noise on the initialization's mean U-statistic")
		res.AddScalar("init_clipped_fraction", tr.initClipFrac, sdk.Diagnostic, "fraction of users whose U-statistic was clipped (computed from raw data: not private)")
	}
	res.AddScalar("sigma", tr.sigma, sdk.Public, "per-entry std of the Gaussian noise added to the mean clipped gradient in each round")
	autoClip, autoInit := c.autoClips()
	how := func(auto bool) string {
		if auto {
			return fmt.Sprintf("chosen privately: the %g-quantile of the users' norms by the exponential mechanism (DERIVATIONS.md §12)", c.clipQ)
		}
		return "given"
	}
	res.AddScalar("clip", c.clip, sdk.Public, "ψ, the bound on each user's gradient ("+how(autoClip)+")")
	if c.init == "private" {
		res.AddScalar("init_clip", c.initClip, sdk.Public, "ψ_init, the bound on each user's U-statistic ("+how(autoInit)+")")
	}
	res.AddScalar("step", c.step, sdk.Public, "η, the step of the U update (step_scale/ψ unless given)")
	if plan.tunes > 0 {
		res.AddScalar("rho_tune", plan.tune.Rho*float64(plan.tunes), sdk.Public, "cost of the private clip quantiles in zCDP units (ρ; with noise=exact, μ²/2 of their Gaussian-DP share)")
		res.Notes = append(res.Notes, fmt.Sprintf("private defaults: %d clip(s) chosen as the %g-quantile of the users' norms (exponential mechanism on a log grid, ρ = %.4g each); ψ = %.4g, ψ_init = %.4g, η = %.4g (DERIVATIONS.md §12)", plan.tunes, c.clipQ, plan.tune.Rho, c.clip, c.initClip, c.step))
	}
	res.AddScalar("rho_init", plan.init.Rho, sdk.Public, "cost of the initialization in zCDP units (ρ; with noise=exact, μ²/2 of its Gaussian-DP share)")
	res.AddScalar("rho_rounds", plan.round.Rho*float64(T), sdk.Public, "cost of the T rounds in zCDP units (ρ; with noise=exact, μ²/2 of their Gaussian-DP share)")
	res.AddSeries("clipped_fraction", tr.clipFrac, sdk.Diagnostic, "per round, the fraction of users whose gradient was clipped (computed from raw data: NOT private; it is not released privately: do not tune on it)")
	res.Guarantee = privacy.Guarantee{Kind: privacy.ZCDP,
		Neighbours: "one user's whole data replaced (user level, n public)",
		Assumptions: []string{fmt.Sprintf("clip ψ = %g and ψ_init = %g, public or released privately before use (worst case: clipping holds for any data)", c.clip, c.initClip),
			fmt.Sprintf("number of users n = %d public", n)}}
	if tr.heads != nil {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, perUserAssumption)
	}
	res.Notes = append(res.Notes, noiseNote(c.noise))
	res.Notes = append(res.Notes, fmt.Sprintf("budget split (ρ units): initialization ρ = %.4g, rounds ρ = %.4g (%d × %.4g); replace-one sensitivity 2ψ/n = %.4g per round (DERIVATIONS.md §3.2)", plan.init.Rho, plan.round.Rho*float64(T), T, plan.round.Rho, 2*c.clip/float64(n)))
}

// initialU returns the starting U: the top-k eigenvectors of the (noisy,
// with a plan) mean of clipped U-statistics (DERIVATIONS.md §2), or a
// random orthonormal matrix.
func initialU(ctx context.Context, run *sdk.Run, prob *fedrepProblem, c *fedrepConfig, plan *fedrepPlan, tr *fedrepTrace) (*mat.Dense, error) {
	d, n := prob.dim(), prob.n()
	if c.init == "random" {
		return randomOrthonormal(run, d, c.rank())
	}
	if c.initClip == 0 {
		if plan == nil {
			return nil, fmt.Errorf("internal error: a private start clip without a plan")
		}
		hist, err := prob.data.ustatHist(ctx)
		if err != nil {
			return nil, fmt.Errorf("initialization: %w", err)
		}
		if c.initClip, err = clip.PrivateNorm(run.Acct, run.Rand, fmt.Sprintf("init_clip: %g-quantile of the users' U-statistic norms", c.clipQ), plan.tune, hist, c.clipQ); err != nil {
			return nil, fmt.Errorf("initialization: %w", err)
		}
	}
	z, clipped, err := prob.data.ustatMean(ctx, c.initClip)
	if err != nil {
		return nil, fmt.Errorf("initialization: %w", err)
	}
	if plan != nil {
		rel, err := run.Acct.Gaussian("init: mean of clipped U-statistics Z_i (upper triangle)", 2*c.initClip/float64(n), d*(d+1)/2, plan.init)
		if err != nil {
			return nil, fmt.Errorf("initialization: %w", err)
		}
		if err := rel.AddSym(run.Rand, z); err != nil {
			return nil, fmt.Errorf("initialization: %w", err)
		}
		tr.sigmaInit = rel.Scale()
		tr.initClipFrac = float64(clipped) / float64(n)
	}
	_, vecs, err := run.Backend.EigSymTop(z, c.rank())
	if err != nil {
		return nil, fmt.Errorf("initialization: top-%d eigenvectors: %w", c.rank(), err)
	}
	return vecs, nil
}

// roundHook, when set (tests only), sees each private round's mean clipped
// gradient before and after the noise is added.
var roundHook func(t int, v []float64)
