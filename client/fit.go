package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

// FitRequest is one fit to run.
type FitRequest struct {
	// Estimator names the estimator (see Describe).
	Estimator string
	// Params are the estimator's parameters (see Params).
	Params Params
	// Grant is the run's privacy budget (ApproxDP, PureDP, ZCDP). A
	// non-private reference estimator needs none.
	Grant Grant
	// Data is the data set (File, InMemory, Rows).
	Data Data
	// Seed, when set, makes the noise reproducible and the result NOT
	// private against whoever knows it.
	Seed *uint64
	// NonPrivate allows a non-private reference estimator (refused on a
	// data set with a budget, never recorded as a spend).
	NonPrivate bool
	// Timeout, when positive, treats a fit still running after it as hung
	// (ErrPlugin).
	Timeout time.Duration
	// Progress, Log and Step, when set, see the plugin's progress, its log
	// lines and each privacy step it announces (before drawing its noise).
	Progress func(Progress)
	Log      func(string)
	Step     func(Step)
	// Warning, when set, sees before anything is reserved the warning the
	// plan gives when it expects a result near random (one line; see Plan).
	Warning func(string)
	// Pass, when set, sees each aggregation pass the plugin requests on a
	// remote data set (numbered from 1), validated, before the host runs it.
	Pass func(n int, req data.PassRequest)
	// BeforeReserve, when set, runs after every check and before any
	// budget is reserved; its error refuses the run (ErrUsage unless it is
	// already an *Error) with nothing spent.
	BeforeReserve func() error
}

