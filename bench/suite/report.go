package suite

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dplr/dplr/engine/evaluate"
)

// Summary is the spread of one metric in one (variant, x) cell group.
type Summary struct {
	Median, Min, Max float64
	N, Failed        int
}

func summarize(v []float64) Summary {
	return Summary{Median: evaluate.Median(v), Min: evaluate.Quantile(0, v), Max: evaluate.Quantile(1, v), N: len(v)}
}

// table is a scenario's aggregated results.
type table struct {
	xs       []string
	variants []string
	cells    map[string]map[string]Summary // metric → variant|x → summary
}

func value(r Record, metric string) (float64, bool) {
	switch metric {
	case "wall_s":
		return r.WallS, true
	case "cpu_s":
		return r.CPUS, true
	case "max_rss_mib":
		return r.MaxRSSKiB / 1024, r.MaxRSSKiB > 0
	}
	v, ok := r.Metrics[metric]
	return v, ok
}

func aggregate(s *Scenario, recs []Record, metrics []string) *table {
	t := &table{cells: map[string]map[string]Summary{}}
	seenX := map[string]bool{}
	for _, v := range s.Variants {
		t.variants = append(t.variants, v.Name)
	}
	vals := map[string]map[string][]float64{}
	failed := map[string]int{}
	// A cell re-run after a failure (or with --force) keeps its last record.
	last := map[string]int{}
	for i, r := range recs {
		last[r.Variant+"|"+r.X+"|"+strconv.Itoa(r.Rep)] = i
	}
	// Records of variants or x values the scenario no longer declares (it
	// was edited after they ran) are left out, so stale cells cannot
	// appear in the report.
	current := map[string]bool{}
	for _, c := range s.Cells(1) {
		current[c.Variant.Name+"|"+c.X] = true
	}
	for i, r := range recs {
		if last[r.Variant+"|"+r.X+"|"+strconv.Itoa(r.Rep)] != i || !current[r.Variant+"|"+r.X] {
			continue
		}
		if !seenX[r.X] {
			seenX[r.X] = true
			t.xs = append(t.xs, r.X)
		}
		key := r.Variant + "|" + r.X
		if r.Error != "" {
			failed[key]++
			continue
		}
		for _, m := range metrics {
			if v, ok := value(r, m); ok && !math.IsNaN(v) {
				if vals[m] == nil {
					vals[m] = map[string][]float64{}
				}
				vals[m][key] = append(vals[m][key], v)
			}
		}
	}
	sort.Slice(t.xs, func(i, j int) bool { return num(t.xs[i]) < num(t.xs[j]) })
	for _, m := range metrics {
		t.cells[m] = map[string]Summary{}
		for k, v := range vals[m] {
			sm := summarize(v)
			sm.Failed = failed[k]
			t.cells[m][k] = sm
		}
		// A non-private reference does not depend on ε: it runs once per
		// repetition and is shown at every ε.
		if s.Sweep == nil {
			for _, v := range s.Variants {
				if !v.NonPrivate {
					continue
				}
				for _, x := range t.xs {
					if sm, ok := t.cells[m][v.Name+"|"+x]; ok {
						for _, y := range t.xs {
							t.cells[m][v.Name+"|"+y] = sm
						}
						break
					}
				}
			}
		}
	}
	return t
}

