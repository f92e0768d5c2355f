package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Ledger is the part of the budget ledger a Runner uses; *ledger.Ledger
// implements it.
type Ledger interface {
	Reserve(ctx context.Context, hash string, req ledger.ReserveRequest) (ledger.RunID, error)
	Settle(ctx context.Context, id ledger.RunID, out ledger.Outcome) error
	Show(ctx context.Context, hash string) (ledger.Status, error)
}

// Registry finds the started plugin that serves an estimator.
type Registry interface {
	Find(estimator string) (*Plugin, sdk.Info, bool)
}

// Plugins is a Registry over started plugins, searched in order.
type Plugins []*Plugin

// Find returns the first plugin serving estimator and its catalogue entry.
func (ps Plugins) Find(estimator string) (*Plugin, sdk.Info, bool) {
	for _, p := range ps {
		if info, ok := p.Estimator(estimator); ok {
			return p, info, true
		}
	}
	return nil, sdk.Info{}, false
}

// Runner runs fits: validate → pre-flight check (parameters, memory, the
// mechanisms the fit will use against the data set's budget rule) →
// reserve → fit → verify (steps, and the mechanisms against the
// declaration) → settle. It is what `dplr fit` does between parsing its flags and writing
// the outputs, and it is usable without the command line.
type Runner struct {
	// Ledger records and admits runs (required).
	Ledger Ledger
	// Plugins finds the plugin serving an estimator (required).
	Plugins Registry
	// MaxMemory refuses, before reserving, a fit whose estimated peak
	// memory (the plugin's pre-flight footprint) exceeds it; 0: no limit.
	MaxMemory int64
	// CheckTimeout bounds the pre-flight check (default 10 s).
	CheckTimeout time.Duration
	// CheckCache, when set, is the directory where the answers of
	// pre-flight checks are kept, so that a repeated request is not
	// checked, nor its estimator dry-run, again (checkcache.go).
	CheckCache string
	// MaxPasses caps the aggregation passes one fit on remote data may
	// request (0: sdk.MaxPasses).
	MaxPasses int
	// PassReplyTimeout bounds the delivery of each pass's result to the
	// plugin, which asked for it and must be reading (0:
	// DefaultPassReplyTimeout).
	PassReplyTimeout time.Duration
}

// FitRequest is one fit to run.
type FitRequest struct {
	Estimator string
	Params    map[string]string // raw estimator parameters (--set)
	// Grant is the run's privacy budget. A non-private estimator needs
	// none (a zero Grant).
	Grant privacy.Grant
	Data  dataio.Handle // a prepared, hashed data set
	// Remote, when set, is a data set held elsewhere and reached only
	// through aggregation passes (an estimator with Info.Remote): Data
	// then carries its kind, its source identity (Source, and Hash = the
	// identity's hash), name and shape, and no file; Remote its public
	// shape and the Passer the host runs each pass the plugin requests
	// with. The pre-flight check must declare the pass kinds.
	Remote *data.Remote
	// Seed, when set, makes the noise reproducible and the result NOT
	// private against whoever knows it.
	Seed *uint64
	// NonPrivate allows a non-private reference estimator (never on a data
	// set with a budget).
	NonPrivate bool
	// Timeout, when positive, treats a fit still running after it as hung.
	Timeout time.Duration
	// BeforeReserve, when set, runs after every check and before any
	// budget is reserved (e.g. to create the output location); its error
	// refuses the run with nothing spent.
	BeforeReserve func() error
	// Process, when set, is the fit's process started ahead by the caller
	// (Plugin.StartFit on this plugin and data); the runner starts one
	// when it is nil or for other data, and drops it when Fit returns.
	Process *FitProcess
	// Events sees the plugin's progress, logs and announced steps.
	Events Events
}

// FitResult is a released fit.
type FitResult struct {
	Plugin  *Plugin
	Info    sdk.Info
	Outcome *FitOutcome
	// Guarantee is the estimator's statement (kind, model, assumptions,
	// neighbours) with the host's own numbers: the composition of the
	// verified steps, never the plugin's word.
	Guarantee privacy.Guarantee
	// Check is the plugin's pre-flight answer.
	Check CheckResult
	// RunID is the run's ledger entry (0 for a non-private run, which is
	// not recorded).
	RunID ledger.RunID
	// Status is the data set's budget position after the run (nil when it
	// could not be read).
	Status *ledger.Status
	// Notes are the host's remarks on the run: that it was counted against
	// another data set's budget because its rows are that data set's.
	Notes []string
	// Timings in seconds: "check_s" (pre-flight) and "fit_s" (the plugin
	// call); on remote data also "passes" (how many aggregation passes the
	// host ran, a count) and "passes_s" (their wall time, within fit_s).
	Timings map[string]float64
}

