package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/dplr/dplr/client"
)

// cmdPlan is `dplr plan`: what a fit with the same arguments would spend,
// step by step, and a model-based indication of whether its result can
// beat a random subspace. Nothing is reserved or recorded; the data file
// is read (and validated, as for fit) only for its public shape, which is
// all the plugin sees.
func cmdPlan(ctx context.Context, env *Env, args []string) error {
	s, err := openFit(ctx, env, "plan", args)
	if err != nil {
		return err
	}
	defer s.c.Close()
	f := s.f
	if f.beam.on() {
		return usagef("plan does not support --engine beam yet")
	}
	opt, err := f.df.loadOptions()
	if err != nil {
		return err
	}
	p, err := s.c.Plan(ctx, client.FitRequest{Estimator: f.estimator, Params: s.raw, Grant: s.grant,
		Data: client.File(f.df.path, opt), NonPrivate: f.nonPrivate})
	if err != nil {
		return fitFailure(s.est.Info, s.grant, err)
	}
	if f.asJSON {
		return writeJSON(env.Stdout, p)
	}
	printPlan(env.Stdout, f.estimator, f.df.path, p, s.grant)
	return nil
}

// printPlan writes a plan for a reader.
func printPlan(w io.Writer, estimator, path string, p *client.Plan, g client.Grant) {
	fmt.Fprintf(w, "plan: %s on %s (nothing reserved or spent; the plugin saw only the data's shape)\n", estimator, path)
	if p.NearRandom {
		fmt.Fprintf(w, "warning: %s\n", p.Warning())
	}
	fmt.Fprintf(w, "%d privacy step(s), composed as %s:\n", len(p.Steps), p.Accounting)
	for _, s := range p.Steps {
		fmt.Fprintf(w, "  - %-28s %-11s", s.Name, s.Mechanism)
		writeCost(w, s.Epsilon, s.Delta, s.Rho)
		if s.Multiplier > 0 {
			fmt.Fprintf(w, " noise multiplier=%.4g", s.Multiplier)
		}
		switch {
		case s.Sensitivity > 0:
			fmt.Fprintf(w, " Δ=%.4g", s.Sensitivity)
		case s.Mechanism != "exponential":
			fmt.Fprintf(w, " Δ from an earlier private release")
		}
		fmt.Fprintln(w)
	}
	if len(p.Steps) > 0 {
		fmt.Fprint(w, "total: at most the grant,")
		writeCost(w, g.Epsilon, g.Delta, g.Rho)
		fmt.Fprintln(w, " (one run, one ledger record; the steps compose within it, and the ledger charges the run's tightest statement)")
	}
	if p.Scored {
		fmt.Fprintf(w, "expected score: %.3f (a random subspace: %.3f; the true subspace: 1)\n", p.ExpectedScore, p.RandomScore)
	}
	fmt.Fprintf(w, "note: %s\n", p.Note)
}
