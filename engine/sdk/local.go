package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// LocalOptions configures RunLocal.
type LocalOptions struct {
	Seed     *uint64 // nil: secure randomness
	Backend  backend.Backend
	Progress func(Progress)
	Logf     func(format string, args ...any)
	// OnStep is called after each privacy step is accepted, before its
	// noise is drawn (the plugin server streams it to the host).
	OnStep func(privacy.Step)
}

// RunLocal runs est in this process: it validates the data and the
// parameters, checks the grant, runs the fit and completes the result's
// guarantee from the accountant. It is what the plugin server does after
// receiving a request, and what tests and in-process benchmarks call.
func RunLocal(ctx context.Context, est Estimator, d *data.Dataset, raw map[string]string, grant privacy.Grant, opt LocalOptions) (res *Result, acct *privacy.Accountant, err error) {
	if d == nil {
		return nil, nil, errors.New("no data set")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	prep, err := prepare(est.Info(), raw, ShapeOf(d))
	if err != nil {
		return nil, nil, err
	}
	info := prep.info
	largeDelta, err := CheckGrant(info, raw, ShapeOf(d), grant)
	if err != nil {
		return nil, nil, err
	}
	// The pre-flight declaration and plan, as the host asks for them before
	// reserving: an estimator may refuse there what it can decide from the
	// request, before any accountant exists.
	_, plan, err := declare(info, prep.opts, ShapeOf(d), grant)
	if err != nil {
		return nil, nil, err
	}
	acct, err = privacy.NewAccountant(grant)
	if err != nil {
		return nil, nil, err
	}
	if opt.OnStep != nil {
		acct.OnSpend(opt.OnStep)
	}
	var src *privacy.Source
	if opt.Seed != nil {
		src = privacy.NewSeededSource(*opt.Seed)
	} else if src, err = privacy.NewSecureSource(); err != nil {
		return nil, nil, err
	}
	be := opt.Backend
	if be == nil {
		be = backend.Default()
	}
	run := &Run{Data: d, Params: prep.params, opts: prep.opts, Acct: acct, Plan: plan, Rand: src, Backend: be, progress: opt.Progress, logf: opt.Logf}
	fit := est.Fit
	if sel := selectionOf(prep.opts); sel != nil {
		fit = func(ctx context.Context, run *Run) (*Result, error) { return runSelection(ctx, est, run, sel) }
	}
	if d.Remote != nil {
		kinds, err := PassesOf(est, prep.opts, ShapeOf(d))
		if err != nil {
			return nil, acct, err
		}
		run.Data = remoteView(d, kinds)
	}
	if d.X == nil && d.XBytes != nil {
		// Rows kept as bytes are read through passes, decoded block by
		// block; a fit that reads X itself gets it decoded whole.
		if _, err := PassesOf(est, prep.opts, ShapeOf(d)); err != nil {
			run.Data = d.WithDenseX()
		}
	}
	if plan != nil {
		plan.Calibrate() // an exact plan's scaling, beside the fit's first pass
	}
	res, err = safeFit(ctx, fit, run)
	if err != nil {
		if errors.Is(err, privacy.ErrInvalidBudget) && len(acct.Steps()) == 0 && !IsBadRequest(err) {
			// A plan the grant cannot pay for (wrong grant kind for the
			// noise, an unusable per-step budget) is decided from the
			// request alone, before anything is spent: a refused request.
			err = BadRequest("%w", err)
		}
		return nil, acct, fmt.Errorf("estimator %s: %w", info.Name, err)
	}
	if res == nil {
		return nil, acct, fmt.Errorf("estimator %s returned no result", info.Name)
	}
	if err := res.CheckReleases(); err != nil {
		return nil, acct, fmt.Errorf("estimator %s: %w", info.Name, err)
	}
	if info.NonPrivate {
		if n := len(acct.Steps()); n > 0 {
			return nil, acct, fmt.Errorf("estimator %s is marked non-private but declared %d privacy steps", info.Name, n)
		}
		res.Guarantee = privacy.Guarantee{Kind: privacy.None}
	}
	if err := completeGuarantee(res, acct, src); err != nil {
		return nil, acct, fmt.Errorf("estimator %s: %w", info.Name, err)
	}
	if largeDelta != "" && res.Guarantee.Kind != privacy.None {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, largeDelta)
		res.AddWarning(largeDelta)
	}
	return res, acct, nil
}

func grantAccepted(kinds []privacy.GrantKind, k privacy.GrantKind) bool {
	for _, g := range kinds {
		if g == k {
			return true
		}
	}
	return false
}

// safeFit converts a panic inside an estimator into an error, so that no
// panic crosses the SDK boundary.
func safeFit(ctx context.Context, fit func(context.Context, *Run) (*Result, error), run *Run) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("estimator panicked: %v", p)
		}
	}()
	return fit(ctx, run)
}

// completeGuarantee replaces the result's figures (and, for worst-case
// kinds, its kind) by what the accountant's steps actually give under the
// grant (privacy.Certify), and marks a seeded run.
func completeGuarantee(res *Result, acct *privacy.Accountant, src *privacy.Source) error {
	g, err := privacy.Certify(res.Guarantee, acct.Grant(), acct.Steps())
	if err != nil {
		return fmt.Errorf("stating the guarantee: %w", err)
	}
	g.Seeded = src.Seeded()
	res.Guarantee = g
	return nil
}
