package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/audit"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// AuditRequest is an empirical check of an estimator's privacy claim:
// Runs fits with fresh noise on each of two neighbouring data sets.
type AuditRequest struct {
	Estimator string
	Params    Params
	// Grant is the budget of each audited run (nothing is charged).
	Grant Grant
	// Path, when set, is a public data file read with Load as the
	// estimator's kind; otherwise a small synthetic data set of that kind
	// is audited. Data the ledger holds a budget for (or that overlaps
	// such data) is refused.
	Path string
	Load LoadOptions
	// Runs per data set (at least 60: a third estimate the direction, the
	// rest test); Workers plugin processes fit in parallel.
	Runs, Workers int
	// Alpha: the lower bound holds with confidence 1 − Alpha.
	Alpha float64
	// Canary is the size of the canary record (0: twice the clip when the
	// request sets one, else ten times the largest row norm or response).
	Canary float64
	// Output names the matrix output tested (default: the first public
	// matrix).
	Output string
	// Progress, when set, sees the fits done.
	Progress func(Progress)
}

// AuditReport is what an audit found.
type AuditReport struct {
	Estimator string  `json:"estimator"`
	Data      string  `json:"data"`
	Output    string  `json:"output"`
	Runs      int     `json:"runs_per_data_set"`
	Canary    float64 `json:"canary"`
	// Claimed is the guarantee the runs stated (the host's certification
	// of their verified steps).
	Claimed     GuaranteeJSON `json:"claimed"`
	ClaimedEps  float64       `json:"claimed_epsilon"`
	ClaimedDel  float64       `json:"claimed_delta"`
	ClaimedMu   float64       `json:"claimed_mu,omitempty"`
	Bound       audit.Bound   `json:"lower_bound"`
	Shift       *audit.Shift  `json:"shift,omitempty"`
	Violation   bool          `json:"violation"`
	Verdict     string        `json:"verdict"`
	WallSeconds float64       `json:"wall_seconds"`
	RunsPerSec  float64       `json:"runs_per_second"`
}

// Audit runs an empirical privacy audit: many fresh-noise fits on two
// neighbouring data sets, a statistically valid lower bound on ε and, for
// Gaussian runs, the measured shift over noise against μ. It charges
// nothing. A report with Violation set is evidence against the claim.
func (c *Client) Audit(ctx context.Context, req AuditRequest) (*AuditReport, error) {
	switch {
	case req.Runs < 60:
		return nil, classedf(ErrUsage, "audit runs %d: at least 60 runs per data set are needed", req.Runs)
	case req.Workers < 1:
		return nil, classedf(ErrUsage, "audit workers %d must be at least 1", req.Workers)
	case !(req.Alpha > 0 && req.Alpha < 0.5):
		return nil, classedf(ErrUsage, "audit alpha %v must lie in (0, 0.5)", req.Alpha)
	case req.Canary < 0 || math.IsNaN(req.Canary) || math.IsInf(req.Canary, 0):
		return nil, classedf(ErrUsage, "audit canary %v must be positive and finite (0: the default)", req.Canary)
	}
	plug, info, err := c.lookup(ctx, req.Estimator)
	if err != nil {
		return nil, err
	}
	if info.NonPrivate {
		return nil, classedf(ErrUsage, "%s is a non-private reference: there is no guarantee to audit", req.Estimator)
	}
	ds, label, err := c.auditData(ctx, req, info.DataKind)
	if err != nil {
		return nil, err
	}
	canary := req.Canary
	if canary == 0 {
		canary = defaultCanary(ds, req.Params)
	}
	dA, dB, err := audit.Neighbours(ds, canary)
	if err != nil {
		return nil, classed(ErrData, err)
	}
	tmp, err := os.MkdirTemp("", "dplr-audit-")
	if err != nil {
		return nil, classed(ErrRuntime, err)
	}
	defer os.RemoveAll(tmp)
	var calls [2]host.Call
	for i, d := range []*data.Dataset{dA, dB} {
		h, err := dataio.Prepare(d, tmp)
		if err != nil {
			return nil, classed(ErrData, err)
		}
		calls[i] = host.Call{Estimator: req.Estimator, Params: req.Params, Grant: req.Grant, Data: h}
	}
	if _, err := plug.Check(ctx, calls[0], sdk.PlanNone); err != nil {
		return nil, classed(ErrUsage, err)
	}
	outs, claim, err := c.auditRuns(ctx, req, plug.Path, calls)
	if err != nil {
		return nil, err
	}
	rep, err := auditReport(req, outs, claim, canary, label)
	if err != nil {
		return nil, classed(ErrRuntime, err)
	}
	return rep, nil
}

