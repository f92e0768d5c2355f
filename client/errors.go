package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
)

// Error classes, one per exit code of the dplr command. Every error this
// package returns matches exactly one of them with errors.Is.
var (
	// ErrRuntime (exit 1): the ledger could not be read or written, or
	// outputs could not be written; a released run stays charged.
	ErrRuntime = errors.New("runtime error")
	// ErrUsage (exit 2): a bad request refused before anything was
	// reserved (unknown estimator, bad parameter, absurd budget, pre-flight
	// refusal, memory limit); nothing was spent.
	ErrUsage = errors.New("usage error")
	// ErrBudget (exit 3): the ledger refused the run; nothing was spent.
	ErrBudget = errors.New("budget refused")
	// ErrPlugin (exit 4): a plugin did not start, crashed, hung, sent
	// malformed output or an unverifiable privacy cost.
	ErrPlugin = errors.New("plugin failure")
	// ErrData (exit 5): the data could not be read or failed validation,
	// or the ledger is damaged; nothing was spent.
	ErrData = errors.New("data error")
	// ErrEstimator (exit 6): the estimator failed while running.
	ErrEstimator = errors.New("estimator failure")
	// ErrInterrupted (exit 130): the context was cancelled.
	ErrInterrupted = errors.New("interrupted")
)

// Causes an error may also match with errors.Is, beside its class.
var (
	// ErrUnknownEstimator: no plugin serves the estimator (ErrUsage).
	ErrUnknownEstimator = host.ErrUnknownEstimator
	// ErrRefused: the host refused the fit's request before reserving
	// anything: bad parameters, the estimator's pre-flight check, the
	// memory limit (ErrUsage).
	ErrRefused = host.ErrUsage
	// ErrLedgerDamaged: the budget ledger is damaged or was tampered with
	// (ErrData); it is left untouched.
	ErrLedgerDamaged = ledger.ErrDamaged
)

// FitFailed reports whether err is the failure of a fit itself (its
// checks, its reservation or its run), not of what comes before it:
// finding the estimator, reading the data, opening the ledger.
func FitFailed(err error) bool {
	var fe *host.FitError
	return errors.As(err, &fe)
}

// Error is an error of this package: its class (one of the Err*
// sentinels), the cause, and what the ledger holds for a fit.
type Error struct {
	// Class is one of ErrRuntime, ErrUsage, ErrBudget, ErrPlugin, ErrData,
	// ErrEstimator, ErrInterrupted.
	Class error
	// Err is the cause; Error() is its message.
	Err error
	// RunID is the fit's ledger entry (0 when nothing was reserved).
	RunID RunID
	// Charged: the fit stays charged its full grant (a privacy step was
	// announced or a result returned); otherwise nothing was spent.
	Charged bool
	// SuggestedRho, for an (ε, δ) request the ledger refused, is a ρ whose
	// zCDP guarantee implies the same (ε, δ) and that the data set's
	// remaining budget admits (0 when there is none).
	SuggestedRho float64
}

// Error is the cause's message (the dplr command prints the same).
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap exposes both the class and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Class, e.Err} }

// classed returns err as an *Error of class c.
func classed(c error, err error) *Error { return &Error{Class: c, Err: err} }

// classedf is classed with a formatted cause.
func classedf(c error, format string, args ...any) *Error {
	return classed(c, fmt.Errorf(format, args...))
}

// ClassOf returns the class of err (ErrRuntime when err carries none, nil
// for a nil err).
func ClassOf(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e.Class != nil {
		return e.Class
	}
	return ErrRuntime
}

// ExitCode is the dplr command's exit code for err's class.
func ExitCode(err error) int {
	switch ClassOf(err) {
	case nil:
		return 0
	case ErrUsage:
		return 2
	case ErrBudget:
		return 3
	case ErrPlugin:
		return 4
	case ErrData:
		return 5
	case ErrEstimator:
		return 6
	case ErrInterrupted:
		return 130
	}
	return 1
}

// The ledger's refusals of a spend its budget rule cannot admit: the total
// would be exceeded, or the spend has no statement the rule counts.
var (
	ErrBudgetExceeded = ledger.ErrBudgetExceeded
	ErrIncompatible   = ledger.ErrIncompatible
)

// ledgerClass is the class of an error from the ledger: damaged → data,
// refused → budget, bad argument → usage, anything else runtime.
func ledgerClass(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case errors.Is(err, ledger.ErrDamaged):
		return ErrData
	case errors.Is(err, ledger.ErrBudgetExceeded), errors.Is(err, ledger.ErrIncompatible),
		errors.Is(err, ledger.ErrBudgetSet), errors.Is(err, ledger.ErrRelation):
		return ErrBudget
	case errors.Is(err, ledger.ErrInvalid), errors.Is(err, ledger.ErrNotFound):
		return ErrUsage
	}
	return ErrRuntime
}

// ledgerErr classes an error from the ledger (nil stays nil).
func ledgerErr(err error) error {
	if err == nil {
		return nil
	}
	return classed(ledgerClass(err), err)
}

// fitClass is the class of an error from host.Runner.Fit.
func fitClass(err error) error {
	var fe *host.FitError
	charged := errors.As(err, &fe) && fe.Charged
	switch {
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case errors.Is(err, host.ErrUnknownEstimator), errors.Is(err, host.ErrUsage):
		return ErrUsage
	case errors.Is(err, host.ErrBudget):
		return ErrBudget
	case errors.Is(err, host.ErrPlugin):
		return ErrPlugin
	case errors.Is(err, host.ErrPass) && !charged:
		return ErrData // the host's pass runner failed (a pipeline, shards that changed)
	case errors.Is(err, host.ErrLedger) && errors.Is(err, ledger.ErrDamaged) && !charged:
		return ErrData // the ledger cannot be trusted
	case errors.Is(err, host.ErrLedger):
		return ErrRuntime
	case errors.Is(err, host.ErrRequest) && !charged:
		return ErrUsage
	}
	// A refusal after a privacy step breaks the protocol's contract; the
	// run stays charged and is not a mere usage error. Likewise a pass or
	// data failure once the run is charged: exit 5 means nothing was
	// spent, so a charged failure is an estimator failure (exit 6).
	return ErrEstimator
}

// fitErr classes an error from host.Runner.Fit, keeping its ledger state.
func fitErr(err error) *Error {
	e := classed(fitClass(err), err)
	var fe *host.FitError
	if errors.As(err, &fe) {
		e.RunID, e.Charged = fe.RunID, fe.Charged
	}
	return e
}
