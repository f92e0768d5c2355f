package sdk

import (
	"errors"
	"fmt"
)

// RequestError marks an error as the estimator refusing the request itself
// (parameters that conflict with each other, with the data's shape or with
// the budget's form), as opposed to a failure while computing. Return it,
// through BadRequest, before declaring any privacy step: the host then
// reports a usage error (exit 2) and refunds the reservation. Over the
// protocol it travels as the gRPC status InvalidArgument.
type RequestError struct{ err error }

// Error implements error.
func (e *RequestError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *RequestError) Unwrap() error { return e.err }

// BadRequest formats an error (with fmt.Errorf semantics, so %w wraps) and
// marks it as a refused request.
func BadRequest(format string, args ...any) error {
	return &RequestError{err: fmt.Errorf(format, args...)}
}

// IsBadRequest reports whether err is, or wraps, a RequestError.
func IsBadRequest(err error) bool {
	var re *RequestError
	return errors.As(err, &re)
}