// auditData is the data the audit perturbs: the file read as the
// estimator's kind, or a small synthetic data set of that kind.
func (c *Client) auditData(ctx context.Context, req AuditRequest, kind data.Kind) (*data.Dataset, string, error) {
	if req.Path != "" {
		loc, err := Locate(req.Path, req.Load, kind)
		if err != nil {
			return nil, "", err
		}
		ds, id, err := dataio.LoadIdentity(loc.Path, loc.Options)
		if err != nil {
			return nil, "", classed(ErrData, err)
		}
		if err := c.refuseBudgeted(ctx, req.Path, id); err != nil {
			return nil, "", err
		}
		return ds, req.Path, nil
	}
	model := map[data.Kind]string{data.Rows: "spiked", data.Trace: "trace-regression", data.Users: "users-lowrank"}[kind]
	var params map[string]string
	switch kind {
	case data.Rows:
		params = map[string]string{"n": "400", "p": "8", "rank": "2", "lambda": "8,4"}
	case data.Trace:
		params = map[string]string{"n": "400", "d1": "6", "d2": "5"}
	case data.Users:
		params = map[string]string{"users": "200", "samples": "6", "dim": "8"}
	default:
		return nil, "", classedf(ErrUsage, "no synthetic data for kind %q: give --data and --public", kind)
	}
	m, err := gen.Lookup(model)
	if err != nil {
		return nil, "", classed(ErrRuntime, err)
	}
	g, err := gen.Run(m, params, 1)
	if err != nil {
		return nil, "", classed(ErrRuntime, err)
	}
	return g.Data, "synthetic " + g.Data.Name, nil
}

// refuseBudgeted refuses to audit data that the ledger holds a budget for,
// directly, through a link, or as a near copy (the overlap check of a
// fit): hundreds of uncharged fits on it would side-step that budget.
func (c *Client) refuseBudgeted(ctx context.Context, path string, id dataio.Identity) error {
	if _, err := os.Stat(filepath.Join(c.opt.Home, ledger.MarkerName)); err != nil {
		return nil // no ledger in this home: nothing is budgeted
	}
	led, err := ledger.Open(ctx, c.opt.Home)
	if err != nil {
		return classed(ErrData, fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer led.Close()
	if st, err := led.Show(ctx, id.Hash); err == nil && st.HasBudget {
		return classedf(ErrBudget, "%s has a privacy budget in the ledger: dplr audit charges nothing, so it runs only on data without one", path)
	}
	if err := host.CheckOverlap(ctx, led, id.Hash, &id); err != nil {
		return classed(ErrBudget, fmt.Errorf("dplr audit charges nothing, so it refuses data that overlaps a budgeted data set: %w", err))
	}
	return nil
}

// defaultCanary is twice the clip when the request sets one (so the clip
// binds), else ten times the largest row norm or response in the data.
func defaultCanary(ds *data.Dataset, raw map[string]string) float64 {
	if c, err := strconv.ParseFloat(raw["clip"], 64); err == nil && c > 0 && !math.IsInf(c, 0) {
		return 2 * c
	}
	var big float64
	if ds.Kind == data.Rows {
		n, _ := ds.X.Dims()
		for i := 0; i < n; i++ {
			big = math.Max(big, mat.Norm(ds.X.RowView(i), 2))
		}
	} else {
		for _, y := range ds.Y {
			big = math.Max(big, math.Abs(y))
		}
	}
	return 10 * math.Max(big, 1e-3)
}

// auditOutputs holds the flattened outputs of the runs on each data set.
type auditOutputs struct {
	name string
	a, b [][]float64
}

// auditRuns fits each data set req.Runs times with fresh noise, spread
// over req.Workers plugin processes, and returns the flattened outputs and
// the guarantee the first run certified.
func (c *Client) auditRuns(ctx context.Context, req AuditRequest, path string, calls [2]host.Call) (*auditOutputs, privacy.Guarantee, error) {
	total := 2 * req.Runs
	jobs := make(chan int, total)
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	outs := &auditOutputs{name: req.Output, a: make([][]float64, req.Runs), b: make([][]float64, req.Runs)}
	var claim privacy.Guarantee
	var mu sync.Mutex
	var firstErr error
	done := 0
	var wg sync.WaitGroup
	for w := 0; w < req.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := host.Start(ctx, path, c.hopt)
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, classed(ErrPlugin, err))
				mu.Unlock()
				return
			}
			defer p.Close()
			for i := range jobs {
				out, err := p.Fit(ctx, calls[i%2], host.Events{})
				mu.Lock()
				if err == nil {
					err = outs.add(i, req.Runs, out)
				}
				if err != nil {
					if firstErr == nil {
						e := fitErr(err)
						e.Err = fmt.Errorf("audit run %d: %w", i+1, err)
						firstErr = e
					}
					mu.Unlock()
					return
				}
				if i == 0 || claim.Kind == "" {
					claim = out.Certified
				}
				done++
				if req.Progress != nil {
					req.Progress(Progress{Stage: "audit fits", Done: done, Total: total})
				}
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, claim, firstErr
	}
	return outs, claim, nil
}

