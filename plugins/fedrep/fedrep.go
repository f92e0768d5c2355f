package fedrep

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
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
type PrivateFedRep struct{}

// NonPrivateFedRep is FedRep without clipping or noise: the reference.
type NonPrivateFedRep struct{}

func fedrepCommonParams() []sdk.ParamSpec {
	return []sdk.ParamSpec{
		{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Doc: "rank k of the shared representation U (d×k); k ≤ d"},
		{Name: "iterations", Type: sdk.Int, Default: "5", Min: sdk.Bound(1), Max: sdk.Bound(1e5), Doc: "number of rounds T"},
		{Name: "step", Type: sdk.Float, Default: "2.5", Min: sdk.Bound(1e-12), Max: sdk.Bound(1e6), Doc: "step size η of the U update (theory: η ≤ 1/(2σ_max,*²))"},
		{Name: "mode", Type: sdk.String, Default: "experiment", Choices: []string{"experiment", "theory"},
			Doc: "experiment: each round fits v and takes the gradient on the whole training half (as the paper's experiment code); theory: fresh disjoint batches B, B′ of size batch every round (as Alg. 1); a user whose training half holds fewer than 2·batch·(t+1) rows sits out round t (see DERIVATIONS.md §3.3)"},
		{Name: "batch", Type: sdk.Int, Default: "0", Min: sdk.Bound(0), Doc: "theory mode: the public batch size b (b ≥ rank), required with mode=theory; chosen from what every user is expected to hold (2·b·iterations training rows), never from the data"},
	}
}

// Info implements sdk.Estimator.
func (PrivateFedRep) Info() sdk.Info {
	ps := append(fedrepCommonParams(),
		sdk.ParamSpec{Name: "clip", Type: sdk.Float, Default: "10", Min: sdk.Bound(1e-12), Doc: "ψ: Frobenius bound on each user's gradient (public). Tune on synthetic data, never on the private data; the paper's experiment uses 10, smaller values (≈1) are far better at n = 20000"},
		sdk.ParamSpec{Name: "init", Type: sdk.String, Default: "private", Choices: []string{"private", "random"},
			Doc: "private: Alg. 2 (noisy average of clipped U-statistics, top-k eigenvectors), costs init_share of the budget; random: a data-independent random orthonormal U (free, but FedRep then converges slowly)"},
		sdk.ParamSpec{Name: "init_clip", Type: sdk.Float, Default: "50", Min: sdk.Bound(1e-12), Doc: "ψ_init: Frobenius bound on each user's U-statistic Z_i (public)"},
		sdk.ParamSpec{Name: "init_share", Type: sdk.Float, Default: "0.2", Min: sdk.Bound(0.001), Max: sdk.Bound(0.999), Doc: "fraction of the zCDP budget ρ spent on the initialization (calibration=zcdp)"},
		sdk.ParamSpec{Name: "calibration", Type: sdk.String, Default: "zcdp", Choices: []string{"zcdp", "paper"},
			Doc: "zcdp: exact replace-one zCDP, ρ split init_share / (1 − init_share), the rounds' share evenly over T; paper: the rounds use the paper experiment's σ̂ = ψ√(48T ln(1.25/δ))/(nε) (needs an (ε, δ) grant; it over-noises, and its true zCDP cost is what is recorded), the initialization gets the rest of ρ"},
	)
	ps = append(ps, splitParams()...)
	return sdk.Info{
		Name: NamePrivateFedRep, Version: "0.1.0",
		Summary:  "Private FedRep: user-level DP shared d×k representation for personalized linear regression (clipped gradients + Gaussian noise, private spectral init)",
		DataKind: data.Users,
		Description: `Private FedRep (Snedeker, Zhou & Bassily 2025, Algorithm 1). n users hold m samples each with
y ≈ ⟨x, U* v_i*⟩. Each round every user fits its head v_i by a k-dimensional least squares on its
training half for the current U and computes the gradient of its squared loss with respect to U;
the server clips each d×k gradient to Frobenius norm ψ, averages, adds N(0, σ̂²) noise per entry,
steps by η and re-orthonormalizes by QR. The start is Algorithm 2: the noisy average of clipped
U-statistics Z_i (unbiased for w_i w_iᵀ), symmetric noise, top-k eigenvectors by algebraic eigenvalue.

Privacy: user-level, replace-one neighbours (one user's whole data set replaced, n public).
Clipping bounds every user's contribution whatever its data, so the guarantee is worst case:
the average moves by at most 2ψ/n per round (2ψ_init/n for the start). Rounds compose adaptively
in zCDP; the start and the rounds share one budget (init_share). Only U is published; each user's
head v_i, fitted on its own local half, is returned as a per-user output.`,
		Guarantee:  "ρ-zCDP (hence (ε, δ)-DP) for U, user level, worst case (replace one user's whole data)",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Params:     ps,
		References: refFedRep,
	}
}

