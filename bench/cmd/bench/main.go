// Command bench is dplr's one benchmark command: the scenarios through the
// real host and plugins, the report, the accuracy studies and the noise
// measurements. Its subcommands are listed by usage and in
// docs/benchmarks.md; "bench SUBCOMMAND -h" lists a subcommand's flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/dplr/dplr/bench/cmd/bench/noise"
	"github.com/dplr/dplr/bench/cmd/bench/study"
	"github.com/dplr/dplr/bench/suite"
)

// studies maps "bench study NAME" to the study's entry point.
var studies = map[string]func([]string){
	"pca":    study.PCA,
	"fedrep": study.FedRep,
	"orbit":  study.Orbit,
	"rgrad":  study.RGrad,
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = run(ctx, os.Args[2:])
	case "report":
		err = report(os.Args[2:])
	case "study":
		if len(os.Args) < 3 || studies[os.Args[2]] == nil {
			usage()
			os.Exit(2)
		}
		studies[os.Args[2]](os.Args[3:])
	case "noise":
		noise.Main(estimators())
	case "pldnoise":
		noise.MainPLD(estimators())
	case "inproc":
		err = inproc(os.Args[2:])
	case "-h", "--help", "help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `Usage:
  bench run [--quick] [--force] [--dplr bin/dplr] [--out DIR] [SCENARIO.toml ...]
  bench report [--quick] [--out DIR] [--results FILE] [--scenarios DIR] [--areas DIR]
  bench study pca|fedrep|orbit|rgrad [flags]   an accuracy study (bench study NAME -h: its flags)
  bench noise                                  noise per step: exact vs zCDP vs the papers' calibration
  bench pldnoise                               noise per step under zCDP and the two PLD accountings
  bench inproc ESTIMATOR [dplr fit flags]      fit in this process, no plugin or ledger (the transport scenarios)
`)
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "quick scenarios only, with their quick repetition counts (make bench)")
	force := fs.Bool("force", false, "re-run cells that already have results")
	dplr := fs.String("dplr", "bin/dplr", "the dplr host binary")
	out := fs.String("out", "", "results directory (default bench/out, or bench/quick with --quick)")
	dir := fs.String("scenarios", "bench/scenarios", "scenario directory used when no files are named")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		*out = "bench/out"
		if *quick {
			*out = "bench/quick"
		}
	}
	var scs []*suite.Scenario
	var err error
	if fs.NArg() > 0 {
		scs, err = suite.Load(fs.Args()...)
	} else {
		scs, err = suite.LoadDir(*dir)
	}
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(*dplr)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("host binary %s: %w (run make build)", abs, err)
	}
	for _, s := range scs {
		if *quick && !s.Quick {
			continue
		}
		if err := suite.Run(ctx, s, suite.Options{Dplr: abs, OutDir: *out, Quick: *quick, Force: *force, Log: os.Stderr}); err != nil {
			return err
		}
	}
	return nil
}

func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fs.String("out", "bench/out", "results directory")
	results := fs.String("results", "bench/RESULTS.md", "report file (plots go to plots/ beside it)")
	dir := fs.String("scenarios", "bench/scenarios", "scenario directory")
	areas := fs.String("areas", "bench/results", "directory of per-area markdown figures")
	quick := fs.Bool("quick", false, "report only the quick scenarios")
	if err := fs.Parse(args); err != nil {
		return err
	}
	scs, err := suite.LoadDir(*dir)
	if err != nil {
		return err
	}
	if *quick {
		var q []*suite.Scenario
		for _, s := range scs {
			if s.Quick {
				q = append(q, s)
			}
		}
		scs = q
	}
	if err := suite.WriteResults(*results, scs, *out, *areas); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: wrote", *results)
	return nil
}
