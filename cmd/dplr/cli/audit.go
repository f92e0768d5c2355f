package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/audit"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
)

// auditFlags are dplr audit's flags.
type auditFlags struct {
	pf        pluginFlags
	df        dataFlags
	gf        grantFlags
	sets      multiFlag
	runs      int
	workers   int
	alpha     float64
	canary    float64
	output    string
	public    bool
	asJSON    bool
	quiet     bool
	estimator string
}

// AuditReport is what dplr audit prints (as JSON with --json).
type AuditReport struct {
	Estimator string  `json:"estimator"`
	Data      string  `json:"data"`
	Output    string  `json:"output"`
	Runs      int     `json:"runs_per_data_set"`
	Canary    float64 `json:"canary"`
	// Claimed is the guarantee the runs stated (the host's certification
	// of their verified steps).
	Claimed     privacy.GuaranteeJSON `json:"claimed"`
	ClaimedEps  float64               `json:"claimed_epsilon"`
	ClaimedDel  float64               `json:"claimed_delta"`
	ClaimedMu   float64               `json:"claimed_mu,omitempty"`
	Bound       audit.Bound           `json:"lower_bound"`
	Shift       *audit.Shift          `json:"shift,omitempty"`
	Violation   bool                  `json:"violation"`
	Verdict     string                `json:"verdict"`
	WallSeconds float64               `json:"wall_seconds"`
	RunsPerSec  float64               `json:"runs_per_second"`
}

func parseAuditFlags(env *Env, args []string) (*auditFlags, error) {
	fs := newFlags("audit", "ESTIMATOR [--data PATH --public] (--epsilon E [--delta D] | --rho R) [--set key=value ...] [--runs N] [--json]", env)
	f := &auditFlags{}
	f.pf.register(fs)
	f.df.register(fs)
	f.gf.register(fs, "privacy budget of each audited run")
	fs.Var(&f.sets, "set", "estimator parameter `key=value` (repeatable)")
	fs.IntVar(&f.runs, "runs", 600, "fits on each of the two neighbouring data sets (`N` ≥ 60): a third estimate the direction, the rest test")
	fs.IntVar(&f.workers, "workers", 2, "plugin processes fitting in parallel")
	fs.Float64Var(&f.alpha, "alpha", 0.05, "the lower bound holds with confidence 1 − `A`")
	fs.Float64Var(&f.canary, "canary", 0, "size `C` of the canary record (row norm, or response); default: twice clip when set, else 10× the largest in the data")
	fs.StringVar(&f.output, "output", "", "the output matrix `NAME` to test (default: the first public matrix)")
	fs.BoolVar(&f.public, "public", false, "confirm that --data is not private: the audit fits it hundreds of times and charges no budget")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress display")
	if err := parse(fs, reorder(fs, args)); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, usagef("audit takes one ESTIMATOR")
	}
	f.estimator = fs.Arg(0)
	switch {
	case f.runs < 60:
		return nil, usagef("--runs %d: at least 60 runs per data set are needed", f.runs)
	case f.workers < 1:
		return nil, usagef("--workers %d must be at least 1", f.workers)
	case !(f.alpha > 0 && f.alpha < 0.5):
		return nil, usagef("--alpha %v must lie in (0, 0.5)", f.alpha)
	case f.canary < 0 || math.IsNaN(f.canary) || math.IsInf(f.canary, 0):
		return nil, usagef("--canary %v must be positive and finite", f.canary)
	case f.df.path != "" && !f.public:
		return nil, usagef("dplr audit fits --data hundreds of times and charges no budget: use it on data that is not private, and say so with --public (or omit --data for synthetic data)")
	}
	return f, nil
}

