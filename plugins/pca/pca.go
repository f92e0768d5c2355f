// Package pca is dplr's principal-component plugin: differentially private
// estimation of the top-r principal subspace (and of a spiked covariance
// matrix) from the rows of an n×p data matrix, with the methods people use
// today beside the optimal one so that a report can compare them on the
// same data.
//
// Estimators, one file each: pca-analyze-gauss (worst-case (ε, δ)-DP),
// pca-amin (pure ε-DP), pca-cxz (Cai, Xia and Zha's optimal estimator,
// private with high probability over spiked-model data, with a worst-case
// mode; its private model estimate in cxzmodel.go) and pca-nonprivate
// (the reference); prep.go holds the shared private preprocessing.
//
// Every estimator takes rows and returns "U" (p×r) and "eigenvalues". The
// exported sensitivities and the algorithms on a precomputed second moment
// (CXZFromCov, AnalyzeGaussFromCov) serve the studies in bench/studies/pca.
// Derivations: DERIVATIONS.md in this directory.
package pca

import (
	"context"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// Version is the version every estimator of the plugin reports.
const Version = "0.1.0"

// Estimators returns every estimator the plugin serves.
func Estimators() []sdk.Estimator {
	return []sdk.Estimator{CXZ{}, AnalyzeGauss{}, Amin{}, NonPrivate{}}
}

// finitePositive checks a public parameter.
func finitePositive(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return sdk.BadRequest("parameter %s = %v must be positive and finite", name, v)
	}
	return nil
}

// bindCov checks a precomputed second moment of n rows (present and
// finite) and binds the request raw against info's options at its shape.
func bindCov(info sdk.Info, raw map[string]string, sh *mat.SymDense, n int) (any, error) {
	if sh == nil || n < 1 {
		return nil, fmt.Errorf("%s on a second moment: need the matrix and n ≥ 1", info.Name)
	}
	p := sh.SymmetricDim()
	for j := 0; j < p; j++ {
		for k := j; k < p; k++ {
			if v := sh.At(j, k); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("second-moment entry (%d, %d) = %v is not finite", j, k, v)
			}
		}
	}
	opts, _, err := sdk.Prepare(info, raw, sdk.Shape{Kind: data.Rows, N: n, P: p})
	return opts, err
}

// Share names of the pca plans.
const (
	shareMean    = "mean"
	shareMoment  = "second moment"
	shareValues  = "eigenvalues"
	shareVectors = "eigenvectors"
	shareStage1  = "stage 1 (projector)"
	shareStage2  = "stage 2 (eigenvalues)"
)

// privateMean releases the mean of src's rows about the public centre c
// (nil: 0), c + (1/n)·Σ_i clip_r(x_i − c), the rows' offsets from c
// clipped to norm r, as the step name at one step of the plan's mean share,
// under that share's mechanism (DERIVATIONS.md §5: Gaussian with ℓ2
// sensitivity 2r/n, or Laplace with ℓ1 sensitivity 2r√p/n), with the
// variance of each coordinate's noise (public). An input error, or a
// failed pass, stops it before any step.
func privateMean(ctx context.Context, run *sdk.Run, plan *privacy.Plan, src *rowsrc.Source, name string, c []float64, r float64) ([]float64, float64, error) {
	n, p := src.Dims()
	b, err := plan.Budget(shareMean)
	if err != nil {
		return nil, 0, err
	}
	sum, err := src.Sum(ctx, c, r)
	if err != nil {
		return nil, 0, err
	}
	for j := range sum {
		sum[j] /= float64(n)
	}
	sens := kernel.SumSensitivity(r) / float64(n)
	declare := run.Acct.Gaussian
	if b.Mechanism == privacy.MechLaplace {
		sens, declare = sens*math.Sqrt(float64(p)), run.Acct.Laplace
	}
	rel, err := declare(name, sens, p, b)
	if err != nil {
		return nil, 0, err
	}
	if err := rel.Add(run.Rand, sum); err != nil {
		return nil, 0, err
	}
	if c != nil {
		floats.Add(sum, c)
	}
	v := rel.Scale() * rel.Scale()
	if b.Mechanism == privacy.MechLaplace {
		v *= 2 // Laplace(b): variance 2b²
	}
	return sum, v, nil
}

// releaseAt declares a release (name, sensitivity sens in the norm of
// the share's mechanism, dim coordinates) at the per-step budget of the
// plan's share, Laplace or Gaussian as the share says.
func releaseAt(run *sdk.Run, plan *privacy.Plan, share, name string, sens float64, dim int) (*privacy.Release, error) {
	b, err := plan.Budget(share)
	if err != nil {
		return nil, err
	}
	if b.Mechanism == privacy.MechLaplace {
		return run.Acct.Laplace(name, sens, dim, b)
	}
	return run.Acct.Gaussian(name, sens, dim, b)
}

// sourceOf returns the rows source of the run's data set (in memory or
// remote) after checking its kind and shape.
func sourceOf(d *data.Dataset) (*rowsrc.Source, int, int, error) {
	src, err := rowsrc.Of(d)
	if err != nil {
		return nil, 0, 0, err
	}
	n, p := src.Dims()
	if p < 2 {
		return nil, 0, 0, sdk.BadRequest("dimension %d: PCA needs at least 2 columns", p)
	}
	return src, n, p, nil
}

// gramOf is Gram on a rows source.
func gramOf(ctx context.Context, src *rowsrc.Source, mu []float64, c float64) (*mat.SymDense, int, error) {
	n, _ := src.Dims()
	return src.SecondMoment(ctx, mu, c, 1/float64(n))
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
	sym := mat.NewDense(p, p, nil) // (out + outᵀ)/2: symmetric exactly
	sym.Add(out, out.T())
	sym.Scale(0.5, sym)
	return sym
}

func fmtFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.6g", x)
	}
	return strings.Join(s, ",")
}

// withEvaluation implements the evaluate option of the private estimators
// through plugins/internal/pcaeval (on the rows divided by a released
// feature_scale: the space the estimate worked in); evaluation only.
func withEvaluation(ctx context.Context, run *sdk.Run, res *sdk.Result, on bool) (*sdk.Result, error) {
	if !on {
		pcaeval.WarnFewColumns(res)
		return res, nil
	}
	c := pcaeval.CentringOf(res)
	for _, sc := range res.Scalars {
		if sc.Name == outPairRows {
			c = pcaeval.Centred // center=pairs: the pair differences are free of the mean
		}
	}
	return pcaeval.Add(ctx, run, res, true, c) // one more pass
}
