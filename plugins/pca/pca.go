// Package pca is dplr's principal-component plugin: differentially private
// estimation of the top-r principal subspace (and of a spiked covariance
// matrix) from the rows of an n×p data matrix, with the methods people use
// today beside the optimal one so that a report can compare them on the
// same data.
//
// Estimators:
//   - pca-cxz: Cai, Xia and Zha's Algorithm 1 (Gaussian noise on the sample
//     spectral projector, then on the r×r compressed covariance). Its
//     sensitivities hold only with high probability over data from the
//     spiked Gaussian model with public r, σ², λ, so its guarantee is of
//     kind Model.
//   - pca-analyze-gauss: Analyze Gauss (Dwork, Talwar, Thakurta, Zhang 2014),
//     worst-case (ε, δ)-DP after clipping rows to a public norm.
//   - pca-amin: iterative eigenvector sampling (Amin, Dick, Kulesza, Muñoz
//     Medina, Vassilvitskii 2019), pure ε-DP, with an exact Bingham sampler.
//   - pca-nonprivate: the non-private reference (no guarantee).
//
// Every estimator takes data of kind rows and returns "U" (p×r, orthonormal
// columns) and "eigenvalues"; the private ones optionally return a covariance
// estimate "Sigma" (p×p). Exported functions give the sensitivities and
// the algorithms on a precomputed second moment (CXZFromCov,
// AnalyzeGaussFromCov) so that the accuracy studies in bench/studies/pca
// can reuse them; subspace metrics live in engine/evaluate. Derivations:
// DERIVATIONS.md in this directory.
package pca

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	rowclip "github.com/dplr/dplr/plugins/internal/clip"
)

// Version is the version every estimator of the plugin reports.
const Version = "0.1.0"

// Estimators returns every estimator the plugin serves.
func Estimators() []sdk.Estimator {
	return []sdk.Estimator{evaluated{CXZ{}}, evaluated{AnalyzeGauss{}}, evaluated{Amin{}}, evaluated{NonPrivate{}}}
}

// Centering choices.
const (
	centerNone    = "none"
	centerPrivate = "private"
)

// minPositive is the catalogue minimum of parameters that must be strictly
// positive (clips, σ²): the catalogue's ranges are inclusive, so a Min of 0
// would advertise 0 as valid although the estimators refuse it.
const minPositive = 1e-300

func rankSpec() sdk.ParamSpec {
	return sdk.ParamSpec{Name: "rank", Type: sdk.Int, Required: true, Min: sdk.Bound(1),
		Doc: "number of principal components r"}
}

func centerSpec(mech string) []sdk.ParamSpec {
	return []sdk.ParamSpec{
		{Name: "center", Type: sdk.String, Default: centerNone, Choices: []string{centerNone, centerPrivate},
			Doc: "none: the data are already centred (with a public mean); private: subtract a private mean of the rows clipped to mean_clip (" + mech + " noise, its own declared step)"},
		{Name: "mean_clip", Type: sdk.Float, Min: sdk.Bound(minPositive),
			Doc: "public row-norm bound for the private mean (default: clip)"},
		{Name: "mean_share", Type: sdk.Float, Default: "0.1", Min: sdk.Bound(0.001), Max: sdk.Bound(0.9),
			Doc: "fraction of the budget spent on the private mean when center=private"},
	}
}

// cxzCenterSpec is centerSpec for pca-cxz, which has no clip parameter:
// mean_clip has no default there and is required with center=private.
func cxzCenterSpec() []sdk.ParamSpec {
	specs := centerSpec("Gaussian")
	for i := range specs {
		if specs[i].Name == "mean_clip" {
			specs[i].Doc = "public row-norm bound for the private mean (required with center=private)"
		}
	}
	return specs
}

func sigmaSpec() sdk.ParamSpec {
	return sdk.ParamSpec{Name: "output_sigma", Type: sdk.Bool, Default: "false",
		Doc: "also return the p×p covariance estimate Sigma"}
}

// checkRank validates r against the data's dimension (maxFrac: r ≤ p, or
// 2r < p when strict).
func checkRank(r, p int, strict bool) error {
	if r < 1 {
		return sdk.BadRequest("rank %d must be at least 1", r)
	}
	if strict && 2*r >= p {
		return sdk.BadRequest("rank %d too large for dimension %d: the spiked-model analysis needs 2r < p", r, p)
	}
	if r > p {
		return sdk.BadRequest("rank %d exceeds the dimension %d", r, p)
	}
	return nil
}

