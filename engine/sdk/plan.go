package sdk

import (
	"errors"

	"github.com/dplr/dplr/engine/privacy"
)

// NewPlan is privacy.NewPlan for run's accountant, with a plan the grant
// cannot pay for (wrong grant kind for noise, an unusable per-step budget)
// marked BadRequest: it is decided from the request alone, before anything
// is spent, so the host refunds the reservation.
func NewPlan(run *Run, noise string, shares ...privacy.Share) (*privacy.Plan, error) {
	p, err := privacy.NewPlan(run.Acct, noise, shares...)
	if err != nil {
		if errors.Is(err, privacy.ErrInvalidBudget) {
			return nil, BadRequest("%w", err)
		}
		return nil, err
	}
	return p, nil
}
