package orbit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/bingham"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
)

// Calibrations of the exponential mechanism's inverse temperature β
// (DERIVATIONS.md §4.1), for budget ε and score sensitivity λ_1.
const (
	// CalibExact is β = ε/(2λ_1): the standard exponential mechanism, ε-DP
	// with an exact sampler (default).
	CalibExact = "exact"
	// CalibPaper is the paper's Algorithm 1, β = ε/(4λ_1), which leaves ε/2
	// for the error of a certified approximate sampler. With the exact k = 1
	// sampler the output is in fact ε/2-DP; ε is still charged.
	CalibPaper = "paper"
	// CalibAddRemove is β = ε/λ_1, ε-DP for add/remove-one neighbours only
	// (the score is monotone under adding a user).
	CalibAddRemove = "add-remove"
)

// Samplers.
const (
	// SamplerAuto uses the exact sampler for k = 1 and Givens–Gibbs for k > 1.
	SamplerAuto = "auto"
	// SamplerGibbs forces Givens–Gibbs (also for k = 1).
	SamplerGibbs = "gibbs"
)

// emSensitivity is the utility sensitivity declared for calibration cal
// and score sensitivity λ_1, so that the release's β = ε/(2Δ) is the
// calibration's inverse temperature: λ_1 (exact), 2λ_1 (paper) or λ_1/2
// (add-remove; DERIVATIONS.md §4.1).
func emSensitivity(cal string, lambda1 float64) float64 {
	switch cal {
	case CalibPaper:
		return 2 * lambda1
	case CalibAddRemove:
		return lambda1 / 2
	}
	return lambda1
}

// shareFrame and shareSpectrum name the plan's shares.
const (
	shareFrame    = "orbit frame"
	shareSpectrum = "top-k eigenvalues"
)

// OrbitDraw is one draw of the orbit exponential mechanism.
type OrbitDraw struct {
	U      *mat.Dense // d×k
	Exact  bool       // drawn by the exact k = 1 sampler
	Sweeps int        // Gibbs sweeps (0 for the exact sampler)
	Pairs  int        // Gibbs pair updates per sweep
	Energy []float64  // Gibbs energy trace ⟨A, H_t⟩ (data-dependent)
	Bacg   bingham.Diagnostics
}

// SampleOrbit draws U from the density ∝ exp(beta·⟨A, U Λ Uᵀ⟩) on the
// orbit: exactly (vector Bingham) when k = 1 and sampler is auto, by
// Givens–Gibbs with the given sweeps otherwise. lambda must be
// non-increasing and non-negative with lambda[0] > 0.
func SampleOrbit(ctx context.Context, rnd *privacy.Source, a *mat.SymDense, lambda []float64, beta float64, sampler string, sweeps int, be backend.Backend, progress func(done, total int)) (*OrbitDraw, error) {
	d := a.SymmetricDim()
	if be == nil {
		be = backend.Default()
	}
	if len(lambda) == 1 && sampler != SamplerGibbs {
		s, err := bingham.New(a, beta*lambda[0], be)
		if err != nil {
			return nil, err
		}
		x, diag, err := s.Sample(ctx, rnd)
		if err != nil {
			return nil, err
		}
		return &OrbitDraw{U: mat.NewDense(d, 1, x), Exact: true, Bacg: diag}, nil
	}
	g, err := GibbsSample(ctx, rnd, a, lambda, beta, GibbsConfig{Sweeps: sweeps, Backend: be, Progress: progress})
	if err != nil {
		return nil, err
	}
	u, err := randomiseBlocks(rnd, g.U, lambda, be)
	if err != nil {
		return nil, err
	}
	return &OrbitDraw{U: u, Sweeps: g.Sweeps, Pairs: g.Pairs, Energy: g.Energy}, nil
}

// randomiseBlocks right-multiplies each block of columns of u that share a
// target eigenvalue by an independent Haar rotation. H = U Λ Uᵀ does not
// change, and the released frame carries no information beyond H (for the
// exact target this is already its conditional law; for a finite chain it
// removes whatever the within-block orientation remembers of the run).
func randomiseBlocks(rnd *privacy.Source, u *mat.Dense, lambda []float64, be backend.Backend) (*mat.Dense, error) {
	d, k := u.Dims()
	out := mat.DenseCopyOf(u)
	r := rnd.Rand()
	for start := 0; start < k; {
		end := start + 1
		for end < k && lambda[end] == lambda[start] {
			end++
		}
		if m := end - start; m > 1 {
			q, err := HaarOrthogonal(r, m, be)
			if err != nil {
				return nil, err
			}
			var blk mat.Dense
			blk.Mul(u.Slice(0, d, start, end), q)
			out.Slice(0, d, start, end).(*mat.Dense).Copy(&blk)
		}
		start = end
	}
	return out, nil
}

