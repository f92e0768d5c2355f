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

// fedrepSetup is the validated configuration of a FedRep run.
type fedrepSetup struct {
	lay    *layout
	k, T   int
	eta    float64
	theory bool
	batch  int
}

func setupFedRep(run *sdk.Run) (*fedrepSetup, error) {
	p := run.Params
	k, T := p.Int("rank"), p.Int("iterations")
	d := run.Data.P()
	if k > d {
		return nil, sdk.BadRequest("rank %d exceeds the feature dimension %d", k, d)
	}
	lay, err := newLayout(run.Data, p.Float("local_fraction"), p.Float("holdout"))
	if err != nil {
		return nil, err
	}
	s := &fedrepSetup{lay: lay, k: k, T: T, eta: p.Float("step"), theory: p.String("mode") == "theory"}
	if s.theory {
		// The batch is a public parameter: it is never derived from the
		// users' row counts, which are private under user-level neighbours.
		b := p.Int("batch")
		if b == 0 {
			return nil, sdk.BadRequest("mode=theory needs an explicit batch (the public size b of each of the two fresh batches per round, b ≥ rank %d); it is never derived from the data", k)
		}
		if b < k {
			return nil, sdk.BadRequest("mode=theory: batch %d < rank %d (the local least squares would be singular)", b, k)
		}
		s.batch = b
	}
	return s, nil
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

// fedrepBudget is the per-step noise of a private run.
type fedrepBudget struct {
	rhoInit, rhoRound float64 // per-round ρ
}

func planFedRepBudget(run *sdk.Run, n, T int, psi float64, privInit bool) (fedrepBudget, error) {
	p := run.Params
	rho, err := run.Acct.TotalRho()
	if err != nil {
		return fedrepBudget{}, err
	}
	var b fedrepBudget
	switch p.String("calibration") {
	case "paper":
		g := run.Acct.Grant()
		if g.Kind != privacy.GrantApprox {
			return b, sdk.BadRequest("calibration=paper needs an (ε, δ) grant, got a %s grant", g.Kind)
		}
		sigma := psi * math.Sqrt(48*float64(T)*math.Log(1.25/g.Delta)) / (float64(n) * g.Epsilon)
		b.rhoRound = privacy.RhoOfGaussian(2*psi/float64(n), sigma)
		rest := rho - float64(T)*b.rhoRound
		if rest <= 0 {
			return b, sdk.BadRequest("calibration=paper: the paper's σ̂ = %.4g costs ρ = %.4g over %d rounds, more than the grant's ρ = %.4g under replace-one neighbours: %w", sigma, float64(T)*b.rhoRound, T, rho, privacy.ErrOverBudget)
		}
		if privInit {
			b.rhoInit = rest * (1 - 1e-9)
		}
	default:
		share := p.Float("init_share")
		if !privInit {
			share = 0
		}
		b.rhoInit = share * rho
		b.rhoRound = (1 - share) * rho / float64(T)
	}
	return b, nil
}

// Fit implements sdk.Estimator.
func (PrivateFedRep) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	return fitFedRep(ctx, run, true, lossSquared, run.Data.X, run.Data.Y, nil)
}

// Fit implements sdk.Estimator.
func (NonPrivateFedRep) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	return fitFedRep(ctx, run, false, lossSquared, run.Data.X, run.Data.Y, nil)
}

