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
)

// NamePrivAltMin is the name of the Priv-AltMin estimator.
const NamePrivAltMin = "fedrep-privaltmin"

// PrivAltMin is the private alternating minimization of Jain, Rush, Smith,
// Song & Thakurta (NeurIPS 2021), the baseline Private FedRep improves on:
// each iteration takes a fresh, disjoint group of users, fits their heads
// v_j locally, and solves the U-step as an exact least squares in vec(U)
// from noised dk×dk and dk sufficient statistics.
type PrivAltMin struct{ personal }

// Info implements sdk.Estimator.
func (PrivAltMin) Info() sdk.Info {
	return sdk.Info{
		Name: NamePrivAltMin, Version: "0.1.0",
		Summary:  "Priv-AltMin (Jain et al. 2021): private alternating minimization with noised dk×dk least-squares statistics over disjoint user groups",
		DataKind: data.Users,
		Description: `Private alternating minimization of Jain et al. (NeurIPS 2021), as reconstructed from the appendix
(DERIVATIONS.md §5, which also proves the sensitivities below). Users are split into T disjoint groups, one per iteration. In an iteration
each user of the group fits its head v_j by least squares on its training half for the current U;
the server then releases A = Σ W Wᵀ (dk×dk, W = vec(x v_jᵀ) clipped to ℓ2 norm c_W) and
b = Σ clip(y, c_y) W with Gaussian noise (symmetric on A), solves A u = b for vec(U) and
re-orthonormalizes by QR. A is accumulated through the Kronecker identity
A_j = (Σ_i t_i² x̂_i x̂_iᵀ) ⊗ (v̂_j v̂_jᵀ), which costs O(m d² + d²k²) per user instead of O(m d²k²).

Privacy: user level, replace-one, worst case. With at most 'portion' rows per user, one user moves
A by at most √2·portion·c_W² in Frobenius norm (both contributions are PSD) and b by at most
2·portion·c_W·c_y. With disjoint groups a user enters one iteration only, so the loop costs one
iteration's ρ (parallel composition); the start (shared with fedrep-private) is composed on top.`,
		Guarantee:  "(ε, δ)-DP for U by exact Gaussian composition (noise=exact, the default) or ρ-zCDP (noise=zcdp, paper), user level, worst case (replace one user's whole data)",
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP},
		Options:    altminOptions{},
		References: []string{"P. Jain, J. Rush, A. Smith, S. Song, A. Thakurta. Differentially Private Model Personalization. NeurIPS 2021.", refFedRep[0]},
	}
}

// altminPlan holds the per-step budgets of a Priv-AltMin run: the start's,
// and A's and b's (for the whole loop with disjoint groups, per iteration
// otherwise).
type altminPlan struct {
	init, a, b privacy.Budget
	tune       privacy.Budget // the private init_clip quantile (zero when given)
}

// Plan implements sdk.Planner for fedrep-altmin: the grant split
// (DERIVATIONS.md §5.3, §5.4) between the private init_clip quantile, the
// start and the statistics A and b, all Gaussian releases: with noise=zcdp
// init_share / (1 − init_share) and the loop's part a_share / (1 − a_share);
// with noise=paper the statistics get Jain et al.'s noise multiplier
// Δ = √(8 ln(1/δ))/ε (×√T with every user in every iteration), charged at
// its true zCDP cost, and the start gets what remains. Every refusal is
// decided from public quantities, before any spend.
func (o *altminOptions) Plan(s sdk.Shape, g privacy.Grant) (sdk.PlanSpec, error) {
	share := o.InitShare
	privInit := o.Init == "private"
	if !privInit {
		share = 0
	}
	steps := 1
	if !o.disjoint() {
		steps = o.Iterations.Value
	}
	rest := 1.0
	var shares []privacy.Share
	if o.autoInitClip() {
		w := tuneWeight(o.TuneShare, s.Users, 1, g)
		rest = 1 - w
		shares = append(shares, privacy.Share{Name: "tune", Weight: w, Mechanism: privacy.MechExponential})
	}
	wA, wB := o.AShare*(1-share)*rest, (1-o.AShare)*(1-share)*rest
	wInit := share * rest
	if o.Noise.Value == "paper" {
		var err error
		if wA, wB, err = paperAltMinWeights(g, o, steps); err != nil {
			return sdk.PlanSpec{}, err
		}
		wInit = (1 - wA - wB) * (1 - 1e-9)
	}
	shares = append(shares, privacy.Share{Name: "A", Weight: wA, Steps: steps, Mechanism: privacy.MechGaussian},
		privacy.Share{Name: "b", Weight: wB, Steps: steps, Mechanism: privacy.MechGaussian})
	if privInit {
		shares = append(shares, privacy.Share{Name: "init", Weight: wInit, Mechanism: privacy.MechGaussian})
	}
	return sdk.PlanSpec{Noise: planNoise(o.Noise.Value), Shares: shares}, nil
}

