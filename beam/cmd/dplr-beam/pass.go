package main

// The describe and pass subcommands: the Beam side of the estimators that
// reach their data only through aggregation passes (package engine/pass).
//
//	dplr-beam describe --data GLOB --kind rows|trace|users [--d1 D1 --d2 D2] [read flags] [--runner R] [Beam flags]
//	dplr-beam pass --data GLOB --kind K [...] --request FILE --out DIR
//
// The read flags (registerReadFlags: --format, --header, --scale,
// --features, --feature-list, --user-column, --response-column) are
// described in main.go.
//
// describe prints (stdout, JSON, host.BeamDescription) the data set's
// public shape and the source identity of all its rows, merged across
// shards into the identity of the one file holding them, and, where a
// state ties a shard to the content hashed (local plain .npy and IDX rows
// files: beam/stats/state.go), the state of each shard. pass reads a
// request written by the host (host.BeamPassRequest) and runs the pass
// kind's pipeline. When the request carries the shards' states, the
// pipeline reads every shard only in its recorded state
// (stats.StatePass), and a shard added, removed or in another state makes
// it exit host.BeamExitDataChanged naming the shard; otherwise it also
// reads the shards' description again (stats.DescribedPass: in the same
// read for rows and trace data, by the description pipeline after the
// pass for users data). It writes DIR/result.json (host.BeamPassResult)
// beside one .npy file per output: the host checks the shape and the
// states or identity it reports against those of describe, so that data
// changed between passes are refused.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host"
)

// passFlags are the flags describe and pass share.
type passFlags struct {
	fs                 *flag.FlagSet
	data, kind, runner *string
	temp               *string
	read               *readFlags
	ro                 stats.ReadOptions
	d1, d2             *int
	request, out       *string
	withRequest        bool
	beamArgs           []string
}

func newPassFlags(name string, withRequest bool) *passFlags {
	fs := flag.NewFlagSet("dplr-beam "+name, flag.ContinueOnError)
	f := &passFlags{fs: fs, withRequest: withRequest}
	f.data = fs.String("data", "", "shards: a glob of .npy, CSV or Parquet files on any filesystem Beam knows")
	f.kind = fs.String("kind", "rows", "data kind: rows, trace or users")
	f.d1 = fs.Int("d1", 0, "trace data: rows of each sample matrix (0: from the files)")
	f.d2 = fs.Int("d2", 0, "trace data: columns of each sample matrix (0: from the files)")
	f.runner = fs.String("runner", "prism", "Beam runner: prism (embedded, the only one tested here), flink, spark, dataflow, universal; their usual Beam flags follow")
	f.read = registerReadFlags(fs)
	f.temp = fs.String("temp", "", "where the pipelines write their one aggregate (reachable from workers and driver; default a local temporary directory)")
	if withRequest {
		f.request = fs.String("request", "", "the pass request (JSON, written by the host)")
		f.out = fs.String("out", "", "directory receiving result.json and the outputs' .npy files")
	}
	return f
}

// parse parses args; it returns a usage exit code (2) or 0.
func (f *passFlags) parse(args []string) int {
	own, beamArgs := splitArgs(f.fs, args)
	if err := f.fs.Parse(own); err != nil {
		return 2
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "dplr-beam: unexpected arguments %v\n", f.fs.Args())
		return 2
	}
	if *f.data == "" || (f.withRequest && (*f.request == "" || *f.out == "")) {
		fmt.Fprintf(os.Stderr, "dplr-beam %s: --data%s are required\n", f.fs.Name(), map[bool]string{true: ", --request and --out"}[f.withRequest])
		return 2
	}
	switch data.Kind(*f.kind) {
	case data.Rows, data.Trace, data.Users:
	default:
		fmt.Fprintf(os.Stderr, "dplr-beam: --kind %q: want rows, trace or users\n", *f.kind)
		return 2
	}
	ro, err := f.read.options()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 2
	}
	f.ro = ro
	if *f.d1 < 0 || *f.d2 < 0 {
		fmt.Fprintln(os.Stderr, "dplr-beam: --d1 and --d2 must be non-negative")
		return 2
	}
	if *f.runner != "prism" {
		if err := flag.CommandLine.Parse(beamArgs); err != nil {
			return 2
		}
		if err := flag.Set("runner", *f.runner); err != nil {
			fmt.Fprintf(os.Stderr, "dplr-beam: --runner: %v\n", err)
			return 2
		}
	} else if len(beamArgs) > 0 {
		fmt.Fprintf(os.Stderr, "dplr-beam: unknown flags %v (Beam runner flags need --runner flink|spark|dataflow)\n", beamArgs)
		return 2
	}
	f.beamArgs = beamArgs
	return 0
}