// fitFedRep runs (Private) FedRep on features x (the data set's X, or a
// projection of it) and responses y, with U returned as back·U when back
// is not nil.
func fitFedRep(ctx context.Context, run *sdk.Run, private bool, loss lossKind, x *mat.Dense, y []float64, back *mat.Dense) (*sdk.Result, error) {
	s, err := setupFedRep(run)
	if err != nil {
		return nil, err
	}
	p := run.Params
	_, d := x.Dims()
	if s.k > d {
		return nil, sdk.BadRequest("rank %d exceeds the working dimension %d", s.k, d)
	}
	n := s.lay.n()
	psi, psiInit := math.Inf(1), math.Inf(1)
	initMode := p.String("init")
	if private {
		psi, psiInit = p.Float("clip"), p.Float("init_clip")
	}
	var bud fedrepBudget
	if private {
		// All checks happen here, before any spend.
		if bud, err = planFedRepBudget(run, n, s.T, psi, initMode == "private"); err != nil {
			return nil, err
		}
	}
	eng := newFedrepEngine(x, y, s.lay, s.k, psi, loss)
	eng.headAll = p.String("head_data") == "all"
	if s.theory {
		eng.theory, eng.batch = true, s.batch
		eng.perm = theoryPerm(s.lay, run.Rand.Split(), run.Data.N())
	}
	res := &sdk.Result{}

	// Initialization.
	run.Progress("init", 0, 1)
	u, err := initialU(ctx, run, x, y, s.lay, s.k, initMode, private, psiInit, bud.rhoInit, res)
	if err != nil {
		return nil, err
	}
	run.Progress("init", 1, 1)

	holdout := p.Float("holdout") > 0
	var curve []float64
	if holdout {
		l, err := eng.fitHeads(ctx, u.RawMatrix().Data, nil)
		if err != nil {
			return nil, err
		}
		curve = append(curve, l)
	}
	clipFrac := make([]float64, 0, s.T)
	skipFrac := make([]float64, 0, s.T)
	var sigma float64
	step := mat.NewDense(d, s.k, nil)
	for t := 0; t < s.T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, clipped, err := eng.aggregate(ctx, u.RawMatrix().Data, t)
		if err != nil {
			return nil, err
		}
		skipFrac = append(skipFrac, float64(eng.skipped())/float64(n))
		sr := step.RawMatrix().Data
		for i, v := range sum {
			sr[i] = v / float64(n)
		}
		if private {
			sigma, err = run.Acct.SpendGaussianRho(fmt.Sprintf("round %d: mean of clipped gradients", t+1), 2*psi/float64(n), d*s.k, bud.rhoRound)
			if err != nil {
				return nil, fmt.Errorf("round %d: %w", t+1, err)
			}
			if roundHook != nil {
				roundHook(t, append([]float64(nil), sr...))
			}
			run.Rand.AddGaussian(sr, sigma)
			if roundHook != nil {
				roundHook(t, append([]float64(nil), sr...))
			}
			clipFrac = append(clipFrac, float64(clipped)/float64(n))
		}
		step.Scale(-s.eta, step)
		step.Add(u, step)
		if u, err = orthonormalize(run.Backend, step); err != nil {
			return nil, fmt.Errorf("round %d: %w", t+1, err)
		}
		if holdout {
			l, err := eng.fitHeads(ctx, u.RawMatrix().Data, nil)
			if err != nil {
				return nil, err
			}
			curve = append(curve, l)
		}
		run.Progress("rounds", t+1, s.T)
	}

	var heads *mat.Dense
	if p.Bool("output_v") {
		heads = mat.NewDense(n, s.k, nil)
	}
	final, err := eng.fitHeads(ctx, u.RawMatrix().Data, heads)
	if err != nil {
		return nil, err
	}
	out := u
	if back != nil {
		out = mat.NewDense(back.RawMatrix().Rows, s.k, nil)
		if err := run.Backend.Mul(out, back, false, u, false); err != nil {
			return nil, fmt.Errorf("mapping U back: %w", err)
		}
	}
	uDoc := "shared representation U (d×k, orthonormal columns)"
	if back != nil {
		uDoc = "shared representation U = Mᵀ Ũ (d×k) mapped back from the public projection"
	}
	res.AddMatrix("U", out, sdk.Public, uDoc)
	if heads != nil {
		res.AddMatrix("V", heads, sdk.PerUser, "row i is the head v_i of the i-th user in increasing user-id order, fitted locally on the user's own rows (S¹, or S⁰ ∪ S¹ with head_data=all) for the released U; meant for user i only (not covered by the public guarantee, which is about U)")
		addUserIDs(res, run.Data)
	}
	lossName := "mean squared error"
	if loss == lossLogistic {
		lossName = "0-1 error"
	}
	if holdout {
		res.AddSeries("holdout_loss", curve, sdk.Evaluation, "per-round "+lossName+" on the users' hold-out rows (index 0 = after initialization), heads refitted on S¹ each round; computed from raw data: NOT private")
		res.AddScalar("holdout_loss", final, sdk.Evaluation, "final "+lossName+" on the users' hold-out rows; computed from raw data: NOT private")
	}
	if private {
		res.AddScalar("sigma", sigma, sdk.Public, "per-entry std of the Gaussian noise added to the mean clipped gradient in each round")
		res.AddScalar("rho_init", bud.rhoInit, sdk.Public, "zCDP cost of the initialization")
		res.AddScalar("rho_rounds", bud.rhoRound*float64(s.T), sdk.Public, "zCDP cost of the T rounds")
		res.AddSeries("clipped_fraction", clipFrac, sdk.Evaluation, "per round, the fraction of users whose gradient was clipped (computed from raw data: NOT private; use it to tune ψ on synthetic data)")
		res.Guarantee = privacy.Guarantee{Kind: privacy.ZCDP,
			Neighbours: "one user's whole data replaced (user level, n public)",
			Assumptions: []string{fmt.Sprintf("public clip ψ = %g and ψ_init = %g (worst case: clipping holds for any data)", psi, psiInit),
				fmt.Sprintf("number of users n = %d public", n)}}
		if heads != nil {
			res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, perUserAssumption)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("zCDP split: initialization ρ = %.4g, rounds ρ = %.4g (%d × %.4g); replace-one sensitivity 2ψ/n = %.4g per round", bud.rhoInit, bud.rhoRound*float64(s.T), s.T, bud.rhoRound, 2*psi/float64(n)))
	} else {
		res.Guarantee = privacy.Guarantee{Kind: privacy.None}
		res.Notes = append(res.Notes, "non-private reference: computed from the raw data without clipping or noise")
	}
	if s.theory {
		res.AddSeries("skipped_fraction", skipFrac, sdk.Evaluation, "theory mode: per round, the fraction of users whose training half could not feed the round's two fresh batches and who contributed zero (computed from raw data: NOT private)")
		res.Notes = append(res.Notes, fmt.Sprintf("theory mode: fresh disjoint batches of %d rows per round; a user without 2·%d·(t+1) training rows sits out round t", s.batch, s.batch))
	}
	return res, nil
}

