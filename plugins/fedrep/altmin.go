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

// NamePrivAltMin is the name of the Priv-AltMin estimator.
const NamePrivAltMin = "fedrep-privaltmin"

// PrivAltMin is the private alternating minimization of Jain, Rush, Smith,
// Song & Thakurta (NeurIPS 2021), the baseline Private FedRep improves on:
// each iteration takes a fresh, disjoint group of users, fits their heads
// v_j locally, and solves the U-step as an exact least squares in vec(U)
// from noised dk×dk and dk sufficient statistics.
type PrivAltMin struct{}

// Info implements sdk.Estimator.
func (PrivAltMin) Info() sdk.Info {
	ps := []sdk.ParamSpec{
		{Name: "rank", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Doc: "rank k of the shared representation U (d×k); k ≤ d and d·k ≤ 4096 (the dk×dk statistics are the scaling wall)"},
		{Name: "iterations", Type: sdk.Int, Default: "5", Min: sdk.Bound(1), Max: sdk.Bound(1e4), Doc: "number of U-steps T"},
		{Name: "clip_w", Type: sdk.Float, Default: "1e-4", Min: sdk.Bound(1e-300), Doc: "c_W: ℓ2 bound on each W = vec(x vᵀ) (public); the paper's experiment uses 1e-4 for both clips, which normalizes every sample"},
		{Name: "clip_y", Type: sdk.Float, Default: "1e-4", Min: sdk.Bound(1e-300), Doc: "c_y: bound on |y| (public)"},
		{Name: "portion", Type: sdk.Int, Default: "5", Min: sdk.Bound(1), Doc: "at most this many training rows per user enter the U-step statistics (public: the sensitivity scales with it)"},
		{Name: "groups", Type: sdk.String, Default: "disjoint", Choices: []string{"disjoint", "all"},
			Doc: "disjoint: T disjoint random groups of about n/T users, one per iteration (Jain et al.; parallel composition, each iteration gets the whole loop budget); all: every user in every iteration (the public experiment code; sequential composition over T)"},
		{Name: "init", Type: sdk.String, Default: "private", Choices: []string{"private", "random"}, Doc: "private: the same private U-statistic start as fedrep-private (DERIVATIONS.md §2); random: data-independent"},
		{Name: "init_clip", Type: sdk.Float, Default: "50", Min: sdk.Bound(1e-12), Doc: "ψ_init: Frobenius bound on each user's U-statistic (public)"},
		{Name: "init_share", Type: sdk.Float, Default: "0.2", Min: sdk.Bound(0.001), Max: sdk.Bound(0.999), Doc: "fraction of ρ spent on the initialization"},
		{Name: "a_share", Type: sdk.Float, Default: "0.5", Min: sdk.Bound(0.01), Max: sdk.Bound(0.99), Doc: "fraction of the loop's ρ spent on the dk×dk statistic A (the rest goes to b)"},
		{Name: "calibration", Type: sdk.String, Default: "zcdp", Choices: []string{"zcdp", "paper"},
			Doc: "zcdp: exact replace-one zCDP, ρ split init_share / (1 − init_share) and a_share between A and b; paper: Jain et al.'s noise multiplier Δ = √(8 ln(1/δ))/ε on both statistics (σ = sensitivity·Δ; needs an (ε, δ) grant with ε ≤ ln(1/δ), and with groups=all it is multiplied by √T), their true zCDP cost is what is recorded and the initialization gets the rest of ρ"},
		{Name: "ridge", Type: sdk.Float, Default: "1", Min: sdk.Bound(0), Doc: "ridge added to the noisy A before the solve, in units of c_W²·portion per user of the group (public quantities only; post-processing). 1 matches the public experiment code (ridge 1e-8 on its normalized statistics with c = 1e-4); it dominates the noisy A, so the U-step then behaves like U ∝ reshape(b). 0 = plain solve, which the noise ruins at n = 20000"},
	}
	ps = append(ps, splitParams()...)
	return sdk.Info{
		Name: NamePrivAltMin, Version: "0.1.0",
		Summary:  "Priv-AltMin (Jain et al. 2021): private alternating minimization with noised dk×dk least-squares statistics over disjoint user groups",
		DataKind: data.Users,
		Description: `Private alternating minimization of Jain et al. (NeurIPS 2021), as reconstructed from the appendix
(DERIVATIONS.md §5). Users are split into T disjoint groups, one per iteration. In an iteration
each user of the group fits its head v_j by least squares on its training half for the current U;
the server then releases A = Σ W Wᵀ (dk×dk, W = vec(x v_jᵀ) clipped to ℓ2 norm c_W) and
b = Σ clip(y, c_y) W with Gaussian noise (symmetric on A), solves A u = b for vec(U) and
re-orthonormalizes by QR. A is accumulated through the Kronecker identity
A_j = (Σ_i t_i² x̂_i x̂_iᵀ) ⊗ (v̂_j v̂_jᵀ), which costs O(m d² + d²k²) per user instead of O(m d²k²).

Privacy: user level, replace-one, worst case. With at most 'portion' rows per user, one user moves
A by at most √2·portion·c_W² in Frobenius norm (both contributions are PSD) and b by at most
2·portion·c_W·c_y. With disjoint groups a user enters one iteration only, so the loop costs one
iteration's ρ (parallel composition); the start (shared with fedrep-private) is composed on top.`,
		Guarantee:  "ρ-zCDP (hence (ε, δ)-DP) for U, user level, worst case (replace one user's whole data)",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Params:     ps,
		References: []string{"P. Jain, J. Rush, A. Smith, S. Song, A. Thakurta. Differentially Private Model Personalization. NeurIPS 2021.", refFedRep[0]},
	}
}

