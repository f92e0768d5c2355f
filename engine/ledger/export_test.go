package ledger

import (
	"time"

	"github.com/dplr/dplr/engine/privacy"
)

// Test helpers, exported to the package's examples too.

// OutcomeOf is the Outcome of a run that ended with runErr (nil: success)
// after its accountant accepted steps. Estimators spend before they draw
// noise, so a failed run whose accountant accepted no step drew none and is
// refunded. Pass nil steps when they are unknown (say, the plugin process
// died): a failure is then charged its full grant, and a success is refused
// by Settle (ErrInvalid) rather than guessed at; pass a non-nil empty slice
// for a run known to have spent nothing (it failed validation).
func OutcomeOf(runErr error, steps []privacy.Step) Outcome {
	if runErr == nil {
		return Outcome{Status: Succeeded, Steps: steps}
	}
	return Outcome{Status: Failed, Steps: steps, NoiseDrawn: steps == nil || len(steps) > 0, Error: runErr.Error()}
}

// WithGuarantee returns o with the guarantee's kind and neighbour relation
// filled in, as Settle needs them to charge the run for the budget's
// relation and to show its class.
func (o Outcome) WithGuarantee(g privacy.Guarantee) Outcome {
	o.Guarantee, o.Neighbours = g.Kind, g.Neighbours
	return o
}

// LastFullCheck is the time of the last full verification recorded in the
// marker (zero if none).
func (l *Ledger) LastFullCheck() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, _ := time.Parse(time.RFC3339Nano, l.full)
	return t
}
