package study

import (
	"fmt"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	fedrep "github.com/dplr/dplr/bench/studies/fedrep"
)

// plotStudy writes median population MSE against ε (log scale) for every
// method; non-private methods are drawn as horizontal lines.
func plotStudy(cells []fedrep.StudyCell, cfg fedrep.StudyConfig, path string) error {
	eps := cfg.Eps
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Population MSE vs ε (medians over %d seeds), n = %d, d = %d, k = %d", cfg.Seeds, cfg.Users, cfg.Dim, cfg.Rank)
	p.X.Label.Text = fmt.Sprintf("ε (δ = %g)", cfg.Delta)
	p.Y.Label.Text = "population MSE"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{}
	byMethod := map[string]plotter.XYs{}
	var names []string
	for _, c := range cells {
		if _, ok := byMethod[c.Method]; !ok {
			names = append(names, c.Method)
		}
		if c.Epsilon == 0 {
			sorted := append([]float64(nil), eps...)
			sort.Float64s(sorted)
			byMethod[c.Method] = plotter.XYs{{X: sorted[0], Y: c.MSE}, {X: sorted[len(sorted)-1], Y: c.MSE}}
			continue
		}
		byMethod[c.Method] = append(byMethod[c.Method], plotter.XY{X: c.Epsilon, Y: c.MSE})
	}
	var args []any
	for _, n := range names {
		args = append(args, n, byMethod[n])
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	p.Legend.Top = true
	return p.Save(9*vg.Inch, 6*vg.Inch, path)
}