// altminOptions are the bound parameters of fedrep-privaltmin.
type altminOptions struct {
	Rank, Iterations int
	ClipW, ClipY     float64 // c_W, c_y
	Portion          int     // rows per user entering the statistics, at most
	Disjoint         bool    // groups=disjoint
	Init             string
	InitClip         float64
	InitShare        float64
	AShare           float64
	Calibration      string
	Ridge            float64
	split            splitOptions
}

func bindAltMin(p sdk.Params) altminOptions {
	return altminOptions{Rank: p.Int("rank"), Iterations: p.Int("iterations"), ClipW: p.Float("clip_w"), ClipY: p.Float("clip_y"),
		Portion: p.Int("portion"), Disjoint: p.String("groups") == "disjoint", Init: p.String("init"), InitClip: p.Float("init_clip"),
		InitShare: p.Float("init_share"), AShare: p.Float("a_share"), Calibration: p.String("calibration"), Ridge: p.Float("ridge"),
		split: bindSplit(p)}
}

// sensitivities returns Δ_A = √2·portion·c_W² and Δ_b = 2·portion·c_W·c_y
// (DERIVATIONS.md §5.1).
func (o *altminOptions) sensitivities() (sensA, sensB float64) {
	return math.Sqrt2 * float64(o.Portion) * o.ClipW * o.ClipW, 2 * float64(o.Portion) * o.ClipW * o.ClipY
}

// check refuses, from public quantities only, the requests Priv-AltMin
// cannot run.
func (o *altminOptions) check(d, n int) error {
	k := o.Rank
	if k > d {
		return sdk.BadRequest("rank %d exceeds the feature dimension %d", k, d)
	}
	if d*k > 4096 {
		return sdk.BadRequest("d·k = %d exceeds 4096: the dk×dk statistics would need %.0f MB and an O((dk)³) solve per iteration (use fedrep-private)", d*k, 8*float64(d*k)*float64(d*k)/1e6)
	}
	if o.Disjoint && n < o.Iterations {
		return sdk.BadRequest("disjoint groups: %d users cannot form %d non-empty groups", n, o.Iterations)
	}
	sensA, sensB := o.sensitivities()
	if math.IsInf(sensA, 0) || math.IsInf(sensB, 0) || sensA == 0 || sensB == 0 {
		return sdk.BadRequest("clip_w = %g, clip_y = %g give a sensitivity that is zero or not finite", o.ClipW, o.ClipY)
	}
	return nil
}

// altminBudget is the zCDP cost of each release of a Priv-AltMin run.
type altminBudget struct {
	rhoInit, rhoA, rhoB float64 // per loop with disjoint groups, per iteration otherwise
}

