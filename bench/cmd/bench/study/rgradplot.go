package study

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	rgradstudy "github.com/dplr/dplr/bench/studies/rgrad"
)

// writePlots draws median relative error against ε (at the largest n with
// every finite ε) and against n (at each variant's ε = epsN), beside the
// rate curve, on log-log axes, to prefix-eps.png and prefix-n.png.
func writePlots(prefix string, c rgradstudy.StudyConfig, cells []rgradstudy.StudyCell, ns []int, eps []float64, nFix int, epsN float64) error {
	byKey := map[string]rgradstudy.StudyCell{}
	var labels []string
	seen := map[string]bool{}
	for _, cl := range cells {
		byKey[fmt.Sprintf("%s|%d|%g", cl.Variant, cl.N, cl.Epsilon)] = cl
		if !seen[cl.Variant] {
			seen[cl.Variant] = true
			labels = append(labels, cl.Variant)
		}
	}
	var finite []float64
	for _, e := range eps {
		if !math.IsInf(e, 1) {
			finite = append(finite, e)
		}
	}
	draw := func(file, title, xlabel string, xs []float64, get func(label string, x float64) float64, rate func(x float64) float64) error {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = xlabel
		p.Y.Label.Text = "median ‖M̂−M‖_F / ‖M‖_F"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		var args []any
		for _, l := range labels {
			pts := make(plotter.XYs, 0, len(xs))
			for _, x := range xs {
				if y := get(l, x); y > 0 {
					pts = append(pts, plotter.XY{X: x, Y: y})
				}
			}
			args = append(args, l, pts)
		}
		rp := make(plotter.XYs, len(xs))
		for i, x := range xs {
			rp[i] = plotter.XY{X: x, Y: rate(x)}
		}
		args = append(args, "rate curve (no constants)", rp)
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return err
		}
		p.Legend.Top = true
		return p.Save(8*vg.Inch, 6*vg.Inch, file)
	}
	if len(finite) > 1 {
		err := draw(prefix+"-eps.png", fmt.Sprintf("error vs ε at n = %d (d1=%d, d2=%d, r=%d, σ_ξ=%g)", nFix, c.D1, c.D2, c.Rank, c.SigmaXi), "total ε",
			finite, func(l string, x float64) float64 { return byKey[fmt.Sprintf("%s|%d|%g", l, nFix, x)].Median() },
			func(x float64) float64 { return rgradstudy.RateCurve(c, nFix, x) })
		if err != nil {
			return fmt.Errorf("plot vs ε: %w", err)
		}
	}
	if len(ns) > 1 {
		xs := make([]float64, len(ns))
		for i, n := range ns {
			xs[i] = float64(n)
		}
		err := draw(prefix+"-n.png", fmt.Sprintf("error vs n at ε = %g (d1=%d, d2=%d, r=%d, σ_ξ=%g)", epsN, c.D1, c.D2, c.Rank, c.SigmaXi), "n",
			xs, func(l string, x float64) float64 { return byKey[fmt.Sprintf("%s|%d|%g", l, int(x), epsN)].Median() },
			func(x float64) float64 { return rgradstudy.RateCurve(c, int(x), epsN) })
		if err != nil {
			return fmt.Errorf("plot vs n: %w", err)
		}
	}
	return nil
}
