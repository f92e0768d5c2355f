package suite

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		name        string
		in          []float64
		med, lo, hi float64
	}{
		{"odd", []float64{3, 1, 2}, 2, 1, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, 4},
		{"one", []float64{7}, 7, 7, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := summarize(c.in)
			assert.Equal(t, c.med, s.Median)
			assert.Equal(t, c.lo, s.Min)
			assert.Equal(t, c.hi, s.Max)
			assert.Equal(t, len(c.in), s.N)
		})
	}
	assert.True(t, math.IsNaN(summarize(nil).Median))
}

// powerLaw records metric = c·x^k (times a per-repetition wobble) for
// variant A at each ε, and a constant non-private reference.
func powerLaw(s *Scenario, c, k float64, reps int) []Record {
	var recs []Record
	for rep := 0; rep < reps; rep++ {
		w := 1 + 0.1*float64(rep-reps/2)
		for _, e := range s.Epsilons {
			x := g4(e)
			recs = append(recs, Record{Variant: "A", X: x, Rep: rep, WallS: float64(rep + 1),
				Metrics: map[string]float64{"m": w * c * math.Pow(e, k)}})
		}
		recs = append(recs, Record{Variant: "ref", X: g4(s.Epsilons[0]), Rep: rep, Metrics: map[string]float64{"m": 0.01}})
	}
	return recs
}

func TestAggregateMediansAndSlopes(t *testing.T) {
	scs, err := Load(writeScenario(t, strings.Replace(strings.Replace(base, `epsilons = [1, 2]`, `epsilons = [0.5, 1, 2, 4, 8]`, 1), `metric = "U.sin_theta_spectral"`, `metric = "m"`, 1)))
	require.NoError(t, err)
	s := scs[0]
	recs := powerLaw(s, 0.3, -1, 5)
	// A failed repetition counts as failed and does not enter the median.
	recs = append(recs, Record{Variant: "A", X: "1", Rep: 9, Error: "boom"})
	tab := aggregate(s, recs, []string{"m", "wall_s"})

	assert.Equal(t, []string{"0.5", "1", "2", "4", "8"}, tab.xs, "x values sorted numerically")
	sm := tab.cells["m"]["A|2"]
	assert.InDelta(t, 0.15, sm.Median, 1e-12, "the median repetition has wobble 1")
	assert.InDelta(t, 0.15*0.8, sm.Min, 1e-12)
	assert.InDelta(t, 0.15*1.2, sm.Max, 1e-12)
	assert.Equal(t, 5, sm.N)
	assert.Equal(t, 1, tab.cells["m"]["A|1"].Failed)
	assert.Equal(t, 3.0, tab.cells["wall_s"]["A|4"].Median)

	k, ok := slope(tab, "m", "A")
	require.True(t, ok)
	assert.InDelta(t, -1, k, 1e-9, "log-log slope of an exact power law")

	// The non-private reference ran once per repetition and is shown at every ε.
	for _, x := range tab.xs {
		assert.Equal(t, 0.01, tab.cells["m"]["ref|"+x].Median)
	}
	k, ok = slope(tab, "m", "ref")
	require.True(t, ok)
	assert.InDelta(t, 0, k, 1e-12)

	// Too few points: no slope.
	_, ok = slope(&table{xs: []string{"1", "2"}, cells: tab.cells}, "m", "A")
	assert.False(t, ok)
}

func TestReportScenarioWritesTablesAndPlots(t *testing.T) {
	body := strings.Replace(strings.Replace(base, `epsilons = [1, 2]`, `epsilons = [0.5, 1, 2, 4]`, 1),
		`metric = "U.sin_theta_spectral"`, "metric = \"m\"\nlogx = true\nlogy = true\ntheory = \"inv-eps\"\nformulas = [\"orbit-em-mean\"]", 1)
	body = strings.Replace(body, `params = { n = "100" }`, `params = { n = "2000", d = "20", rank = "3" }`, 1)
	scs, err := Load(writeScenario(t, body))
	require.NoError(t, err)
	s := scs[0]
	dir := t.TempDir()
	md, err := ReportScenario(s, powerLaw(s, 50, -1, 3), dir, "plots")
	require.NoError(t, err)
	for _, want := range []string{"| epsilon | A | ref |", "Log-log slope", "A -1.00", "orbit EM prediction", "| 0.5 | 102 |", "plots/t.png"} {
		assert.Contains(t, md, want)
	}
	for _, ext := range []string{".png", ".svg"} {
		st, err := os.Stat(filepath.Join(dir, "t"+ext))
		require.NoError(t, err)
		assert.Positive(t, st.Size())
	}
	// No records: a placeholder, no plot.
	md, err = ReportScenario(s, nil, t.TempDir(), "plots")
	require.NoError(t, err)
	assert.Contains(t, md, "No results recorded yet")
}