// initialU returns the starting U: the top-k eigenvectors of the (noisy,
// when private) mean of clipped U-statistics (003 Alg. 2), or a random
// orthonormal matrix.
func initialU(ctx context.Context, run *sdk.Run, x *mat.Dense, y []float64, lay *layout, k int, mode string, private bool, psiInit, rhoInit float64, res *sdk.Result) (*mat.Dense, error) {
	_, d := x.Dims()
	n := lay.n()
	if mode == "random" {
		return randomOrthonormal(run, d, k)
	}
	z, clipped, err := ustatAggregate(ctx, run.Backend, x, y, lay, psiInit)
	if err != nil {
		return nil, fmt.Errorf("initialization: %w", err)
	}
	if private {
		sigma, err := run.Acct.SpendGaussianRho("init: mean of clipped U-statistics Z_i (upper triangle)", 2*psiInit/float64(n), d*(d+1)/2, rhoInit)
		if err != nil {
			return nil, fmt.Errorf("initialization: %w", err)
		}
		run.Rand.AddSymmetricGaussian(z, sigma)
		res.AddScalar("sigma_init", sigma, sdk.Public, "std of the symmetric Gaussian noise on the initialization's mean U-statistic")
		res.AddScalar("init_clipped_fraction", float64(clipped)/float64(n), sdk.Evaluation, "fraction of users whose U-statistic was clipped (computed from raw data: not private)")
	}
	_, vecs, err := run.Backend.EigSymTop(z, k)
	if err != nil {
		return nil, fmt.Errorf("initialization: top-%d eigenvectors: %w", k, err)
	}
	return vecs, nil
}

// roundHook, when set (tests only), sees each private round's mean clipped
// gradient before and after the noise is added.
var roundHook func(t int, v []float64)
