package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
)

// FitReport is result.json, and stdout with --json.
type FitReport struct {
	Estimator string             `json:"estimator"`
	Plugin    string             `json:"plugin"`
	PluginVer string             `json:"plugin_version"`
	PluginBin string             `json:"plugin_path"`
	Backend   string             `json:"backend"`
	Threads   int32              `json:"backend_threads"`
	Data      DataReport         `json:"data"`
	Params    map[string]any     `json:"params"`
	Privacy   PrivacyReport      `json:"privacy"`
	Outputs   OutputsReport      `json:"outputs"`
	Metrics   []client.Metric    `json:"metrics"`
	Timings   map[string]float64 `json:"timings"`
	// TimingsRelease is the release class of Timings: diagnostic, because
	// times and memory depend on the data (issue 15 §8); TimingsNote says
	// what that means for publishing them.
	TimingsRelease client.Release `json:"timings_release"`
	TimingsNote    string         `json:"timings_note"`
	Ledger         *LedgerReport  `json:"ledger,omitempty"`
	// Warnings are the notes that change what a user should conclude:
	// first in the summary and on stderr even with --quiet.
	Warnings []string `json:"warnings,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	OutDir   string   `json:"out_dir,omitempty"`
}

// DataReport describes the data a run used.
type DataReport struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Hash string `json:"hash"`
	// Source is the identity of the records the data were read from, the
	// key of the data set's budget (see dplr budget).
	Source string `json:"source_hash,omitempty"`
	Name   string `json:"name,omitempty"`
	N      int    `json:"n"`
	P      int    `json:"p"`
	D1     int    `json:"d1,omitempty"`
	D2     int    `json:"d2,omitempty"`
	// Scale and ColumnScales are the public rescaling the fit read the
	// data with (--scale, then --column-scales): dplr transform applies
	// the same to new data.
	Scale        float64   `json:"scale,omitempty"`
	ColumnScales []float64 `json:"column_scales,omitempty"`
}

// PrivacyReport is what a run spent and what it guarantees.
type PrivacyReport struct {
	Grant       client.Grant  `json:"grant"`
	Epsilon     float64       `json:"epsilon"`
	Delta       float64       `json:"delta"`
	Rho         float64       `json:"rho"`
	Guarantee   string        `json:"guarantee"`
	Text        string        `json:"text"`
	Model       string        `json:"model,omitempty"`
	Beta        float64       `json:"beta,omitempty"`
	Assumptions []string      `json:"assumptions"`
	Neighbours  string        `json:"neighbours,omitempty"`
	Seeded      bool          `json:"seeded"`
	Composition string        `json:"composition"`
	Steps       []client.Step `json:"steps"`

	// Statements are the run's true statements, each in its own fields.
	Statements client.Statements `json:"statements"`
}

// OutputsReport lists a run's outputs.
type OutputsReport struct {
	Matrices []MatrixReport `json:"matrices"`
	Scalars  []ScalarReport `json:"scalars"`
	Series   []SeriesReport `json:"series,omitempty"`
}

// MatrixReport is one matrix output; small matrices are inlined.
type MatrixReport struct {
	Name    string      `json:"name"`
	Rows    int         `json:"rows"`
	Cols    int         `json:"cols"`
	Release string      `json:"release"`
	Doc     string      `json:"doc,omitempty"`
	File    string      `json:"file,omitempty"`
	Value   [][]float64 `json:"value,omitempty"`
}

// ScalarReport is one scalar output.
type ScalarReport struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Release string  `json:"release"`
	Doc     string  `json:"doc,omitempty"`
}

// SeriesReport is one series output.
type SeriesReport struct {
	Name    string    `json:"name"`
	Values  []float64 `json:"values"`
	Release string    `json:"release"`
	Doc     string    `json:"doc,omitempty"`
}

// LedgerReport is the run's ledger entry and the data set's position.
type LedgerReport struct {
	RunID     int64        `json:"run_id"`
	Path      string       `json:"path"`
	HasBudget bool         `json:"has_budget"`
	Spent     client.Spent `json:"spent"`
	// Remaining and RemainingText are present only when the data set has a
	// total budget; the numbers' meaning depends on the total's form
	// (client.Remaining), the text says it in words.
	Remaining     *client.Remaining `json:"remaining,omitempty"`
	RemainingText string            `json:"remaining_text,omitempty"`
}

const inlineLimit = 400 // matrices with at most this many values are inlined in JSON

// fitFlags are the parsed flags of `dplr fit`.
type fitFlags struct {
	pf         pluginFlags
	df         dataFlags
	gf         grantFlags
	sets       multiFlag
	selects    multiFlag
	outDir     string
	seed       optUint
	asJSON     bool
	quiet      bool
	timeout    time.Duration
	nonPrivate bool
	maxMemory  byteSize
	estimator  string
	kind       string
	beam       beamFlags
}

// parseFitFlags parses the flags of `dplr fit`, or of `dplr plan` (name
// "plan"), which takes the same.
func parseFitFlags(name string, env *Env, args []string) (*fitFlags, error) {
	fs := newFlags(name, "ESTIMATOR --data PATH [--format F] (--epsilon E [--delta D] | --rho R) [--set key=value ...] [--select PARAM=v1,v2,...] [--out DIR] [--seed N] [--json]", env)
	f := &fitFlags{maxMemory: byteSize(client.DefaultMaxMemory())}
	f.pf.register(fs)
	f.df.register(fs)
	f.gf.register(fs, "privacy budget of this run")
	fs.Var(&f.sets, "set", "estimator parameter `key=value` (repeatable; see \"dplr describe ESTIMATOR\")")
	fs.Var(&f.selects, "select", "private selection among candidate values `PARAM=v1,v2,...` (repeatable: every combination is a candidate), one run at one stated cost, for estimators with a select parameter (docs/privacy.md)")
	fs.StringVar(&f.outDir, "out", "", "`DIR` for result.json and one .npy per matrix (default dplr-out/ESTIMATOR-TIME); created and checked before any budget is reserved")
	fs.Var(&f.seed, "seed", "draw noise from seed `N`: reproducible, and NOT private against anyone who knows it")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as one JSON object on stdout")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress display")
	fs.DurationVar(&f.timeout, "timeout", 0, "give up on the fit after this long, treating the plugin as hung (exit 4; charged its grant once a privacy step was announced, refunded before); 0: no limit")
	fs.BoolVar(&f.nonPrivate, "non-private", false, "allow a non-private reference estimator (its output is NOT private; refused on data sets with a budget)")
	fs.Var(&f.maxMemory, "max-memory", "refuse, before reserving, a fit whose estimated peak memory exceeds `SIZE` (e.g. 8GiB, 512M; 0: no limit; default 3/4 of physical memory)")
	f.beam.register(fs)
	fs.StringVar(&f.kind, "kind", "", "the data kind, rows, trace or users (default and only accepted value: the estimator's; with --engine beam it says how the shards are read)")
	if err := parse(fs, reorder(fs, args)); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, usagef("%s takes one ESTIMATOR (see `dplr plugins`)", name)
	}
	if f.timeout < 0 {
		return nil, usagef("--timeout %s is negative; give a positive duration, or 0 for no limit", f.timeout)
	}
	if err := f.beam.check(&f.df); err != nil {
		return nil, err
	}
	f.estimator = fs.Arg(0)
	return f, nil
}

// fitSession is what `dplr fit` and `dplr plan` set up before they touch
// the data: the flags, the parameters and budget, the dplr home, a client
// (closed by the caller) and the estimator's catalogue entry.
type fitSession struct {
	f     *fitFlags
	raw   map[string]string
	grant client.Grant
	home  string
	c     *client.Client
	est   client.Estimator
}

// openFit parses the flags of command name (fit or plan) and opens the
// session: a budget is needed unless the estimator is non-private.
func openFit(ctx context.Context, env *Env, name string, args []string) (*fitSession, error) {
	f, err := parseFitFlags(name, env, args)
	if err != nil {
		return nil, err
	}
	raw, err := parseSets(f.sets)
	if err != nil {
		return nil, err
	}
	if len(f.selects) > 0 {
		if _, given := raw["select"]; given {
			return nil, usagef("give the selection either with --select or with --set select=, not both")
		}
		raw["select"] = strings.Join(f.selects, ";")
	}
	grant, grantErr := f.gf.grant()
	if grantErr != nil && budgetGiven(f.gf) {
		return nil, grantErr
	}
	home, err := f.pf.checkedHome(env)
	if err != nil {
		return nil, err
	}
	c, err := f.pf.newClient(env, home, int64(f.maxMemory))
	if err != nil {
		return nil, err
	}
	est, err := c.Describe(ctx, f.estimator)
	if err != nil {
		err = lookupFailure(env, c, err)
		c.Close()
		return nil, err
	}
	noteShadowed(env, c.Shadowed(), est.Plugin.Path)
	if f.kind != "" && data.Kind(f.kind) != est.DataKind {
		c.Close()
		return nil, usagef("--kind %s: %s takes %s data", f.kind, f.estimator, est.DataKind)
	}
	if grantErr != nil && !est.NonPrivate {
		c.Close()
		return nil, grantErr // a non-private estimator needs no budget
	}
	return &fitSession{f: f, raw: raw, grant: grant, home: home, c: c, est: est}, nil
}

func cmdFit(ctx context.Context, env *Env, args []string) error {
	t0 := time.Now()
	timings := map[string]float64{}
	s, err := openFit(ctx, env, "fit", args)
	if err != nil {
		return err
	}
	defer s.c.Close()
	f, raw, grant, home, c, est := s.f, s.raw, s.grant, s.home, s.c, s.est
	timings["plugins_s"] = time.Since(t0).Seconds()
	// The data are located, validated and hashed (by the client) before
	// any budget is charged.
	var data client.Data
	var view client.LoadOptions // the public rescaling, for result.json
	if f.beam.on() {
		if f.df.columnScales != "" {
			return usagef("--column-scales is not supported with --engine beam yet: divide the columns when writing the shards")
		}
		// dplr-beam describes the shards for a fit through passes before
		// any budget is reserved.
		d, cleanup, err := beamData(ctx, env, f, est.Info, home)
		if err != nil {
			return err
		}
		defer cleanup()
		data = d
	} else {
		opt, err := f.df.loadOptions()
		if err != nil {
			return err
		}
		data, view = client.File(f.df.path, opt), opt
	}
	res, err := runFit(ctx, env, f, c, est.Info, client.FitRequest{Estimator: f.estimator, Params: raw, Grant: grant,
		Data: data, NonPrivate: f.nonPrivate, Timeout: f.timeout})
	if err != nil {
		return fitFailure(est.Info, grant, err)
	}
	maps.Copy(timings, res.Timings)
	rep := buildReport(res)
	rep.Data.Path = f.df.path
	rep.Data.Scale, rep.Data.ColumnScales = view.Scale, view.ColumnScales
	return release(env, rep, res, f.outDir, f.asJSON, t0, timings)
}

// budgetGiven reports whether any budget flag was given (a non-private
// estimator needs none).
func budgetGiven(g grantFlags) bool {
	return !math.IsNaN(g.eps) || !math.IsNaN(g.delta) || !math.IsNaN(g.rho)
}

// runFit runs the fit through the client, with the output location
// created and checked before anything is reserved and the plugin's
// progress drawn on stderr.
func runFit(ctx context.Context, env *Env, f *fitFlags, c *client.Client, info client.EstimatorInfo, req client.FitRequest) (*client.Result, error) {
	f.outDir = cmp.Or(f.outDir, filepath.Join("dplr-out", fmt.Sprintf("%s-%s", f.estimator, time.Now().UTC().Format("20060102-150405.000"))))
	req.BeforeReserve = func() error { return prepareOutDir(f.outDir) }
	if f.seed.set {
		req.Seed = &f.seed.v
		fmt.Fprintf(env.Stderr, "dplr: warning: --seed makes the noise reproducible; the result is NOT private against anyone who knows the seed\n")
	}
	bar := newProgressBar(env.Stderr, f.quiet)
	req.Progress = bar.progress
	if f.pf.verbose {
		req.Log = func(line string) { bar.logf("%s", line) }
	}
	if !f.quiet {
		req.Pass = func(n int, p data.PassRequest) { bar.logf("aggregation pass %d: %s (the host runs it)", n, p.Kind) }
	}
	if info.NonPrivate && f.nonPrivate {
		fmt.Fprintf(env.Stderr, "dplr: warning: %s is NOT private; its output must not be published\n", f.estimator)
	}
	// The plan's warning comes before anything is reserved, even with --quiet.
	req.Warning = func(line string) { fmt.Fprintf(env.Stderr, "dplr: warning: %s\n", line) }
	res, err := c.Fit(ctx, req)
	bar.finish()
	return res, err
}

// prepareOutDir creates the output directory and checks that files can be
// written in it, so that an unusable --out is refused before any budget is
// reserved.
func prepareOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(ExitUsage, fmt.Errorf("--out %s cannot be created: %w", dir, err))
	}
	probe, err := os.CreateTemp(dir, ".dplr-write-check-*")
	if err != nil {
		return fail(ExitUsage, fmt.Errorf("--out %s is not writable: %w", dir, err))
	}
	name := probe.Name()
	cerr := probe.Close()
	if rerr := os.Remove(name); cerr == nil {
		cerr = rerr
	}
	if cerr != nil {
		return fail(ExitUsage, fmt.Errorf("--out %s: %w", dir, cerr))
	}
	return nil
}

// fitFailure turns a failed fit into the command's error and exit code:
// the client's class, with a hint for a refused (ε, δ) budget and a
// pointer to the catalogue for a refused request.
func fitFailure(info client.EstimatorInfo, grant client.Grant, err error) error {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err // it has its exit code
	case errors.Is(err, client.ErrUnknownEstimator):
		return fail(ExitUsage, err)
	case !client.FitFailed(err):
		// Before the runner: the data, the cache bound, the ledger.
		return ledgerErr(err)
	case errors.Is(err, client.ErrBudget):
		return fail(ExitBudget, fmt.Errorf("%w%s", err, rhoHint(err, grant)))
	case errors.Is(err, client.ErrRefused):
		return fail(ExitUsage, fmt.Errorf("%w (see `dplr describe %s`)", err, info.Name))
	}
	return err
}

// rhoHint explains, when an (ε, δ) request is refused but the same
// guarantee requested as ρ-zCDP would fit, how to ask for it (see
// client.Error.SuggestedRho).
func rhoHint(err error, grant client.Grant) string {
	var ce *client.Error
	if !errors.As(err, &ce) || ce.SuggestedRho <= 0 {
		return ""
	}
	return fmt.Sprintf("\nhint: the same guarantee requested as zCDP fits: --rho %.6g (ρ-zCDP implies (ε = %g, δ = %g)-DP); "+
		"under the classic (zCDP) rule the ledger counts a reserved (ε, δ) run by basic composition but composes ρ runs in zCDP", ce.SuggestedRho, grant.Epsilon, grant.Delta)
}

func summarize(w io.Writer, r *FitReport) {
	fmt.Fprintf(w, "%s on %s (%s) via plugin %s (%s backend)\n", r.Estimator, r.Data.Path, dataShape(r), r.Plugin, r.Backend)
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	fmt.Fprintf(w, "guarantee: %s\n", r.Privacy.Text)
	fmt.Fprintf(w, "spent: %d privacy step(s), composed as %s\n", len(r.Privacy.Steps), r.Privacy.Composition)
	for _, s := range r.Privacy.Steps {
		fmt.Fprintf(w, "  - %-28s %-11s Δ=%.4g scale=%.4g", s.Name, s.Mechanism, s.Sensitivity, s.Scale)
		writeCost(w, s.Epsilon, s.Delta, s.Rho)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "outputs in %s:\n", r.OutDir)
	for _, m := range r.Outputs.Matrices {
		fmt.Fprintf(w, "  %-12s %d×%d  %s%s\n", m.Name, m.Rows, m.Cols, m.File, releaseNote(m.Release))
	}
	for _, s := range r.Outputs.Scalars {
		fmt.Fprintf(w, "  %-12s %.6g%s\n", s.Name, s.Value, releaseNote(s.Release))
	}
	for _, se := range r.Outputs.Series {
		vals := se.Values
		more := ""
		if len(vals) > 6 {
			vals, more = vals[:6], fmt.Sprintf(" … (%d values, in result.json)", len(se.Values))
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprintf("%.4g", v)
		}
		fmt.Fprintf(w, "  %-12s [%s%s]%s\n", se.Name, strings.Join(parts, ", "), more, releaseNote(se.Release))
	}
	if len(r.Metrics) > 0 {
		fmt.Fprintf(w, "evaluation against the generating truth (not private, for evaluation only):\n")
		for _, m := range r.Metrics {
			fmt.Fprintf(w, "  %-34s %.4g\n", m.Name, m.Value)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.Ledger != nil {
		if r.Ledger.HasBudget {
			fmt.Fprintf(w, "ledger: run %d recorded; remaining: %s\n", r.Ledger.RunID, r.Ledger.RemainingText)
		} else {
			fmt.Fprintf(w, "ledger: run %d recorded; no total budget set for this data set (dplr budget set)\n", r.Ledger.RunID)
		}
	}
	fmt.Fprintf(w, "time: %.2fs\n", r.Timings["total_s"])
}

// dataShape describes the data of the summary line. Users data names the
// users and the rows apart ("users data: 5000 users, 30000 rows, p=197"):
// the number of users is the row count of a per-user output (one row per
// user), and is left out when the fit returned none.
func dataShape(r *FitReport) string {
	if r.Data.Kind != string(data.Users) {
		return fmt.Sprintf("%s, n=%d, p=%d", r.Data.Kind, r.Data.N, r.Data.P)
	}
	for _, m := range r.Outputs.Matrices {
		if m.Release == string(client.PerUser) {
			return fmt.Sprintf("users data: %d users, %d rows, p=%d", m.Rows, r.Data.N, r.Data.P)
		}
	}
	return fmt.Sprintf("users data: %d rows over all users, p=%d", r.Data.N, r.Data.P)
}

// releaseNote is the summary's mark of an output that is not public.
func releaseNote(rel string) string {
	if rel == string(client.Public) {
		return ""
	}
	return "  [" + client.Release(rel).Note() + "]"
}

// release writes the outputs and result.json and prints the report.
func release(env *Env, rep *FitReport, res *client.Result, dir string, asJSON bool, t0 time.Time, timings map[string]float64) error {
	if err := writeOutputs(dir, rep, res); err != nil {
		return fail(ExitError, fmt.Errorf("%w (the run stays charged)", err))
	}
	rep.Timings = timings
	rep.TimingsRelease, rep.TimingsNote = client.TimingRelease, client.TimingRelease.Note()
	rep.Timings["total_s"] = time.Since(t0).Seconds()
	rep.Timings["host_max_rss_kib"] = float64(client.MaxRSSKiB())
	if err := saveReportJSON(filepath.Join(dir, "result.json"), rep); err != nil {
		return fail(ExitError, fmt.Errorf("writing result.json (the run stays charged): %w", err))
	}
	warnNoTotal(env, rep.Ledger)
	for _, s := range rep.Warnings {
		fmt.Fprintf(env.Stderr, "dplr: warning: %s\n", s)
	}
	if asJSON {
		return writeReportJSON(env.Stdout, rep)
	}
	summarize(env.Stdout, rep)
	return nil
}

// warnNoTotal says on stderr, on every fit of a data set that has no
// budget total, what its runs have spent so far: nothing limits them, and
// repeated fits (a grid search, cross-validation) add up silently
// otherwise.
func warnNoTotal(env *Env, l *LedgerReport) {
	if l == nil || l.HasBudget {
		return
	}
	var spent []string
	if s := l.Spent; s.Epsilon > 0 {
		spent = append(spent, fmt.Sprintf("ε = %.4g", s.Epsilon))
		if s.Delta > 0 {
			spent = append(spent, fmt.Sprintf("δ = %.3g", s.Delta))
		}
	}
	if l.Spent.Rho > 0 {
		spent = append(spent, fmt.Sprintf("ρ = %.4g", l.Spent.Rho))
	}
	if len(spent) == 0 {
		return
	}
	fmt.Fprintf(env.Stderr, "dplr: warning: this data set has no budget total: its runs have spent %s so far (summed), and nothing limits further fits; set one with dplr budget set\n",
		strings.Join(spent, ", "))
}

// buildReport is result.json for a released fit.
func buildReport(res *client.Result) *FitReport {
	g, d, p := res.Guarantee, res.Data, res.Plugin
	rep := &FitReport{
		Estimator: res.Estimator, Plugin: p.Name, PluginVer: p.Version, PluginBin: p.Path,
		Backend: p.Backend, Threads: int32(p.Threads),
		Data:   DataReport{Kind: string(d.Kind), Hash: d.Hash, Source: d.Source, Name: d.Name, N: d.N, P: d.P, D1: d.D1, D2: d.D2},
		Params: res.Params,
		Privacy: PrivacyReport{Grant: res.Grant, Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho,
			Guarantee: string(g.Kind), Text: g.String(), Model: g.Model, Beta: g.Beta,
			Assumptions: append([]string{}, g.Assumptions...), Neighbours: g.Neighbours, Seeded: g.Seeded,
			Composition: res.Composition, Steps: append([]client.Step{}, res.Steps...), Statements: g.Statements()},
		Warnings: res.Warnings,
		Notes:    res.Notes,
		Metrics:  append([]client.Metric{}, res.Metrics...),
	}
	rep.Outputs.Matrices = []MatrixReport{}
	rep.Outputs.Scalars = []ScalarReport{}
	for _, m := range res.Matrices {
		rows, cols := m.Value.Dims()
		mr := MatrixReport{Name: m.Name, Rows: rows, Cols: cols, Release: string(m.Release), Doc: m.Doc}
		if rows*cols <= inlineLimit {
			for i := 0; i < rows; i++ {
				mr.Value = append(mr.Value, m.Value.RawRowView(i))
			}
		}
		rep.Outputs.Matrices = append(rep.Outputs.Matrices, mr)
	}
	for _, s := range res.Scalars {
		rep.Outputs.Scalars = append(rep.Outputs.Scalars, ScalarReport{Name: s.Name, Value: s.Value, Release: string(s.Release), Doc: s.Doc})
	}
	for _, s := range res.Series {
		rep.Outputs.Series = append(rep.Outputs.Series, SeriesReport{Name: s.Name, Values: s.Values, Release: string(s.Release), Doc: s.Doc})
	}
	if res.Info.NonPrivate {
		rep.Notes = append(rep.Notes, "non-private reference output: not recorded in the budget ledger and NOT private")
	}
	if l := res.Ledger; l != nil {
		st := l.Status
		rep.Ledger = &LedgerReport{RunID: int64(l.RunID), Path: l.Path, HasBudget: st.HasBudget, Spent: st.Spent}
		if st.HasBudget {
			rep.Ledger.Remaining, rep.Ledger.RemainingText = &st.Remaining, st.RemainingText()
		}
	}
	return rep
}

func writeOutputs(dir string, rep *FitReport, res *client.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	rep.OutDir = abs
	for i, m := range res.Matrices {
		file, err := client.SaveMatrix(dir, m.Name, m.Value)
		if err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		rep.Outputs.Matrices[i].File = file
	}
	return nil
}

// optUint is an optional unsigned flag.
type optUint struct {
	v   uint64
	set bool
}

func (o *optUint) String() string {
	if !o.set {
		return ""
	}
	return fmt.Sprint(o.v)
}

func (o *optUint) Set(s string) error {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer in [0, 2^64)", s)
	}
	o.v, o.set = v, true
	return nil
}

// writeCost writes a step's nonzero costs (ε, δ, ρ) on the current line.
func writeCost(w io.Writer, eps, delta, rho float64) {
	if eps > 0 {
		fmt.Fprintf(w, " ε=%.4g", eps)
	}
	if delta > 0 {
		fmt.Fprintf(w, " δ=%.3g", delta)
	}
	if rho > 0 {
		fmt.Fprintf(w, " ρ=%.4g", rho)
	}
}
