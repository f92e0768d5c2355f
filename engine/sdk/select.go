package sdk

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// Private model selection, one run for every estimator that can score a
// held-out part of its units: every candidate is fitted on a random part
// and scored on the rest, the exponential mechanism picks one, and it is
// refitted on every unit, all planned together as one reservation and one
// ledger record (docs/privacy.md, "Private model selection").

// Selection is the embeddable options block of a private selection. An
// estimator whose options embed it implements Selectable, and each
// candidate's options implement Planner (a plan of shares by weight, no
// pure split or test).
type Selection struct {
	Grid    string  `param:"select" default:"none" doc:"private selection among candidate settings, one run at one stated cost: PARAM=v1,v2,... with several parameters joined by ';' (every combination is a candidate, at most 64); each candidate is fitted on a data-independent random part of the units with an even slice of select_share of the budget, scored on the other units (select_holdout), one is chosen by the exponential mechanism and refitted on every unit with the rest; none = no selection"`
	Share   float64 `param:"select_share" default:"0.3" min:"0.01" max:"0.9" doc:"fraction of the budget spent on the selection: the candidates' fits (4/5 of it, split evenly) and the exponential mechanism (1/5); the chosen candidate is refitted on every unit with the rest"`
	Holdout float64 `param:"select_holdout" default:"0.3" min:"0.05" max:"0.9" doc:"fraction of the units (rows, or users), a data-independent random draw, held out of the candidates' fits and used only to score them"`
	cands   []candidate
}

// candidate is one setting of a selection: the values it sets and the
// options bound with them.
type candidate struct {
	values [][2]string // (parameter, value) in the grid's order
	params Params
	opts   any
}

// label is the candidate's "a=1, b=2".
func (c candidate) label() string {
	var parts []string
	for _, v := range c.values {
		parts = append(parts, v[0]+"="+v[1])
	}
	return strings.Join(parts, ", ")
}

// selectFraction is the part of the selection's share spent on the
// exponential mechanism.
const selectFraction = 0.2

// selectRemoteRefusal refuses a selection on remote data.
const selectRemoteRefusal = "private selection (select=) fits the candidates on a random part of the units, which the aggregation passes of remote data (--engine beam) cannot serve; run it on the data file"

// maxCandidates bounds the grid.
const maxCandidates = 64

// Active reports whether a selection was asked for.
func (s *Selection) Active() bool { return s.Grid != "none" && s.Grid != "" }

// Varies reports whether the grid sets parameter name.
func (s *Selection) Varies(name string) bool {
	grid, err := parseGrid(s.Grid)
	return err == nil && slices.ContainsFunc(grid, func(g gridParam) bool { return g.name == name })
}

// selection gives the SDK the block embedded in an options struct.
func (s *Selection) selection() *Selection { return s }

// selector is implemented by an options pointer embedding Selection.
type selector interface{ selection() *Selection }

// selectionOf returns the active selection of bound options, or nil.
func selectionOf(opts any) *Selection {
	members := []any{opts}
	if set, ok := opts.(OptionSet); ok {
		members = set
	}
	for _, m := range members {
		if s, ok := m.(selector); ok && s.selection().Active() {
			return s.selection()
		}
	}
	return nil
}

// Scorer scores a fitted candidate on held-out units: the mean over the
// units of held of a per-unit score in [0, 1] that depends on that unit
// and the candidate alone, so that replacing one held-out unit moves the
// mean by at most 1/m (the exponential mechanism's sensitivity). The mean
// is clamped to [0, 1] (NaN to 0).
type Scorer func(ctx context.Context, held *data.Dataset) (float64, error)

// Selectable is implemented by an estimator whose options embed Selection.
// SelectFit fits on run.Data (the fitting part for a candidate, every unit
// for the final fit) with the options of run, spending the shares its
// options' Plan named, read from run.Plan by those names (a view of the
// selection's plan; run.Acct records its steps under the candidate's
// prefix); it returns the fit's result and a Scorer for held-out units.
type Selectable interface {
	Estimator
	SelectFit(ctx context.Context, run *Run) (*Result, Scorer, error)
}

