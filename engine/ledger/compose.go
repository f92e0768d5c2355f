package ledger

import (
	"errors"
	"fmt"

	"github.com/dplr/dplr/engine/privacy"
)

// Charge is what one run counts against its data set's budget: the
// privacy statements known to hold for the run (see privacy.Charge).
type Charge = privacy.Charge

// Spent is the composed privacy cost of a data set's charges.
type Spent = privacy.Spent

// Remaining is what admission will still allow (see privacy.Remaining).
type Remaining = privacy.Remaining

// compose asks the privacy package's budget filter whether the tally a
// fits total, with its errors as the ledger's.
func compose(total privacy.Grant, a privacy.Tally) (Spent, error) {
	sp, err := privacy.ComposeTally(total, a)
	return sp, admission(err)
}

// fits asks whether a further charge c is admitted on top of a.
func fits(total privacy.Grant, a privacy.Tally, c Charge) error {
	return admission(privacy.Fits(total, a, c))
}

// admission adds the ledger's error to a refusal of the budget filter.
func admission(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, privacy.ErrOverBudget):
		return fmt.Errorf("%w: %w", err, ErrBudgetExceeded)
	case errors.Is(err, privacy.ErrIncompatible):
		return fmt.Errorf("%w: %w", err, ErrIncompatible)
	}
	return fmt.Errorf("%w: %w", err, ErrInvalid)
}
