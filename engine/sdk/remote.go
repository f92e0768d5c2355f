package sdk

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// RemoteEstimator is implemented by an estimator that can run on a data
// set it cannot read, held elsewhere (shards a Beam pipeline reads) and
// reached only through aggregation passes (data.Remote, pass kinds in
// package engine/pass). Its Fit is the same as on local data: it finds
// run.Data.Remote set (run.Data.X nil) and asks run.Data.Remote.Passer for
// each aggregate it needs. Its plans, privacy steps and guarantee must be
// those of the fit on the rows the passes aggregate, so that the ledger
// sees the same run.
//
// InfoOf marks such an estimator in the catalogue (Info.Remote).
type RemoteEstimator interface {
	Estimator
	// Passes returns the pass kinds a fit with the bound options opts
	// (as Opts returns them) will request on data of shape s, or refuses,
	// before any budget is reserved, options that need the rows themselves.
	Passes(opts any, s Shape) ([]string, error)
}

// PassesOf is the pre-flight check of a request on a remote data set: est
// must implement RemoteEstimator and accept the bound options opts on
// shape s. It returns the pass kinds the fit may request; its errors are
// BadRequests.
func PassesOf(est Estimator, opts any, s Shape) ([]string, error) {
	if selectionOf(opts) != nil {
		return nil, BadRequest(selectRemoteRefusal)
	}
	re, ok := est.(RemoteEstimator)
	if !ok {
		return nil, BadRequest("estimator %s needs the rows: it has no path through aggregation passes (run it on the data file, not through Beam)", est.Info().Name)
	}
	kinds, err := re.Passes(opts, s)
	if err != nil {
		return nil, BadRequest("estimator %s on remote data: %w", est.Info().Name, err)
	}
	if len(kinds) == 0 {
		return nil, BadRequest("estimator %s declares no pass kinds for these options", est.Info().Name)
	}
	return kinds, nil
}

// guardedPasser refuses the kinds an estimator did not declare and counts
// the passes run.
type guardedPasser struct {
	inner   data.Passer
	allowed []string
	count   atomic.Int64
	max     int64
}

// Pass implements data.Passer.
func (g *guardedPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	if !slices.Contains(g.allowed, req.Kind) {
		return nil, fmt.Errorf("pass %q was not declared by the estimator (declared: %v)", req.Kind, g.allowed)
	}
	if n := g.count.Add(1); g.max > 0 && n > g.max {
		return nil, fmt.Errorf("more than %d passes requested in one fit", g.max)
	}
	return g.inner.Pass(ctx, req)
}

// MaxPasses bounds the passes one fit may request (each is a full
// pipeline over the data): far above any estimator's iteration count.
const MaxPasses = 100000

// remoteView returns d with its Passer limited to the declared kinds.
func remoteView(d *data.Dataset, kinds []string) *data.Dataset {
	cp := *d
	r := *d.Remote
	r.Passer = &guardedPasser{inner: d.Remote.Passer, allowed: kinds, max: MaxPasses}
	cp.Remote = &r
	return &cp
}

// Pass runs one aggregation pass (package engine/pass) over the run's data
// set and returns its checked result: in process over the rows of a data
// set in memory, or through the host's pass runner for a data set held
// elsewhere (only the kinds the estimator's Passes declared). An estimator
// that reads its data only through Pass has one path for both, which is
// what makes it a RemoteEstimator.
func (r *Run) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	return pass.Run(ctx, r.Data, req)
}