// gridParam is one parameter of a grid and its candidate values.
type gridParam struct {
	name   string
	values []string
}

// parseGrid reads "a=1,2;b=x,y".
func parseGrid(s string) ([]gridParam, error) {
	var grid []gridParam
	for _, part := range strings.Split(s, ";") {
		name, vals, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.TrimSpace(vals) == "" {
			return nil, fmt.Errorf("select: %q is not of the form PARAM=v1,v2", part)
		}
		if slices.ContainsFunc(grid, func(g gridParam) bool { return g.name == name }) {
			return nil, fmt.Errorf("select: parameter %s is listed twice", name)
		}
		g := gridParam{name: name}
		for _, v := range strings.Split(vals, ",") {
			if v = strings.TrimSpace(v); v == "" || slices.Contains(g.values, v) {
				return nil, fmt.Errorf("select: %s: empty or repeated value in %q", name, vals)
			}
			g.values = append(g.values, v)
		}
		grid = append(grid, g)
	}
	return grid, nil
}

// firstCandidate is raw with the first value of each selected parameter
// that raw does not set, so that the request validates as a whole (a
// required parameter may be given only in select).
func firstCandidate(specs []ParamSpec, raw map[string]string) map[string]string {
	v, ok := raw["select"]
	if !ok || v == "none" || !hasParam(specs, "select") {
		return raw
	}
	grid, err := parseGrid(v)
	if err != nil {
		return raw
	}
	out := maps.Clone(raw)
	for _, g := range grid {
		if _, given := raw[g.name]; !given && hasParam(specs, g.name) {
			out[g.name] = g.values[0]
		}
	}
	return out
}

// expandSelection binds every candidate of an active selection (each a
// full request: raw with the grid's values, without select*), so that a
// bad value is refused before anything is spent.
//
// It returns the selection's memory beyond the base request's footprint:
// the copy of the rows it splits into the fitting and scoring parts, and
// what its largest candidate needs above the base request.
func expandSelection(info Info, raw map[string]string, s Shape, opts any, base int64) (int64, error) {
	sel := selectionOf(opts)
	if sel == nil {
		return 0, nil
	}
	extra := int64(s.N) * int64(s.P+1) * 8 // the split rows (X and y)
	grid, err := parseGrid(sel.Grid)
	if err != nil {
		return 0, BadRequest("estimator %s: %w", info.Name, err)
	}
	fixed := maps.Clone(raw)
	for k := range fixed {
		if k == "select" || k == "select_share" || k == "select_holdout" {
			delete(fixed, k)
		}
	}
	count := 1
	for _, g := range grid {
		if strings.HasPrefix(g.name, "select") || !hasParam(info.Params, g.name) {
			return 0, BadRequest("estimator %s: select: %s is not a parameter that can be selected", info.Name, g.name)
		}
		if _, given := fixed[g.name]; given {
			return 0, BadRequest("estimator %s: select: %s is also given on its own; give it only in select", info.Name, g.name)
		}
		count *= len(g.values)
		if count > maxCandidates {
			return 0, BadRequest("estimator %s: select: more than %d candidates", info.Name, maxCandidates)
		}
	}
	sel.cands = nil
	idx := make([]int, len(grid))
	for {
		c := candidate{}
		req := maps.Clone(fixed)
		for i, g := range grid {
			c.values = append(c.values, [2]string{g.name, g.values[idx[i]]})
			req[g.name] = g.values[idx[i]]
		}
		p, err := prepare(info, req, s)
		if err != nil {
			return 0, fmt.Errorf("select: candidate %s: %w", c.label(), err)
		}
		extra = max(extra, int64(s.N)*int64(s.P+1)*8+p.footprint-base)
		c.params, c.opts = p.params, p.opts
		sel.cands = append(sel.cands, c)
		i := len(grid) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < len(grid[i].values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return extra, nil
		}
	}
}