func TestWriteResultsAssemblesAreas(t *testing.T) {
	scs, err := Load(writeScenario(t, base))
	require.NoError(t, err)
	root := t.TempDir()
	areas := filepath.Join(root, "areas")
	require.NoError(t, os.MkdirAll(areas, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(areas, "x.md"), []byte("# Area X\n\n```\n# not a heading\n```\n"), 0o644))
	out := filepath.Join(root, "RESULTS.md")
	require.NoError(t, WriteResults(out, scs, filepath.Join(root, "out"), areas))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	md := string(b)
	assert.Contains(t, md, "### Area X", "area headings are demoted two levels")
	assert.Contains(t, md, "\n# not a heading\n", "code blocks are left alone")
	assert.Contains(t, md, "Machine: ")
}

func TestTheoryCurves(t *testing.T) {
	p := map[string]string{"n": "50000", "p": "50", "rank": "2", "lambda": "12,10", "sigma2": "1", "delta": "1e-5"}
	// Privacy-dominated regime: the PCA rate falls like 1/ε
	// (small ε).
	r1, r2 := pcaRate(1e-4, "epsilon", p, 0), pcaRate(2e-4, "epsilon", p, 0)
	assert.InDelta(t, -1, math.Log2(r2/r1), 0.02)
	// Large ε: the statistical floor √(p/n)·(σ²/λ + √(σ²/λ)).
	floor := (0.1 + math.Sqrt(0.1)) * math.Sqrt(50.0/50000)
	assert.InDelta(t, floor, pcaRate(1e9, "epsilon", p, 0), 1e-9)
	// n on the x axis at fixed ε uses x as n.
	assert.Equal(t, pcaRate(1, "epsilon", p, 0), pcaRate(50000, "n", p, 1))
	assert.Equal(t, 10.0, minList(p, "lambda", 0))

	// rgrad: the privacy term r(d1+d2)(σ_ξ+σ_r)/(nε) dominates at small ε.
	rg := theories["rgrad"]
	q := map[string]string{"n": "16000", "d1": "30", "d2": "20", "rank": "2", "sigma_xi": "0.5", "sigmar": "1"}
	want := 0.5*math.Sqrt(100.0/16000) + 1.5*100/(16000*0.5)
	assert.InDelta(t, want, rg(0.5, "epsilon", q, 0), 1e-12)
	assert.InDelta(t, want, rg(16000, "n", q, 0.5), 1e-12)
}

func TestOrbitFormulas(t *testing.T) {
	p := map[string]string{"n": "2000", "d": "20", "rank": "3"}
	// plugins/orbit/DERIVATIONS.md §8: τ*(0.05) ≈ 880 at d = 20, k = 3, n = 2000, ε = 1.
	ub := orbitUB(1, "epsilon", p, 0)
	assert.InDelta(t, 880, ub, 10)
	// τ* is where the tail bound equals β_f.
	lhs := -0.5*ub/2 + 60*math.Log1p(16*2000/ub)
	assert.InDelta(t, math.Log(0.05), lhs, 1e-6)
	// It decreases in ε and never falls below λ_1 = 1.
	assert.Less(t, orbitUB(2, "epsilon", p, 0), ub)
	assert.GreaterOrEqual(t, orbitUB(1e12, "epsilon", p, 0), 1.0)

	em := formulas["orbit-em-mean"].f
	assert.Equal(t, 51.0, em(1, "epsilon", p, 0), "k(d−k)/ε")
	assert.Equal(t, 291.0, em(100, "d", p, 1))
	defl := formulas["orbit-deflation-mean"].f
	assert.Equal(t, 162.0, defl(1, "epsilon", p, 0), "Σ(d−i)k/ε, the deflation prediction 162")
}

func TestOneXTableHasARowPerVariant(t *testing.T) {
	body := strings.Replace(strings.Replace(base, `epsilons = [1, 2]`, `epsilons = [1]`, 1), `kind = "accuracy"`, `kind = "timing"`, 1)
	scs, err := Load(writeScenario(t, body))
	require.NoError(t, err)
	s := scs[0]
	recs := []Record{
		{Variant: "A", X: "1", Rep: 0, WallS: 2}, {Variant: "ref", X: "1", Rep: 0, WallS: 1},
		{Variant: "A", X: "1", Rep: 1, WallS: 4}, {Variant: "ref", X: "1", Rep: 1, Error: "boom"},
	}
	md, err := ReportScenario(s, recs, t.TempDir(), "plots")
	require.NoError(t, err)
	assert.Contains(t, md, "| variant | median (min–max) | ratio to A |")
	assert.Contains(t, md, "| A | 3 (2–4) | 1.000 |")
	assert.Contains(t, md, "| ref | 1 (1–1) [1 failed] | 0.333 |")
}