// Errors a Runner wraps so that callers can tell what happened.
var (
	// ErrUsage: the request was refused before anything was reserved
	// (unknown estimator, bad parameters, absurd budget, pre-flight
	// refusal, memory limit).
	ErrUsage = errors.New("nothing was run or spent")
	// ErrBudget: the ledger refused the run (nothing was spent).
	ErrBudget = errors.New("budget refused")
	// ErrLedger: the ledger could not be read or written.
	ErrLedger = errors.New("ledger error")
)

// FitError is a failed fit: what went wrong and what the ledger holds.
type FitError struct {
	Err error
	// RunID is the ledger entry (0 when nothing was reserved).
	RunID ledger.RunID
	// Charged: the run stays charged its full grant (a privacy step was
	// announced or a result returned); otherwise it was refunded.
	Charged bool
	// Outcome is what the plugin returned (nil when the fit never ran).
	Outcome *FitOutcome
}

func (e *FitError) Error() string {
	if e.RunID == 0 {
		return e.Err.Error()
	}
	if e.Charged {
		return fmt.Sprintf("%v (ledger %s charged its full grant: noise may have been drawn)", e.Err, e.RunID)
	}
	return fmt.Sprintf("%v (ledger %s refunded: no privacy step was taken)", e.Err, e.RunID)
}

func (e *FitError) Unwrap() error { return e.Err }

func usageErr(format string, args ...any) error {
	return &FitError{Err: fmt.Errorf("%w: %w", fmt.Errorf(format, args...), ErrUsage)}
}

