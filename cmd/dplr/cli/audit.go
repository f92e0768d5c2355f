package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dplr/dplr/client"
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
	if f.df.path != "" && !f.public {
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
	est, err := c.Describe(ctx, f.estimator)
	if err != nil {
		return lookupFailure(env, c, err)
	}
	req := client.AuditRequest{Estimator: f.estimator, Params: raw, Grant: grant, Path: f.df.path, Runs: f.runs,
		Workers: f.workers, Alpha: f.alpha, Canary: f.canary, Output: f.output}
	if f.df.path != "" && !est.NonPrivate { // a non-private estimator is refused before its data are read
		if req.Load, err = f.df.loadOptions(); err != nil {
			return err
		}
	}
	bar := newProgressBar(env.Stderr, f.quiet)
	req.Progress = bar.progress
	rep, err := c.Audit(ctx, req)
	bar.finish()
	if err != nil {
		return err
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

func printAudit(w io.Writer, r *client.AuditReport) {
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