// Info implements sdk.Estimator.
func (NonPrivateFedRep) Info() sdk.Info {
	ps := append(fedrepCommonParams(),
		sdk.ParamSpec{Name: "init", Type: sdk.String, Default: "ustat", Choices: []string{"ustat", "random"},
			Doc: "ustat: top-k eigenvectors of the average U-statistic (Alg. 2 without clipping or noise); random: a random orthonormal U"},
	)
	ps = append(ps, splitParams()...)
	return sdk.Info{
		Name: NameNonPrivateFedRep, Version: "0.1.0",
		Summary:     "Non-private FedRep (no clipping, no noise): the reference for the private estimators",
		DataKind:    data.Users,
		Description: "FedRep alternating minimization (local least-squares heads, gradient step on U, QR) without clipping or noise, from the non-private U-statistic start. NOT private: a reference output.",
		Guarantee:   "none (non-private reference)",
		Grants:      []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP, privacy.GrantPure},
		Params:      ps,
		References:  refFedRep,
		NonPrivate:  true,
	}
}

// splitOptions are the per-user split and head parameters every estimator
// of the plugin shares (splitParams).
type splitOptions struct {
	LocalFraction float64 // share of the non-hold-out rows kept for the head (S¹)
	Holdout       float64 // share of the rows held out for evaluation
	HeadAll       bool    // heads fitted on S⁰ ∪ S¹ instead of S¹
	OutputV       bool    // return the per-user heads
}

func bindSplit(p sdk.Params) splitOptions {
	return splitOptions{LocalFraction: p.Float("local_fraction"), Holdout: p.Float("holdout"),
		HeadAll: p.String("head_data") == "all", OutputV: p.Bool("output_v")}
}

// fedrepOptions are the bound parameters of fedrep-private,
// fedrep-nonprivate and fedrep-classify.
type fedrepOptions struct {
	Rank, Iterations int
	Step             float64
	Theory           bool // mode=theory
	Batch            int  // theory mode: the public batch size b
	Init             string
	// Private estimators only.
	Clip, InitClip, InitShare float64
	Calibration               string
	split                     splitOptions
}

// bindFedRep reads the validated parameters of a FedRep estimator.
func bindFedRep(p sdk.Params, private bool) fedrepOptions {
	o := fedrepOptions{Rank: p.Int("rank"), Iterations: p.Int("iterations"), Step: p.Float("step"),
		Theory: p.String("mode") == "theory", Batch: p.Int("batch"), Init: p.String("init"), split: bindSplit(p)}
	o.Clip, o.InitClip = math.Inf(1), math.Inf(1)
	if private {
		o.Clip, o.InitClip, o.InitShare, o.Calibration = p.Float("clip"), p.Float("init_clip"), p.Float("init_share"), p.String("calibration")
	}
	return o
}

