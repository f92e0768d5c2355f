package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
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
	Metrics   []evaluate.Metric  `json:"metrics"`
	Timings   map[string]float64 `json:"timings"`
	// TimingsRelease is the release class of Timings: diagnostic, because
	// times and memory depend on the data (issue 15 §8); TimingsNote says
	// what that means for publishing them.
	TimingsRelease sdk.Release   `json:"timings_release"`
	TimingsNote    string        `json:"timings_note"`
	Ledger         *LedgerReport `json:"ledger,omitempty"`
	Notes          []string      `json:"notes,omitempty"`
	OutDir         string        `json:"out_dir,omitempty"`
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
}

// PrivacyReport is what a run spent and what it guarantees.
type PrivacyReport struct {
	Grant       privacy.Grant  `json:"grant"`
	Epsilon     float64        `json:"epsilon"`
	Delta       float64        `json:"delta"`
	Rho         float64        `json:"rho"`
	Guarantee   string         `json:"guarantee"`
	Text        string         `json:"text"`
	Model       string         `json:"model,omitempty"`
	Beta        float64        `json:"beta,omitempty"`
	Assumptions []string       `json:"assumptions"`
	Neighbours  string         `json:"neighbours,omitempty"`
	Seeded      bool           `json:"seeded"`
	Composition string         `json:"composition"`
	Steps       []privacy.Step `json:"steps"`
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
	Spent     ledger.Spent `json:"spent"`
	// Remaining and RemainingText are present only when the data set has a
	// total budget; the numbers' meaning depends on the total's form
	// (ledger.Remaining), the text says it in words.
	Remaining     *ledger.Remaining `json:"remaining,omitempty"`
	RemainingText string            `json:"remaining_text,omitempty"`
}

const inlineLimit = 400 // matrices with at most this many values are inlined in JSON

// fitFlags are the parsed flags of `dplr fit`.
type fitFlags struct {
	pf         pluginFlags
	df         dataFlags
	gf         grantFlags
	sets       multiFlag
	outDir     string
	seed       optUint
	asJSON     bool
	quiet      bool
	timeout    time.Duration
	nonPrivate bool
	maxMemory  byteSize
	estimator  string
}

func parseFitFlags(env *Env, args []string) (*fitFlags, error) {
	fs := newFlags("fit", "ESTIMATOR --data PATH [--format F] (--epsilon E [--delta D] | --rho R) [--set key=value ...] [--out DIR] [--seed N] [--json]", env)
	f := &fitFlags{maxMemory: byteSize(defaultMaxMemory())}
	f.pf.register(fs)
	f.df.register(fs)
	f.gf.register(fs, "privacy budget of this run")
	fs.Var(&f.sets, "set", "estimator parameter `key=value` (repeatable; see \"dplr describe ESTIMATOR\")")
	fs.StringVar(&f.outDir, "out", "", "`DIR` for result.json and one .npy per matrix (default dplr-out/ESTIMATOR-TIME); created and checked before any budget is reserved")
	fs.Var(&f.seed, "seed", "draw noise from seed `N`: reproducible, and NOT private against anyone who knows it")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as one JSON object on stdout")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress display")
	fs.DurationVar(&f.timeout, "timeout", 0, "give up on the fit after this long, treating the plugin as hung (exit 4; charged its grant once a privacy step was announced, refunded before); 0: no limit")
	fs.BoolVar(&f.nonPrivate, "non-private", false, "allow a non-private reference estimator (its output is NOT private; refused on data sets with a budget)")
	fs.Var(&f.maxMemory, "max-memory", "refuse, before reserving, a fit whose estimated peak memory exceeds `SIZE` (e.g. 8GiB, 512M; 0: no limit; default 3/4 of physical memory)")
	if err := parse(fs, reorder(fs, args)); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, usagef("fit takes one ESTIMATOR (see `dplr plugins`)")
	}
	if f.timeout < 0 {
		return nil, usagef("--timeout %s is negative; give a positive duration, or 0 for no limit", f.timeout)
	}
	f.estimator = fs.Arg(0)
	return f, nil
}