// Fit implements sdk.Estimator.
func (PrivAltMin) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := bindAltMin(run.Params)
	d, n := run.Data.P(), run.Data.NumUsers()
	if err := o.check(d, n); err != nil {
		return nil, err
	}
	lay, err := newLayout(run.Data, o.split.LocalFraction, o.split.Holdout)
	if err != nil {
		return nil, err
	}
	rho, err := run.Acct.TotalRho()
	if err != nil {
		return nil, err
	}
	share := o.InitShare
	if o.Init != "private" {
		share = 0
	}
	sensA, sensB := o.sensitivities()
	var bud altminBudget
	bud.rhoInit, bud.rhoA, bud.rhoB, err = planAltMinBudget(o.Calibration, run.Acct.Grant(), rho, share, o.AShare, o.Iterations, o.Disjoint, sensA, sensB)
	if err != nil {
		return nil, err
	}
	prob := &fedrepProblem{x: run.Data.X, y: run.Data.Y, lay: lay, loss: lossSquared}
	tr, sig, err := privAltMin(ctx, run, prob, &o, bud)
	if err != nil {
		return nil, err
	}
	return altminResult(run, prob, &o, bud, tr, sig), nil
}

// altminSigmas are the noise scales of the two statistics.
type altminSigmas struct{ a, b float64 }

// privAltMin is Priv-AltMin (DERIVATIONS.md §5): the private start, then
// T U-steps, each an exact least squares in vec(U) from the noised
// statistics A and b of one group of users (a disjoint group per step, or
// every user), then every user's head on its own rows.
func privAltMin(ctx context.Context, run *sdk.Run, prob *fedrepProblem, o *altminOptions, bud altminBudget) (*fedrepTrace, altminSigmas, error) {
	var sig altminSigmas
	n, k, T := prob.lay.n(), o.Rank, o.Iterations
	tr := &fedrepTrace{}
	fo := &fedrepOptions{Rank: k, Init: o.Init, InitClip: o.InitClip, split: o.split}
	eng := newFedrepEngine(prob.x, prob.y, prob.lay, k, math.Inf(1), lossSquared)
	eng.headAll = o.split.HeadAll
	run.Progress("init", 0, 1)
	u, err := initialU(ctx, run, prob, fo, o.Init == "private", bud.rhoInit, tr)
	if err != nil {
		return nil, sig, err
	}
	run.Progress("init", 1, 1)
	groups := altminGroups(run, n, T, o.Disjoint)
	var relA, relB *altminRelease
	if o.Disjoint {
		note := fmt.Sprintf("all %d iterations (disjoint user groups: parallel composition)", T)
		if relA, relB, err = declareAltMin(run, o, bud, note); err != nil {
			return nil, sig, err
		}
	}
	if err := tr.evaluate(ctx, eng, u, fo); err != nil {
		return nil, sig, err
	}
	for t := 0; t < T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, sig, err
		}
		if !o.Disjoint {
			if relA, relB, err = declareAltMin(run, o, bud, fmt.Sprintf("iteration %d", t+1)); err != nil {
				return nil, sig, err
			}
		}
		if u, err = altminStep(ctx, run, eng, u, groups[t], o, relA, relB); err != nil {
			return nil, sig, fmt.Errorf("iteration %d: %w", t+1, err)
		}
		if err := tr.evaluate(ctx, eng, u, fo); err != nil {
			return nil, sig, err
		}
		run.Progress("iterations", t+1, T)
	}
	sig.a, sig.b = relA.sigma, relB.sigma
	return tr, sig, tr.finish(ctx, run, eng, u, prob, fo)
}

// altminGroups returns the users of each iteration: a data-independent
// random partition into T groups (DERIVATIONS.md §5.2), or every user T
// times.
func altminGroups(run *sdk.Run, n, T int, disjoint bool) [][]int32 {
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	out := make([][]int32, T)
	if !disjoint {
		for t := range out {
			out[t] = order
		}
		return out
	}
	r := run.Rand.Split().Rand()
	r.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
	for t := range out {
		lo, hi := chunkBounds(n, T, t)
		out[t] = order[lo:hi]
	}
	return out
}

// altminRelease is a declared Gaussian step of Priv-AltMin: its noise
// scale.
type altminRelease struct{ sigma float64 }

