package pca

import (
	"context"

	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
)

// withEvaluation implements the evaluate option of the private estimators
// through plugins/internal/pcaeval (on the rows divided by a released
// feature_scale: the space the estimate worked in); evaluation only.
func withEvaluation(ctx context.Context, run *sdk.Run, res *sdk.Result, on bool) (*sdk.Result, error) {
	if !on {
		return res, nil
	}
	c := pcaeval.CentringOf(res)
	for _, sc := range res.Scalars {
		if sc.Name == outPairRows {
			c = pcaeval.Centred // center=pairs: the pair differences are free of the mean
		}
	}
	if run.Acct != nil {
		for _, s := range run.Acct.Steps() {
			if s.Name == shareMean {
				c = pcaeval.Centred
			}
		}
	}
	return pcaeval.Add(ctx, run, res, true, c) // one more pass
}
