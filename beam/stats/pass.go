package stats

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// PassFunc runs one aggregation pass of a registered kind (package
// engine/pass) as a Beam pipeline over the shards matching glob, read with
// ro, for a data set of public shape shape (Passer nil). It returns what
// the kind's reference implementation (pass.Spec.Local) returns on the one
// file holding the same rows, up to floating-point summation order. The
// request has been validated (pass.Validate) and the result is checked
// (pass.CheckResult) by RunPass; a PassFunc bounds every record's or
// user's term before any aggregation, as its Spec says.
type PassFunc func(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error)

var (
	passMu  sync.RWMutex
	passFns = map[string]PassFunc{}
)

// RegisterPass adds the Beam implementation of the pass kind called kind;
// the files beam/stats/pass_<data kind>.go call it from their init
// functions. It panics on a duplicate, an empty name or a nil function (a
// programming error caught when the program starts).
func RegisterPass(kind string, fn PassFunc) {
	passMu.Lock()
	defer passMu.Unlock()
	if _, dup := passFns[kind]; dup || kind == "" || fn == nil {
		panic("stats: bad or duplicate pass kind " + kind)
	}
	passFns[kind] = fn
}

// PassKinds lists the kinds with a Beam implementation, sorted.
func PassKinds() []string {
	passMu.RLock()
	defer passMu.RUnlock()
	out := make([]string, 0, len(passFns))
	for k := range passFns {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RunPass validates req against its kind for a data set of shape shape
// (pass.Validate: the kind exists, reads the data kind of its Spec, has
// every parameter and input in range), runs the kind's registered
// PassFunc over the shards matching glob and checks the result
// (pass.CheckResult: record count, output shapes, finite values, the
// kind's norm bounds). A failed pipeline returns an error and nothing
// else.
func RunPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	res, _, err := runPass(ctx, glob, shape, ro, req, 0, 0, false, opt)
	return res, err
}

// DescribedPass is RunPass also returning the description of the shards
// as the pass read them (Describe's, with d1 and d2): data changed before
// or during the pass give another shape or identity. The rows and trace
// kinds take it in the pass's own read (each split is hashed as it is
// read); the users kinds run the description pipeline after the pass.
func DescribedPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, d1, d2 int, opt Options) (*data.PassResult, *Description, error) {
	return runPass(ctx, glob, shape, ro, req, d1, d2, true, opt)
}

func runPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, d1, d2 int, describe bool, opt Options) (*data.PassResult, *Description, error) {
	initBeam()
	if shape == nil {
		return nil, nil, fmt.Errorf("pass %s: no data shape", req.Kind)
	}
	spec, ok := pass.Lookup(req.Kind)
	if !ok {
		return nil, nil, fmt.Errorf("pass %q: unknown kind (known: %v)", req.Kind, pass.Kinds())
	}
	if _, err := pass.Validate(spec.Data, shape, req); err != nil {
		return nil, nil, err
	}
	passMu.RLock()
	fn := passFns[req.Kind]
	passMu.RUnlock()
	if fn == nil {
		return nil, nil, fmt.Errorf("pass %s: no Beam implementation (Beam runs %v)", req.Kind, PassKinds())
	}
	opt.Read = ro
	var res *data.PassResult
	var desc *Description
	var err error
	_, rows := rowsPasses[req.Kind]
	_, trace := tracePassFuncs[req.Kind]
	if describe && (rows || trace) {
		res, desc, err = globPass(ctx, glob, shape, ro, req, true, opt)
	} else {
		res, err = fn(ctx, glob, shape, ro, req, opt)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pass %s: %w", req.Kind, err)
	}
	if err := pass.CheckResult(spec, shape, req, res); err != nil {
		return nil, nil, err
	}
	if describe && desc == nil {
		if desc, err = Describe(ctx, glob, spec.Data, d1, d2, opt); err != nil {
			return nil, nil, err
		}
	}
	return res, desc, nil
}

// init registers the Beam implementations of every data kind's passes
// (pass_rows.go, pass_trace.go, pass_users.go list them by kind).
func init() {
	for kind, fn := range rowsPasses {
		RegisterPass(kind, fn)
	}
	for kind, fn := range tracePassFuncs {
		RegisterPass(kind, fn)
	}
	for kind, fn := range UsersPasses {
		RegisterPass(kind, fn)
	}
}