// selectionUnits is the number of units a selection splits: rows, or users.
func selectionUnits(s Shape) (int, error) {
	switch s.Kind {
	case data.Rows:
		return s.N, nil
	case data.Users:
		return s.Users, nil
	}
	return 0, BadRequest("private selection needs rows or users data, not %s data", s.Kind)
}

// shares returns the whole selection's plan for data of shape s under g:
// every candidate's shares on nFit units, prefixed "candidate j/" and
// scaled to an even slice of 4/5 of the selection's share, the
// exponential mechanism's share "select", and the final fit's shares on
// every unit, prefixed "final/", on the rest. It is decided from public
// quantities only.
func (sel *Selection) shares(s Shape, g privacy.Grant, nFit int) (string, []privacy.Share, error) {
	fitShape := s
	if s.Kind == data.Users {
		fitShape.Users = nFit
		fitShape.N = 0 // not public for a subset of users
	} else {
		fitShape.N = nFit
	}
	var (
		noise string
		all   []privacy.Share
	)
	add := func(c candidate, sh Shape, prefix string, weight float64) error {
		spec, ok, err := specOf(c.opts, sh, g)
		if err != nil {
			return err
		}
		if !ok {
			return BadRequest("this estimator cannot take part in a private selection")
		}
		if spec.Pure || spec.TestEpsilon > 0 {
			return BadRequest("this estimator's plan (a pure split, or a test paid outside the plan) cannot be split among candidates")
		}
		nz, shares := spec.Noise, spec.Shares
		if noise != "" && nz != noise {
			return BadRequest("select: the candidates are planned under different noise calibrations (%s, %s); select among settings with the same noise", noise, nz)
		}
		noise = nz
		scaled, err := scaleShares(shares, prefix, weight)
		if err != nil {
			return err
		}
		all = append(all, scaled...)
		return nil
	}
	K := len(sel.cands)
	for j, c := range sel.cands {
		if err := add(c, fitShape, candidatePrefix(j), sel.Share*(1-selectFraction)/float64(K)); err != nil {
			return "", nil, fmt.Errorf("select: candidate %s: %w", c.label(), err)
		}
	}
	all = append(all, privacy.Share{Name: "select", Weight: sel.Share * selectFraction, Mechanism: privacy.MechExponential})
	// The plan is fixed before the first step, so every candidate's final
	// fit must be planned alike: the plan then holds for the chosen one.
	var first []privacy.Share
	for j, c := range sel.cands {
		mark := len(all)
		if err := add(c, s, "final/", 1-sel.Share); err != nil {
			return "", nil, fmt.Errorf("select: final fit with %s: %w", c.label(), err)
		}
		if j == 0 {
			first = all[mark:]
			continue
		}
		if !slices.Equal(first, all[mark:]) {
			return "", nil, BadRequest("select: the candidates %s and %s plan their fits differently (steps or shares); select only among settings planned alike (e.g. rank, a clip quantile)", sel.cands[0].label(), c.label())
		}
		all = all[:mark]
	}
	return noise, all, nil
}

// candidatePrefix names candidate j's shares.
func candidatePrefix(j int) string { return fmt.Sprintf("candidate %d/", j+1) }

// scaleShares gives the Rest share its weight, scales every weight by w
// and prefixes the names.
func scaleShares(shares []privacy.Share, prefix string, w float64) ([]privacy.Share, error) {
	var sum float64
	for _, s := range shares {
		if s.Fixed != 0 {
			return nil, BadRequest("share %q has a fixed cost, which cannot be split among candidates", s.Name)
		}
		sum += s.Weight
	}
	out := make([]privacy.Share, len(shares))
	for i, s := range shares {
		if s.Rest {
			s.Rest, s.Weight = false, 1-sum
		}
		s.Name, s.Weight = prefix+s.Name, s.Weight*w
		out[i] = s
	}
	return out, nil
}