// check refuses, from public quantities only (the rank, the working
// dimension d and the declared batch), the requests FedRep cannot run.
func (o *fedrepOptions) check(d int) error {
	if o.Rank > d {
		return sdk.BadRequest("rank %d exceeds the working dimension %d", o.Rank, d)
	}
	if !o.Theory {
		return nil
	}
	// The batch is a public parameter: it is never derived from the users'
	// row counts, which are private under user-level neighbours
	// (DERIVATIONS.md §3.3).
	if o.Batch == 0 {
		return sdk.BadRequest("mode=theory needs an explicit batch (the public size b of each of the two fresh batches per round, b ≥ rank %d); it is never derived from the data", o.Rank)
	}
	if o.Batch < o.Rank {
		return sdk.BadRequest("mode=theory: batch %d < rank %d (the local least squares would be singular)", o.Batch, o.Rank)
	}
	return nil
}

// fedrepProblem is what a FedRep fit runs on: the working features (the
// data set's X or a public projection of it), the responses, the per-user
// split and, for a projection, the map back to the data's dimension.
type fedrepProblem struct {
	x    *mat.Dense
	y    []float64
	lay  *layout
	back *mat.Dense // d×k′ (Mᵀ), nil without projection
	loss lossKind
}

// newFedrepProblem splits the users' rows and checks o against the working
// dimension.
func newFedrepProblem(run *sdk.Run, o *fedrepOptions, x *mat.Dense, y []float64, back *mat.Dense, loss lossKind) (*fedrepProblem, error) {
	if err := o.check(x.RawMatrix().Cols); err != nil {
		return nil, err
	}
	lay, err := newLayout(run.Data, o.split.LocalFraction, o.split.Holdout)
	if err != nil {
		return nil, err
	}
	return &fedrepProblem{x: x, y: y, lay: lay, back: back, loss: loss}, nil
}

// theoryPerm draws, for every user, a random order of its training rows
// (data-independent randomness, used to carve the disjoint batches).
func theoryPerm(lay *layout, src *privacy.Source, rows int) []int32 {
	perm := make([]int32, rows)
	r := src.Rand()
	for _, u := range lay.users {
		seg := perm[u.t0:u.t1]
		for j := range seg {
			seg[j] = int32(u.t0 + j)
		}
		r.Shuffle(len(seg), func(a, b int) { seg[a], seg[b] = seg[b], seg[a] })
	}
	return perm
}

// randomOrthonormal draws a data-independent random d×k orthonormal matrix.
func randomOrthonormal(run *sdk.Run, d, k int) (*mat.Dense, error) {
	g := mat.NewDense(d, k, nil)
	for i := range g.RawMatrix().Data {
		g.RawMatrix().Data[i] = run.Rand.NormFloat64()
	}
	return orthonormalize(run.Backend, g)
}

// fedrepBudget is the per-step zCDP cost of a FedRep run (zero for the
// non-private reference).
type fedrepBudget struct {
	rhoInit, rhoRound float64 // ρ of the start, ρ of each round
}

// planFedRep splits the grant between the start and the rounds
// (DERIVATIONS.md §3.4, §4). Every refusal here is decided from public
// quantities, before any spend.
func planFedRep(run *sdk.Run, o *fedrepOptions, n int) (fedrepBudget, error) {
	var b fedrepBudget
	rho, err := run.Acct.TotalRho()
	if err != nil {
		return b, err
	}
	privInit := o.Init == "private"
	T := o.Iterations
	if o.Calibration != "paper" {
		share := o.InitShare
		if !privInit {
			share = 0
		}
		b.rhoInit = share * rho
		b.rhoRound = (1 - share) * rho / float64(T)
		return b, nil
	}
	g := run.Acct.Grant()
	if g.Kind != privacy.GrantApprox {
		return b, sdk.BadRequest("calibration=paper needs an (ε, δ) grant, got a %s grant", g.Kind)
	}
	sigma := o.Clip * math.Sqrt(48*float64(T)*math.Log(1.25/g.Delta)) / (float64(n) * g.Epsilon)
	b.rhoRound = privacy.RhoOfGaussian(2*o.Clip/float64(n), sigma)
	rest := rho - float64(T)*b.rhoRound
	if rest <= 0 {
		return b, sdk.BadRequest("calibration=paper: the paper's σ̂ = %.4g costs ρ = %.4g over %d rounds, more than the grant's ρ = %.4g under replace-one neighbours: %w", sigma, float64(T)*b.rhoRound, T, rho, privacy.ErrOverBudget)
	}
	if privInit {
		b.rhoInit = rest * (1 - 1e-9)
	}
	return b, nil
}