// addDrawOutputs attaches the sampler's diagnostics and sets the guarantee.
func addDrawOutputs(res *sdk.Result, dr *OrbitDraw, beta float64) {
	res.AddScalar("beta", beta, sdk.Public, "inverse temperature of the exponential mechanism (a function of ε and the released/public λ_1)")
	const ev = "EVALUATION ONLY (depends on the raw data, not private): "
	if dr.Exact {
		res.AddScalar("proposals", float64(dr.Bacg.Proposals), sdk.Evaluation, ev+"ACG proposals the exact sampler used")
		res.AddScalar("acceptance_rate", dr.Bacg.AcceptanceRate, sdk.Evaluation, ev+"accepted/proposed for the exact sampler")
		return
	}
	res.AddScalar("sweeps", float64(dr.Sweeps), sdk.Public, "Givens–Gibbs sweeps (fixed in advance)")
	res.AddScalar("pairs_per_sweep", float64(dr.Pairs), sdk.Public, "pair updates per sweep = real orbit dimension D")
	res.AddSeries("energy", dr.Energy, sdk.Evaluation, ev+"⟨A, H_t⟩ after each Gibbs sweep (stationarity diagnostic)")
}

func setGuarantee(res *sdk.Result, exact bool, cal string, sweeps int) {
	g := &res.Guarantee
	g.Neighbours = neighboursReplace
	if cal == CalibAddRemove {
		g.Neighbours = "one user's row added or removed (rows clipped to norm ≤ clip)"
	}
	g.Assumptions = []string{"the clip is public or a private quantile of the row norms (clip=auto, a declared step)", "the target spectrum Λ is public or released"}
	if exact {
		// The kind and the numbers follow the composition the accountant
		// used (an all-pure run is labelled pure, with the tighter (ε, δ)
		// stated beside it), so the kind is left for the SDK to fill in.
		g.Assumptions = append(g.Assumptions, exactSamplerCaveat)
		return
	}
	g.Kind = privacy.Nominal
	g.Assumptions = append(g.Assumptions, fmt.Sprintf("sampler not certified: Givens–Gibbs from a Haar start, %d sweeps; its stationary law is the exponential mechanism, a finite run has no proved ∞-distance or TV bound", sweeps))
}

// EM is Algorithm 1 of Mangoubi et al.: the orbit exponential mechanism with
// a public spectrum.
type EM struct{ remote }

// Info implements sdk.Estimator.
func (EM) Info() sdk.Info {
	return sdk.Info{
		Name:    "orbit-em",
		Version: Version,
		Summary: "exponential mechanism on the orbit of a public spectrum: rank-k PCA and orbit approximation (Mangoubi et al. Alg. 1)",
		Description: "Samples H = UΛUᵀ with density ∝ exp(β⟨A, H⟩) over the real orthogonal orbit of the public spectrum Λ, " +
			"where A = Σ x̃x̃ᵀ/clip² sums the clipped rows. The score has sensitivity λ_1 under replace-one neighbours " +
			"(Mangoubi et al. Lemma 6.1), so β = ε/(2λ_1) gives ε-DP with an exact sampler. For k = 1 the draw is exact " +
			"in real arithmetic (angular central Gaussian rejection, Kent et al. 2018; run in float64): pure ε-DP. For k > 1 a Givens–Gibbs sampler with exact " +
			"von Mises pair updates runs a fixed number of sweeps: its stationary law is the mechanism, but the finite run is " +
			"not certified, so the result is labelled nominal ε-DP. Under an (ε, δ) grant noise=exact (the default) gives the draw (and clip=auto's quantile) " +
			"the largest ε the tightest valid accounting certifies for the grant, never less than the pure split. No eigenvalue is released, " +
			"so there is no explained-variance ratio. See DERIVATIONS.md §4.1 and §7.",
		DataKind:   data.Rows,
		Guarantee:  "pure ε-DP for k = 1 (exact sampler in real arithmetic, run in float64); nominal ε-DP, sampler not certified, for k > 1",
		Grants:     []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox},
		Options:    emOptions{},
		References: []string{refMangoubi, refKGM, refBF, refCSS},
	}
}

// Fit implements sdk.Estimator: run.Plan → Algorithm 1.
func (EM) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[emOptions](run)
	plan := run.Plan
	pr, err := problemFor(ctx, run, plan, &o.base)
	if err != nil {
		return nil, err
	}
	b, err := plan.Budget(shareFrame)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	addClippedRows(res, pr.clipped)
	if err := orbitEM(ctx, run, res, pr, o.lambda, b, &o.emSampling, "orbit frame (exponential mechanism)"); err != nil {
		return nil, err
	}
	if o.cal == CalibPaper && len(o.lambda) == 1 && o.Sampler != SamplerGibbs {
		res.Notes = append(res.Notes, "sensitivity=paper with the exact sampler: the draw is in fact ε/2-DP; the full ε is charged as in the paper")
	}
	addNote(res, plan.PureNote(o.Noise.Value))
	return pcaeval.Add(ctx, run, res, pr.eval, pcaeval.Uncentred)
}