func num(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// slope is the least-squares slope of log(median) against log(x), given
// at least three positive points.
func slope(t *table, metric, variant string) (float64, bool) {
	var xs, ys []float64
	for _, x := range t.xs {
		if sm, ok := t.cells[metric][variant+"|"+x]; ok && sm.Median > 0 && num(x) > 0 {
			xs, ys = append(xs, num(x)), append(ys, sm.Median)
		}
	}
	if len(xs) < 3 {
		return 0, false
	}
	k := evaluate.LogSlope(xs, ys)
	return k, !math.IsNaN(k) && !math.IsInf(k, 0)
}

// ReportScenario writes the scenario's markdown section (returned) and its
// plots (PNG and SVG) into plotDir; plotRel is plotDir relative to the
// markdown file.
func ReportScenario(s *Scenario, recs []Record, plotDir, plotRel string) (string, error) {
	metrics := append([]string{s.Report.Metric}, s.Report.Extra...)
	if s.Report.Metric != "wall_s" {
		metrics = append(metrics, "wall_s")
	}
	metrics = append(metrics, "max_rss_mib")
	t := aggregate(s, recs, metrics)
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", s.Title)
	if s.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(s.Description))
	}
	fmt.Fprintf(&b, "Scenario `%s` (%s), %s; reproduce with `bin/bench run %s` then `bin/bench report`.\n\n", s.Name, s.Kind, dataLine(s), s.file)
	if len(recs) == 0 {
		b.WriteString("_No results recorded yet._\n\n")
		return b.String(), nil
	}
	label := s.Report.Label
	label = cmp.Or(label, s.Report.Metric)
	writeTable(&b, s, t, s.Report.Metric, label, s.Kind == "timing")
	for _, m := range s.Report.Extra {
		writeTable(&b, s, t, m, m, false)
	}
	if s.Report.Metric != "wall_s" {
		writeTable(&b, s, t, "wall_s", "wall time per fit through the host (s)", true)
	}
	writeFormulas(&b, s, t)
	if s.Kind == "accuracy" {
		var sl []string
		for _, v := range t.variants {
			if k, ok := slope(t, s.Report.Metric, v); ok {
				sl = append(sl, fmt.Sprintf("%s %.2f", v, k))
			}
		}
		if len(sl) > 0 {
			fmt.Fprintf(&b, "Log-log slope of the median %s against %s: %s.\n\n", label, s.xName(), strings.Join(sl, "; "))
		}
	}
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(plotDir, s.Name)
	drawn, err := drawPlot(s, t, base, label)
	if err != nil {
		return "", fmt.Errorf("plot %s: %w", s.Name, err)
	}
	if drawn {
		fmt.Fprintf(&b, "![%s](%s/%s.png) ([SVG](%s/%s.svg))\n\n", s.Title, plotRel, s.Name, plotRel, s.Name)
	} else {
		fmt.Fprintf(&b, "No plot: no recorded cell has a plottable %s.\n\n", s.Report.Metric)
	}
	return b.String(), nil
}

func dataLine(s *Scenario) string {
	if s.Data.Path != "" {
		return "data " + s.Data.Path
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(s.Data.Params)) {
		kv = append(kv, k+"="+s.Data.Params[k])
	}
	return fmt.Sprintf("data `dplr gen %s` (%s)", s.Data.Model, strings.Join(kv, ", "))
}

