package pca

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/sdk"
)

// withEvaluation implements the evaluate option every PCA estimator
// offers: when on, it measures how much of the raw data's second moment the
// released subspace U captures, relative to the best rank-r subspace. Real
// data have no ground truth; this is the usual utility measure there. It is
// computed from the raw data and labelled evaluation-only.
func withEvaluation(ctx context.Context, run *sdk.Run, res *sdk.Result, on bool) (*sdk.Result, error) {
	if !on {
		return res, nil
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
	res.AddScalar("relative_utility", evaluate.CapturedVariance(s, u.M)/evaluate.CapturedVariance(s, best), sdk.Evaluation,
		"tr(ŨᵀSŨ)/tr(ÛᵀSÛ) on the raw (uncentred) second moment — EVALUATION ONLY, not private")
	return res, nil
}
