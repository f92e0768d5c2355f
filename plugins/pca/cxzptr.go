package pca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// CalWorstCase is pca-cxz's worst-case mode (DERIVATIONS.md §13): a
// propose-test-release test on the eigengap of the clipped second moment,
// then sensitivities that hold for every data set whose gap is at least
// the proposed one.
const CalWorstCase = "worst-case"

// sharePTR names the test in the pre-flight declaration (it is paid from
// its own part of the grant, outside the plan); ptrDeltaShare is the part
// of δ the test takes.
const (
	sharePTR      = "eigengap test (propose-test-release)"
	ptrDeltaShare = 0.5
)

// ptrOutcome is the released outcome of the eigengap test.
type ptrOutcome struct {
	gap0, dist, threshold float64
	passed                bool
}

// worst reports sensitivity=worst-case.
func (c *cxzConfig) worst() bool { return c.cal == CalWorstCase }

// uses is the pre-flight declaration of the mechanisms; the worst-case
// mode is refused under a grant that is not (ε, δ), before any spend.
func (c *cxzConfig) uses(g privacy.Grant) ([]sdk.MechanismUse, error) {
	uses := sdk.UsesOf(c.shares()...)
	if !c.worst() {
		return uses, nil
	}
	if g.Kind != privacy.GrantApprox {
		return nil, sdk.BadRequest("sensitivity=worst-case needs an (ε, δ) grant (its eigengap test is (ε, δ)-DP, not pure or zCDP), not a %s grant", g.Kind)
	}
	if err := c.testCanPass(g); err != nil {
		return nil, err
	}
	return append(uses, sdk.MechanismUse{Mechanism: privacy.MechLaplace, For: sharePTR}), nil
}

// ptrPassOdds is the chance below which the eigengap test is refused
// before anything is spent: a test that passes less often than this on
// every data set of the request's size would mostly charge its steps for
// a planned stop.
const ptrPassOdds = 0.05

// testCanPass refuses, from n, ε and δ alone, a request whose eigengap
// test passes with probability below ptrPassOdds on every data set: the
// gap of rows clipped to C is at most C², so the distance d is below n/2,
// and the test passes with probability ½·exp(−(T − d)/b) for the
// threshold T = b·ln(1/δ_t), b ≥ 1/ε_t (DERIVATIONS.md §13.1).
func (c *cxzConfig) testCanPass(g privacy.Grant) error {
	n := c.model.N
	if n <= 0 {
		return nil
	}
	eps, delta := c.ptrCost(g)
	b := 1 / eps
	if dmax, need := float64(n)/2, b*math.Log(1/delta)-b*math.Log(0.5/ptrPassOdds); dmax < need {
		return sdk.BadRequest("sensitivity=worst-case: %d rows are too few for the eigengap test at ε_t = %.3g, δ_t = %.3g (ptr_share of the grant): even the largest gap the clip allows is fewer than %.0f row replacements from failing, and the test needs about %.0f to pass with probability %.2g; raise ε or ptr_share, or use the model-based mode or pca-analyze-gauss", n, eps, delta, dmax, need, ptrPassOdds)
	}
	return nil
}

// ptrCost is the test's (ε_t, δ_t): ptr_share of ε and half of δ.
func (c *cxzConfig) ptrCost(g privacy.Grant) (eps, delta float64) {
	return c.PTRShare * g.Epsilon, ptrDeltaShare * g.Delta
}

// WorstCaseDelta1 is the Frobenius sensitivity of the projector onto the
// top-r eigenvectors of the second moment of n rows clipped to clip, for
// a data set whose eigengap λ_r − λ_{r+1} is at least gap
// (DERIVATIONS.md §13.2): 2√2·min(√r, √2)·clip²/(n·gap).
func WorstCaseDelta1(n, r int, clip, gap float64) float64 {
	return 2 * math.Sqrt2 * WorstCaseDelta2(n, r, clip) / gap
}

// WorstCaseDelta2 is the Frobenius sensitivity of Ũᵀ Σ̂ Ũ (Ũ any p×r
// orthonormal frame) for n rows clipped to clip: min(√r, √2)·clip²/n
// (DERIVATIONS.md §13.3).
func WorstCaseDelta2(n, r int, clip float64) float64 {
	return math.Min(math.Sqrt(float64(r)), math.Sqrt2) * clip * clip / float64(n)
}