func cmdFit(ctx context.Context, env *Env, args []string) error {
	f, err := parseFitFlags(env, args)
	if err != nil {
		return err
	}
	t0 := time.Now()
	timings := map[string]float64{}
	raw, err := parseSets(f.sets)
	if err != nil {
		return err
	}
	grant, grantErr := f.gf.grant()
	if grantErr != nil && budgetGiven(f.gf) {
		return grantErr
	}
	home, err := f.pf.checkedHome(env)
	if err != nil {
		return err
	}
	reg, err := f.pf.startFor(ctx, env, f.estimator)
	if reg != nil {
		defer reg.close()
	}
	if err != nil {
		return err
	}
	plug, info, ok := reg.Find(f.estimator)
	if !ok {
		return unserved(env, reg, f.estimator)
	}
	noteShadowed(env, reg, plug.Path)
	if grantErr != nil && !info.NonPrivate {
		return grantErr // a non-private estimator needs no budget
	}
	timings["plugins_s"] = time.Since(t0).Seconds()

	// Data: located, validated and hashed before any budget is charged.
	t1 := time.Now()
	loc, err := f.df.locate(info.DataKind)
	if err != nil {
		return err
	}
	handle, err := loc.prepare(ctx, home)
	if err != nil {
		return err
	}
	timings["prepare_s"] = time.Since(t1).Seconds()
	led, err := ledger.Open(ctx, home)
	if err != nil {
		return ledgerErr(fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer led.Close()
	res, err := runFit(ctx, env, f, led, reg, host.FitRequest{Estimator: f.estimator, Params: raw, Grant: grant, Data: handle,
		NonPrivate: f.nonPrivate, Timeout: f.timeout})
	if err != nil {
		return fitFailure(ctx, led, host.BudgetKey(handle), grant, info, err)
	}
	for k, v := range res.Timings {
		timings[k] = v
	}
	rep := buildReport(res, handle, raw, grant, loc)
	rep.Data.Path = f.df.path
	if rep.Ledger != nil {
		rep.Ledger.Path = led.Path()
	}
	return release(env, rep, res, f.outDir, f.asJSON, t0, timings)
}

// budgetGiven reports whether any budget flag was given (a non-private
// estimator needs none).
func budgetGiven(g grantFlags) bool {
	return !math.IsNaN(g.eps) || !math.IsNaN(g.delta) || !math.IsNaN(g.rho)
}

// runFit runs the fit through a host.Runner, with the output location
// created and checked before anything is reserved and the plugin's
// progress drawn on stderr.
func runFit(ctx context.Context, env *Env, f *fitFlags, led *ledger.Ledger, reg *registry, req host.FitRequest) (*host.FitResult, error) {
	if f.outDir == "" {
		f.outDir = filepath.Join("dplr-out", fmt.Sprintf("%s-%s", f.estimator, time.Now().UTC().Format("20060102-150405.000")))
	}
	req.BeforeReserve = func() error { return prepareOutDir(f.outDir) }
	if f.seed.set {
		req.Seed = &f.seed.v
		fmt.Fprintf(env.Stderr, "dplr: warning: --seed makes the noise reproducible; the result is NOT private against anyone who knows the seed\n")
	}
	bar := newProgressBar(env.Stderr, f.quiet)
	req.Events = host.Events{Progress: bar.progress}
	if f.pf.verbose {
		req.Events.Log = func(line string) { bar.logf("%s", line) }
	}
	if _, info, _ := reg.Find(f.estimator); info.NonPrivate && f.nonPrivate {
		fmt.Fprintf(env.Stderr, "dplr: warning: %s is NOT private; its output must not be published\n", f.estimator)
	}
	runner := &host.Runner{Ledger: led, Plugins: reg, MaxMemory: int64(f.maxMemory), CheckTimeout: f.pf.timeout}
	res, err := runner.Fit(ctx, req)
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

// fitFailure turns a failed fit into the command's error and exit code.
func fitFailure(ctx context.Context, led *ledger.Ledger, hash string, grant privacy.Grant, info sdk.Info, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return fail(ee.code, err)
	}
	if errors.Is(err, host.ErrUnknownEstimator) {
		return fail(ExitUsage, err)
	}
	if errors.Is(err, host.ErrBudget) {
		return fail(ExitBudget, fmt.Errorf("%w%s", err, rhoHint(ctx, led, hash, grant, info.Grants)))
	}
	if errors.Is(err, host.ErrUsage) {
		return fail(ExitUsage, fmt.Errorf("%w (see `dplr describe %s`)", err, info.Name))
	}
	return fail(fitErrorCode(err), err)
}

// fitErrorCode is the exit code of a fit that failed after its
// reservation: an interruption, a plugin failure, a request the estimator
// refused as such before any privacy step (a usage error), the ledger, or
// an estimator error.
func fitErrorCode(err error) int {
	var fe *host.FitError
	charged := errors.As(err, &fe) && fe.Charged
	switch {
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, host.ErrPlugin):
		return ExitPlugin
	case errors.Is(err, host.ErrLedger) && errors.Is(err, ledger.ErrDamaged):
		return ExitData // as dplr budget says: the ledger cannot be trusted
	case errors.Is(err, host.ErrLedger):
		return ExitError
	case errors.Is(err, host.ErrRequest) && !charged:
		return ExitUsage
	}
	// A refusal after a privacy step breaks the protocol's contract; the
	// run stays charged and is not a mere usage error.
	return ExitEstimator
}

// rhoHint explains, when an (ε, δ) request is refused but the same
// guarantee requested as ρ-zCDP would fit, how to ask for it. The ledger
// can only count an (ε, δ) run by basic composition while it is reserved
// (its accountant might compose its steps that way, which bounds no ρ),
// whereas a ρ grant composes with the earlier runs in zCDP; the ρ with the
// same (ε, δ) under the tight conversion gives the user the guarantee they
// asked for.
func rhoHint(ctx context.Context, led *ledger.Ledger, hash string, grant privacy.Grant, accepts []privacy.GrantKind) string {
	if grant.Kind != privacy.GrantApprox || !slices.Contains(accepts, privacy.GrantZCDP) {
		return ""
	}
	rho, err := privacy.RhoForEpsDelta(grant.Epsilon, grant.Delta)
	if err != nil {
		return ""
	}
	st, err := led.Show(ctx, hash)
	if err != nil || !st.HasBudget || st.Remaining.Rho < rho {
		return ""
	}
	// Six significant digits, rounded down so that the printed ρ still
	// implies the requested (ε, δ).
	scale := math.Pow(10, 5-math.Floor(math.Log10(rho)))
	rho = math.Floor(rho*scale) / scale
	return fmt.Sprintf("\nhint: the same guarantee requested as zCDP fits: --rho %.6g (ρ-zCDP implies (ε = %g, δ = %g)-DP); "+
		"the ledger counts a reserved (ε, δ) run by basic composition but composes ρ runs in zCDP", rho, grant.Epsilon, grant.Delta)
}

func typedParams(info sdk.Info, raw map[string]string) map[string]any {
	p, err := sdk.ValidateParams(info.Params, raw)
	out := map[string]any{}
	if err != nil {
		return out
	}
	for _, s := range info.Params {
		if !p.Has(s.Name) {
			continue
		}
		switch s.Type {
		case sdk.Int:
			out[s.Name] = p.Int(s.Name)
		case sdk.Float:
			out[s.Name] = p.Float(s.Name)
		case sdk.Bool:
			out[s.Name] = p.Bool(s.Name)
		default:
			out[s.Name] = p.String(s.Name)
		}
	}
	return out
}

func summarize(w io.Writer, r *FitReport) {
	fmt.Fprintf(w, "%s on %s (%s, n=%d, p=%d) via plugin %s (%s backend)\n", r.Estimator, r.Data.Path, r.Data.Kind, r.Data.N, r.Data.P, r.Plugin, r.Backend)
	fmt.Fprintf(w, "guarantee: %s\n", r.Privacy.Text)
	fmt.Fprintf(w, "spent: %d privacy step(s), composed as %s\n", len(r.Privacy.Steps), r.Privacy.Composition)
	for _, s := range r.Privacy.Steps {
		fmt.Fprintf(w, "  - %-28s %-11s Δ=%.4g scale=%.4g", s.Name, s.Mechanism, s.Sensitivity, s.Scale)
		if s.Epsilon > 0 {
			fmt.Fprintf(w, " ε=%.4g", s.Epsilon)
		}
		if s.Delta > 0 {
			fmt.Fprintf(w, " δ=%.3g", s.Delta)
		}
		if s.Rho > 0 {
			fmt.Fprintf(w, " ρ=%.4g", s.Rho)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "outputs in %s:\n", r.OutDir)
	for _, m := range r.Outputs.Matrices {
		note := ""
		if m.Release != string(sdk.Public) {
			note = "  [" + releaseNote(m.Release) + "]"
		}
		fmt.Fprintf(w, "  %-12s %d×%d  %s%s\n", m.Name, m.Rows, m.Cols, m.File, note)
	}
	for _, s := range r.Outputs.Scalars {
		note := ""
		if s.Release != string(sdk.Public) {
			note = "  [" + releaseNote(s.Release) + "]"
		}
		fmt.Fprintf(w, "  %-12s %.6g%s\n", s.Name, s.Value, note)
	}
	for _, se := range r.Outputs.Series {
		note := ""
		if se.Release != string(sdk.Public) {
			note = "  [" + releaseNote(se.Release) + "]"
		}
		vals := se.Values
		more := ""
		if len(vals) > 6 {
			vals, more = vals[:6], fmt.Sprintf(" … (%d values, in result.json)", len(se.Values))
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprintf("%.4g", v)
		}
		fmt.Fprintf(w, "  %-12s [%s%s]%s\n", se.Name, strings.Join(parts, ", "), more, note)
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

func releaseNote(rel string) string { return sdk.Release(rel).Note() }

// release writes the outputs and result.json and prints the report.
func release(env *Env, rep *FitReport, res *host.FitResult, dir string, asJSON bool, t0 time.Time, timings map[string]float64) error {
	if err := writeOutputs(dir, rep, res.Outcome); err != nil {
		return fail(ExitError, fmt.Errorf("%w (the run stays charged)", err))
	}
	rep.Timings = timings
	rep.TimingsRelease, rep.TimingsNote = sdk.TimingRelease, sdk.TimingRelease.Note()
	rep.Timings["plugin_fit_s"] = res.Outcome.FitSeconds
	rep.Timings["plugin_load_s"] = res.Outcome.LoadSeconds
	rep.Timings["total_s"] = time.Since(t0).Seconds()
	rep.Timings["plugin_max_rss_kib"] = float64(res.Outcome.MaxRSSKiB)
	rep.Timings["host_max_rss_kib"] = float64(sdk.MaxRSSKiB())
	if res.Check.Footprint > 0 {
		rep.Timings["plugin_footprint_estimate_bytes"] = float64(res.Check.Footprint)
	}
	if err := dataio.SaveJSON(filepath.Join(dir, "result.json"), rep, dataio.JSONOptions{}); err != nil {
		return fail(ExitError, fmt.Errorf("writing result.json (the run stays charged): %w", err))
	}
	if asJSON {
		return dataio.WriteJSON(env.Stdout, rep, dataio.JSONOptions{})
	}
	summarize(env.Stdout, rep)
	return nil
}

// buildReport is result.json for a released fit.
func buildReport(res *host.FitResult, h dataio.Handle, raw map[string]string, grant privacy.Grant, loc *loaded) *FitReport {
	out, plug, info := res.Outcome, res.Plugin, res.Info
	g := res.Guarantee
	rep := &FitReport{
		Estimator: info.Name, Plugin: plug.Name(), PluginVer: plug.Version(), PluginBin: plug.Path,
		Backend: plug.Backend(), Threads: int32(plug.Threads()),
		Data:   DataReport{Kind: string(h.Kind), Hash: h.Hash, Source: host.BudgetKey(h), Name: h.Name, N: h.N, P: h.P, D1: h.D1, D2: h.D2},
		Params: typedParams(info, raw),
		Privacy: PrivacyReport{Grant: grant, Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho,
			Guarantee: string(g.Kind), Text: g.String(), Model: g.Model, Beta: g.Beta,
			Assumptions: append([]string{}, g.Assumptions...), Neighbours: g.Neighbours, Seeded: g.Seeded,
			Composition: composition(g, out.Achieved), Steps: append([]privacy.Step{}, out.Steps...)},
		Notes:   out.Notes,
		Metrics: []evaluate.Metric{},
	}
	rep.Outputs.Matrices = []MatrixReport{}
	rep.Outputs.Scalars = []ScalarReport{}
	outs := map[string]*mat.Dense{}
	for _, m := range out.Matrices {
		mr := MatrixReport{Name: m.Name, Rows: m.Rows, Cols: m.Cols, Release: string(m.Release), Doc: m.Doc}
		if m.Rows*m.Cols <= inlineLimit {
			for i := 0; i < m.Rows; i++ {
				mr.Value = append(mr.Value, m.Data[i*m.Cols:(i+1)*m.Cols])
			}
		}
		rep.Outputs.Matrices = append(rep.Outputs.Matrices, mr)
		outs[m.Name] = mat.NewDense(m.Rows, m.Cols, m.Data)
	}
	for _, s := range out.Scalars {
		rep.Outputs.Scalars = append(rep.Outputs.Scalars, ScalarReport{Name: s.Name, Value: s.Value, Release: string(s.Release), Doc: s.Doc})
	}
	for _, s := range out.Series {
		rep.Outputs.Series = append(rep.Outputs.Series, SeriesReport{Name: s.Name, Values: s.Values, Release: string(s.Release), Doc: s.Doc})
	}
	if loc.truth != nil {
		rep.Metrics = append(rep.Metrics, evaluate.Against(outs, loc.truth)...)
	}
	if info.NonPrivate {
		rep.Privacy.Grant = privacy.Grant{}
		rep.Notes = append(rep.Notes, "non-private reference output: not recorded in the budget ledger and NOT private")
	}
	if res.RunID != 0 && res.Status != nil {
		st := res.Status
		rep.Ledger = &LedgerReport{RunID: int64(res.RunID), HasBudget: st.HasBudget, Spent: st.Spent}
		if st.HasBudget {
			rep.Ledger.Remaining, rep.Ledger.RemainingText = &st.Remaining, st.RemainingText()
		}
	}
	return rep
}

// composition names the accounting behind a guarantee's figures.
func composition(g privacy.Guarantee, ach privacy.Achieved) string {
	if g.Accounting != "" {
		return g.Accounting
	}
	return ach.Composition
}

func writeOutputs(dir string, rep *FitReport, out *host.FitOutcome) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	rep.OutDir = abs
	for i, m := range out.Matrices {
		file := safeName(m.Name) + ".npy"
		if err := dataio.SaveNPYFloat64(filepath.Join(dir, file), []int{m.Rows, m.Cols}, m.Data); err != nil {
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
