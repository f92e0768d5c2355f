// Command dplr-beam runs dplr's aggregation passes on Apache Beam (the
// embedded prism runner by default; Flink, Spark or Dataflow through
// Beam's portable runners) for data too large for one machine. It is run
// by `dplr fit --engine beam`, which checks its output and hands each pass
// result to the estimator's plugin through the usual host path (plan,
// privacy steps, verification, ledger); dplr-beam itself releases
// nothing, reserves nothing and never opens the budget ledger.
//
//	dplr-beam describe --data GLOB --kind rows|trace|users [--d1 D1 --d2 D2] [read flags] [--runner R] [Beam flags]
//	dplr-beam pass --data GLOB --kind K [--d1 D1 --d2 D2] --request FILE --out DIR [read flags] [--runner R] [Beam flags]
//
// describe and pass are described in pass.go. The former stats
// subcommand (a rows data set's clipped sum and second moment in one
// pipeline) is gone: it is refused with a message naming the fit through
// passes, whose rows.moment pass computes the same aggregates.
//
// How shards are read: --format (npy, csv, idx or parquet; default
// detected, .parquet/.parq files being Parquet), --header and --scale as
// for dplr fit. The columns of Parquet shards are named by --features
// (scalar numeric columns, in order) or --feature-list (one list column
// holding a row's features); without either, every numeric column is a
// feature (but the user and response columns of users and trace data),
// else the file's one list column. For users and trace data
// --user-column (default "user"; INT32, INT64 or text ids) and
// --response-column (default "y") name the other columns. The same
// --features, --user-column and --response-column name the columns of CSV
// shards (header names or 0-based indexes, with dplr fit's defaults);
// .npy and IDX shards, which a glob may mix with the others, have no named
// columns.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func main() {
	beam.Init()
	os.Exit(run(os.Args[1:]))
}

// usage lists the subcommands, one line each, with what each does.
const usage = "usage:\n" +
	"  dplr-beam describe --data GLOB [--kind rows|trace|users] [--d1 D1 --d2 D2] " + readUsage + runUsage + "\n" +
	"  dplr-beam pass --data GLOB [--kind K] [--d1 D1 --d2 D2] --request FILE --out DIR " + readUsage + runUsage + "\n" +
	"describe prints the shards' public shape and source identity (JSON); pass runs one aggregation pass the host wrote in FILE.\n" +
	hostOnly

// hostOnly says where fits run.
const hostOnly = "dplr-beam releases nothing: fits run through the host, which plans, verifies and charges them: dplr fit ESTIMATOR --data GLOB --engine beam"

// runUsage lists the flags every subcommand takes after its own.
const runUsage = " [--runner prism|flink|spark|dataflow|universal] [--temp DIR] [Beam runner flags]"

// run is the command; exit codes: 0 success, 1 pipeline failure, 2 usage.
func run(args []string) int {
	if len(args) > 0 && args[0] == "describe" {
		return runDescribe(args[1:])
	}
	if len(args) > 0 && args[0] == "pass" {
		return runPass(args[1:])
	}
	if len(args) > 0 && args[0] == "stats" {
		fmt.Fprintln(os.Stderr, "dplr-beam: stats was removed: every estimator reads sharded data through aggregation passes "+
			"(its clipped sum and second moment are the rows.moment pass): dplr fit ESTIMATOR --data GLOB --engine beam")
		return 2
	}
	if len(args) > 0 && args[0] == "fit" {
		fmt.Fprintln(os.Stderr, "dplr-beam: "+hostOnly)
	}
	fmt.Fprintln(os.Stderr, usage)
	return 2
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
