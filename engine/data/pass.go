package data

import (
	"context"
	"fmt"
	"math"
)

// Array is a named dense array travelling with an aggregation pass:
// Rows×Cols values, row-major (a vector is 1×len).
type Array struct {
	Name       string
	Rows, Cols int
	Data       []float64
}

// Check reports a wrong length or a value that is not finite.
func (a Array) Check() error {
	if a.Rows < 0 || a.Cols < 0 || len(a.Data) != a.Rows*a.Cols {
		return fmt.Errorf("array %q: %d values for %d×%d", a.Name, len(a.Data), a.Rows, a.Cols)
	}
	for i, v := range a.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("array %q: entry %d = %v is not finite", a.Name, i, v)
		}
	}
	return nil
}

// PassRequest asks for one aggregation pass over a data set the estimator
// cannot read itself: Kind names the pass (package engine/pass lists the
// kinds, their parameters, inputs and outputs), Params its public scalar
// parameters (clip bounds, step sizes) and Inputs its public side inputs
// (the current iterate). Everything in a request is chosen by the
// estimator from public values and earlier private releases; the host
// sees it.
type PassRequest struct {
	Kind   string
	Params map[string]float64
	Inputs []Array
}

// Input returns the input called name.
func (r PassRequest) Input(name string) (Array, bool) {
	for _, a := range r.Inputs {
		if a.Name == name {
			return a, true
		}
	}
	return Array{}, false
}

// PassResult is what an aggregation pass returns: sums of per-record (or
// per-user) terms, each bounded before aggregation as the pass kind says.
// These are not private: the estimator must add noise before anything
// derived from them leaves it.
type PassResult struct {
	// Records is the number of records (rows, samples or users) the pass
	// aggregated.
	Records int64
	// Outputs are the aggregates, in the order the kind lists them.
	Outputs []Array
	// Scalars are the kind's scalar aggregates (a loss, a count of clipped
	// records): never public as such.
	Scalars map[string]float64
}

// Output returns the output called name.
func (r *PassResult) Output(name string) (Array, bool) {
	for _, a := range r.Outputs {
		if a.Name == name {
			return a, true
		}
	}
	return Array{}, false
}

// Passer runs aggregation passes. The host gives an estimator a Passer
// when the data set lives elsewhere (a Beam pipeline over shards); tests
// use pass.Local over an in-memory data set.
type Passer interface {
	Pass(ctx context.Context, req PassRequest) (*PassResult, error)
}

// Remote describes a data set held elsewhere and reachable only through
// aggregation passes: its public shape (that of the local data set it
// stands for) and the Passer that runs them.
type Remote struct {
	// N is the number of rows (samples); P the number of columns; D1, D2
	// the sample matrices' shape for trace data; Users the number of users
	// of users data.
	N, P, D1, D2, Users int
	// Passer runs the passes.
	Passer Passer
}

// check validates the public shape for kind k.
func (r *Remote) check(k Kind) error {
	if r.Passer == nil {
		return fmt.Errorf("remote data set without a pass runner")
	}
	if r.N < 1 || r.P < 1 {
		return fmt.Errorf("remote data set: shape n = %d, p = %d", r.N, r.P)
	}
	switch k {
	case Rows:
	case Trace:
		if r.D1 < 1 || r.D2 < 1 || r.D1*r.D2 != r.P {
			return fmt.Errorf("remote trace data: p = %d is not d1·d2 = %d·%d", r.P, r.D1, r.D2)
		}
	case Users:
		if r.Users < 1 || r.Users > r.N {
			return fmt.Errorf("remote user data: %d users for %d rows", r.Users, r.N)
		}
	default:
		return fmt.Errorf("unknown data kind %q", k)
	}
	return nil
}
