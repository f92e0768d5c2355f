// "bench study orbit" measures the utility loss of the orbit exponential
// mechanism, deflation and the Gaussian mechanism against ε on the
// orbit-spiked model (PCA task), beside the predictions and bounds of plugins/orbit/DERIVATIONS.md §8,
// and prints a markdown table (or JSON with -json).
//
//	go run ./bench/cmd/bench study orbit -d 20 -k 3 -n 2000 -reps 20
//	go run ./bench/cmd/bench study orbit -data /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz -scale 0.00392156862745098 -clip 28 -k 3

package study

import (
	"context"
	"flag"
	"os"
	"strconv"

	orbitstudy "github.com/dplr/dplr/bench/studies/orbit"
	"github.com/dplr/dplr/engine/dataio"
)

// Orbit runs "bench study orbit" with the arguments that follow it.
func Orbit(args []string) {
	fs := flag.NewFlagSet("bench study orbit", flag.ExitOnError)
	cfg := orbitstudy.DefaultStudy()
	eps := fs.String("eps", "0.25,0.5,1,2", "comma-separated ε values")
	fs.StringVar(&cfg.Task, "task", cfg.Task, "pca (public projection spectrum, loss) or rank-k (private spectrum, ‖A−H‖_F²)")
	fs.IntVar(&cfg.D, "d", cfg.D, "dimension")
	fs.IntVar(&cfg.K, "k", cfg.K, "rank")
	fs.IntVar(&cfg.N, "n", cfg.N, "rows")
	fs.Float64Var(&cfg.Spike, "spike", cfg.Spike, "largest spike variance")
	fs.IntVar(&cfg.Reps, "reps", cfg.Reps, "runs per cell")
	fs.IntVar(&cfg.Sweeps, "sweeps", cfg.Sweeps, "Givens–Gibbs sweeps")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for data and mechanisms")
	dataPath := fs.String("data", "", "optional rows data file read with engine/dataio (e.g. an IDX image file); replaces the synthetic model")
	scale := fs.Float64("scale", 0, "multiply the data's entries by this (dataio Scale; 0 means 1)")
	clip := fs.Float64("clip", 1, "public row-norm bound for -data")
	mixing := fs.String("mixing", "", "instead of the ε study, measure the loss after these comma-separated Gibbs sweep counts (e.g. 1,5,10,25,100,400)")
	asJSON := fs.Bool("json", false, "print JSON instead of markdown")
	_ = fs.Parse(args)
	cfg.Eps = must(parseList(*eps, "ε", parseFloat, anyValue[float64]))
	if *mixing != "" {
		sweeps := must(parseList(*mixing, "sweep count", strconv.Atoi, func(v int) bool { return v >= 1 }))
		rows, err := orbitstudy.RunMixingStudy(context.Background(), cfg, sweeps)
		check("orbit", err)
		check("orbit", orbitstudy.WriteMixingMarkdown(os.Stdout, rows))
		return
	}
	var rows []orbitstudy.StudyRow
	var err error
	if *dataPath != "" {
		ds, lerr := dataio.Load(*dataPath, dataio.LoadOptions{Scale: *scale, SkipHash: true})
		check("orbit", lerr)
		rows, err = orbitstudy.RunStudyData(context.Background(), cfg, ds, *clip)
	} else {
		rows, err = orbitstudy.RunStudy(context.Background(), cfg)
	}
	check("orbit", err)
	if *asJSON {
		writeJSON("orbit", "-", rows)
		return
	}
	check("orbit", orbitstudy.WriteStudyMarkdown(os.Stdout, rows))
}