// finitePositive checks a public parameter.
func finitePositive(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return sdk.BadRequest("parameter %s = %v must be positive and finite", name, v)
	}
	return nil
}

// checkFinite scans X for NaN/Inf and names the first offending entry.
func checkFinite(x *mat.Dense) error { return rowclip.Finite(x) }

// checkGram verifies that a second-moment matrix is finite (and locates a
// non-finite entry in x when x is not nil).
func checkGram(g *mat.SymDense, x *mat.Dense) error { return rowclip.CheckMoment(g, x) }

// Gram returns (1/n)·Σ_i w_i²(x_i−μ)(x_i−μ)ᵀ with w_i = min(1, c/‖x_i−μ‖)
// (c ≤ 0 or +Inf: no clipping; mu nil: μ = 0) and the number of rows the
// clip shrank: the shared clipped second moment of plugins/internal/clip
// on pca's 1/n scale. x is never written.
func Gram(ctx context.Context, be backend.Backend, x *mat.Dense, mu []float64, c float64) (*mat.SymDense, int, error) {
	n, _ := x.Dims()
	return rowclip.SecondMoment(ctx, be, x, mu, c, 1/float64(n))
}

// clippedSum returns Σ_i x_i·min(1, c/‖x_i‖).
func clippedSum(ctx context.Context, x *mat.Dense, c float64) ([]float64, error) {
	return rowclip.Sum(ctx, x, c)
}

// rowsData checks the data set's kind and shape.
func rowsData(d *data.Dataset) (*mat.Dense, int, int, error) {
	if d == nil || d.X == nil || d.X.IsEmpty() {
		return nil, 0, 0, fmt.Errorf("empty data set")
	}
	if d.Kind != data.Rows {
		return nil, 0, 0, fmt.Errorf("need rows data, got %s", d.Kind)
	}
	n, p := d.X.Dims()
	if p < 2 {
		return nil, 0, 0, sdk.BadRequest("dimension %d: PCA needs at least 2 columns", p)
	}
	return d.X, n, p, nil
}

// budget is how an estimator divides its grant among its Gaussian steps.
type budget struct {
	mode   string  // "zcdp", "classical" or "analytic"
	rho    float64 // zcdp: total ρ
	eps    float64 // classical/analytic: total (ε, δ)
	delta  float64
	shares []float64 // fractions of the budget per step, summing to ≤ 1
}

// newBudget prepares a split of the run's grant in the given mode.
func newBudget(acct *privacy.Accountant, mode string, shares []float64) (*budget, error) {
	b := &budget{mode: mode, shares: shares}
	g := acct.Grant()
	switch mode {
	case "zcdp":
		rho, err := acct.TotalRho()
		if err != nil {
			return nil, fmt.Errorf("zCDP composition: %w", err)
		}
		b.rho = rho
	case "classical", "analytic":
		if g.Kind != privacy.GrantApprox {
			return nil, sdk.BadRequest("the %s Gaussian calibration needs an (ε, δ) grant, got a %s grant", mode, g.Kind)
		}
		b.eps, b.delta = g.Epsilon, g.Delta
		if mode == "classical" {
			for _, s := range shares {
				if s*b.eps > 1 {
					return nil, sdk.BadRequest("classical Gaussian calibration is proved only for per-step ε ≤ 1, but a step would get ε = %.4g (total ε = %.4g): lower ε or use the analytic calibration", s*b.eps, b.eps)
				}
			}
		}
	default:
		return nil, sdk.BadRequest("unknown Gaussian calibration %q", mode)
	}
	return b, nil
}

// spend declares Gaussian step k and returns its noise standard deviation.
func (b *budget) spend(acct *privacy.Accountant, k int, name string, sens float64, dim int) (float64, error) {
	s := b.shares[k]
	if b.mode == "zcdp" {
		return acct.SpendGaussianRho(name, sens, dim, s*b.rho)
	}
	return acct.SpendGaussianEpsDelta(name, sens, dim, s*b.eps, s*b.delta, b.mode)
}

