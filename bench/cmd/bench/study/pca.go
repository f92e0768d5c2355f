// "bench study pca" runs the PCA plugin's accuracy studies and prints
// markdown tables (medians with quartiles over seeds):
//
//	bench study pca -config small              # p=50, r=2, λ=(12,10), n=5e4
//	bench study pca -config unit               # p=30, r=2, λ=(24,20), n=1e4
//	bench study pca -config pwin -seeds 3      # p=400, n=2e5 on raw rows
//	bench study pca -config pwin-big -seeds 5  # p=1000, n=1e6 on Wishart-sampled Σ̂
//	bench study pca -config fmnist -seeds 10   # Fashion-MNIST, r=10, captured variance
//	bench study pca -heavytail DIR             # rewrite a `dplr gen spiked` DIR with heavy-tailed row norms
//
// Build with -tags openblas for the OpenBLAS backend.

package study

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strings"

	pcastudy "github.com/dplr/dplr/bench/studies/pca"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/plugins/pca"
)

// PCA runs "bench study pca" with the arguments that follow it.
func PCA(args []string) {
	fs := flag.NewFlagSet("bench study pca", flag.ExitOnError)
	config := fs.String("config", "small", "small | unit | pwin | pwin-big | fmnist")
	seeds := fs.Int("seeds", 10, "independent repetitions")
	epsList := fs.String("eps", "0.25,0.5,1,2,4,8", "comma-separated total ε values")
	delta := fs.Float64("delta", 1e-5, "δ of the (ε, δ) grants")
	methods := fs.String("methods", "", "comma-separated subset of method labels (default: all)")
	fm := fs.String("fmnist", "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", "Fashion-MNIST training images")
	heavy := fs.String("heavytail", "", "`DIR` of `dplr gen spiked` data to rewrite with heavy-tailed row norms (0.5 % of rows 100× to 10000× longer, a mean of norm 10), then exit")
	_ = fs.Parse(args)
	if *heavy != "" {
		if err := heavyTail(*heavy, 0.005, 10, 1); err != nil {
			fail("pca", err)
		}
		return
	}
	if err := runPCA(*config, *seeds, *epsList, *delta, *methods, *fm); err != nil {
		fail("pca", err)
	}
}

func runPCA(config string, seeds int, epsList string, delta float64, methods, fm string) error {
	eps, err := parseList(epsList, "ε", parseFloat, func(v float64) bool { return v > 0 && !math.IsInf(v, 0) })
	if err != nil {
		return err
	}
	keep := func(ms []pcastudy.StudyMethod) []pcastudy.StudyMethod {
		if methods == "" {
			return ms
		}
		var out []pcastudy.StudyMethod
		for _, m := range ms {
			for _, want := range strings.Split(methods, ",") {
				if m.Label == want {
					out = append(out, m)
				}
			}
		}
		return out
	}
	ctx := context.Background()
	switch config {
	case "small", "unit", "pwin":
		cfg := pcastudy.SpikedStudyConfig{N: 50000, P: 50, Lambda: []float64{12, 10}, Sigma2: 1, Eps: eps, Delta: delta, Seeds: seeds, Covariance: true}
		if config == "unit" {
			cfg.N, cfg.P, cfg.Lambda = 10000, 30, []float64{24, 20}
		}
		if config == "pwin" {
			// Scaled-down "paper wins" regime (p·σ²/(λ+σ²) ≫ r + log n).
			cfg.N, cfg.P, cfg.Lambda = 200000, 400, []float64{2.8, 2.4, 2.0}
		}
		m := pca.SpikedModel{N: cfg.N, P: cfg.P, LambdaLow: cfg.Lambda, LambdaHigh: cfg.Lambda, Sigma2: 1}
		cfg.Methods = keep(pcastudy.DefaultSpikedMethods(m, delta))
		rows, err := pcastudy.SpikedStudy(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Printf("config %s: n=%d p=%d λ=%v σ²=1 δ=%g, %d seeds (fresh data and noise per seed)\n\n", config, cfg.N, cfg.P, cfg.Lambda, delta, seeds)
		fmt.Print(pcastudy.Markdown(rows, false))
	case "pwin-big":
		// The "paper wins" point on Bartlett-sampled Σ̂ (no rows).
		cfg := pcastudy.CovStudyConfig{N: 1000000, P: 1000, Lambda: []float64{1.12, 0.96, 0.8}, Sigma2: 1, Eps: eps, Delta: delta, Seeds: seeds}
		rows, err := pcastudy.CovStudy(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Printf("config pwin-big: Wishart-sampled Σ̂, n=%d p=%d λ=%v σ²=1 δ=%g, %d seeds; both methods spend the full (ε, δ) on the subspace\n\n", cfg.N, cfg.P, cfg.Lambda, delta, seeds)
		fmt.Print(pcastudy.Markdown(rows, false))
	case "fmnist":
		d, err := dataio.Load(fm, dataio.LoadOptions{Scale: 1.0 / 255})
		if err != nil {
			return err
		}
		ms := keep([]pcastudy.StudyMethod{
			{Label: "analyze-gauss-clip28", Est: pca.AnalyzeGauss{}, Params: map[string]string{"clip": "28"}},
			{Label: "analyze-gauss-clip10", Est: pca.AnalyzeGauss{}, Params: map[string]string{"clip": "10"}},
			{Label: "amin-clip28", Est: pca.Amin{}, Params: map[string]string{"clip": "28"}, Pure: true},
			{Label: "amin-clip10", Est: pca.Amin{}, Params: map[string]string{"clip": "10"}, Pure: true},
		})
		rows, err := pcastudy.RealStudy(ctx, pcastudy.RealStudyConfig{Data: d, Rank: 10, Eps: eps, Delta: delta, Seeds: seeds, Methods: ms})
		if err != nil {
			return err
		}
		fmt.Printf("Fashion-MNIST train (60000×784, pixels/255), r=10, uncentred second moment, δ=%g, %d seeds\n\n", delta, seeds)
		fmt.Print(pcastudy.Markdown(rows, true))
	default:
		return fmt.Errorf("unknown config %q", config)
	}
	return nil
}