// declareAltMin declares the two Gaussian steps of one U-step (or of the
// whole loop with disjoint groups).
func declareAltMin(run *sdk.Run, o *altminOptions, bud altminBudget, what string) (*altminRelease, *altminRelease, error) {
	dk := run.Data.P() * o.Rank
	sensA, sensB := o.sensitivities()
	sa, err := run.Acct.SpendGaussianRho("U-step statistic A = Σ W Wᵀ, "+what, sensA, dk*(dk+1)/2, bud.rhoA)
	if err != nil {
		return nil, nil, err
	}
	sb, err := run.Acct.SpendGaussianRho("U-step statistic b = Σ ỹ W, "+what, sensB, dk, bud.rhoB)
	if err != nil {
		return nil, nil, err
	}
	return &altminRelease{sigma: sa}, &altminRelease{sigma: sb}, nil
}

// altminStep is one private U-step: the statistics of the group, their
// noise, the ridge solve in public units (DERIVATIONS.md §5.5) and a QR.
func altminStep(ctx context.Context, run *sdk.Run, eng *fedrepEngine, u *mat.Dense, group []int32, o *altminOptions, relA, relB *altminRelease) (*mat.Dense, error) {
	a, b, err := altminStats(ctx, eng, u.RawMatrix().Data, group, o.ClipW, o.ClipY, o.Portion)
	if err != nil {
		return nil, err
	}
	run.Rand.AddSymmetricGaussian(a, relA.sigma)
	run.Rand.AddGaussian(b, relB.sigma)
	// The ridge is post-processing in public units: the bound on the rows a
	// user contributes (portion) times the group size, never the users'
	// actual row counts, which are private.
	vecU, err := symSolve(run, a, b, o.Ridge*o.ClipW*o.ClipW*float64(o.Portion*len(group)))
	if err != nil {
		return nil, err
	}
	return orthonormalize(run.Backend, mat.NewDense(eng.d, eng.k, vecU))
}

// altminResult assembles the outputs, guarantee and notes of a run.
func altminResult(run *sdk.Run, prob *fedrepProblem, o *altminOptions, bud altminBudget, tr *fedrepTrace, sig altminSigmas) *sdk.Result {
	res := &sdk.Result{}
	n := prob.lay.n()
	res.AddMatrix("U", tr.u, sdk.Public, "shared representation U (d×k, orthonormal columns)")
	if tr.heads != nil {
		res.AddMatrix("V", tr.heads, sdk.PerUser, headsDoc)
		addUserIDs(res, run.Data)
	}
	if o.split.Holdout > 0 {
		res.AddSeries("holdout_loss", tr.curve, sdk.Evaluation, "per-iteration mean squared error on the users' hold-out rows (index 0 = after initialization); computed from raw data: NOT private")
		res.AddScalar("holdout_loss", tr.final, sdk.Evaluation, "final mean squared error on the users' hold-out rows; computed from raw data: NOT private")
	}
	if o.Init == "private" {
		res.AddScalar("sigma_init", tr.sigmaInit, sdk.Public, "std of the symmetric Gaussian noise on the initialization's mean U-statistic")
		res.AddScalar("init_clipped_fraction", tr.initClipFrac, sdk.Evaluation, "fraction of users whose U-statistic was clipped (computed from raw data: not private)")
	}
	res.AddScalar("sigma_A", sig.a, sdk.Public, "std of the symmetric Gaussian noise on A in each iteration")
	res.AddScalar("sigma_b", sig.b, sdk.Public, "std of the Gaussian noise on b in each iteration")
	res.Guarantee = privacy.Guarantee{Kind: privacy.ZCDP,
		Neighbours: "one user's whole data replaced (user level, n public)",
		Assumptions: []string{fmt.Sprintf("public clips c_W = %g, c_y = %g, at most %d rows per user, ψ_init = %g (worst case)", o.ClipW, o.ClipY, o.Portion, o.InitClip),
			fmt.Sprintf("number of users n = %d public", n)}}
	if o.Disjoint {
		res.Guarantee.Assumptions[1] += "; the group partition is data independent"
	}
	if tr.heads != nil {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, perUserAssumption)
	}
	sensA, sensB := o.sensitivities()
	res.Notes = append(res.Notes, fmt.Sprintf("zCDP split: initialization ρ = %.4g, A ρ = %.4g, b ρ = %.4g per %s; sensitivities Δ_A = %.4g, Δ_b = %.4g (DERIVATIONS.md §5.1)",
		bud.rhoInit, bud.rhoA, bud.rhoB, map[bool]string{true: "loop (disjoint groups)", false: "iteration"}[o.Disjoint], sensA, sensB))
	return res
}