// cmdAudit runs an empirical privacy audit of an estimator: many fresh-noise
// fits on two neighbouring data sets, a statistically valid lower bound on
// ε, and for Gaussian runs the measured shift over noise against μ.
func cmdAudit(ctx context.Context, env *Env, args []string) error {
	f, err := parseAuditFlags(env, args)
	if err != nil {
		return err
	}
	grant, err := f.gf.grant()
	if err != nil {
		return err
	}
	raw, err := parseSets(f.sets)
	if err != nil {
		return err
	}
	t0 := time.Now()
	c, err := f.pf.newClient(env, f.pf.homeDir(env), 0)
	if err != nil {
		return err
	}
	defer c.Close()
	plug, info, err := c.HostPlugin(ctx, f.estimator)
	if err != nil {
		return lookupFailure(env, c, err)
	}
	if info.NonPrivate {
		return usagef("%s is a non-private reference: there is no guarantee to audit", f.estimator)
	}
	ds, label, err := auditData(ctx, env, f, info.DataKind)
	if err != nil {
		return err
	}
	canary := f.canary
	if canary == 0 {
		canary = defaultCanary(ds, raw)
	}
	dA, dB, err := audit.Neighbours(ds, canary)
	if err != nil {
		return fail(ExitData, err)
	}
	tmp, err := os.MkdirTemp("", "dplr-audit-")
	if err != nil {
		return fail(ExitError, err)
	}
	defer os.RemoveAll(tmp)
	hA, err := dataio.Prepare(dA, tmp)
	if err != nil {
		return fail(ExitData, err)
	}
	hB, err := dataio.Prepare(dB, tmp)
	if err != nil {
		return fail(ExitData, err)
	}
	calls := [2]host.Call{
		{Estimator: f.estimator, Params: raw, Grant: grant, Data: hA},
		{Estimator: f.estimator, Params: raw, Grant: grant, Data: hB},
	}
	if _, err := plug.Check(ctx, calls[0]); err != nil {
		return fail(ExitUsage, err)
	}
	outs, claim, err := auditRuns(ctx, env, f, plug.Path, calls)
	if err != nil {
		return err
	}
	rep, err := auditReport(f, outs, claim, canary, label)
	if err != nil {
		return fail(ExitError, err)
	}
	rep.WallSeconds = time.Since(t0).Seconds()
	rep.RunsPerSec = float64(2*f.runs) / rep.WallSeconds
	if f.asJSON {
		if err := writeJSON(env.Stdout, rep); err != nil {
			return err
		}
	} else {
		printAudit(env.Stdout, rep)
	}
	if rep.Violation {
		return fail(ExitAudit, errors.New(rep.Verdict))
	}
	return nil
}