// fitUnits is the size of the fitting part of n units.
func (sel *Selection) fitUnits(n int) int {
	return n - min(max(1, int(math.Round(sel.Holdout*float64(n)))), n-1)
}

// checkSelection is the pre-flight check of a selection: the whole plan
// of the selection, the final fit included and alike for every candidate
// as the final one, is usable under acct's grant (nothing is reserved
// otherwise). It returns that plan, which the run spends.
func checkSelection(sel *Selection, s Shape, acct *privacy.Accountant) (*privacy.Plan, error) {
	if s.Remote {
		return nil, BadRequest(selectRemoteRefusal)
	}
	n, err := selectionUnits(s)
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, BadRequest("private selection needs at least 2 units (some fit the candidates, the others score them)")
	}
	noise, shares, err := sel.shares(s, acct.Grant(), sel.fitUnits(n))
	if err != nil {
		return nil, BadRequest("private selection: %w", err)
	}
	p, err := privacy.NewPlan(acct, noise, shares...)
	if err != nil {
		return nil, BadRequest("private selection: %w", err)
	}
	return p, nil
}

// subsetOf returns the units idx of d (rows, or whole users) as a data set.
func subsetOf(d *data.Dataset, idx []int) *data.Dataset {
	out := &data.Dataset{Kind: d.Kind, D1: d.D1, D2: d.D2, Hash: d.Hash, Name: d.Name, ColumnScaled: d.ColumnScaled}
	var rows []int
	if d.Kind == data.Users {
		out.UserStart = []int{0}
		for _, u := range idx {
			for r := d.UserStart[u]; r < d.UserStart[u+1]; r++ {
				rows = append(rows, r)
			}
			out.UserStart = append(out.UserStart, len(rows))
			if d.UserIDs != nil {
				out.UserIDs = append(out.UserIDs, d.UserIDs[u])
			}
		}
	} else {
		rows = idx
	}
	p := d.P()
	out.X = mat.NewDense(max(len(rows), 1), p, nil)
	if len(rows) == 0 {
		out.X = nil
	}
	for i, r := range rows {
		out.X.SetRow(i, d.X.RawRowView(r))
		if d.Y != nil {
			out.Y = append(out.Y, d.Y[r])
		}
		if d.Labels != nil {
			out.Labels = append(out.Labels, d.Labels[r])
		}
	}
	return out
}