func writeTable(b *strings.Builder, s *Scenario, t *table, metric, label string, ratios bool) {
	if len(t.xs) == 1 {
		writeColumn(b, s, t, metric, label, ratios)
		return
	}
	fmt.Fprintf(b, "%s — median (min–max) over repetitions:\n\n| %s |", label, s.xName())
	for _, v := range t.variants {
		fmt.Fprintf(b, " %s |", v)
	}
	if ratios && len(t.variants) > 1 {
		for _, v := range t.variants[1:] {
			fmt.Fprintf(b, " %s / %s |", v, t.variants[0])
		}
	}
	b.WriteString("\n|---|")
	n := len(t.variants)
	if ratios && n > 1 {
		n += n - 1
	}
	b.WriteString(strings.Repeat("---|", n) + "\n")
	for _, x := range t.xs {
		fmt.Fprintf(b, "| %s |", x)
		for _, v := range t.variants {
			fmt.Fprintf(b, " %s |", t.cellText(metric, v, x))
		}
		if ratios && len(t.variants) > 1 {
			for _, v := range t.variants[1:] {
				fmt.Fprintf(b, " %s |", t.ratioText(metric, v, x))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeColumn writes a one-x table with a row per variant (a headline
// table: many variants at one ε or size would not fit side by side).
func writeColumn(b *strings.Builder, s *Scenario, t *table, metric, label string, ratios bool) {
	x := t.xs[0]
	fmt.Fprintf(b, "%s at %s = %s — median (min–max) over repetitions:\n\n| variant | median (min–max) |", label, s.xName(), x)
	ratios = ratios && len(t.variants) > 1
	if ratios {
		fmt.Fprintf(b, " ratio to %s |", t.variants[0])
	}
	b.WriteString("\n|---|---|")
	if ratios {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, v := range t.variants {
		fmt.Fprintf(b, "| %s | %s |", v, t.cellText(metric, v, x))
		if ratios {
			fmt.Fprintf(b, " %s |", t.ratioText(metric, v, x))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// cellText is a cell's "median (min–max) [n failed]", or — when empty.
func (t *table) cellText(metric, v, x string) string {
	sm, ok := t.cells[metric][v+"|"+x]
	if !ok {
		return "—"
	}
	s := fmt.Sprintf("%s (%s–%s)", g4(sm.Median), g4(sm.Min), g4(sm.Max))
	if sm.Failed > 0 {
		s += fmt.Sprintf(" [%d failed]", sm.Failed)
	}
	return s
}

// ratioText is a cell's median over the first variant's at the same x.
func (t *table) ratioText(metric, v, x string) string {
	base, ok := t.cells[metric][t.variants[0]+"|"+x]
	sm, ok2 := t.cells[metric][v+"|"+x]
	if !ok || !ok2 || !(base.Median > 0) {
		return "—"
	}
	return fmt.Sprintf("%.3f", sm.Median/base.Median)
}

func g4(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// drawPlot draws the scenario's medians (with min–max bars), theory
// curve and formulas to base.png and base.svg. It draws nothing and
// returns false when no variant has a plottable point (on a log scale
// an empty plot has no valid axis range).
func drawPlot(s *Scenario, t *table, base, label string) (bool, error) {
	p := plot.New()
	p.Title.Text = s.Title
	p.X.Label.Text = s.xName()
	p.Y.Label.Text = label
	if s.Report.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if s.Report.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	positive := func(v float64) bool { return v > 0 || !s.Report.LogY }
	drawn := 0
	for i, v := range t.variants {
		var pts plotter.XYs
		var errs plotter.YErrors
		for _, x := range t.xs {
			sm, ok := t.cells[s.Report.Metric][v+"|"+x]
			if !ok || !positive(sm.Median) || math.IsNaN(num(x)) {
				continue
			}
			pts = append(pts, plotter.XY{X: num(x), Y: sm.Median})
			lo, hi := sm.Median-sm.Min, sm.Max-sm.Median
			if s.Report.LogY && sm.Min <= 0 {
				lo = 0
			}
			errs = append(errs, struct{ Low, High float64 }{lo, hi})
		}
		if len(pts) == 0 {
			continue
		}
		drawn++
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return false, err
		}
		c := plotutil.Color(i)
		line.Color, points.Color = c, c
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		if eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs}); err == nil {
			eb.Color = c
			p.Add(eb)
		}
		p.Legend.Add(v, line, points)
	}
	if th, ok := theories[s.Report.Theory]; ok {
		if pts := theoryCurve(s, t, th); len(pts) > 0 {
			l, err := plotter.NewLine(pts)
			if err == nil {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				l.Color = color.Gray{Y: 90}
				p.Add(l)
				fit := " (constant fitted)"
				if _, ok := rateTerms[s.Report.Theory]; ok {
					fit = " (a constant per term, fitted)"
				}
				p.Legend.Add("theory: "+s.Report.Theory+fit, l)
			}
		}
	}
	for i, name := range s.Report.Formulas {
		if pts := formulaCurve(s, t, formulas[name].f); len(pts) > 0 {
			l, err := plotter.NewLine(pts)
			if err == nil {
				l.Dashes = []vg.Length{vg.Points(1), vg.Points(2 + float64(i))}
				l.Color = color.Gray{Y: uint8(40 + 40*(i%3))}
				l.Width = vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(formulas[name].label, l)
			}
		}
	}
	if drawn == 0 {
		return false, nil
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, base+ext); err != nil {
			return false, err
		}
	}
	return true, nil
}

// theoryCurve evaluates th over the x range with its constant fitted (in
// log space) to the first variant's medians.
func theoryCurve(s *Scenario, t *table, th theory) plotter.XYs {
	params, eps := s.theoryArgs()
	if tf, ok := rateTerms[s.Report.Theory]; ok {
		return termsCurve(s, t, tf)
	}
	var logc float64
	n := 0
	for _, x := range t.xs {
		sm, ok := t.cells[s.Report.Metric][t.variants[0]+"|"+x]
		f := th(num(x), s.xName(), params, eps)
		if ok && sm.Median > 0 && f > 0 {
			logc += math.Log(sm.Median / f)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	c := math.Exp(logc / float64(n))
	var pts plotter.XYs
	for _, x := range t.xs {
		if v := c * th(num(x), s.xName(), params, eps); v > 0 {
			pts = append(pts, plotter.XY{X: num(x), Y: v})
		}
	}
	return pts
}

// termsCurve evaluates a rate whose terms get one fitted constant each
// (fitTerms) against the first variant's medians.
func termsCurve(s *Scenario, t *table, tf terms) plotter.XYs {
	params, eps := s.theoryArgs()
	var f [][]float64
	var m []float64
	for _, x := range t.xs {
		sm, ok := t.cells[s.Report.Metric][t.variants[0]+"|"+x]
		if ok && sm.Median > 0 && !math.IsNaN(num(x)) {
			f = append(f, tf(num(x), s.xName(), params, eps))
			m = append(m, sm.Median)
		}
	}
	if len(m) == 0 {
		return nil
	}
	c := fitTerms(f, m)
	if c == nil {
		return nil
	}
	var pts plotter.XYs
	for _, x := range t.xs {
		v := 0.0
		for j, fj := range tf(num(x), s.xName(), params, eps) {
			v += c[j] * fj
		}
		if v > 0 {
			pts = append(pts, plotter.XY{X: num(x), Y: v})
		}
	}
	return pts
}

// theoryArgs returns what rate curves are evaluated with: the data
// parameters plus "delta", and the sweep's ε (0 on an ε axis).
func (s *Scenario) theoryArgs() (map[string]string, float64) {
	params := map[string]string{"delta": strconv.FormatFloat(s.Delta, 'g', -1, 64)}
	maps.Copy(params, s.Data.Params)
	eps := 0.0
	if s.Sweep != nil {
		eps = s.Sweep.Epsilon
	}
	return params, eps
}

// formulaCurve evaluates a formula curve (own constants, no fit) at the
// table's x values.
func formulaCurve(s *Scenario, t *table, f theory) plotter.XYs {
	params, eps := s.theoryArgs()
	var pts plotter.XYs
	for _, x := range t.xs {
		if v := f(num(x), s.xName(), params, eps); v > 0 && !math.IsNaN(num(x)) {
			pts = append(pts, plotter.XY{X: num(x), Y: v})
		}
	}
	return pts
}

// writeFormulas tabulates the scenario's formula curves at each x.
func writeFormulas(b *strings.Builder, s *Scenario, t *table) {
	if len(s.Report.Formulas) == 0 {
		return
	}
	fmt.Fprintf(b, "Formula curves (own constants, not fitted):\n\n| %s |", s.xName())
	for _, name := range s.Report.Formulas {
		fmt.Fprintf(b, " %s |", formulas[name].label)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(s.Report.Formulas)) + "\n")
	params, eps := s.theoryArgs()
	for _, x := range t.xs {
		fmt.Fprintf(b, "| %s |", x)
		for _, name := range s.Report.Formulas {
			fmt.Fprintf(b, " %s |", g4(formulas[name].f(num(x), s.xName(), params, eps)))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// Machine describes the machine and build for the report header.
func Machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %f kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB RAM", kb/1024/1024)
	}
	commit := "unknown commit"
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%s, %d CPUs%s, %s, %s/%s, commit %s, report generated %s",
		cpu, runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH, commit, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}
