// Command dplr-beam computes a dplr estimator's statistics on Apache Beam
// (the embedded prism runner by default; Flink, Spark or Dataflow through
// Beam's portable runners) for data too large for one machine. It is run
// by `dplr fit --engine beam`, which validates its output and hands the
// statistics to the estimator's plugin through the usual host path (plan,
// privacy steps, verification, ledger); dplr-beam itself releases
// nothing, reserves nothing and never opens the budget ledger.
//
//	dplr-beam stats --data 'shards/*.npy' --clip 1 --out DIR [--runner prism|flink|spark|dataflow] [Beam flags]
//
// The pipeline reads every shard, clips each row to norm --clip (0: no
// clipping) before any aggregation, and combines the row count, the
// clipped sum Σ w_i x_i, the clipped second moment Σ w_i² x_i x_iᵀ and the
// parts of the rows' source identity (the key the ledger charges, the same
// as for the one file holding the same rows). DIR receives stats.json
// (dataio.StatsManifest), sum.npy (1×p) and moment.npy (p×p). Progress goes
// to stderr. A failed pipeline writes no stats.json and exits 1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

func main() {
	beam.Init()
	os.Exit(run(os.Args[1:]))
}

const usage = "usage: dplr-beam stats --data GLOB --out DIR [--clip C] [--runner prism|flink|spark|dataflow] [--format npy|csv] [--header auto|yes|no] [--temp DIR] [Beam runner flags]\n" +
	"(fits run through the host: dplr fit ESTIMATOR --data GLOB --engine beam)"

// run is the command; exit codes: 0 success, 1 pipeline failure, 2 usage.
func run(args []string) int {
	if len(args) > 0 && args[0] == "describe" {
		return runDescribe(args[1:])
	}
	if len(args) > 0 && args[0] == "pass" {
		return runPass(args[1:])
	}
	if len(args) < 1 || args[0] != "stats" {
		if len(args) > 0 && args[0] == "fit" {
			fmt.Fprintln(os.Stderr, "dplr-beam: fits run through the host, which plans, verifies and charges them: dplr fit ESTIMATOR --data GLOB --engine beam")
		}
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("dplr-beam stats", flag.ContinueOnError)
	dataGlob := fs.String("data", "", "shards: a glob of .npy or CSV files on any filesystem Beam knows")
	out := fs.String("out", "", "directory receiving stats.json, sum.npy and moment.npy")
	clip := fs.Float64("clip", 0, "public row-norm bound applied to each row before aggregation (0: none)")
	runner := fs.String("runner", "prism", "Beam runner: prism (embedded, the only one tested here), flink, spark, dataflow, universal; their usual Beam flags follow (e.g. --endpoint, --project, --region, --temp_location)")
	format := fs.String("format", "", "shard format: npy or csv (default: detected)")
	header := fs.String("header", "", "CSV shards: auto, yes or no")
	tempDir := fs.String("temp", "", "where the pipeline writes its one aggregate (reachable from workers and driver; default a local temporary directory)")
	own, beamArgs := splitArgs(fs, args[1:])
	if err := fs.Parse(own); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "dplr-beam: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if *dataGlob == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "dplr-beam: --data and --out are required\n"+usage)
		return 2
	}
	if !(*clip >= 0) || math.IsInf(*clip, 0) {
		fmt.Fprintf(os.Stderr, "dplr-beam: --clip %v: want a non-negative number\n", *clip)
		return 2
	}
	if *runner != "prism" {
		// Beam's own flags (--endpoint, --project, --region, ...) live on
		// the global flag set, where beamx reads --runner too.
		if err := flag.CommandLine.Parse(beamArgs); err != nil {
			return 2
		}
		if err := flag.Set("runner", *runner); err != nil {
			fmt.Fprintf(os.Stderr, "dplr-beam: --runner: %v\n", err)
			return 2
		}
	} else if len(beamArgs) > 0 {
		fmt.Fprintf(os.Stderr, "dplr-beam: unknown flags %v (Beam runner flags need --runner flink|spark|dataflow)\n", beamArgs)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	t0 := time.Now()
	opt := stats.Options{Runner: stats.Runner(*runner), TempDir: *tempDir, Progress: progress,
		Read: stats.ReadOptions{Format: *format, Header: *header}}
	st, err := stats.ComputeRows(ctx, *dataGlob, *clip, opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 1
	}
	progress("beam: statistics of %d rows in %.1f s", st.N, time.Since(t0).Seconds())
	if err := writeStats(*out, st, *clip, *runner); err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: writing the statistics: %v\n", err)
		return 1
	}
	return 0
}

// progress writes a progress line on stderr. The count of rows the clip
// shrank depends on the private data: it is not shown.
func progress(format string, args ...any) {
	if strings.Contains(format, "clipped") {
		if i := strings.Index(format, " ("); i > 0 && len(args) > 0 {
			format, args = format[:i], args[:strings.Count(format[:i], "%")]
		}
	}
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// writeStats writes the statistics directory: the two arrays first, the
// manifest last (its presence means the write completed).
func writeStats(dir string, st *stats.RowStats, clip float64, runner string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := st.P
	mom := make([]float64, p*p)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			v := st.Moment[i*p+j]
			mom[i*p+j], mom[j*p+i] = v, v
		}
	}
	if err := dataio.SaveNPYFloat64(filepath.Join(dir, "sum.npy"), []int{1, p}, st.Sum); err != nil {
		return err
	}
	if err := dataio.SaveNPYFloat64(filepath.Join(dir, "moment.npy"), []int{p, p}, mom); err != nil {
		return err
	}
	m := dataio.StatsManifest{Format: dataio.StatsFormat, Kind: data.Rows, N: st.N, P: p, Clip: clip, Identity: st.ID,
		Sum: "sum.npy", Moment: "moment.npy", Runner: runner}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".stats.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, dataio.StatsManifestName))
}

// splitArgs separates dplr-beam's own flags from the rest (Beam's runner
// flags), each with its value.
func splitArgs(fs *flag.FlagSet, args []string) (own, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		f := fs.Lookup(name)
		takesValue := !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-")
		if f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				takesValue = false
			} else {
				takesValue = !hasValue
			}
		}
		dst := &rest
		if f != nil || !strings.HasPrefix(a, "-") {
			dst = &own
		}
		*dst = append(*dst, a)
		if takesValue && i+1 < len(args) {
			*dst = append(*dst, args[i+1])
			i++
		}
	}
	return own, rest
}
