package pca

import (
	"context"

	"gonum.org/v1/gonum/floats"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/project"
)

// PCA's part in the SDK's private selection (sdk.Selection): the units are
// rows; a candidate is fitted on the fitting rows and scored on each
// held-out row x by the fraction of it the released components capture,
// ‖Ûᵀy‖²/‖y‖² with y = x/feature_scale − mean as dplr transform prepares
// it (1 for y = 0). Û is orthonormal, so the score is in [0, 1], and it
// depends on its own row only: the mean over m held-out rows moves by at
// most 1/m when one row is replaced.

// SelectShares implements sdk.SelectPlanner for pca-analyze-gauss.
func (o *analyzeGaussOptions) SelectShares(s sdk.Shape) (string, []privacy.Share, error) {
	return o.Noise.Value, analyzeGaussShares(s.P, o), nil
}

// SelectFit implements sdk.Selectable for pca-analyze-gauss.
func (AnalyzeGauss) SelectFit(ctx context.Context, run *sdk.Run, plan *privacy.Plan) (*sdk.Result, sdk.Scorer, error) {
	res, err := analyzeGaussFit(ctx, run, plan)
	if err != nil {
		return nil, nil, err
	}
	return res, capturedScorer(res, run.Params.Raw()), nil
}

// capturedScorer scores held-out rows by the mean over them of the
// fraction of each row (prepared as transform prepares it) that the
// components of res capture, in [0, 1] per row (1 for a zero row).
func capturedScorer(res *sdk.Result, params map[string]string) sdk.Scorer {
	m := modelOf(res, params)
	return func(ctx context.Context, held *data.Dataset) (float64, error) {
		y, u, err := project.Prepared(m, held.X)
		if err != nil {
			return 0, err
		}
		n, _ := y.Dims()
		_, k := u.Dims()
		proj := make([]float64, k)
		var sum float64
		for i := 0; i < n; i++ {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
			}
			row := y.RawRowView(i)
			total := floats.Dot(row, row)
			if total == 0 {
				sum++
				continue
			}
			for j := range proj {
				proj[j] = 0
			}
			for a, v := range row {
				if v != 0 {
					floats.AddScaled(proj, v, u.RawRowView(a))
				}
			}
			sum += min(floats.Dot(proj, proj)/total, 1)
		}
		return sum / float64(n), nil
	}
}

// modelOf is the model dplr transform reads from res: its public matrices.
func modelOf(res *sdk.Result, params map[string]string) *sdk.Model {
	m := &sdk.Model{Params: params}
	for _, o := range res.Matrices {
		if o.Release == sdk.Public {
			r, c := o.M.Dims()
			m.Outputs = append(m.Outputs, sdk.ModelOutput{Name: o.Name, Rows: r, Cols: c, Value: o.M.RawMatrix().Data})
		}
	}
	return m
}