// Fit implements sdk.Estimator.
func (PrivateFedRep) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := bindFedRep(run.Params, true)
	return fitFedRep(ctx, run, &o, true, run.Data.X, run.Data.Y, nil, lossSquared)
}

// Fit implements sdk.Estimator.
func (NonPrivateFedRep) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := bindFedRep(run.Params, false)
	return fitFedRep(ctx, run, &o, false, run.Data.X, run.Data.Y, nil, lossSquared)
}

// fitFedRep is bind → plan → algorithm for the FedRep estimators: it runs
// (Private) FedRep on features x and responses y, with U returned as
// back·U when back is not nil.
func fitFedRep(ctx context.Context, run *sdk.Run, o *fedrepOptions, private bool, x *mat.Dense, y []float64, back *mat.Dense, loss lossKind) (*sdk.Result, error) {
	prob, err := newFedrepProblem(run, o, x, y, back, loss)
	if err != nil {
		return nil, err
	}
	var bud fedrepBudget
	if private {
		if bud, err = planFedRep(run, o, prob.lay.n()); err != nil {
			return nil, err
		}
	}
	tr, err := privateFedRep(ctx, run, prob, o, private, bud)
	if err != nil {
		return nil, err
	}
	return tr.result(run, prob, o, private, bud)
}

// fedrepTrace is what a FedRep run produces: the released U, the per-user
// heads, and the per-round evaluation series.
type fedrepTrace struct {
	u, heads           *mat.Dense
	curve              []float64 // hold-out loss after the start and each round
	final              float64   // final hold-out loss
	clipFrac, skipFrac []float64
	sigma, sigmaInit   float64
	initClipFrac       float64
}

// privateFedRep is Private FedRep (DERIVATIONS.md §3): the start of §2,
// then T rounds of clipped, noised gradient steps on U with a QR after each,
// then every user's head on its own rows. With private = false it is the
// non-private reference (no clipping, no noise).
func privateFedRep(ctx context.Context, run *sdk.Run, prob *fedrepProblem, o *fedrepOptions, private bool, bud fedrepBudget) (*fedrepTrace, error) {
	tr := &fedrepTrace{}
	eng := newFedrepEngine(prob.x, prob.y, prob.lay, o.Rank, o.Clip, prob.loss)
	eng.headAll = o.split.HeadAll
	if o.Theory {
		eng.theory, eng.batch = true, o.Batch
		eng.perm = theoryPerm(prob.lay, run.Rand.Split(), run.Data.N())
	}
	run.Progress("init", 0, 1)
	u, err := initialU(ctx, run, prob, o, private, bud.rhoInit, tr)
	if err != nil {
		return nil, err
	}
	run.Progress("init", 1, 1)
	if err := tr.evaluate(ctx, eng, u, o); err != nil {
		return nil, err
	}
	for t := 0; t < o.Iterations; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if u, err = fedrepRound(ctx, run, eng, u, t, o, private, bud.rhoRound, tr); err != nil {
			return nil, fmt.Errorf("round %d: %w", t+1, err)
		}
		if err := tr.evaluate(ctx, eng, u, o); err != nil {
			return nil, err
		}
		run.Progress("rounds", t+1, o.Iterations)
	}
	return tr, tr.finish(ctx, run, eng, u, prob, o)
}