// orbitEM is Algorithm 1 (DERIVATIONS.md §4.1): declare the exponential
// mechanism at budget b with the calibration's sensitivity, draw
// H = UΛUᵀ ∝ exp(β⟨A, H⟩) on the orbit of lambda, and release U and λ.
func orbitEM(ctx context.Context, run *sdk.Run, res *sdk.Result, pr *problem, lambda []float64, b privacy.Budget, em *emSampling, name string) error {
	rel, err := run.Acct.Exponential(name, emSensitivity(em.cal, lambda[0]), b)
	if err != nil {
		return err
	}
	var dr *OrbitDraw
	err = rel.Sample(func(beta float64) error {
		var err error
		dr, err = SampleOrbit(ctx, run.Rand, pr.a, lambda, beta, em.Sampler, em.Iterations.Value, run.Backend,
			func(done, total int) { run.Progress("gibbs", done, total) })
		return err
	})
	if err != nil {
		return err
	}
	addCommonOutputs(res, pr, dr.U, lambda, sdk.Public)
	addDrawOutputs(res, dr, rel.Beta())
	setGuarantee(res, dr.Exact, em.cal, dr.Sweeps)
	return nil
}

// RankK is Algorithm 2 of Mangoubi et al.: Laplace-noised top-k eigenvalues,
// then the orbit exponential mechanism with the noisy spectrum.
type RankK struct{ remote }

// Info implements sdk.Estimator.
func (RankK) Info() sdk.Info {
	return sdk.Info{
		Name:    "orbit-rank-k",
		Version: Version,
		Summary: "private rank-k approximation: Laplace top-k eigenvalues, then the orbit exponential mechanism (Mangoubi et al. Alg. 2)",
		Description: "Half of ε releases the top-k eigenvalues of A = Σ x̃x̃ᵀ/clip² with Laplace noise of scale 4/ε (the eigenvalue " +
			"vector has ℓ1 sensitivity 2 under replace-one neighbours; for k = 1 the top eigenvalue alone moves by at most 1, scale 2/ε); " +
			"they are sorted and clamped at 0. The other half runs " +
			"the orbit exponential mechanism with that noisy spectrum, whose inverse temperature uses the NOISY λ̃_1 (the paper's " +
			"printed λ_1 is private; see DERIVATIONS.md §4.2). Output H = U diag(λ̃) Uᵀ. ε-DP by composition of two pure steps when k = 1 " +
			"(exact sampler in real arithmetic, run in float64); for k > 1 " +
			"the Givens–Gibbs step makes the guarantee nominal (sampler not certified). For k ≥ 2 the Laplace release also carries the sum of the " +
			"other d − k eigenvalues (same sensitivity 2, no extra budget), from which explained_variance_ratio follows by post-processing; for k = 1 " +
			"that sum would double the noise, so no ratio is released. Under an (ε, δ) grant noise=exact (the default) scales both steps' ε by the " +
			"largest common factor the tightest valid accounting certifies, never below the pure split.",
		DataKind:   data.Rows,
		Guarantee:  "ε-DP for k = 1 (composition of two pure steps; exact sampler in real arithmetic, run in float64); nominal ε-DP (sampler not certified) for k > 1",
		Grants:     []privacy.GrantKind{privacy.GrantPure, privacy.GrantApprox},
		Options:    rankKOptions{},
		References: []string{refMangoubi, refKGM, refBF},
	}
}

// Fit implements sdk.Estimator: run.Plan → Algorithm 2.
func (RankK) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[rankKOptions](run)
	plan := run.Plan
	pr, err := problemFor(ctx, run, plan, &o.base)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{}
	addClippedRows(res, pr.clipped)
	if err := rankKApproximation(ctx, run, res, pr, o.Rank.Value, plan, &o.emSampling); err != nil {
		return nil, err
	}
	addNote(res, plan.PureNote(o.Noise.Value))
	return pcaeval.Add(ctx, run, res, pr.eval, pcaeval.Uncentred)
}

