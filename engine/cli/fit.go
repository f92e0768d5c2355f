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

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/proto/dplrpb"
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
	Ledger    *LedgerReport      `json:"ledger,omitempty"`
	Notes     []string           `json:"notes,omitempty"`
	OutDir    string             `json:"out_dir,omitempty"`
}

// DataReport describes the data a run used.
type DataReport struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Hash string `json:"hash"`
	Name string `json:"name,omitempty"`
	N    int    `json:"n"`
	P    int    `json:"p"`
	D1   int    `json:"d1,omitempty"`
	D2   int    `json:"d2,omitempty"`
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

func cmdFit(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("fit", "ESTIMATOR --data PATH [--format F] (--epsilon E [--delta D] | --rho R) [--set key=value ...] [--out DIR] [--seed N] [--json]", env)
	var pf pluginFlags
	pf.register(fs)
	var df dataFlags
	df.register(fs)
	var gf grantFlags
	gf.register(fs, "privacy budget of this run")
	var sets multiFlag
	fs.Var(&sets, "set", "estimator parameter `key=value` (repeatable; see \"dplr describe ESTIMATOR\")")
	outDir := fs.String("out", "", "`DIR` for result.json and one .npy per matrix (default dplr-out/ESTIMATOR-TIME)")
	var seed optUint
	fs.Var(&seed, "seed", "draw noise from seed `N`: reproducible, and NOT private against anyone who knows it")
	asJSON := fs.Bool("json", false, "print the result as one JSON object on stdout")
	quiet := fs.Bool("quiet", false, "no progress display")
	timeout := fs.Duration("timeout", 0, "give up on the fit after this long, treating the plugin as hung (exit 4; the grant stays charged); 0: no limit")
	nonPrivate := fs.Bool("non-private", false, "allow a non-private reference estimator (its output is NOT private; refused on data sets with a budget)")
	if err := parse(fs, reorder(args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("fit takes one ESTIMATOR (see `dplr plugins`)")
	}
	estName := fs.Arg(0)
	t0 := time.Now()
	timings := map[string]float64{}

	// 1. Everything that can be checked before touching data or budget.
	raw, err := parseSets(sets)
	if err != nil {
		return err
	}
	if _, ok := raw["seed"]; ok {
		return usagef("use --seed N, not --set seed=N")
	}
	home := pf.homeDir(env)
	reg, err := pf.startFor(ctx, env, estName)
	if reg != nil {
		defer reg.close()
	}
	if err != nil {
		return err
	}
	plug, info, ok := reg.find(estName)
	if !ok {
		warnFailures(env, reg)
		return usagef("no plugin serves estimator %q (known: %s)", estName, strings.Join(reg.estimatorNames(), ", "))
	}
	noteShadowed(env, reg, plug.Path)
	grant, err := gf.grant()
	if info.NonPrivate {
		if !*nonPrivate {
			return usagef("%s is a NON-PRIVATE reference estimator: pass --non-private to run it (its output must not be published)", estName)
		}
		if err != nil {
			// The budget flags are optional here; the plugin is given a
			// placeholder grant it is forbidden to spend from.
			grant, err = privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, nil
		}
	}
	if err != nil {
		return err
	}
	params, err := sdk.ValidateParams(info.Params, raw)
	if err != nil {
		return fail(ExitUsage, fmt.Errorf("%s: %w (see `dplr describe %s`)", estName, err, estName))
	}
	if !slices.Contains(info.Grants, grant.Kind) {
		return usagef("%s does not accept a %s budget; it accepts: %s", estName, grant.Kind, grantKinds(info.Grants))
	}
	timings["plugins_s"] = time.Since(t0).Seconds()

	// 2. Data: located, validated and hashed before any budget is charged.
	t1 := time.Now()
	loc, err := df.locate(info.DataKind)
	if err != nil {
		return err
	}
	handle, err := loc.prepare(ctx, home)
	if err != nil {
		return err
	}
	timings["prepare_s"] = time.Since(t1).Seconds()
	if err := checkRank(params, handle); err != nil {
		return fail(ExitUsage, fmt.Errorf("%s: %w; nothing was run or spent", estName, err))
	}

	// 3. Charge before release.
	led, err := ledger.Open(ctx, home)
	if err != nil {
		return fail(ExitError, fmt.Errorf("opening the budget ledger: %w", err))
	}
	defer led.Close()
	if info.NonPrivate {
		return fitNonPrivate(ctx, env, led, plug, info, handle, raw, grant, loc, df.path, *outDir, *asJSON, *quiet, t0, timings)
	}
	runID, err := led.Reserve(ctx, handle.Hash, ledger.ReserveRequest{
		Estimator: estName, Plugin: plug.Path, Params: raw, Grant: grant, Name: handle.Name,
	})
	if err != nil {
		if errors.Is(err, ledger.ErrBudgetExceeded) || errors.Is(err, ledger.ErrIncompatible) {
			return fail(ExitBudget, fmt.Errorf("budget refused, nothing was run or spent: %w%s", err, rhoHint(ctx, led, handle.Hash, grant, info.Grants)))
		}
		return fail(ExitError, fmt.Errorf("reserving budget: %w", err))
	}

	// 4. Fit through the plugin.
	req := &dplrpb.FitRequest{Estimator: estName, Params: raw, Grant: sdk.GrantToProto(grant), Data: sdk.HandleToProto(handle)}
	if seed.set {
		req.Seed = &seed.v
		fmt.Fprintf(env.Stderr, "dplr: warning: --seed makes the noise reproducible; the result is NOT private against anyone who knows the seed\n")
	}
	fctx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	bar := newProgressBar(env.Stderr, *quiet)
	t2 := time.Now()
	outcome, fitErr := plug.Fit(fctx, req, func(ev *dplrpb.FitEvent) {
		switch e := ev.GetEvent().(type) {
		case *dplrpb.FitEvent_Progress:
			bar.update(e.Progress.GetStage(), e.Progress.GetDone(), e.Progress.GetTotal(), e.Progress.GetMessage())
		case *dplrpb.FitEvent_Log:
			if pf.verbose {
				bar.logf("%s", e.Log)
			}
		}
	})
	bar.finish()
	timings["fit_s"] = time.Since(t2).Seconds()

	// 5. Settle. A failure after any privacy step was announced, or a
	// plugin that died mid-fit, stays charged; otherwise it is refunded.
	if fitErr != nil {
		noise := outcome.NoiseDrawn() || errors.Is(fitErr, host.ErrPlugin) || errors.Is(fitErr, context.DeadlineExceeded) || errors.Is(fitErr, context.Canceled)
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if serr := led.Settle(sctx, runID, ledger.Outcome{Status: ledger.Failed, NoiseDrawn: noise, Error: fitErr.Error()}); serr != nil {
			fmt.Fprintf(env.Stderr, "dplr: warning: settling the ledger: %v (the run stays charged)\n", serr)
		}
		charged := "refunded: no noise was drawn"
		if noise {
			charged = "charged its full grant: noise may have been drawn"
		}
		code := fitErrorCode(fitErr)
		if code == ExitUsage && noise {
			// A refusal after a privacy step breaks the protocol's contract;
			// the run stays charged and is not a mere usage error.
			code = ExitEstimator
		}
		if *timeout > 0 && errors.Is(fitErr, context.DeadlineExceeded) {
			// A plugin still running at --timeout is treated as hung.
			code = ExitPlugin
			fitErr = fmt.Errorf("the fit did not finish within --timeout %s: %w", *timeout, fitErr)
		}
		return fail(code, fmt.Errorf("%w (ledger %s %s)", fitErr, runID, charged))
	}
	if err := led.Settle(ctx, runID, ledger.Outcome{Status: ledger.Succeeded, Steps: append([]privacy.Step{}, outcome.Steps...)}); err != nil {
		return fail(ExitError, fmt.Errorf("settling the ledger for %s (the run stays charged; results not released): %w", runID, err))
	}

	// 6. Report.
	rep := buildReport(estName, plug, info, handle, raw, grant, outcome, loc)
	rep.Data.Path = df.path
	if st, err := led.Show(ctx, handle.Hash); err == nil {
		rep.Ledger = &LedgerReport{RunID: int64(runID), Path: led.Path(), HasBudget: st.HasBudget, Spent: st.Spent}
		if st.HasBudget {
			rep.Ledger.Remaining, rep.Ledger.RemainingText = &st.Remaining, st.RemainingText()
		}
	}
	return release(env, rep, outcome, *outDir, *asJSON, t0, timings)
}

// checkRank refuses, before any budget is reserved, a shared `rank`
// parameter that the data cannot support: a rank-r estimate needs r at most
// the dimension its basis lives in (p columns of a row matrix, p features of
// user data, min(d1, d2) for trace regression). Estimators check their own
// finer conditions; this one is common to all and costs nothing to check.
func checkRank(params sdk.Params, h dataio.Handle) error {
	if !params.Has("rank") {
		return nil
	}
	r := params.Int("rank")
	dim, what := h.P, fmt.Sprintf("the data's dimension p = %d", h.P)
	if h.Kind == data.Trace {
		dim, what = min(h.D1, h.D2), fmt.Sprintf("min(d1, d2) = min(%d, %d) of the trace-regression data", h.D1, h.D2)
	}
	if dim > 0 && r > dim {
		return fmt.Errorf("rank = %d exceeds %s", r, what)
	}
	return nil
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

// release writes the outputs and result.json and prints the report.
func release(env *Env, rep *FitReport, outcome *host.FitOutcome, dir string, asJSON bool, t0 time.Time, timings map[string]float64) error {
	if dir == "" {
		dir = filepath.Join("dplr-out", fmt.Sprintf("%s-%s", rep.Estimator, time.Now().UTC().Format("20060102-150405.000")))
	}
	if err := writeOutputs(dir, rep, outcome); err != nil {
		return fail(ExitError, err)
	}
	rep.Timings = timings
	rep.Timings["plugin_fit_s"] = outcome.Result.GetFitSeconds()
	rep.Timings["plugin_load_s"] = outcome.Result.GetLoadSeconds()
	rep.Timings["total_s"] = time.Since(t0).Seconds()
	rep.Timings["plugin_max_rss_kib"] = float64(outcome.Result.GetMaxRssKb())
	rep.Timings["host_max_rss_kib"] = float64(sdk.MaxRSSKiB())
	if err := dataio.SaveJSON(filepath.Join(dir, "result.json"), rep, dataio.JSONOptions{}); err != nil {
		return fail(ExitError, fmt.Errorf("writing result.json: %w", err))
	}
	if asJSON {
		return dataio.WriteJSON(env.Stdout, rep, dataio.JSONOptions{})
	}
	summarize(env.Stdout, rep)
	return nil
}

// fitNonPrivate runs a non-private reference estimator: never on a data
// set with a budget, never recorded as a private release.
func fitNonPrivate(ctx context.Context, env *Env, led *ledger.Ledger, plug *host.Plugin, info sdk.Info, h dataio.Handle,
	raw map[string]string, grant privacy.Grant, loc *loaded, path, outDir string, asJSON, quiet bool, t0 time.Time, timings map[string]float64) error {
	st, err := led.Show(ctx, h.Hash)
	if err == nil && st.HasBudget {
		return fail(ExitBudget, fmt.Errorf("refusing to run the non-private %s on data set %s: its owner set a privacy budget", info.Name, h.Hash[:12]))
	}
	fmt.Fprintf(env.Stderr, "dplr: warning: %s is NOT private; its output must not be published\n", info.Name)
	req := &dplrpb.FitRequest{Estimator: info.Name, Params: raw, Grant: sdk.GrantToProto(grant), Data: sdk.HandleToProto(h)}
	bar := newProgressBar(env.Stderr, quiet)
	t2 := time.Now()
	outcome, err := plug.Fit(ctx, req, func(ev *dplrpb.FitEvent) {
		if p, ok := ev.GetEvent().(*dplrpb.FitEvent_Progress); ok {
			bar.update(p.Progress.GetStage(), p.Progress.GetDone(), p.Progress.GetTotal(), p.Progress.GetMessage())
		}
	})
	bar.finish()
	timings["fit_s"] = time.Since(t2).Seconds()
	if err != nil {
		return fail(fitErrorCode(err), err)
	}
	if outcome.Result.GetGuarantee().GetKind() != string(privacy.None) || len(outcome.Steps) > 0 {
		return fail(ExitPlugin, fmt.Errorf("plugin %s: non-private estimator %s returned a privacy claim", plug.Name(), info.Name))
	}
	rep := buildReport(info.Name, plug, info, h, raw, grant, outcome, loc)
	rep.Data.Path = path
	rep.Privacy.Grant = privacy.Grant{}
	rep.Notes = append(rep.Notes, "non-private reference output: not recorded in the budget ledger and NOT private")
	return release(env, rep, outcome, outDir, asJSON, t0, timings)
}

// fitErrorCode is the exit code of a failed fit: a plugin failure, a
// request the estimator refused as such (a usage error), or an estimator
// error.
func fitErrorCode(err error) int {
	switch {
	case errors.Is(err, host.ErrPlugin):
		return ExitPlugin
	case errors.Is(err, host.ErrRequest):
		return ExitUsage
	}
	return ExitEstimator
}

func grantKinds(ks []privacy.GrantKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func buildReport(est string, plug *host.Plugin, info sdk.Info, h dataio.Handle, raw map[string]string, grant privacy.Grant, out *host.FitOutcome, loc *loaded) *FitReport {
	res := out.Result
	// The guarantee's kind, model and assumptions are the estimator's; its
	// numbers are the host's own composition of the steps the plugin
	// announced (validated against the grant), never the plugin's word.
	guar := sdk.GuaranteeFromProto(res.GetGuarantee())
	if guar.Kind != privacy.None {
		guar.Epsilon, guar.Delta, guar.Rho = out.Achieved.Epsilon, out.Achieved.Delta, out.Achieved.Rho
	}
	g := sdk.GuaranteeToProto(guar)
	rep := &FitReport{
		Estimator: est, Plugin: plug.Name(), PluginVer: plug.Catalogue.GetVersion(), PluginBin: plug.Path,
		Backend: plug.Backend(), Threads: plug.Catalogue.GetBackendThreads(),
		Data:   DataReport{Kind: string(h.Kind), Hash: h.Hash, Name: h.Name, N: h.N, P: h.P, D1: h.D1, D2: h.D2},
		Params: typedParams(info, raw),
		Privacy: PrivacyReport{Grant: grant, Epsilon: g.GetEpsilon(), Delta: g.GetDelta(), Rho: g.GetRho(),
			Guarantee: g.GetKind(), Text: g.GetText(), Model: g.GetModel(), Beta: g.GetBeta(),
			Assumptions: append([]string{}, g.GetAssumptions()...), Neighbours: g.GetNeighbours(), Seeded: g.GetSeeded(),
			Composition: out.Achieved.Composition, Steps: append([]privacy.Step{}, out.Steps...)},
		Notes:   res.GetNotes(),
		Metrics: []evaluate.Metric{},
	}
	rep.Outputs.Matrices = []MatrixReport{}
	rep.Outputs.Scalars = []ScalarReport{}
	outs := map[string]*mat.Dense{}
	for _, m := range out.Matrices {
		mr := MatrixReport{Name: m.Name, Rows: m.Rows, Cols: m.Cols, Release: m.Release, Doc: m.Doc}
		if m.Rows*m.Cols <= inlineLimit {
			for i := 0; i < m.Rows; i++ {
				mr.Value = append(mr.Value, m.Data[i*m.Cols:(i+1)*m.Cols])
			}
		}
		rep.Outputs.Matrices = append(rep.Outputs.Matrices, mr)
		outs[m.Name] = mat.NewDense(m.Rows, m.Cols, m.Data)
	}
	for _, s := range res.GetScalars() {
		rep.Outputs.Scalars = append(rep.Outputs.Scalars, ScalarReport{Name: s.GetName(), Value: s.GetValue(), Release: s.GetRelease(), Doc: s.GetDoc()})
	}
	for _, s := range res.GetSeries() {
		rep.Outputs.Series = append(rep.Outputs.Series, SeriesReport{Name: s.GetName(), Values: s.GetValues(), Release: s.GetRelease(), Doc: s.GetDoc()})
	}
	if loc.truth != nil {
		rep.Metrics = append(rep.Metrics, evaluate.Against(outs, loc.truth)...)
	}
	return rep
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

func releaseNote(rel string) string {
	switch rel {
	case string(sdk.Evaluation):
		return "evaluation only: computed from the raw data, NOT private"
	case string(sdk.PerUser):
		return "per-user: release each part only to its user"
	}
	return rel
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