// Fit runs one fit. Every refusal before the reservation spends nothing
// (ErrUsage, ErrBudget). Once reserved, the run is settled: charged the
// verified cost of its steps when released; on failure refunded when the
// plugin announced no privacy step and returned no result, charged its
// full grant otherwise. Errors are *FitError.
func (r *Runner) Fit(ctx context.Context, req FitRequest) (*FitResult, error) {
	defer req.Process.Drop() // unless the fit took it
	plug, info, err := r.validate(req)
	if err != nil {
		return nil, err
	}
	if info.NonPrivate && req.Grant.Kind == "" {
		// The plugin gets a placeholder grant it is forbidden to spend from.
		req.Grant = privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}
	}
	res := &FitResult{Plugin: plug, Info: info, Timings: map[string]float64{}}
	call := Call{Estimator: req.Estimator, Params: req.Params, Grant: req.Grant, Data: req.Data, Seed: req.Seed,
		Remote: req.Remote, MaxPasses: r.MaxPasses, ReplyTimeout: r.PassReplyTimeout}
	if req.Remote == nil {
		// The fit's own process starts while the request is checked and
		// reserved; it gets no request unless the fit runs.
		call.pending = req.Process
		if fp := req.Process; fp == nil || fp.plugin != plug || !slices.Equal(fp.paths, handlePaths(req.Data)) {
			call.pending = plug.StartFit(req.Data)
			defer call.pending.Drop()
		}
	}
	mode := sdk.PlanIndicator // the near-random warning, where it is cheap
	if info.NonPrivate {
		mode = sdk.PlanNone
	}
	if err := r.preflight(ctx, plug, call, mode, res); err != nil {
		return nil, err
	}
	if req.Remote != nil {
		if !res.Check.Supported || len(res.Check.Passes) == 0 {
			return nil, usageErr("plugin %s declared no aggregation passes for %s on remote data (a plugin built before remote data sets?): it cannot run there", plug.Name(), req.Estimator)
		}
		call.Passes = res.Check.Passes
	}
	key := BudgetKey(req.Data)
	var into *Overlap // the budgeted data set the data's rows mostly are
	if sl, ok := r.Ledger.(SketchLedger); ok {
		if into, err = Overlaps(ctx, sl, key, req.Data.Source); err != nil {
			return nil, err
		}
	}
	budgetKey := key // the data set the run is counted against
	if into != nil {
		budgetKey = into.Dataset.Hash
	}
	if err := r.admitNonPrivate(ctx, info, budgetKey); err != nil {
		return nil, err
	}
	if !info.NonPrivate {
		if err := r.admitMechanisms(ctx, budgetKey, info, req.Grant, res.Check.Mechanisms); err != nil {
			return nil, err
		}
	}
	if p := res.Check.Plan; p != nil && p.NearRandom && req.Events.Warning != nil {
		req.Events.Warning(p.Warning())
	}
	if req.BeforeReserve != nil {
		if err := req.BeforeReserve(); err != nil {
			return nil, &FitError{Err: fmt.Errorf("%w: %w", err, ErrUsage)}
		}
	}
	if info.NonPrivate {
		return r.fitNonPrivate(ctx, plug, call, req, res)
	}
	decl := res.Check.Mechanisms
	rreq := ledger.ReserveRequest{Estimator: req.Estimator, Plugin: plug.Path, Params: req.Params, Grant: req.Grant, Name: req.Data.Name,
		Relation: relationOf(req.Data), MechanismsDeclared: decl.Declared, Mechanisms: decl.Mechanisms()}
	if req.Data.Source != nil {
		rreq.Sketch = req.Data.Source.Sketch
	}
	var linked string
	if into != nil {
		// Its rows are rows of a budgeted data set: the reservation links
		// it there in its own transaction and charges the run to it.
		rreq.LinkTo = into.Dataset.Hash
		linked = fmt.Sprintf("counted against the budgeted data set %s: about %.0f%% of this data's rows are its rows",
			datasetName(into.Dataset), 100*into.In)
	}
	id, err := r.Ledger.Reserve(ctx, key, rreq)
	if err != nil {
		if linked != "" {
			err = fmt.Errorf("%s: %w", linked, err)
		} else if st, serr := r.Ledger.Show(ctx, key); serr == nil && st.Name != "" {
			err = fmt.Errorf("data set %s: %w", st.Name, err)
		}
		if errors.Is(err, ledger.ErrBudgetExceeded) || errors.Is(err, ledger.ErrIncompatible) || errors.Is(err, ledger.ErrRelation) || errors.Is(err, ledger.ErrOverlap) {
			return nil, &FitError{Err: fmt.Errorf("%w, nothing was run or spent: %w", ErrBudget, err)}
		}
		return nil, &FitError{Err: fmt.Errorf("reserving budget: %w: %w", err, ErrLedger)}
	}
	res.RunID = id
	if linked != "" {
		res.Notes = append(res.Notes, linked)
		if req.Events.Warning != nil {
			req.Events.Warning(linked)
		}
	}
	out, err := r.call(ctx, plug, call, req, res)
	if err == nil {
		err = checkRelease(info, out)
	}
	if err == nil {
		err = checkDeclared(plug, req.Estimator, decl, out)
	}
	if err == nil {
		err = checkNeighbours(plug, out)
	}
	if err != nil {
		return nil, r.settleFailure(id, out, err)
	}
	settled := ledger.Outcome{Status: ledger.Succeeded, Steps: out.Steps, Guarantee: out.Guarantee.Kind, Neighbours: out.Guarantee.Neighbours}
	// The fit is over: record it even if the user interrupts now.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.Ledger.Settle(sctx, id, settled); err != nil {
		return nil, &FitError{Err: fmt.Errorf("settling the ledger (the run stays charged; results not released): %w: %w", err, ErrLedger),
			RunID: id, Charged: true, Outcome: out}
	}
	res.Outcome, res.Guarantee = out, out.Certified // the host's figures, from the verified steps
	if st, err := r.Ledger.Show(ctx, key); err == nil {
		res.Status = &st
	}
	return res, nil
}

// admitMechanisms refuses, before anything is reserved, a request whose
// declared mechanisms the data set's budget rule cannot admit (a
// non-Gaussian mechanism under the Gaussian-DP filter, unless the run is
// granted a pure ε, which ledger admits as μ_ε-GDP): without it the run
// would be charged its reservation and its result withheld at settlement.
// The ledger repeats the check inside the reservation's transaction
// (ReserveRequest.MechanismsDeclared), so a rule fixed meanwhile by
// another process is honoured too. An undeclared request passes.
func (r *Runner) admitMechanisms(ctx context.Context, key string, info sdk.Info, grant privacy.Grant, decl sdk.Declaration) error {
	if !decl.Declared {
		return nil
	}
	st, err := r.Ledger.Show(ctx, key)
	if err != nil {
		return &FitError{Err: fmt.Errorf("reading the data set's budget: %w: %w", err, ErrLedger)}
	}
	if err := st.AdmitsMechanisms(grant, decl.Mechanisms()); err != nil {
		return &FitError{Err: fmt.Errorf("%w, nothing was run or spent: data set %s: %s will use %s; %w (%s)",
			ErrBudget, short(key), info.Name, decl, err, mechanismAdvice(info, decl))}
	}
	return nil
}