// Fit runs one fit: the request is checked (estimator, parameters, budget,
// data, the plugin's pre-flight check) before anything is reserved, the
// grant is reserved in the ledger, the plugin fits, the host verifies the
// privacy steps it announced and settles the ledger with their cost. A
// refusal before the reservation spends nothing; a failure after it is
// refunded when no privacy step was announced, charged its full grant
// otherwise ((*Error).Charged).
func (c *Client) Fit(ctx context.Context, req FitRequest) (*Result, error) {
	t0 := time.Now()
	st, err := c.request(ctx, req)
	if err != nil {
		return nil, err
	}
	runner, hreq, prep := st.runner, st.req, st.prep
	prepareS := time.Since(t0).Seconds()
	if prep.remote == nil {
		// The fit's sandboxed process starts while the ledger is opened.
		hreq.Process = st.plugin.StartFit(prep.handle)
	}
	led, err := ledger.Open(ctx, c.opt.Home)
	if err != nil {
		hreq.Process.Drop()
		return nil, ledgerErr(fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer c.closeLater(led)
	runner.Ledger = led
	hreq.Seed, hreq.Timeout, hreq.BeforeReserve = req.Seed, req.Timeout, req.BeforeReserve
	hreq.Events = host.Events{Progress: req.Progress, Log: req.Log, Step: req.Step, Pass: req.Pass, Warning: req.Warning}
	res, err := runner.Fit(ctx, hreq)
	if err != nil {
		e := beforeReserveErr(err)
		if e == nil {
			e = fitErr(err)
		}
		if errors.Is(e.Class, ErrBudget) && !errors.Is(err, ledger.ErrMechanism) {
			e.SuggestedRho = suggestRho(ctx, led, host.BudgetKey(prep.handle), req.Grant, st.grants)
		}
		return nil, e
	}
	out := newResult(res, prep, hreq.Params, req.Grant)
	out.Timings["prepare_s"] = prepareS
	if out.Ledger != nil {
		out.Ledger.Path = led.Path()
	}
	return out, nil
}

// Plan answers the plan of the fit req describes, without reserving or
// recording anything: the privacy steps with their costs and noise
// multipliers, the accounting, and a model-based accuracy indicator (see
// Plan). The plugin sees only the data's public shape (n, p, and for trace
// and users data their dimensions), never its values; the data are read
// and validated as for Fit. req's callbacks, Seed and Timeout are unused.
func (c *Client) Plan(ctx context.Context, req FitRequest) (*Plan, error) {
	st, err := c.request(ctx, req)
	if err != nil {
		return nil, err
	}
	p, err := st.runner.Plan(ctx, st.req)
	if err != nil {
		return nil, fitErr(err)
	}
	return p, nil
}

// setup is what Fit and Plan share: the estimator's plugin, the budget's presence, the
// data prepared, a runner without a ledger and the host's request
// without callbacks.
type setup struct {
	plugin *host.Plugin
	runner *host.Runner
	req    host.FitRequest
	prep   *prepared
	grants []privacy.GrantKind // the estimator accepts
}

func (c *Client) request(ctx context.Context, req FitRequest) (*setup, error) {
	plug, est, err := c.lookup(ctx, req.Estimator)
	if err != nil {
		return nil, err
	}
	if !est.NonPrivate && req.Grant.Kind == "" {
		return nil, classedf(ErrUsage, "%s needs a privacy budget (it accepts: %s)", est.Name, grantList(est.Grants))
	}
	prep, err := c.prepare(ctx, req.Data, est.DataKind)
	if err != nil {
		return nil, err
	}
	st := &setup{plugin: plug, prep: prep, grants: est.Grants,
		runner: &host.Runner{Plugins: host.Plugins{plug}, MaxMemory: c.opt.memoryLimit(), CheckTimeout: c.opt.PluginTimeout,
			CheckCache: filepath.Join(c.opt.Home, "checks")},
		req: host.FitRequest{Estimator: req.Estimator, Params: req.Params, Grant: req.Grant, Data: prep.handle, Remote: prep.remote,
			NonPrivate: req.NonPrivate}}
	if st.req.Params == nil {
		st.req.Params = map[string]string{}
	}
	return st, nil
}

// beforeReserveErr returns the *Error a BeforeReserve hook returned (the
// caller's own class), nil when the error is not one.
func beforeReserveErr(err error) *Error {
	var fe *host.FitError
	var e *Error
	if errors.As(err, &fe) && fe.RunID == 0 && errors.As(err, &e) {
		return &Error{Class: e.Class, Err: err}
	}
	return nil
}

func grantList(ks []privacy.GrantKind) string {
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += string(k)
	}
	return s
}

// suggestRho is, when an (ε, δ) request is refused but the same guarantee
// requested as ρ-zCDP would fit, that ρ (0 otherwise). Under the classic
// (zCDP) admission rule the ledger can only
// count an (ε, δ) run by basic composition while it is reserved, whereas
// a ρ grant composes with the earlier runs in zCDP; the ρ with the same
// (ε, δ) under the tight conversion gives the guarantee asked for. It is
// rounded down to six significant digits so that it still implies the
// requested (ε, δ).
func suggestRho(ctx context.Context, led *ledger.Ledger, hash string, grant privacy.Grant, accepts []privacy.GrantKind) float64 {
	if grant.Kind != privacy.GrantApprox || !slices.Contains(accepts, privacy.GrantZCDP) {
		return 0
	}
	rho, err := privacy.RhoForEpsDelta(grant.Epsilon, grant.Delta)
	if err != nil {
		return 0
	}
	st, err := led.Show(ctx, hash)
	if err != nil || !st.HasBudget || st.Remaining.Rho < rho {
		return 0
	}
	scale := math.Pow(10, 5-math.Floor(math.Log10(rho)))
	return math.Floor(rho*scale) / scale
}

// newResult is the Result of a released fit.
func newResult(res *host.FitResult, prep *prepared, raw map[string]string, grant privacy.Grant) *Result {
	o, h := res.Outcome, prep.handle
	r := &Result{Estimator: res.Info.Name, Info: res.Info, Plugin: pluginInfo(res.Plugin),
		Data:   DataInfo{Kind: h.Kind, Hash: h.Hash, Source: host.BudgetKey(h), Name: h.Name, N: h.N, P: h.P, D1: h.D1, D2: h.D2},
		Params: TypedParams(res.Info, raw), RawParams: raw, Grant: grant, Guarantee: res.Guarantee,
		Composition: composition(res.Guarantee, o.Achieved), Steps: append([]privacy.Step{}, o.Steps...),
		Notes: append(slices.Clip(o.Notes), res.Notes...), Warnings: o.Warnings, Footprint: res.Check.Footprint, Timings: map[string]float64{}}
	if res.Info.NonPrivate {
		r.Grant = privacy.Grant{}
	}
	maps.Copy(r.Timings, res.Timings)
	r.Timings["plugin_fit_s"], r.Timings["plugin_load_s"] = o.FitSeconds, o.LoadSeconds
	r.Timings["plugin_max_rss_kib"] = float64(o.MaxRSSKiB)
	if res.Check.Footprint > 0 {
		r.Timings["plugin_footprint_estimate_bytes"] = float64(res.Check.Footprint)
	}
	outs := map[string]*mat.Dense{}
	for _, m := range o.Matrices {
		d := mat.NewDense(m.Rows, m.Cols, m.Data)
		r.Matrices = append(r.Matrices, Matrix{Name: m.Name, Value: d, Release: m.Release, Doc: m.Doc})
		outs[m.Name] = d
	}
	r.Scalars, r.Series = o.Scalars, o.Series
	if prep.truth != nil {
		r.Metrics = evaluate.Against(outs, prep.truth)
	}
	if res.RunID != 0 && res.Status != nil {
		r.Ledger = &LedgerEntry{RunID: res.RunID, Status: *res.Status}
	}
	return r
}

// composition names the accounting behind a guarantee's figures.
func composition(g privacy.Guarantee, ach privacy.Achieved) string {
	if g.Accounting != "" {
		return g.Accounting
	}
	return ach.Composition
}