// auditData is the data the audit perturbs: --data read as the
// estimator's kind, or a small synthetic data set of that kind.
func auditData(ctx context.Context, env *Env, f *auditFlags, kind data.Kind) (*data.Dataset, string, error) {
	if f.df.path != "" {
		loc, err := f.df.locate(kind)
		if err != nil {
			return nil, "", err
		}
		ds, id, err := dataio.LoadIdentity(loc.path, loc.opt)
		if err != nil {
			return nil, "", fail(ExitData, err)
		}
		if err := refuseBudgeted(ctx, env, f, id); err != nil {
			return nil, "", err
		}
		return ds, f.df.path, nil
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
		return nil, "", usagef("no synthetic data for kind %q: give --data and --public", kind)
	}
	m, err := gen.Lookup(model)
	if err != nil {
		return nil, "", fail(ExitError, err)
	}
	g, err := gen.Run(m, params, 1)
	if err != nil {
		return nil, "", fail(ExitError, err)
	}
	return g.Data, "synthetic " + g.Data.Name, nil
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

// auditRuns fits each data set f.runs times with fresh noise, spread over
// f.workers plugin processes, and returns the flattened outputs and the
// guarantee the first run certified.
func auditRuns(ctx context.Context, env *Env, f *auditFlags, path string, calls [2]host.Call) (*auditOutputs, privacy.Guarantee, error) {
	opt, err := f.pf.options(env)
	if err != nil {
		return nil, privacy.Guarantee{}, err
	}
	total := 2 * f.runs
	jobs := make(chan int, total)
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	outs := &auditOutputs{name: f.output, a: make([][]float64, f.runs), b: make([][]float64, f.runs)}
	var claim privacy.Guarantee
	var mu sync.Mutex
	var firstErr error
	done := 0
	bar := newProgressBar(env.Stderr, f.quiet)
	defer bar.finish()
	var wg sync.WaitGroup
	for w := 0; w < f.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := host.Start(ctx, path, opt)
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, fail(ExitPlugin, err))
				mu.Unlock()
				return
			}
			defer p.Close()
			for i := range jobs {
				out, err := p.Fit(ctx, calls[i%2], host.Events{})
				mu.Lock()
				if err == nil {
					err = outs.add(i, f.runs, out)
				}
				if err != nil {
					if firstErr == nil {
						firstErr = fail(fitErrorCode(err), fmt.Errorf("audit run %d: %w", i+1, err))
					}
					mu.Unlock()
					return
				}
				if i == 0 || claim.Kind == "" {
					claim = out.Certified
				}
				done++
				bar.update("audit fits", int64(done), int64(total), "")
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
func auditReport(f *auditFlags, o *auditOutputs, claim privacy.Guarantee, canary float64, label string) (*AuditReport, error) {
	k := f.runs / 3
	sa, sb, err := audit.Project(o.a[:k], o.b[:k], o.a[k:], o.b[k:])
	if err != nil {
		return nil, err
	}
	eps, delta := claim.Epsilon, claim.Delta
	if eps == 0 && claim.Rho > 0 {
		delta = 1e-6
		eps = privacy.EpsilonFromRho(claim.Rho, delta)
	}
	bound, err := audit.EpsilonLowerBound(sa, sb, delta, f.alpha)
	if err != nil {
		return nil, err
	}
	rep := &AuditReport{Estimator: f.estimator, Data: label, Output: o.name, Runs: f.runs, Canary: canary,
		Claimed: claim.JSON(), ClaimedEps: eps, ClaimedDel: delta, Bound: bound}
	mu := claim.Mu
	if mu == 0 && claim.Accounting == "zcdp" && claim.Rho > 0 {
		mu = math.Sqrt(2 * claim.Rho)
	}
	rep.ClaimedMu = mu
	if s, err := audit.ShiftRatio(sa, sb, f.alpha); err == nil {
		rep.Shift = &s
	}
	switch {
	case bound.Epsilon > eps:
		rep.Violation = true
		rep.Verdict = fmt.Sprintf("VIOLATION: ε ≥ %.3g with confidence %.3g, above the claimed ε = %.3g", bound.Epsilon, 1-f.alpha, eps)
	case rep.Shift != nil && mu > 0 && rep.Shift.Low > mu:
		rep.Violation = true
		rep.Verdict = fmt.Sprintf("VIOLATION: the output moves %.3g noise deviations (at least %.3g with confidence %.3g) between neighbours, above the calibrated μ = %.3g", rep.Shift.Ratio, rep.Shift.Low, 1-f.alpha, mu)
	case eps >= bound.Reach:
		// The threshold test cannot refute a claim at or above its reach,
		// whatever the mechanism does: say so, and what would.
		need := audit.RunsFor(eps, delta, f.alpha)
		rep.Verdict = fmt.Sprintf("not tested: with %d runs this audit can refute only ε below %.3g, and the claim is ε = %.3g; "+
			"about --runs %d would reach it", f.runs, bound.Reach, eps, need+need/2+1)
		if rep.Shift != nil && mu > 0 {
			rep.Verdict += fmt.Sprintf(" (the Gaussian shift test above has no such limit: %.3g ≤ μ = %.3g)", rep.Shift.Low, mu)
		}
	default:
		rep.Verdict = fmt.Sprintf("consistent: no evidence against the claim (ε lower bound %.3g ≤ claimed %.3g; this audit could have seen ε up to %.3g)", bound.Epsilon, eps, bound.Reach)
	}
	return rep, nil
}

func printAudit(w io.Writer, r *AuditReport) {
	fmt.Fprintf(w, "audit of %s on %s (output %q, canary %.4g)\n", r.Estimator, r.Data, r.Output, r.Canary)
	fmt.Fprintf(w, "  runs: %d per data set (%.1f fits/s, %.1f s)\n", r.Runs, r.RunsPerSec, r.WallSeconds)
	fmt.Fprintf(w, "  claimed: %s\n", r.Claimed.Text)
	fmt.Fprintf(w, "  ε lower bound: %.4g (confidence %.3g, δ = %.3g; P ≥ %.3g, Q ≤ %.3g on %d runs each; reach %.3g: no lower bound above it is possible from these runs)\n",
		r.Bound.Epsilon, 1-r.Bound.Alpha, r.Bound.Delta, r.Bound.PLow, r.Bound.QHigh, r.Bound.Runs, r.Bound.Reach)
	if r.Shift != nil {
		fmt.Fprintf(w, "  shift / noise: %.4g [%.4g, %.4g]", r.Shift.Ratio, r.Shift.Low, r.Shift.High)
		if r.ClaimedMu > 0 {
			fmt.Fprintf(w, " against calibrated μ = %.4g (exact for outputs linear in the noise)", r.ClaimedMu)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %s\n", r.Verdict)
}

// refuseBudgeted refuses to audit data that the ledger holds a budget for,
// directly, through a link, or as a near copy (the overlap check of dplr
// fit): hundreds of uncharged fits on it would side-step that budget.
// --public is the owner's word for data nobody budgeted; the ledger's word
// wins over it.
func refuseBudgeted(ctx context.Context, env *Env, f *auditFlags, id dataio.Identity) error {
	home, err := f.pf.checkedHome(env)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(home, ledger.MarkerName)); err != nil {
		return nil // no ledger in this home: nothing is budgeted
	}
	led, err := ledger.Open(ctx, home)
	if err != nil {
		return fail(ExitData, fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer led.Close()
	if st, err := led.Show(ctx, id.Hash); err == nil && st.HasBudget {
		return fail(ExitBudget, fmt.Errorf("%s has a privacy budget in the ledger: dplr audit charges nothing, so it runs only on data without one", f.df.path))
	}
	if err := host.CheckOverlap(ctx, led, id.Hash, &id); err != nil {
		return fail(ExitBudget, fmt.Errorf("dplr audit charges nothing, so it refuses data that overlaps a budgeted data set: %w", err))
	}
	return nil
}