// runSelection runs the selection of an estimator whose bound options hold
// the active selection sel, spending run.Plan (the selection's plan):
// candidates, exponential mechanism, final fit.
func runSelection(ctx context.Context, est Estimator, run *Run, sel *Selection) (*Result, error) {
	se, ok := est.(Selectable)
	if !ok {
		return nil, fmt.Errorf("estimator %s has a select parameter but no SelectFit", est.Info().Name)
	}
	s := ShapeOf(run.Data)
	n, err := selectionUnits(s)
	if err != nil {
		return nil, err
	}
	nFit := sel.fitUnits(n)
	perm := run.Rand.Split().Rand().Perm(n) // data independent
	scoreIdx, fitIdx := perm[:n-nFit], perm[n-nFit:]
	slices.Sort(scoreIdx)
	slices.Sort(fitIdx)
	fitData, held := subsetOf(run.Data, fitIdx), subsetOf(run.Data, scoreIdx)
	K, m := len(sel.cands), len(scoreIdx)
	scores := make([]float64, K)
	plan := run.Plan
	if plan == nil {
		return nil, fmt.Errorf("selection: no plan")
	}
	for j, c := range sel.cands {
		cr := *run
		cr.Data, cr.Params, cr.opts = fitData, c.params, c.opts
		cr.Acct, cr.Plan = run.Acct.Prefixed(candidatePrefix(j)), plan.Prefixed(candidatePrefix(j))
		_, scorer, err := se.SelectFit(ctx, &cr)
		if err != nil {
			return nil, fmt.Errorf("selection, candidate %s: %w", c.label(), err)
		}
		v, err := scorer(ctx, held)
		if err != nil {
			return nil, fmt.Errorf("selection, scoring candidate %s: %w", c.label(), err)
		}
		if !(v >= 0) { // NaN too
			v = 0
		}
		scores[j] = min(v, 1)
	}
	b, err := plan.Budget("select")
	if err != nil {
		return nil, err
	}
	rel, err := run.Acct.Exponential(fmt.Sprintf("select: exponential mechanism over %d candidates' mean scores on %d held-out units", K, m), 1/float64(m), b)
	if err != nil {
		return nil, err
	}
	best := 0
	if err := rel.Sample(func(beta float64) error {
		best = gumbelMax(run.Rand, beta, scores)
		return nil
	}); err != nil {
		return nil, err
	}
	c := sel.cands[best]
	fr := *run
	fr.Params, fr.opts, fr.Acct, fr.Plan = c.params, c.opts, run.Acct.Prefixed("final/"), plan.Prefixed("final/")
	res, _, err := se.SelectFit(ctx, &fr)
	if err != nil {
		return nil, fmt.Errorf("selection, final fit with %s: %w", c.label(), err)
	}
	sel.report(res, best, nFit, m, 2*rel.Beta()/float64(m), plan)
	return res, nil
}

// gumbelMax draws index j with probability ∝ exp(β·u_j) (Gumbel-max).
func gumbelMax(src *privacy.Source, beta float64, u []float64) int {
	best, bestVal := 0, math.Inf(-1)
	for j, f := range u {
		v := src.Float64()
		for v == 0 {
			v = src.Float64()
		}
		if g := beta*f - math.Log(-math.Log(v)); g > bestVal {
			best, bestVal = j, g
		}
	}
	return best
}

// report states the selection in the result: the chosen candidate (scalar
// selected_candidate, and selected_PARAM for a numeric value), every
// candidate (series candidates_PARAM for a numeric parameter, and a note).
func (sel *Selection) report(res *Result, best, nFit, m int, eps float64, plan *privacy.Plan) {
	res.AddScalar("selected_candidate", float64(best+1), Public, "1-based index of the candidate chosen by the private selection (the order of the select grid, last parameter fastest)")
	chosen := sel.cands[best]
	for i, v := range chosen.values {
		x, err := strconv.ParseFloat(v[1], 64)
		if err != nil {
			continue
		}
		res.AddScalar("selected_"+v[0], x, Public, "value of "+v[0]+" chosen by the private selection")
		all := make([]float64, len(sel.cands))
		numeric := true
		for j, c := range sel.cands {
			if all[j], err = strconv.ParseFloat(c.values[i][1], 64); err != nil {
				numeric = false
			}
		}
		if numeric {
			res.AddSeries("candidates_"+v[0], all, Public, "value of "+v[0]+" of each candidate of the private selection, in order")
		}
	}
	if rho := plan.Total().Rho * sel.Share; rho > 0 {
		res.AddScalar("rho_selection", rho, Public, "cost of the selection in zCDP units (ρ): the candidates' fits and the exponential mechanism")
	}
	var labels []string
	for _, c := range sel.cands {
		labels = append(labels, "("+c.label()+")")
	}
	res.Notes = append(res.Notes, fmt.Sprintf("private selection over %d candidates %s: each fitted on %d units with an even slice of %.3g of the budget, scored on the other %d units (a data-independent random draw), one drawn by the exponential mechanism (ε = %.4g, sensitivity 1/%d); chosen %s, refitted on every unit with the rest of the budget",
		len(sel.cands), strings.Join(labels, " "), nFit, sel.Share*(1-selectFraction), m, eps, m, chosen.label()))
}