// mechanismAdvice says what a user refused under the Gaussian-DP filter
// can do: change the option that needs a non-Gaussian step when the
// declaration names one, grant a pure ε when the estimator accepts one,
// else use a Gaussian-only estimator or a data set of its own (the rule
// never changes once fixed).
func mechanismAdvice(info sdk.Info, decl sdk.Declaration) string {
	for _, u := range decl.Uses {
		if u.Mechanism != privacy.MechGaussian && strings.Contains(u.For, "clip=auto") {
			return "give a numeric clip instead of clip=auto, or run it on a data set of its own"
		}
	}
	if grantAccepted(info.Grants, privacy.GrantPure) {
		return "grant it a pure ε budget (--epsilon without --delta): an ε-DP run counts μ = 2Φ⁻¹(e^ε/(1+e^ε)) under this filter; or run it on a data set of its own"
	}
	return "use an estimator whose steps are all Gaussian, or run it on a data set of its own"
}

// checkDeclared holds a fit to its pre-flight declaration: every verified
// step must use a declared mechanism. A step that does not is a false
// declaration by the plugin: the result is withheld (the caller settles
// the run as a failure, charged, since noise was drawn).
func checkDeclared(plug *Plugin, estimator string, decl sdk.Declaration, out *FitOutcome) error {
	if err := decl.CheckSteps(out.Steps); err != nil {
		return fmt.Errorf("plugin %s: estimator %s broke its pre-flight declaration of mechanisms: %w; nothing is released: %w",
			plug.Name(), estimator, err, ErrPlugin)
	}
	return nil
}

// checkNeighbours refuses a result whose guarantee states a neighbour
// relation the ledger cannot read: the plugin's failure (its noise was
// drawn, so it stays charged), not the ledger's.
func checkNeighbours(plug *Plugin, out *FitOutcome) error {
	if n := out.Guarantee.Neighbours; n != "" {
		if _, err := ledger.ParseNeighbours(n); err != nil {
			return fmt.Errorf("plugin %s: its guarantee's neighbour relation cannot be read: %w; nothing is released: %w", plug.Name(), err, ErrPlugin)
		}
	}
	return nil
}

// relationOf is the neighbour relation a new data set's budget is stated
// for: one user's data for users data, one row otherwise.
func relationOf(h dataio.Handle) ledger.Relation {
	if h.Kind == data.Users {
		return ledger.ReplaceUser
	}
	return ledger.ReplaceRow
}

// validate checks everything that needs neither the plugin's word nor the
// ledger: the estimator exists, the request's form, the budget's sanity,
// the parameters against the catalogue, the rank against the data.
func (r *Runner) validate(req FitRequest) (*Plugin, sdk.Info, error) {
	plug, info, ok := r.Plugins.Find(req.Estimator)
	if !ok {
		return nil, info, &FitError{Err: fmt.Errorf("no plugin serves estimator %q: %w: %w", req.Estimator, ErrUnknownEstimator, ErrUsage)}
	}
	if _, ok := req.Params["seed"]; ok {
		return nil, info, usageErr("the seed is not an estimator parameter (--seed N)")
	}
	if req.Timeout < 0 {
		return nil, info, usageErr("timeout %s is negative", req.Timeout)
	}
	if info.NonPrivate && !req.NonPrivate {
		return nil, info, usageErr("%s is a NON-PRIVATE reference estimator: it runs only when non-private runs are allowed explicitly (--non-private), and its output must not be published", req.Estimator)
	}
	if !info.NonPrivate || req.Grant.Kind != "" {
		if err := SaneGrant(req.Grant); err != nil {
			return nil, info, &FitError{Err: fmt.Errorf("%w: %w", err, ErrUsage)}
		}
		if !grantAccepted(info.Grants, req.Grant.Kind) {
			return nil, info, usageErr("%s does not accept a %s budget; it accepts: %s", req.Estimator, req.Grant.Kind, grantKinds(info.Grants))
		}
	}
	if req.Data.Kind != info.DataKind {
		return nil, info, usageErr("%s takes %s data, got %s data", req.Estimator, info.DataKind, req.Data.Kind)
	}
	if err := checkRemote(info, req); err != nil {
		return nil, info, err
	}
	params, err := sdk.ValidateParams(info.Params, req.Params)
	if err != nil {
		return nil, info, usageErr("%s: %w", req.Estimator, err)
	}
	if err := saneParams(info.Params, params); err != nil {
		return nil, info, usageErr("%s: %w", req.Estimator, err)
	}
	if err := checkRank(params, req.Data); err != nil {
		return nil, info, usageErr("%s: %w", req.Estimator, err)
	}
	return plug, info, nil
}

