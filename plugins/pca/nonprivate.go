package pca

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
	"github.com/dplr/dplr/plugins/internal/project"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// NonPrivate is ordinary PCA: the top-r eigenvectors of Σ̂ = XᵀX/n (or of
// the empirical covariance with center=empirical). It is the reference the
// private estimators are compared against and carries no guarantee.
type NonPrivate struct{ project.Projection }

// Info implements sdk.Estimator.
func (NonPrivate) Info() sdk.Info {
	return sdk.Info{
		Name:    "pca-nonprivate",
		Version: Version,
		Summary: "non-private PCA (reference output, no privacy)",
		Description: `Top-r eigenvectors and eigenvalues of Σ̂ = XᵀX/n computed from the raw data
(center=empirical subtracts the empirical mean first). Nothing is private: every output is
marked for evaluation only. Use it as the ε = ∞ reference.`,
		DataKind:   data.Rows,
		Guarantee:  "none (not private)",
		NonPrivate: true,
		Grants:     []privacy.GrantKind{privacy.GrantApprox, privacy.GrantZCDP, privacy.GrantPure},
		Options:    nonPrivateOptions{},
		References: []string{"K. Pearson. On lines and planes of closest fit to systems of points in space. 1901."},
	}
}

// Fit implements sdk.Estimator.
func (NonPrivate) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[nonPrivateOptions](run)
	src, n, _, err := sourceOf(run.Data) // the rows, or passes over a remote data set
	if err != nil {
		return nil, err
	}
	r := o.Rank.Value
	var mu []float64
	if o.Center == "empirical" {
		if mu, err = src.Sum(ctx, nil, 0); err != nil {
			return nil, err
		}
		for j := range mu {
			mu[j] /= float64(n)
		}
	}
	clip := 0.0
	if o.Clip != nil {
		clip = *o.Clip
	}
	sh, _, err := gramOf(ctx, src, mu, clip)
	if err != nil {
		return nil, err
	}
	vals, u, err := topEigen(ctx, run.Backend, sh, r)
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{Guarantee: privacy.Guarantee{Kind: privacy.None}}
	res.AddMatrix("U", u, sdk.Evaluation, "top-r eigenvectors of Σ̂ (NOT private)")
	res.AddSeries("eigenvalues", append([]float64(nil), vals...), sdk.Evaluation, "top-r eigenvalues of Σ̂, descending (NOT private)")
	res.AddScalar("trace", mat.Trace(sh), sdk.Evaluation, "tr Σ̂ (NOT private)")
	if o.OutputSigma {
		res.AddMatrix("Sigma", mat.DenseCopyOf(sh), sdk.Evaluation, "Σ̂ (p×p, NOT private)")
	}
	return pcaeval.Add(ctx, run, res, o.Evaluate.Value, pcaeval.Centring(o.Center == "empirical"))
}

// Passes implements sdk.RemoteEstimator (DERIVATIONS.md §11).
func (NonPrivate) Passes(opts any, _ sdk.Shape) ([]string, error) {
	o := opts.(*nonPrivateOptions)
	return o.passes(rowsrc.Kinds(false, o.Center == "empirical")), nil
}
