package pca

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/engine/sdk"
)

// paramEvaluate is the opt-in evaluation every PCA estimator offers.
var paramEvaluate = sdk.ParamSpec{
	Name: "evaluate", Type: sdk.Bool, Default: "false",
	Doc: "also report relative_utility = tr(ŨᵀSŨ)/tr(ÛᵀSÛ), S = XᵀX/n of the raw rows and Û their non-private top-r " +
		"subspace — EVALUATION ONLY: computed from the raw data, NOT private (costs one more Gram and eigendecomposition)",
}

// evaluated adds the evaluate parameter to an estimator: after the fit it
// measures how much of the raw data's second moment the released subspace
// captures, relative to the best rank-r subspace. Real data have no ground
// truth; this is the usual utility measure there.
type evaluated struct{ sdk.Estimator }

// Info implements sdk.Estimator.
func (e evaluated) Info() sdk.Info {
	info := e.Estimator.Info()
	info.Params = append(append([]sdk.ParamSpec(nil), info.Params...), paramEvaluate)
	return info
}

// Fit implements sdk.Estimator.
func (e evaluated) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	res, err := e.Estimator.Fit(ctx, run)
	if err != nil || res == nil || !run.Params.Bool("evaluate") {
		return res, err
	}
	var u *sdk.Matrix
	for i := range res.Matrices {
		if res.Matrices[i].Name == "U" {
			u = &res.Matrices[i]
		}
	}
	if u == nil {
		return nil, fmt.Errorf("evaluate: the estimator released no U")
	}
	run.Progress("evaluation", 0, 1)
	s, _, err := Gram(ctx, run.Backend, run.Data.X, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	_, r := u.M.Dims()
	_, best, err := topEigen(ctx, run.Backend, s, r)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	run.Progress("evaluation", 1, 1)
	res.AddScalar("relative_utility", CapturedVariance(s, u.M)/CapturedVariance(s, best), sdk.Evaluation,
		"tr(ŨᵀSŨ)/tr(ÛᵀSÛ) on the raw (uncentred) second moment — EVALUATION ONLY, not private")
	return res, nil
}