// planAltMinBudget splits the total zCDP budget rho of a Priv-AltMin run
// into the initialization's ρ and the ρ of each release of A and of b (per
// loop with disjoint groups, per iteration otherwise).
//
// calibration "zcdp" shares rho as init_share / (1 − init_share) and the
// loop's part as aShare / (1 − aShare). Calibration "paper" reproduces the
// accounting of Jain et al. (DERIVATIONS.md §5.4): both statistics get
// Gaussian noise σ = sensitivity·Δ with the noise multiplier
// Δ = √(8 ln(1/δ))/ε, which they show suffices for (ε, δ) when
// ε ≤ ln(1/δ); with every user in every iteration the T releases compose
// sequentially, so Δ is multiplied by √T. The cost recorded is the true
// zCDP cost of that σ (Δ_sens²/(2σ²) per release); the initialization gets
// whatever remains of rho.
func planAltMinBudget(calibration string, g privacy.Grant, rho, share, aShare float64, T int, disjoint bool, sensA, sensB float64) (rhoInit, rhoA, rhoB float64, err error) {
	switch calibration {
	case "paper":
		if g.Kind != privacy.GrantApprox {
			return 0, 0, 0, sdk.BadRequest("calibration=paper needs an (ε, δ) grant, got a %s grant", g.Kind)
		}
		if g.Epsilon > math.Log(1/g.Delta) {
			return 0, 0, 0, sdk.BadRequest("calibration=paper: Jain et al.'s multiplier √(8 ln(1/δ))/ε needs ε ≤ ln(1/δ) = %.4g, got ε = %g: %w", math.Log(1/g.Delta), g.Epsilon, privacy.ErrInvalidBudget)
		}
		mult := math.Sqrt(8*math.Log(1/g.Delta)) / g.Epsilon
		releases := 1.0
		if !disjoint {
			mult *= math.Sqrt(float64(T))
			releases = float64(T)
		}
		rhoA = privacy.RhoOfGaussian(sensA, sensA*mult)
		rhoB = privacy.RhoOfGaussian(sensB, sensB*mult)
		rest := rho - releases*(rhoA+rhoB)
		if rest <= 0 {
			return 0, 0, 0, sdk.BadRequest("calibration=paper: the loop costs ρ = %.4g, more than the grant's ρ = %.4g: %w", releases*(rhoA+rhoB), rho, privacy.ErrOverBudget)
		}
		if share > 0 {
			rhoInit = rest * (1 - 1e-9)
		}
		return rhoInit, rhoA, rhoB, nil
	default:
		rhoInit = share * rho
		rhoLoop := (1 - share) * rho
		rhoA, rhoB = aShare*rhoLoop, (1-aShare)*rhoLoop
		if !disjoint {
			rhoA, rhoB = rhoA/float64(T), rhoB/float64(T)
		}
		return rhoInit, rhoA, rhoB, nil
	}
}

// symSolve solves (a + ridge·I) u = b for symmetric a through its
// eigendecomposition (a may be indefinite after noise), dropping
// eigen-directions whose shifted eigenvalue is numerically zero.
func symSolve(run *sdk.Run, a *mat.SymDense, b []float64, ridge float64) ([]float64, error) {
	vals, vecs, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("U-step solve: %w", err)
	}
	n := len(b)
	maxAbs := 0.0
	for _, v := range vals {
		maxAbs = math.Max(maxAbs, math.Abs(v+ridge))
	}
	out := make([]float64, n)
	vr := vecs.RawMatrix()
	for j, l := range vals {
		l += ridge
		if math.Abs(l) <= 1e-12*maxAbs {
			continue
		}
		var c float64
		for i := 0; i < n; i++ {
			c += vr.Data[i*vr.Stride+j] * b[i]
		}
		c /= l
		for i := 0; i < n; i++ {
			out[i] += c * vr.Data[i*vr.Stride+j]
		}
	}
	if !allFinite(out) {
		return nil, fmt.Errorf("U-step solve: solution is not finite")
	}
	return out, nil
}