// ErrRemote is wrapped when an estimator without a path through
// aggregation passes is asked to run on a remote data set.
var ErrRemote = errors.New("the estimator needs the rows")

// checkRemote checks a remote data set: an estimator with a path through
// passes (Info.Remote), a Passer, a public shape that is valid for the
// data kind and agrees with the handle's, no file.
func checkRemote(info sdk.Info, req FitRequest) error {
	rm := req.Remote
	if rm == nil {
		return nil
	}
	if !info.Remote {
		return &FitError{Err: fmt.Errorf("%s has no path through aggregation passes, so it cannot run on a remote data set (--engine beam): run it on a data file; those that can have \"remote\": true in dplr plugins --json: %w: %w",
			info.Name, ErrRemote, ErrUsage)}
	}
	h := req.Data
	if h.X.Path != "" || h.Y != nil || h.UserStart != nil || h.UserIDs != nil || h.Labels != nil {
		return usageErr("a remote data set's handle names files")
	}
	if h.N != rm.N || h.P != rm.P || h.D1 != rm.D1 || h.D2 != rm.D2 {
		return usageErr("remote data set: the handle's shape n = %d, p = %d, %d×%d differs from the remote's n = %d, p = %d, %d×%d", h.N, h.P, h.D1, h.D2, rm.N, rm.P, rm.D1, rm.D2)
	}
	ds := &data.Dataset{Kind: h.Kind, D1: h.D1, D2: h.D2, Remote: rm}
	if err := ds.CheckShape(); err != nil {
		return usageErr("%w", err)
	}
	return nil
}

// ErrUnknownEstimator is wrapped (with ErrUsage) when no plugin serves the
// requested estimator.
var ErrUnknownEstimator = errors.New("unknown estimator")

// Plan answers the plan of a fit (sdk.PlanOf): the request is validated
// and checked as Fit does before reserving, and the plugin dry-runs the
// estimator on a public reference data set of the data's shape. Nothing is
// reserved or recorded, and no data is sent to the plugin. Errors are
// *FitError (ErrUsage for a refusal).
func (r *Runner) Plan(ctx context.Context, req FitRequest) (*sdk.Plan, error) {
	plug, info, err := r.validate(req)
	if err != nil {
		return nil, err
	}
	if info.NonPrivate {
		return nil, usageErr("%s is a non-private reference estimator: it spends nothing and has no plan", req.Estimator)
	}
	res := &FitResult{Plugin: plug, Info: info, Timings: map[string]float64{}}
	call := Call{Estimator: req.Estimator, Params: req.Params, Grant: req.Grant, Data: req.Data, Remote: req.Remote}
	if err := r.preflight(ctx, plug, call, sdk.PlanFull, res); err != nil {
		return nil, err
	}
	if res.Check.Plan == nil {
		return nil, &FitError{Err: fmt.Errorf("plugin %s answers no plans (built before plans?): %w", plug.Name(), ErrPlugin)}
	}
	return res.Check.Plan, nil
}

// preflight asks the plugin to check the request (and, with plan, for the
// fit's plan), unless its answer is kept (checkcache.go), and refuses a
// footprint above the memory limit.
func (r *Runner) preflight(ctx context.Context, plug *Plugin, call Call, plan sdk.PlanMode, res *FitResult) error {
	t0 := time.Now()
	timeout := r.CheckTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	key, cacheable := "", false
	if r.CheckCache != "" {
		key, cacheable = checkKey(plug, call, plan)
	}
	chk, cached := CheckResult{}, false
	if cacheable {
		chk, cached = r.cachedCheck(key)
	}
	var err error
	if !cached {
		chk, err = plug.Check(cctx, call, plan)
	}
	res.Timings["check_s"] = time.Since(t0).Seconds()
	if err != nil {
		switch {
		case errors.Is(err, ErrRequest):
			err = fmt.Errorf("%w: %w", err, ErrUsage)
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			err = fmt.Errorf("no answer to the pre-flight check within %s: %w: %w", timeout, err, ErrPlugin)
		}
		return &FitError{Err: err}
	}
	if cacheable && !cached {
		r.keepCheck(key, chk)
	}
	res.Check = chk
	if r.MaxMemory > 0 && chk.Footprint > r.MaxMemory {
		return usageErr("%s would need about %s of memory, above the limit of %s (raise it with --max-memory)",
			call.Estimator, FormatBytes(chk.Footprint), FormatBytes(r.MaxMemory))
	}
	return nil
}