// release declares Gaussian step k as a release that owns its scale and
// grid.
func (b *budget) release(acct *privacy.Accountant, k int, name string, sens float64, dim int) (*privacy.Release, error) {
	s := b.shares[k]
	return acct.Gaussian(name, sens, dim, privacy.Budget{Noise: b.mode, Rho: s * b.rho, Epsilon: s * b.eps, Delta: s * b.delta})
}

// privateMeanGaussian spends one Gaussian step on the mean of the rows
// clipped to norm c (replace-one ℓ2 sensitivity 2c/n, DERIVATIONS.md §5)
// and returns it.
func privateMeanGaussian(ctx context.Context, run *sdk.Run, b *budget, k int, x *mat.Dense, c float64) ([]float64, error) {
	n, _ := x.Dims()
	sum, err := clippedSum(ctx, x, c)
	if err != nil {
		return nil, err
	}
	sd, err := b.spend(run.Acct, k, "mean", 2*c/float64(n), len(sum))
	if err != nil {
		return nil, err
	}
	for j := range sum {
		sum[j] /= float64(n)
	}
	run.Rand.AddGaussian(sum, sd)
	return sum, nil
}

// centerParams reads and checks center, mean_clip and mean_share.
func centerParams(ps sdk.Params, defaultClip float64) (private bool, clip, share float64, err error) {
	if ps.String("center") != centerPrivate {
		return false, 0, 0, nil
	}
	clip = defaultClip
	if ps.Has("mean_clip") {
		clip = ps.Float("mean_clip")
	} else if math.IsNaN(defaultClip) {
		return false, 0, 0, sdk.BadRequest("center=private needs mean_clip, a public row-norm bound for the private mean")
	}
	if err := finitePositive("mean_clip", clip); err != nil {
		return false, 0, 0, sdk.BadRequest("center=private needs a public row-norm bound: %w", err)
	}
	return true, clip, ps.Float("mean_share"), nil
}

// topEigen returns the top-r eigenpairs of a symmetric matrix through the
// backend, with a context check first.
func topEigen(ctx context.Context, be backend.Backend, a mat.Symmetric, r int) ([]float64, *mat.Dense, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	vals, vecs, err := be.EigSymTop(a, r)
	if err != nil {
		return nil, nil, fmt.Errorf("top-%d eigenvectors: %w", r, err)
	}
	return vals, vecs, nil
}

// lowRank returns U·diag(d)·Uᵀ + s·I as a dense p×p matrix.
func lowRank(u *mat.Dense, mid mat.Matrix, s float64) *mat.Dense {
	p, _ := u.Dims()
	var um mat.Dense
	um.Mul(u, mid)
	out := mat.NewDense(p, p, nil)
	out.Mul(&um, u.T())
	for j := 0; j < p; j++ {
		out.Set(j, j, out.At(j, j)+s)
	}
	// Symmetrise exactly.
	for i := 0; i < p; i++ {
		for j := i + 1; j < p; j++ {
			v := 0.5 * (out.At(i, j) + out.At(j, i))
			out.Set(i, j, v)
			out.Set(j, i, v)
		}
	}
	return out
}

// symToDense copies a symmetric matrix into a dense one.
func symToDense(s mat.Symmetric) *mat.Dense {
	n := s.SymmetricDim()
	out := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := s.At(i, j)
			out.Set(i, j, v)
			out.Set(j, i, v)
		}
	}
	return out
}

func fmtFloats(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%.6g", x)
	}
	return s
}

// clipped holds the validated inputs of the worst-case (row-clipping)
// estimators.
type clipped struct {
	x                   *mat.Dense
	n, p, r             int
	clip                float64
	center              bool
	meanClip, meanShare float64
}

// clippedInputs validates the data, rank, public clip and centring
// parameters shared by Analyze Gauss and Amin et al., before any spend.
func clippedInputs(run *sdk.Run) (clipped, error) {
	var in clipped
	var err error
	if in.x, in.n, in.p, err = rowsData(run.Data); err != nil {
		return in, err
	}
	ps := run.Params
	in.r = ps.Int("rank")
	if err := checkRank(in.r, in.p, false); err != nil {
		return in, err
	}
	in.clip = ps.Float("clip")
	if err := finitePositive("clip", in.clip); err != nil {
		return in, err
	}
	in.center, in.meanClip, in.meanShare, err = centerParams(ps, in.clip)
	return in, err
}
