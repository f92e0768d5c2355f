package transport

import (
	"fmt"
	"io"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// drawTransport draws two panels side by side, median wall time and median
// peak memory per estimator, in-process beside plugin (bars with min–max
// error bars), and saves them as prefix.png and prefix.svg.
func drawTransport(all []measured, prefix string) error {
	if len(all) == 0 {
		return fmt.Errorf("no measurements to draw")
	}
	names := make([]string, len(all))
	for i, m := range all {
		names[i] = m.Estimator
	}
	type panel struct {
		title, label string
		get          func(sample) float64
	}
	panels := []panel{
		{"wall time per fit (median, min–max)", "seconds", func(s sample) float64 { return s.Wall }},
		{"peak resident memory (median, min–max)", "MiB", func(s sample) float64 { return s.RSSKiB / 1024 }},
	}
	plots := make([]*plot.Plot, len(panels))
	for pi, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.Y.Label.Text = pn.label
		p.Y.Min = 0
		p.Legend.Top = true
		p.Legend.YOffs = -vg.Points(14) // below the title
		top := 0.0
		for path, label := range []string{"in-process (SDK)", "through the host (plugin)"} {
			pts := make(plotter.XYs, len(all))
			errs := make(plotter.YErrors, len(all))
			for i, m := range all {
				runs := m.InProcess
				if path == 1 {
					runs = m.Plugin
				}
				st := stats(runs, pn.get)
				pts[i] = plotter.XY{X: float64(i) + 0.3*(float64(path)-0.5), Y: st[1]}
				errs[i].Low, errs[i].High = st[1]-st[0], st[2]-st[1]
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.Color = plotutil.Color(path)
			sc.Shape = plotutil.Shape(path)
			sc.Radius = vg.Points(4)
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{pts, errs})
			if err != nil {
				return err
			}
			eb.Color = sc.Color
			p.Add(sc, eb)
			p.Legend.Add(label, sc)
			for i := range pts {
				top = max(top, pts[i].Y+errs[i].High)
			}
		}
		p.Y.Max = 1.35 * top // head room for the legend above the data
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.6, float64(len(all))-0.4
		plots[pi] = p
	}
	width, height := 9*vg.Inch, 4*vg.Inch
	for _, ext := range []string{".png", ".svg"} {
		var c draw.Canvas
		var save func(string) error
		switch ext {
		case ".png":
			img := vgimg.New(width, height)
			c = draw.New(img)
			save = func(f string) error { return saveTo(f, vgimg.PngCanvas{Canvas: img}) }
		default:
			img := vgsvg.New(width, height)
			c = draw.New(img)
			save = func(f string) error { return saveTo(f, img) }
		}
		tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4}
		for i, p := range plots {
			p.Draw(tiles.At(c, i, 0))
		}
		if err := save(prefix + ext); err != nil {
			return err
		}
	}
	return nil
}

// saveTo writes an encoded canvas to a file.
func saveTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