// admitNonPrivate reads the budget position of the data set key (the one
// the data's rows count against) and refuses a non-private estimator on a
// data set whose owner set a budget.
func (r *Runner) admitNonPrivate(ctx context.Context, info sdk.Info, key string) error {
	if !info.NonPrivate {
		return nil
	}
	st, err := r.Ledger.Show(ctx, key)
	if err != nil {
		return &FitError{Err: fmt.Errorf("reading the data set's budget: %w: %w", err, ErrLedger)}
	}
	if st.HasBudget {
		return &FitError{Err: fmt.Errorf("%w: refusing to run the non-private %s on data set %s: its owner set a privacy budget",
			ErrBudget, info.Name, short(key))}
	}
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// call runs the fit through the plugin under the request's timeout.
func (r *Runner) call(ctx context.Context, plug *Plugin, call Call, req FitRequest, res *FitResult) (*FitOutcome, error) {
	fctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	t0 := time.Now()
	out, err := plug.Fit(fctx, call, req.Events)
	res.Timings["fit_s"] = time.Since(t0).Seconds()
	if call.Remote != nil && out != nil {
		res.Timings["passes"], res.Timings["passes_s"] = float64(out.Passes), out.PassSeconds
	}
	if err != nil && req.Timeout > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// A plugin still running at the timeout is treated as hung.
		err = fmt.Errorf("the fit did not finish within the timeout of %s: %w: %w", req.Timeout, err, ErrPlugin)
	}
	return out, err
}

// checkRelease refuses a result that looks private without being so: a
// guarantee of kind "none" with public outputs from a private estimator.
// (A non-private estimator never reaches here; see fitNonPrivate.)
func checkRelease(info sdk.Info, out *FitOutcome) error {
	if out.Guarantee.Kind != privacy.None {
		return nil
	}
	for _, m := range out.Matrices {
		if m.Release == sdk.Public {
			return fmt.Errorf("plugin %s: estimator %s returned the public output %q with no privacy guarantee (kind %q); nothing is released: %w",
				info.Name, info.Name, m.Name, privacy.None, ErrPlugin)
		}
	}
	for _, s := range out.Scalars {
		if s.Release == sdk.Public {
			return fmt.Errorf("plugin %s: estimator %s returned the public output %q with no privacy guarantee (kind %q); nothing is released: %w",
				info.Name, info.Name, s.Name, privacy.None, ErrPlugin)
		}
	}
	return nil
}

// settleFailure records a failed run: refunded when the plugin announced
// no step and returned no result, charged its full grant otherwise. It
// settles even when ctx was cancelled (Ctrl-C).
func (r *Runner) settleFailure(id ledger.RunID, out *FitOutcome, fitErr error) error {
	noise := out == nil || out.NoiseDrawn()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fail := ledger.Outcome{Status: ledger.Failed, NoiseDrawn: noise, Error: fitErr.Error()}
	if out != nil {
		// The steps announced before their noise was drawn: the ledger
		// keeps a Gaussian-only run's GDP statement (see ledger.Settle).
		fail.Steps = out.Announced
	}
	err := r.Ledger.Settle(sctx, id, fail)
	if err != nil {
		fitErr = fmt.Errorf("%w; settling the ledger also failed (the run stays charged): %w", fitErr, err)
		noise = true
	}
	return &FitError{Err: fitErr, RunID: id, Charged: noise, Outcome: out}
}

// fitNonPrivate runs a non-private reference estimator: never recorded as
// a private release, and refused if it claims privacy or spends.
func (r *Runner) fitNonPrivate(ctx context.Context, plug *Plugin, call Call, req FitRequest, res *FitResult) (*FitResult, error) {
	out, err := r.call(ctx, plug, call, req, res)
	if err != nil {
		return nil, &FitError{Err: err, Outcome: out}
	}
	if out.Guarantee.Kind != privacy.None || len(out.Steps) > 0 {
		return nil, &FitError{Err: fmt.Errorf("plugin %s: non-private estimator %s returned a privacy claim: %w", plug.Name(), req.Estimator, ErrPlugin), Outcome: out}
	}
	res.Outcome, res.Guarantee = out, out.Guarantee
	return res, nil
}
