package orbit

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/sdk"
)

// withEvaluation adds, with evaluate=true, the captured-variance ratios of
// the released U on the raw rows (centred: scikit-learn's convention, and
// uncentred), labelled evaluation-only, exactly as the pca plugin does.
func withEvaluation(ctx context.Context, run *sdk.Run, res *sdk.Result, on bool) (*sdk.Result, error) {
	if !on {
		return res, nil
	}
	var u mat.Matrix
	for _, m := range res.Matrices {
		if m.Name == "U" {
			u = m.M
		}
	}
	if u == nil {
		return nil, fmt.Errorf("evaluate: the estimator released no U")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, un, err := evaluate.RowsCapturedRatios(run.Data.X, u, func(s float64, x *mat.Dense) *mat.SymDense { return run.Backend.Gram(s, x) },
		func(a mat.Symmetric, r int) ([]float64, error) {
			v, _, err := run.Backend.EigSymTop(a, r)
			return v, err
		})
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	res.AddScalar(evaluate.RatioCentred, c, sdk.Evaluation,
		"tr(ŨᵀCŨ)/tr(ÛᵀCÛ), C the covariance of the raw rows centred at their empirical mean, Û its top-k subspace (scikit-learn's convention) — EVALUATION ONLY, not private")
	res.AddScalar(evaluate.RatioUncentred, un, sdk.Evaluation,
		"the same ratio on the UNCENTRED second moment XᵀX/n of the raw rows — EVALUATION ONLY, not private")
	return res, nil
}
