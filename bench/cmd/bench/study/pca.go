// "bench study pca" runs the PCA study on Wishart-sampled Σ̂ (no rows, so it
// cannot run through the host) and prints a markdown table (medians with
// quartiles over seeds):
//
//	bench study pca -seeds 5                   # p=1000, n=1e6 on Wishart-sampled Σ̂
//
// The row-based configurations are scenarios (bench run
// bench/scenarios/NAME.toml): pca-eps-small, pca-eps-unit,
// pca-eps-pwin-rows and pca-fmnist-clip. Build with -tags openblas for the
// OpenBLAS backend.

package study

import (
	"context"
	"flag"
	"fmt"
	"math"

	pcastudy "github.com/dplr/dplr/bench/studies/pca"
)

// scenarioOf names the scenario that replaced each row-based -config.
var scenarioOf = map[string]string{"small": "pca-eps-small", "unit": "pca-eps-unit", "pwin": "pca-eps-pwin-rows", "fmnist": "pca-fmnist-clip"}

// PCA runs "bench study pca" with the arguments that follow it.
func PCA(args []string) {
	fs := flag.NewFlagSet("bench study pca", flag.ExitOnError)
	config := fs.String("config", "pwin-big", "pwin-big (the other configurations are scenarios)")
	seeds := fs.Int("seeds", 10, "independent repetitions")
	epsList := fs.String("eps", "0.25,0.5,1,2,4,8", "comma-separated total ε values")
	delta := fs.Float64("delta", 1e-5, "δ of the (ε, δ) grants")
	_ = fs.Parse(args)
	if sc, ok := scenarioOf[*config]; ok {
		check("pca", fmt.Errorf("-config %s is the scenario %s: bin/bench run bench/scenarios/%s.toml", *config, sc, sc))
	}
	if *config != "pwin-big" {
		check("pca", fmt.Errorf("unknown config %q", *config))
	}
	eps := must(parseList(*epsList, "ε", parseFloat, func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }))
	// The "paper wins" point on Bartlett-sampled Σ̂ (no rows).
	cfg := pcastudy.CovStudyConfig{N: 1000000, P: 1000, Lambda: []float64{1.12, 0.96, 0.8}, Sigma2: 1, Eps: eps, Delta: *delta, Seeds: *seeds}
	rows, err := pcastudy.CovStudy(context.Background(), cfg)
	check("pca", err)
	fmt.Printf("config pwin-big: Wishart-sampled Σ̂, n=%d p=%d λ=%v σ²=1 δ=%g, %d seeds; both methods spend the full (ε, δ) on the subspace\n\n", cfg.N, cfg.P, cfg.Lambda, *delta, *seeds)
	fmt.Print(pcastudy.Markdown(rows))
}