// altminBudgets reads the per-step budgets of a fit from its plan.
func altminBudgets(plan *privacy.Plan, o *altminOptions) (*altminPlan, error) {
	privInit := o.Init == "private"
	p := &altminPlan{}
	var err error
	if p.a, err = plan.Budget("A"); err == nil {
		p.b, err = plan.Budget("b")
	}
	if err == nil && privInit {
		p.init, err = plan.Budget("init")
	}
	if err == nil && o.autoInitClip() {
		p.tune, err = plan.Budget("tune")
	}
	return p, err
}

// paperAltMinWeights returns the shares of the grant's ρ that Jain et al.'s
// noise multiplier costs on A and b over steps releases each.
func paperAltMinWeights(g privacy.Grant, o *altminOptions, steps int) (wA, wB float64, err error) {
	if g.Kind != privacy.GrantApprox {
		return 0, 0, sdk.BadRequest("noise=paper needs an (ε, δ) grant, got a %s grant", g.Kind)
	}
	if g.Epsilon > math.Log(1/g.Delta) {
		return 0, 0, sdk.BadRequest("noise=paper: Jain et al.'s multiplier √(8 ln(1/δ))/ε needs ε ≤ ln(1/δ) = %.4g, got ε = %g: %w", math.Log(1/g.Delta), g.Epsilon, privacy.ErrInvalidBudget)
	}
	rho, err := totalRho(g)
	if err != nil {
		return 0, 0, err
	}
	mult := math.Sqrt(8*math.Log(1/g.Delta)) / g.Epsilon * math.Sqrt(float64(steps))
	sensA, sensB := o.sensitivities()
	wA = float64(steps) * privacy.RhoOfGaussian(sensA, sensA*mult) / rho
	wB = float64(steps) * privacy.RhoOfGaussian(sensB, sensB*mult) / rho
	if wA+wB >= 1 {
		return 0, 0, sdk.BadRequest("noise=paper: the loop costs ρ = %.4g, more than the grant's ρ = %.4g: %w", (wA+wB)*rho, rho, privacy.ErrOverBudget)
	}
	return wA, wB, nil
}

// Fit implements sdk.Estimator.
func (PrivAltMin) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[altminOptions](run)
	ud, err := newUsersData(run.Data, &o.splitOptions, &o.ridgeOptions, nil, lossSquared)
	if err != nil {
		return nil, err
	}
	prob := &fedrepProblem{data: ud, loss: lossSquared}
	plan, err := altminBudgets(run.Plan, o)
	if err != nil {
		return nil, err
	}
	tr, sig, err := privAltMin(ctx, run, prob, o, plan)
	if err != nil {
		return nil, err
	}
	return altminResult(run, prob, o, plan, tr, sig), nil
}

// altminSigmas are the noise scales of the two statistics.
type altminSigmas struct{ a, b float64 }

// privAltMin is Priv-AltMin (DERIVATIONS.md §5): the private start, then
// T U-steps, each an exact least squares in vec(U) from the noised
// statistics A and b of one group of users (a disjoint group per step, or
// every user), then every user's head on its own rows.
func privAltMin(ctx context.Context, run *sdk.Run, prob *fedrepProblem, o *altminOptions, plan *altminPlan) (*fedrepTrace, altminSigmas, error) {
	var sig altminSigmas
	n, k, T := prob.n(), o.Rank.Value, o.Iterations.Value
	tr := &fedrepTrace{}
	start := &fedrepConfig{rounds: &roundOptions{Rank: o.Rank}, splitOpts: &o.splitOptions, initClip: o.initClip(), init: o.Init, clipQ: o.ClipQuantile}
	var startPlan *fedrepPlan
	if o.Init == "private" {
		startPlan = &fedrepPlan{init: plan.init, tune: plan.tune}
		if o.autoInitClip() {
			startPlan.tunes = 1
		}
	}
	eng := prob.data
	eng.psi, eng.k = math.Inf(1), k
	run.Progress("init", 0, 1)
	u, err := initialU(ctx, run, prob, start, startPlan, tr)
	if err != nil {
		return nil, sig, err
	}
	tr.initClip = start.initClip
	run.Progress("init", 1, 1)
	groups := altminGroups(run, n, T, o.disjoint())
	var rel *altminRelease
	if o.disjoint() {
		note := fmt.Sprintf("all %d iterations (disjoint user groups: parallel composition)", T)
		if rel, err = declareAltMin(run, o, plan, note); err != nil {
			return nil, sig, err
		}
	}
	if err := tr.evaluate(ctx, eng, u, &o.splitOptions); err != nil {
		return nil, sig, err
	}
	for t := 0; t < T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, sig, err
		}
		if !o.disjoint() {
			if rel, err = declareAltMin(run, o, plan, fmt.Sprintf("iteration %d", t+1)); err != nil {
				return nil, sig, err
			}
		}
		if u, err = altminStep(ctx, run, eng, u, groups[t], o, rel); err != nil {
			return nil, sig, fmt.Errorf("iteration %d: %w", t+1, err)
		}
		if err := tr.evaluate(ctx, eng, u, &o.splitOptions); err != nil {
			return nil, sig, err
		}
		run.Progress("iterations", t+1, T)
	}
	sig.a, sig.b = rel.sigmaA, rel.sigmaB
	return tr, sig, tr.finish(ctx, run, eng, u, prob, &o.splitOptions, k)
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
		out[t] = order[t*n/T : (t+1)*n/T]
	}
	return out
}

