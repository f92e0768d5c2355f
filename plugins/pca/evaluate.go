package pca

import (
	"context"

	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/pcaeval"
)

// withEvaluation implements the evaluate option of the private estimators
// through the shared plugins/internal/pcaeval: the centred captured-variance
// ratio always, and the uncentred one, named as such, when the estimator
// did not centre (no released mean and no private mean step).
func withEvaluation(ctx context.Context, run *sdk.Run, res *sdk.Result, on bool) (*sdk.Result, error) {
	c := pcaeval.CentringOf(res)
	if run.Acct != nil {
		for _, s := range run.Acct.Steps() {
			if s.Name == shareMean {
				c = pcaeval.Centred
			}
		}
	}
	return pcaeval.Add(ctx, run, res, on, c)
}
