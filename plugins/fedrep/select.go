package fedrep

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// FedRep's part in the SDK's private selection (sdk.Selection,
// DERIVATIONS.md §13): the units are users; a candidate is fitted on the
// fitting users and scored by each held-out user's leave-one-out
// validation on its own rows, in [0, 1].

// selectOptions are the selection parameters of the private FedRep
// estimators: the SDK's, FedRep's score, and the former names.
type selectOptions struct {
	sdk.Selection
	SelectScore string `param:"select_score" default:"squared" choices:"squared,accuracy" doc:"each held-out user's leave-one-out validation score in [0, 1] on the rows its final head is fitted on (each row predicted by the head fitted on the user's other rows): squared = 1 − mean min(1, squared error); accuracy = fraction of signs predicted (±1 labels); a user with exactly 2 such rows scores the cosine between their difference and span(U) under either (0 when their labels agree)"`

	_ sdk.Renamed `param:"select_rank" renamed:"select"`
	_ sdk.Renamed `param:"select_clip_quantile" renamed:"select"`
	_ sdk.Renamed `param:"select_users" renamed:"select_holdout"`
}

// check refuses, from the request alone, a selection FedRep cannot run.
func (o *selectOptions) check(clipGiven bool, noise string) error {
	if !o.Active() {
		return nil
	}
	if clipGiven && o.Varies("clip_quantile") {
		return sdk.BadRequest("select: clip_quantile needs the clip chosen privately (do not give clip)")
	}
	if noise == "paper" {
		return sdk.BadRequest("private selection needs noise=exact or noise=zcdp (the paper's fixed σ̂ cannot be split among candidates)")
	}
	return nil
}

// SelectFit implements sdk.Selectable for fedrep-private.
func (PrivateFedRep) SelectFit(ctx context.Context, run *sdk.Run) (*sdk.Result, sdk.Scorer, error) {
	o := sdk.Opts[privateFedRepOptions](run)
	c := o.config()
	res, tr, err := fitFedRep(ctx, run, c, true, nil, lossSquared)
	if err != nil {
		return nil, nil, err
	}
	return res, scorer(c, tr, lossSquared, o.SelectScore == "accuracy", nil), nil
}

// scorer scores U on held-out users: the mean over them of each user's
// leave-one-out validation on its own rows, in [0, 1] per user (the
// users.validation pass; features mapped by the public Mᵀ = back when not
// nil).
func scorer(c *fedrepConfig, tr *fedrepTrace, loss lossKind, accuracy bool, back *mat.Dense) sdk.Scorer {
	return func(ctx context.Context, held *data.Dataset) (float64, error) {
		ud, err := newUsersData(held, c.split(), c.ridges, back, loss)
		if err != nil {
			return 0, err
		}
		return ud.validationScore(ctx, tr.uWork.RawMatrix().Data, c.rank(), c.split().headAll(), accuracy || loss == lossLogistic)
	}
}