// GapDistance is the distance to instability of the eigengap test: with
// vals the eigenvalues of the clipped second moment (at least r + 1 of
// them, in any order), d = max(0, ⌊(ĝ − gap0)/(2·clip²/n)⌋), ĝ = λ_r −
// λ_{r+1}. Replacing one row moves ĝ by at most 2·clip²/n, so d changes by
// at most 1 (DERIVATIONS.md §13.1).
func GapDistance(vals []float64, r, n int, clip, gap0 float64) float64 {
	v := descending(vals)
	d := math.Floor((v[r-1] - v[r] - gap0) / (2 * clip * clip / float64(n)))
	return math.Max(d, 0)
}

// ptrTest releases the distance to a gap below the proposed gap0 with
// Laplace noise and decides whether the fit goes on (DERIVATIONS.md
// §13.1); sh is the second moment of the clipped rows.
func (c *cxzConfig) ptrTest(ctx context.Context, run *sdk.Run, sh *mat.SymDense) error {
	vals, _, err := topEigen(ctx, run.Backend, sh, c.r+1)
	if err != nil {
		return err
	}
	eps, delta := c.ptrCost(run.Acct.Grant())
	rel, thr, err := run.Acct.PTRTest(sharePTR, eps, delta)
	if err != nil {
		return err
	}
	x := []float64{GapDistance(vals, c.r, c.model.N, c.clip, c.gap0)}
	if err := rel.Add(run.Rand, x); err != nil {
		return err
	}
	c.ptr = &ptrOutcome{gap0: c.gap0, dist: x[0], threshold: thr, passed: x[0] > thr}
	return nil
}

// applyWorst takes from the released model estimate what the worst-case
// mode uses (post-processing): the rank (rank=auto), the σ² subtracted in
// stage 2 and, with ptr_gap=auto, the proposed gap, half the gap of the
// released noisy spectrum at the rank fitted. It returns why the fit
// stops ("" when it goes on). The model's spike bounds are not used.
func (e *modelEstimate) applyWorst(cfg *cxzConfig) string {
	if cfg.auto {
		if e.rank == 0 {
			return e.stop
		}
		cfg.r = e.rank
	}
	if cfg.Sigma2 == nil {
		cfg.sub = 0 // a σ² estimate that is not positive subtracts nothing
		if e.Sigma2 > 0 {
			cfg.sub = e.Sigma2
		}
	}
	if cfg.gap0 == 0 {
		k := cfg.r
		cfg.gap0 = (e.spectrum[k-1] - e.spectrum[k]) / 2
		if !(cfg.gap0 > 0) {
			return fmt.Sprintf("the released noisy spectrum shows no gap after component %d (ptr_gap=auto): no eigengap to test", k)
		}
	}
	return ""
}

// report releases the test's outcome.
func (p *ptrOutcome) report(res *sdk.Result) {
	res.AddScalar("ptr_gap", p.gap0, sdk.Public, "the proposed lower bound g₀ for the eigengap of the clipped second moment")
	res.AddScalar("ptr_distance", p.dist, sdk.Public, "the released noisy distance to a data set whose gap is below g₀ (in replaced rows)")
	res.AddScalar("ptr_threshold", p.threshold, sdk.Public, "the distance the test needed to exceed to go on")
}

// worstGuarantee is the worst-case mode's guarantee: (ε, δ)-DP for every
// data set under replace-one neighbours (DERIVATIONS.md §13.4).
func worstGuarantee(cfg *cxzConfig) privacy.Guarantee {
	g := privacy.Guarantee{
		Neighbours: "one row replaced by an arbitrary row",
		Assumptions: []string{
			fmt.Sprintf("rows clipped to the public norm %.6g in every step", cfg.clip),
			fmt.Sprintf("propose-test-release on the eigengap λ_%d − λ_%d of the clipped second moment: proposed gap %.6g, released distance %.4g > threshold %.4g; the stages are calibrated to every data set with at least that gap, and the test's δ covers the others",
				cfg.r, cfg.r+1, cfg.ptr.gap0, cfg.ptr.dist, cfg.ptr.threshold),
		},
	}
	if cfg.est != nil {
		g.Assumptions = append(g.Assumptions, "the private model estimate (worst-case DP steps) only proposes the gap, the rank (rank=auto) and the σ² subtracted in stage 2; no model assumption enters the guarantee")
	}
	if cfg.private() {
		g.Assumptions = append(g.Assumptions, fmt.Sprintf("centred with a private mean (rows clipped to norm %.4g, worst-case DP step)", cfg.meanClip))
	}
	return g
}