// altminRelease holds the two declared Gaussian steps of one U-step (A
// and b) with groups=all, or of the whole loop with disjoint groups: then
// each statistic is one release drawn in T parts, one per group, as the
// parallel composition of DERIVATIONS.md §5.2 (one user enters one part).
type altminRelease struct {
	relA, relB     *privacy.Release       // groups=all
	partA, partB   *privacy.PartedRelease // disjoint groups
	sigmaA, sigmaB float64
}

// declareAltMin declares the two Gaussian steps of one U-step (or of the
// whole loop with disjoint groups).
func declareAltMin(run *sdk.Run, o *altminOptions, plan *altminPlan, what string) (*altminRelease, error) {
	dk := run.Data.P() * o.Rank.Value
	sensA, sensB := o.sensitivities()
	nameA, nameB := "U-step statistic A = Σ W Wᵀ, "+what, "U-step statistic b = Σ ỹ W, "+what
	r := &altminRelease{}
	var err error
	if o.disjoint() {
		T := o.Iterations.Value
		if r.partA, err = run.Acct.GaussianInParts(nameA, sensA, dk*(dk+1)/2, T, plan.a); err != nil {
			return nil, err
		}
		if r.partB, err = run.Acct.GaussianInParts(nameB, sensB, dk, T, plan.b); err != nil {
			return nil, err
		}
		r.sigmaA, r.sigmaB = r.partA.Scale(), r.partB.Scale()
		return r, nil
	}
	if r.relA, err = run.Acct.Gaussian(nameA, sensA, dk*(dk+1)/2, plan.a); err != nil {
		return nil, err
	}
	if r.relB, err = run.Acct.Gaussian(nameB, sensB, dk, plan.b); err != nil {
		return nil, err
	}
	r.sigmaA, r.sigmaB = r.relA.Scale(), r.relB.Scale()
	return r, nil
}

// noise adds the declared noise to one group's statistics.
func (r *altminRelease) noise(run *sdk.Run, a *mat.SymDense, b []float64) error {
	if r.partA != nil {
		if err := r.partA.AddSymPart(run.Rand, a); err != nil {
			return err
		}
		return r.partB.AddPart(run.Rand, b)
	}
	if err := r.relA.AddSym(run.Rand, a); err != nil {
		return err
	}
	return r.relB.Add(run.Rand, b)
}