// fedrepRound is one round of the box of DERIVATIONS.md §3: the mean of the
// users' clipped gradients (sensitivity 2ψ/n, §3.2 there), Gaussian noise when
// private, a step of size η and a QR.
func fedrepRound(ctx context.Context, run *sdk.Run, eng *fedrepEngine, u *mat.Dense, t int, o *fedrepOptions, private bool, rhoRound float64, tr *fedrepTrace) (*mat.Dense, error) {
	n := eng.lay.n()
	sum, clipped, err := eng.aggregate(ctx, u.RawMatrix().Data, t)
	if err != nil {
		return nil, err
	}
	if o.Theory {
		tr.skipFrac = append(tr.skipFrac, float64(eng.skipped())/float64(n))
	}
	for i := range sum {
		sum[i] /= float64(n)
	}
	if private {
		tr.sigma, err = run.Acct.SpendGaussianRho(fmt.Sprintf("round %d: mean of clipped gradients", t+1), 2*o.Clip/float64(n), len(sum), rhoRound)
		if err != nil {
			return nil, err
		}
		if roundHook != nil {
			roundHook(t, append([]float64(nil), sum...))
		}
		run.Rand.AddGaussian(sum, tr.sigma)
		if roundHook != nil {
			roundHook(t, append([]float64(nil), sum...))
		}
		tr.clipFrac = append(tr.clipFrac, float64(clipped)/float64(n))
	}
	step := mat.NewDense(eng.d, eng.k, sum)
	step.Scale(-o.Step, step)
	step.Add(u, step)
	return orthonormalize(run.Backend, step)
}