func (f *passFlags) options() (stats.Options, stats.ReadOptions) {
	return stats.Options{Runner: stats.Runner(*f.runner), TempDir: *f.temp, Progress: progress, Read: f.ro}, f.ro
}

// describeOutput is the description as the host reads it.
func describeOutput(d *stats.Description) host.BeamDescription {
	return host.BeamDescription{Format: host.BeamPassFormat, Kind: d.Kind, Shards: d.Shards,
		BeamSource: host.BeamSource{Identity: d.Identity.Identity(), Files: d.Files}, BeamShape: host.ShapeOfRemote(d.Remote())}
}

// runDescribe is `dplr-beam describe`.
func runDescribe(args []string) int {
	f := newPassFlags("describe", false)
	if code := f.parse(args); code != 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opt, _ := f.options()
	t0 := time.Now()
	d, err := stats.Describe(ctx, *f.data, data.Kind(*f.kind), *f.d1, *f.d2, opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 1
	}
	progress("beam: described in %.1f s", time.Since(t0).Seconds())
	b, err := json.Marshal(describeOutput(d))
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 1
	}
	fmt.Println(string(b))
	return 0
}

// runPass is `dplr-beam pass`.
func runPass(args []string) int {
	f := newPassFlags("pass", true)
	if code := f.parse(args); code != 0 {
		return code
	}
	kind, sh, req, files, err := host.ReadPassRequest(*f.request)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: request: %v\n", err)
		return 2
	}
	if kind != data.Kind(*f.kind) {
		fmt.Fprintf(os.Stderr, "dplr-beam: the request is for %s data, --kind %s\n", kind, *f.kind)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opt, ro := f.options()
	t0 := time.Now()
	if len(files) > 0 {
		// Every shard read only in the state describe hashed it in.
		res, err := stats.StatePass(ctx, *f.data, sh, ro, req, files, opt)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
			if errors.Is(err, dataio.ErrFileChanged) {
				return host.BeamExitDataChanged
			}
			return 1
		}
		return writeResult(*f.out, req.Kind, res, sh, host.BeamSource{Files: files}, t0, "shard state check")
	}
	// The identity of what was read, taken with the pass: data changed
	// before or during it give another identity.
	res, d, err := stats.DescribedPass(ctx, *f.data, sh, ro, req, *f.d1, *f.d2, opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: %v\n", err)
		return 1
	}
	return writeResult(*f.out, req.Kind, res, d.Remote(), host.BeamSource{Identity: d.Identity.Identity()}, t0, "identity check")
}

// writeResult writes a pass's result into dir; check names how the
// source was checked, for the progress line.
func writeResult(dir, kind string, res *data.PassResult, sh *data.Remote, src host.BeamSource, t0 time.Time, check string) int {
	if err := host.WritePassResult(dir, kind, res, sh, src); err != nil {
		fmt.Fprintf(os.Stderr, "dplr-beam: writing the result: %v\n", err)
		return 1
	}
	progress("beam: pass %s and %s in %.1f s", kind, check, time.Since(t0).Seconds())
	return 0
}