// altminStep is one private U-step: the statistics of the group, their
// noise, the ridge solve in public units (DERIVATIONS.md §5.5) and a QR.
func altminStep(ctx context.Context, run *sdk.Run, eng *usersData, u *mat.Dense, group []int32, o *altminOptions, rel *altminRelease) (*mat.Dense, error) {
	a, b, err := eng.altminStats(ctx, u.RawMatrix().Data, group, o.ClipW, o.ClipY, o.Portion)
	if err != nil {
		return nil, err
	}
	if err := rel.noise(run, a, b); err != nil {
		return nil, err
	}
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
func altminResult(run *sdk.Run, prob *fedrepProblem, o *altminOptions, plan *altminPlan, tr *fedrepTrace, sig altminSigmas) *sdk.Result {
	res := &sdk.Result{}
	n := prob.n()
	res.AddMatrix("U", tr.u, sdk.Public, "shared representation U (d×k, orthonormal columns)")
	if tr.heads != nil {
		res.AddMatrix("V", tr.heads, sdk.PerUser, headsDoc)
		addUserIDs(res, run.Data)
	}
	if o.Holdout > 0 {
		res.AddSeries("holdout_curve", tr.curve, sdk.Evaluation, "per-iteration mean squared error on the users' hold-out rows (index 0 = after initialization); computed from raw data: NOT private")
		res.AddScalar("holdout_loss", tr.final, sdk.Evaluation, "final mean squared error on the users' hold-out rows; computed from raw data: NOT private")
	}
	if o.Init == "private" {
		res.AddScalar("sigma_init", tr.sigmaInit, sdk.Public, "std of the symmetric Gaussian noise on the initialization's mean U-statistic")
		res.AddScalar("init_clipped_fraction", tr.initClipFrac, sdk.Diagnostic, "fraction of users whose U-statistic was clipped (computed from raw data: not private)")
		how := "given"
		if o.autoInitClip() {
			how = fmt.Sprintf("chosen privately: the %g-quantile of the users' norms by the exponential mechanism, ρ = %.4g (DERIVATIONS.md §12)", o.ClipQuantile, plan.tune.Rho)
		}
		res.AddScalar("init_clip", tr.initClip, sdk.Public, "ψ_init, the bound on each user's U-statistic ("+how+")")
	}
	res.AddScalar("sigma_A", sig.a, sdk.Public, "std of the symmetric Gaussian noise on A in each iteration")
	res.AddScalar("sigma_b", sig.b, sdk.Public, "std of the Gaussian noise on b in each iteration")
	res.Guarantee = privacy.Guarantee{Kind: privacy.ZCDP,
		Neighbours: "one user's whole data replaced (user level, n public)",
		Assumptions: []string{fmt.Sprintf("public clips c_W = %g, c_y = %g, at most %d rows per user, ψ_init = %g (given, or released privately before use; worst case)", o.ClipW, o.ClipY, o.Portion, tr.initClip),
			fmt.Sprintf("number of users n = %d public", n)}}
	if o.disjoint() {
		res.Guarantee.Assumptions[1] += "; the group partition is data independent"
	}
	if tr.heads != nil {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, perUserAssumption)
	}
	sensA, sensB := o.sensitivities()
	res.Notes = append(res.Notes, noiseNote(o.Noise.Value))
	res.Notes = append(res.Notes, fmt.Sprintf("budget split (ρ units): initialization ρ = %.4g, A ρ = %.4g, b ρ = %.4g per %s; sensitivities Δ_A = %.4g, Δ_b = %.4g (DERIVATIONS.md §5.1)",
		plan.init.Rho, plan.a.Rho, plan.b.Rho, map[bool]string{true: "loop (disjoint groups)", false: "iteration"}[o.disjoint()], sensA, sensB))
	return res
}

// symSolve solves (a + ridge·I) u = b for symmetric a through its
// eigendecomposition (a may be indefinite after noise), dropping
// eigen-directions whose shifted eigenvalue is numerically zero.
func symSolve(run *sdk.Run, a *mat.SymDense, b []float64, ridge float64) ([]float64, error) {
	if out, ok := cholSolve(a, b, ridge); ok {
		return out, nil
	}
	vals, vecs, err := run.Backend.EigSym(a)
	if err != nil {
		return nil, fmt.Errorf("solving the U step: %w", err)
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
	if !kernel.AllFinite(out) {
		return nil, fmt.Errorf("solving the U step: the solution is not finite")
	}
	return out, nil
}

// cholSolve is the fast path of symSolve: when A + ridge·I is positive
// definite and well conditioned (the usual case: the ridge dominates the
// noise), its Cholesky solve equals the pseudo-inverse solution, at a sixth
// of the cost of the eigendecomposition. It reports false otherwise.
func cholSolve(a *mat.SymDense, b []float64, ridge float64) ([]float64, bool) {
	n := a.SymmetricDim()
	m := mat.NewSymDense(n, nil)
	m.CopySym(a)
	if ridge != 0 {
		for i := 0; i < n; i++ {
			m.SetSym(i, i, m.At(i, i)+ridge)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(m) || ch.Cond() > 1e10 {
		return nil, false
	}
	out := mat.NewVecDense(n, nil)
	if err := ch.SolveVecTo(out, mat.NewVecDense(n, append([]float64(nil), b...))); err != nil {
		return nil, false
	}
	if !kernel.AllFinite(out.RawVector().Data) {
		return nil, false
	}
	return out.RawVector().Data, true
}