func TestAggregateDropsStaleCells(t *testing.T) {
	scs, err := Load(writeScenario(t, strings.Replace(base, `metric = "U.sin_theta_spectral"`, `metric = "m"`, 1)))
	require.NoError(t, err)
	s := scs[0]
	m := func(v float64) map[string]float64 { return map[string]float64{"m": v} }
	recs := []Record{
		{Variant: "A", X: "1", Metrics: m(1)},
		{Variant: "A", X: "0.5", Metrics: m(9)},   // ε no longer in the grid
		{Variant: "gone", X: "1", Metrics: m(9)},  // variant removed
		{Variant: "ref", X: "0.5", Metrics: m(9)}, // reference recorded under an old first ε
		{Variant: "ref", X: "1", Metrics: m(0.1)},
	}
	tab := aggregate(s, recs, []string{"m"})
	assert.Equal(t, []string{"1"}, tab.xs)
	assert.Equal(t, 1.0, tab.cells["m"]["A|1"].Median)
	assert.Equal(t, 0.1, tab.cells["m"]["ref|1"].Median)
	_, ok := tab.cells["m"]["gone|1"]
	assert.False(t, ok)
}

func TestFitTerms(t *testing.T) {
	eps := []float64{0.5, 1, 2, 4, 8}
	var f [][]float64
	var m []float64
	for _, e := range eps {
		f = append(f, []float64{1, 1 / e})
		m = append(m, 0.02+0.3/e)
	}
	c := fitTerms(f, m)
	require.Len(t, c, 2)
	assert.InDelta(t, 0.02, c[0], 1e-12)
	assert.InDelta(t, 0.3, c[1], 1e-12)

	// Medians that rise with ε cannot use the 1/ε term with a positive
	// constant: the fit keeps the constants non-negative.
	for i, e := range eps {
		m[i] = 0.1 * e
	}
	c = fitTerms(f, m)
	require.Len(t, c, 2)
	assert.GreaterOrEqual(t, c[0], 0.0)
	assert.GreaterOrEqual(t, c[1], 0.0)
}

func TestTermsCurveFollowsTwoRegimes(t *testing.T) {
	body := strings.Replace(strings.Replace(base, `epsilons = [1, 2]`, `epsilons = [0.5, 1, 2, 4, 8]`, 1),
		`metric = "U.sin_theta_spectral"`, "metric = \"m\"\ntheory = \"rgrad\"", 1)
	scs, err := Load(writeScenario(t, body))
	require.NoError(t, err)
	s := scs[0]
	// Medians with the rgrad shape but other constants per term.
	var recs []Record
	for _, e := range s.Epsilons {
		tr := rgradTerms(e, "epsilon", map[string]string{}, 0)
		recs = append(recs, Record{Variant: "A", X: g4(e), Metrics: map[string]float64{"m": 0.5*tr[0] + 4*tr[1]}})
	}
	tab := aggregate(s, recs, []string{"m"})
	pts := theoryCurve(s, tab, theories["rgrad"])
	require.Len(t, pts, len(s.Epsilons))
	for i, pt := range pts {
		assert.InDelta(t, tab.cells["m"]["A|"+tab.xs[i]].Median, pt.Y, 1e-9)
	}
}

func TestRebaseLinks(t *testing.T) {
	cases := []struct{ in, want string }{
		{"![t](../plots/transport.png) ([SVG](../plots/transport.svg))", "![t](plots/transport.png) ([SVG](plots/transport.svg))"},
		{"see [fig](fedrep-paper.png)", "see [fig](results/fedrep-paper.png)"},
		{"[web](https://example.org/x) [abs](/usr/share/x) [anchor](#top)", "[web](https://example.org/x) [abs](/usr/share/x) [anchor](#top)"},
		{"no links (here)", "no links (here)"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, rebaseLinks(c.in, "bench/results", "bench"), c.in)
	}
}

func TestDrawPlotWithoutPointsDrawsNothing(t *testing.T) {
	s := &Scenario{Name: "empty", Title: "empty", Report: Report{Metric: "captured_variance_ratio", LogX: true, LogY: true}}
	tb := &table{xs: []string{"1", "2"}, variants: []string{"a"}, cells: map[string]map[string]Summary{}}
	base := filepath.Join(t.TempDir(), "empty")
	drawn, err := drawPlot(s, tb, base, "ratio")
	require.NoError(t, err)
	assert.False(t, drawn)
	assert.NoFileExists(t, base+".png")
}