// add stores run i's chosen output (run i is on data set i%2, index i/2).
func (o *auditOutputs) add(i, runs int, out *host.FitOutcome) error {
	var m *host.Matrix
	for k := range out.Matrices {
		c := &out.Matrices[k]
		if (o.name == "" && c.Release == "public") || c.Name == o.name {
			m = c
			break
		}
	}
	if m == nil {
		if o.name == "" {
			return errors.New("the estimator returned no public matrix to test (use --output NAME)")
		}
		return fmt.Errorf("the estimator returned no matrix %q", o.name)
	}
	o.name = m.Name
	v := audit.Flatten(mat.NewDense(m.Rows, m.Cols, m.Data))
	if i%2 == 0 {
		o.a[i/2] = v
	} else {
		o.b[i/2] = v
	}
	return nil
}

// auditReport computes the bound and the shift from the runs.
func auditReport(req AuditRequest, o *auditOutputs, claim privacy.Guarantee, canary float64, label string) (*AuditReport, error) {
	k := req.Runs / 3
	sa, sb, err := audit.Project(o.a[:k], o.b[:k], o.a[k:], o.b[k:])
	if err != nil {
		return nil, err
	}
	eps, delta := claim.Epsilon, claim.Delta
	if eps == 0 && claim.Rho > 0 {
		delta = 1e-6
		eps = privacy.EpsilonFromRho(claim.Rho, delta)
	}
	bound, err := audit.EpsilonLowerBound(sa, sb, delta, req.Alpha)
	if err != nil {
		return nil, err
	}
	rep := &AuditReport{Estimator: req.Estimator, Data: label, Output: o.name, Runs: req.Runs, Canary: canary,
		Claimed: claim.JSON(), ClaimedEps: eps, ClaimedDel: delta, Bound: bound}
	mu := claim.Mu
	if mu == 0 && claim.Accounting == "zcdp" && claim.Rho > 0 {
		mu = math.Sqrt(2 * claim.Rho)
	}
	rep.ClaimedMu = mu
	if s, err := audit.ShiftRatio(sa, sb, req.Alpha); err == nil {
		rep.Shift = &s
	}
	switch {
	case bound.Epsilon > eps:
		rep.Violation = true
		rep.Verdict = fmt.Sprintf("VIOLATION: ε ≥ %.3g with confidence %.3g, above the claimed ε = %.3g", bound.Epsilon, 1-req.Alpha, eps)
	case rep.Shift != nil && mu > 0 && rep.Shift.Low > mu:
		rep.Violation = true
		rep.Verdict = fmt.Sprintf("VIOLATION: the output moves %.3g noise deviations (at least %.3g with confidence %.3g) between neighbours, above the calibrated μ = %.3g", rep.Shift.Ratio, rep.Shift.Low, 1-req.Alpha, mu)
	case eps >= bound.Reach:
		// The threshold test cannot refute a claim at or above its reach,
		// whatever the mechanism does: say so, and what would.
		need := audit.RunsFor(eps, delta, req.Alpha)
		rep.Verdict = fmt.Sprintf("not tested: with %d runs this audit can refute only ε below %.3g, and the claim is ε = %.3g; "+
			"about --runs %d would reach it", req.Runs, bound.Reach, eps, need+need/2+1)
		if rep.Shift != nil && mu > 0 {
			rep.Verdict += fmt.Sprintf(" (the Gaussian shift test above has no such limit: %.3g ≤ μ = %.3g)", rep.Shift.Low, mu)
		}
	default:
		rep.Verdict = fmt.Sprintf("consistent: no evidence against the claim (ε lower bound %.3g ≤ claimed %.3g; this audit could have seen ε up to %.3g)", bound.Epsilon, eps, bound.Reach)
	}
	return rep, nil
}