// evaluate appends the hold-out loss at U to the curve (with hold-out rows).
func (tr *fedrepTrace) evaluate(ctx context.Context, eng *fedrepEngine, u *mat.Dense, o *fedrepOptions) error {
	if o.split.Holdout <= 0 {
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
func (tr *fedrepTrace) finish(ctx context.Context, run *sdk.Run, eng *fedrepEngine, u *mat.Dense, prob *fedrepProblem, o *fedrepOptions) error {
	if o.split.OutputV {
		tr.heads = mat.NewDense(prob.lay.n(), o.Rank, nil)
	}
	var err error
	if tr.final, err = eng.fitHeads(ctx, u.RawMatrix().Data, tr.heads); err != nil {
		return err
	}
	tr.u = u
	if prob.back != nil {
		tr.u = mat.NewDense(prob.back.RawMatrix().Rows, o.Rank, nil)
		if err := run.Backend.Mul(tr.u, prob.back, false, u, false); err != nil {
			return fmt.Errorf("mapping U back: %w", err)
		}
	}
	return nil
}

// headsDoc describes the per-user heads of every FedRep-type estimator.
const headsDoc = "row i is the head v_i of the i-th user in increasing user-id order, fitted locally on the user's own rows (S¹, or S⁰ ∪ S¹ with head_data=all) for the released U; meant for user i only (not covered by the public guarantee, which is about U)"

// result assembles the outputs, the guarantee and the notes of a FedRep run.
func (tr *fedrepTrace) result(run *sdk.Run, prob *fedrepProblem, o *fedrepOptions, private bool, bud fedrepBudget) (*sdk.Result, error) {
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
	if o.split.Holdout > 0 {
		res.AddSeries("holdout_loss", tr.curve, sdk.Evaluation, "per-round "+lossName+" on the users' hold-out rows (index 0 = after initialization), heads refitted on S¹ each round; computed from raw data: NOT private")
		res.AddScalar("holdout_loss", tr.final, sdk.Evaluation, "final "+lossName+" on the users' hold-out rows; computed from raw data: NOT private")
	}
	if private {
		tr.addPrivate(res, run, prob, o, bud)
	} else {
		res.Guarantee = privacy.Guarantee{Kind: privacy.None}
		res.Notes = append(res.Notes, "non-private reference: computed from the raw data without clipping or noise")
	}
	if o.Theory {
		res.AddSeries("skipped_fraction", tr.skipFrac, sdk.Evaluation, "theory mode: per round, the fraction of users whose training half could not feed the round's two fresh batches and who contributed zero (computed from raw data: NOT private)")
		res.Notes = append(res.Notes, fmt.Sprintf("theory mode: fresh disjoint batches of %d rows per round; a user without 2·%d·(t+1) training rows sits out round t (DERIVATIONS.md §3.3)", o.Batch, o.Batch))
	}
	return res, nil
}

// addPrivate adds the noise scales, the guarantee and the budget note of a
// private FedRep run.
func (tr *fedrepTrace) addPrivate(res *sdk.Result, run *sdk.Run, prob *fedrepProblem, o *fedrepOptions, bud fedrepBudget) {
	n, T := prob.lay.n(), o.Iterations
	if o.Init == "private" {
		res.AddScalar("sigma_init", tr.sigmaInit, sdk.Public, "std of the symmetric Gaussian noise on the initialization's mean U-statistic")
		res.AddScalar("init_clipped_fraction", tr.initClipFrac, sdk.Evaluation, "fraction of users whose U-statistic was clipped (computed from raw data: not private)")
	}
	res.AddScalar("sigma", tr.sigma, sdk.Public, "per-entry std of the Gaussian noise added to the mean clipped gradient in each round")
	res.AddScalar("rho_init", bud.rhoInit, sdk.Public, "zCDP cost of the initialization")
	res.AddScalar("rho_rounds", bud.rhoRound*float64(T), sdk.Public, "zCDP cost of the T rounds")
	res.AddSeries("clipped_fraction", tr.clipFrac, sdk.Evaluation, "per round, the fraction of users whose gradient was clipped (computed from raw data: NOT private; use it to tune ψ on synthetic data)")
	res.Guarantee = privacy.Guarantee{Kind: privacy.ZCDP,
		Neighbours: "one user's whole data replaced (user level, n public)",
		Assumptions: []string{fmt.Sprintf("public clip ψ = %g and ψ_init = %g (worst case: clipping holds for any data)", o.Clip, o.InitClip),
			fmt.Sprintf("number of users n = %d public", n)}}
	if tr.heads != nil {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, perUserAssumption)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("zCDP split: initialization ρ = %.4g, rounds ρ = %.4g (%d × %.4g); replace-one sensitivity 2ψ/n = %.4g per round (DERIVATIONS.md §3.2)", bud.rhoInit, bud.rhoRound*float64(T), T, bud.rhoRound, 2*o.Clip/float64(n)))
}

// initialU returns the starting U: the top-k eigenvectors of the (noisy,
// when private) mean of clipped U-statistics (DERIVATIONS.md §2), or a
// random orthonormal matrix.
func initialU(ctx context.Context, run *sdk.Run, prob *fedrepProblem, o *fedrepOptions, private bool, rhoInit float64, tr *fedrepTrace) (*mat.Dense, error) {
	_, d := prob.x.Dims()
	n := prob.lay.n()
	if o.Init == "random" {
		return randomOrthonormal(run, d, o.Rank)
	}
	z, clipped, err := ustatAggregate(ctx, run.Backend, prob.x, prob.y, prob.lay, o.InitClip)
	if err != nil {
		return nil, fmt.Errorf("initialization: %w", err)
	}
	if private {
		tr.sigmaInit, err = run.Acct.SpendGaussianRho("init: mean of clipped U-statistics Z_i (upper triangle)", 2*o.InitClip/float64(n), d*(d+1)/2, rhoInit)
		if err != nil {
			return nil, fmt.Errorf("initialization: %w", err)
		}
		run.Rand.AddSymmetricGaussian(z, tr.sigmaInit)
		tr.initClipFrac = float64(clipped) / float64(n)
	}
	_, vecs, err := run.Backend.EigSymTop(z, o.Rank)
	if err != nil {
		return nil, fmt.Errorf("initialization: top-%d eigenvectors: %w", o.Rank, err)
	}
	return vecs, nil
}

// roundHook, when set (tests only), sees each private round's mean clipped
// gradient before and after the noise is added.
var roundHook func(t int, v []float64)
