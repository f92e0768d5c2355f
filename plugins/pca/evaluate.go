package pca

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/sdk"
)

// withEvaluation implements the evaluate option every PCA estimator
// offers: the captured-variance ratio of the released U on the raw data,
// centred at the empirical mean (scikit-learn's convention, reported as
// captured_variance_ratio) and uncentred (captured_variance_ratio_uncentred),
// both against the non-private top-r subspace of the same matrix. With a
// released feature_scale (feature_scale=private) the rows are first divided
// by it: the ratios then score the space the estimate worked in. Both are
// labelled sdk.Evaluation: computed from the raw data, never private.
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
	x, err := scaledRows(ctx, run.Data.X, res) // the space the estimate worked in
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	n, p := x.Dims()
	s, _, err := Gram(ctx, run.Backend, x, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	mean := make([]float64, p)
	for i := 0; i < n; i++ {
		for j, v := range x.RawRowView(i)[:p] {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	c := evaluate.Centre(s, mean)
	_, r := u.M.Dims()
	ratio := func(a mat.Symmetric) (float64, error) {
		top, _, err := topEigen(ctx, run.Backend, a, r)
		if err != nil {
			return 0, fmt.Errorf("evaluate: %w", err)
		}
		return evaluate.CapturedRatio(a, u.M, top), nil
	}
	centred, err := ratio(c)
	if err != nil {
		return nil, err
	}
	uncentred, err := ratio(s)
	if err != nil {
		return nil, err
	}
	run.Progress("evaluation", 1, 1)
	res.AddScalar(evaluate.RatioCentred, centred, sdk.Evaluation,
		"tr(ŨᵀCŨ)/tr(ÛᵀCÛ), C the covariance of the raw rows (divided by feature_scale when released) centred at their empirical mean, Û its top-r subspace (scikit-learn's convention) — EVALUATION ONLY, not private")
	res.AddScalar(evaluate.RatioUncentred, uncentred, sdk.Evaluation,
		"the same ratio on the UNCENTRED second moment XᵀX/n (flatters a subspace that mostly holds the mean direction) — EVALUATION ONLY, not private")
	return res, nil
}

// explainedRatio returns vals/trace when the trace is positive: the
// explained-variance-ratio estimate from released eigenvalues and a
// released trace (post-processing).
func explainedRatio(vals []float64, trace float64) ([]float64, bool) {
	if !(trace > 0) {
		return nil, false
	}
	out := make([]float64, len(vals))
	for k, v := range vals {
		out[k] = v / trace
	}
	return out, true
}