// rankKApproximation is Algorithm 2 (DERIVATIONS.md §4.2): a Laplace
// spectrum λ̃ (sorted, clamped at 0), then Algorithm 1 on the orbit of λ̃
// with the other half of the budget; H = 0 if λ̃_1 = 0.
func rankKApproximation(ctx context.Context, run *sdk.Run, res *sdk.Result, pr *problem, k int, plan *privacy.Plan, em *emSampling) error {
	bs, err := plan.Budget(shareSpectrum)
	if err != nil {
		return err
	}
	lambda, rest, tail, err := noisySpectrum(run.Acct, run.Rand, pr.gamma, k, bs)
	if err != nil {
		return err
	}
	if tail {
		res.AddScalar("eigenvalue_tail", rest, sdk.Public, "the sum of the other d − k eigenvalues of A plus Laplace noise, released with the top-k eigenvalues at the same sensitivity and ε")
		if evr, ok := pcaeval.ExplainedRatio(lambda, rest); ok {
			res.AddSeries("explained_variance_ratio", evr, sdk.Public, "λ̃_k / (Σ_j λ̃_j + max(tail, 0)): a private estimate of the share of the clipped rows' second moment each component explains, from the released eigenvalues and tail (post-processing)")
		}
	}
	if lambda[0] == 0 {
		// Nothing left to place: H = 0, released without spending the
		// second half. U is a data-independent Haar frame.
		d := pr.a.SymmetricDim()
		q, err := HaarOrthogonal(run.Rand.Rand(), d, run.Backend)
		if err != nil {
			return err
		}
		addCommonOutputs(res, pr, mat.DenseCopyOf(q.Slice(0, d, 0, k)), lambda, sdk.Public)
		res.Guarantee = privacy.Guarantee{Neighbours: neighboursReplace, Assumptions: []string{clipAssumption(pr)}}
		res.AddWarning("all noisy eigenvalues clamped to 0: released H = 0, and U is a data-independent random frame (a larger budget or a lower rank)")
		return nil
	}
	bf, err := plan.Budget(shareFrame)
	if err != nil {
		return err
	}
	if err := orbitEM(ctx, run, res, pr, lambda, bf, em, "orbit frame (exponential mechanism, noisy λ̃_1)"); err != nil {
		return err
	}
	var sq float64
	for i := 0; i < k; i++ {
		sq += (lambda[i] - pr.gamma[i]) * (lambda[i] - pr.gamma[i])
	}
	res.AddScalar("eigenvalue_error_sq", sq, sdk.Evaluation, "EVALUATION ONLY (not private): Σ_i (λ̃_i − γ_i)²")
	return nil
}

// addNote appends a non-empty note.
func addNote(res *sdk.Result, note string) {
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
}

// noisySpectrum declares a Laplace release at budget b for the top-k
// eigenvalues gamma[:k] (ℓ1 sensitivity SpectrumSensitivity(k)), sorted
// decreasingly and clamped at 0. When 2 ≤ k < len(gamma) the release also
// carries the sum of the other eigenvalues at the same sensitivity
// (DERIVATIONS.md §3); it returns that noisy tail and whether it was released.
func noisySpectrum(acct *privacy.Accountant, rnd *privacy.Source, gamma []float64, k int, b privacy.Budget) ([]float64, float64, bool, error) {
	out := slices.Clone(gamma[:k])
	tail := k >= 2 && k < len(gamma)
	if tail {
		var rest float64
		for _, g := range gamma[k:] {
			rest += math.Max(g, 0)
		}
		out = append(out, rest)
	}
	rel, err := acct.Laplace("top-k eigenvalues (Laplace)", SpectrumSensitivity(k), len(out), b)
	if err != nil {
		return nil, 0, false, err
	}
	if err := rel.Add(rnd, out); err != nil {
		return nil, 0, false, err
	}
	var rest float64
	if tail {
		rest, out = out[k], out[:k]
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(out)))
	for i := range out {
		out[i] = math.Max(out[i], 0)
	}
	return out, rest, tail, nil
}

// SpectrumSensitivity is the replace-one ℓ1 sensitivity of the top-k
// eigenvalues of A = Σ x̃x̃ᵀ with rows of trace ≤ 1: 2, or 1 for k = 1
// (DERIVATIONS.md §3).
func SpectrumSensitivity(k int) float64 {
	if k == 1 {
		return 1
	}
	return 2
}

// exactSamplerCaveat is the assumption every exact exponential-mechanism
// draw rests on: the rejection samplers are exact in real arithmetic, and
// they run in float64 (no discretisation is accounted for).
const exactSamplerCaveat = "the exponential-mechanism sampler is exact in real arithmetic; it runs in float64 arithmetic, whose rounding is not accounted for (see DERIVATIONS.md §7.1)"

// addClippedRows reports how many rows the clip shrank: a count computed
// from the raw data, so it is evaluation-only and never part of a public
// note.
func addClippedRows(res *sdk.Result, clipped int) {
	res.AddScalar("clipped_rows", float64(clipped), sdk.Evaluation, "EVALUATION ONLY (computed from the raw data, not private): rows shrunk by the clip")
}
