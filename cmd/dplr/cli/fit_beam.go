package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
)

// beamFlags are the --engine flags of `dplr fit`.
type beamFlags struct {
	engine string
	runner string
	flags  multiFlag
	list   string
}

func (b *beamFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.engine, "engine", "local", "where the data are aggregated: local (this machine reads the file) or beam (an Apache Beam pipeline, dplr-beam, reads --data, a glob of .npy, CSV or Parquet shards, and computes each aggregation pass the estimator asks the host for; the host never sees a row; --format, --header, --scale, --features, --user-column and --response-column apply to every shard as to one file)")
	fs.StringVar(&b.runner, "runner", "", "with --engine beam: the Beam runner: prism (default; embedded, in-process, the only one tested here), flink, spark or dataflow")
	fs.Var(&b.flags, "beam-flag", "with --engine beam: a flag passed through to the Beam runner, e.g. --beam-flag=--endpoint=localhost:8099 (repeatable)")
	fs.StringVar(&b.list, "feature-list", "", "with --engine beam: the one list `COLUMN` of Parquet shards holding all the features of a row (instead of --features)")
}

func (b *beamFlags) on() bool { return b.engine == "beam" }

// check refuses inconsistent engine flags and loading options the
// pipeline does not implement, before anything runs.
func (b *beamFlags) check(df *dataFlags) error {
	switch b.engine {
	case "local", "":
		if b.runner != "" || len(b.flags) > 0 || b.list != "" {
			return usagef("--runner, --beam-flag and --feature-list need --engine beam")
		}
		return nil
	case "beam":
	default:
		return usagef("--engine %q: want local or beam", b.engine)
	}
	b.runner = cmp.Or(b.runner, "prism")
	if !slices.Contains(client.BeamRunners, b.runner) {
		return usagef("--runner %q: want one of %s", b.runner, strings.Join(client.BeamRunners, ", "))
	}
	if b.runner == "prism" && len(b.flags) > 0 {
		return usagef("--beam-flag configures a remote runner (--runner flink|spark|dataflow); prism runs in-process and takes none")
	}
	if df.path == "" {
		return usagef("--engine beam needs --data GLOB (sharded .npy or CSV files)")
	}
	// Side files pair each row with a value by its position in one file,
	// which shards do not have; the pipeline's CSV reader takes the
	// default separator only; a label column is left out of the features
	// by naming the features instead.
	for _, u := range []struct {
		name string
		set  bool
		hint string
	}{
		{"--labels", df.labels != "", "labels are not used by a fit through the pipeline"},
		{"--response", df.response != "", "put the response in a column of each shard (--response-column)"},
		{"--users", df.users != "", "put the user ids in a column of each shard (--user-column)"},
		{"--label-column", df.labelCol != "", "name the feature columns with --features to leave it out"},
		{"--delimiter", df.delimiter != "", "the shards' CSV fields are separated by commas (tabs in .tsv files)"},
	} {
		if u.set {
			return usagef("--engine beam reads each shard's own columns: %s is not supported there (%s)", u.name, u.hint)
		}
	}
	if math.IsNaN(df.scale) || math.IsInf(df.scale, 0) {
		return usagef("--scale %v: want a finite number", df.scale)
	}
	if _, err := beamFeatures(df.features); err != nil {
		return err
	}
	if df.features != "" && b.list != "" {
		return usagef("--features and --feature-list both name the features: give one")
	}
	return nil
}

// beamFeatures splits --features for the pipeline, which refuses an empty
// or repeated column name.
func beamFeatures(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	cols := strings.Split(s, ",")
	for i, c := range cols {
		c = strings.TrimSpace(c)
		if c == "" {
			return nil, usagef("--features %q: an empty column name", s)
		}
		if slices.ContainsFunc(cols[:i], func(d string) bool { return strings.TrimSpace(d) == c }) {
			return nil, usagef("--features %q: column %q named twice", s, c)
		}
	}
	return cols, nil
}

// checkColumns refuses, for an estimator taking data of kind k, the
// column flags its data do not have: rows have no user or response
// column, trace data no user column.
func (df *dataFlags) checkColumns(k data.Kind, est string) error {
	if df.userCol != "" && k != data.Users {
		return usagef("--user-column names the user ids of users data; %s takes %s data; nothing was run or spent", est, k)
	}
	if df.responseCol != "" && k == data.Rows {
		return usagef("--response-column names the response of trace and users data; %s takes rows data (name its feature columns with --features to leave other columns out); nothing was run or spent", est)
	}
	return nil
}

// describeRemote runs `dplr-beam describe` and returns the shards' public
// shape, their source identity and the Passer that runs passes over them
// (a variable so that tests can stand in for the pipeline).
var describeRemote = client.DescribeBeam

// beamData is the data set of `dplr fit --engine beam` for an estimator
// with a path through aggregation passes (Info.Remote): the shards are
// described (public shape and source identity) and the host runs the
// passes with dplr-beam while the estimator fits. Nothing is reserved
// here: a failure spends nothing.
func beamData(ctx context.Context, env *Env, f *fitFlags, info client.EstimatorInfo, home string) (client.Data, func(), error) {
	none := func() {}
	if err := f.df.checkColumns(info.DataKind, info.Name); err != nil {
		return client.Data{}, none, err
	}
	if !info.Remote {
		return client.Data{}, none, usagef("%s has no path through aggregation passes, so it cannot run with --engine beam (run it on a data file; those that can have \"remote\": true in dplr plugins --json); nothing was run or spent", info.Name)
	}
	if info.DataKind == data.Trace && (f.df.d1 < 1 || f.df.d2 < 1) {
		return client.Data{}, none, usagef("trace data through --engine beam need the sample matrices' shape: --d1 and --d2; nothing was run or spent")
	}
	if info.DataKind != data.Trace && (f.df.d1 != 0 || f.df.d2 != 0) {
		return client.Data{}, none, usagef("--d1 and --d2 are for trace data; %s takes %s data", info.Name, info.DataKind)
	}
	bd, cleanup, err := beamShards(env, f, info.DataKind, home)
	if err != nil {
		return client.Data{}, none, err
	}
	fmt.Fprintf(env.Stderr, "dplr: --engine beam: %s describes %s (runner %s); %s then asks the host for each aggregation pass it needs\n",
		filepath.Base(bd.Binary), f.df.path, f.beam.runner, info.Name)
	sh, id, passer, err := describeRemote(ctx, bd)
	var d client.Data
	if err == nil {
		d, err = client.RemoteOf(info.DataKind, sh, id, passer, f.df.name)
	}
	if err != nil {
		cleanup()
		if ctx.Err() != nil {
			return client.Data{}, none, fail(ExitInterrupted, err)
		}
		return client.Data{}, none, fail(ExitData, fmt.Errorf("%w; nothing was reserved or spent", err))
	}
	return d, cleanup, nil
}

// beamShards are the shards the flags name, read with dplr-beam for an
// estimator taking kind data, with a fresh work directory below the data
// cache and the cleanup that removes it.
func beamShards(env *Env, f *fitFlags, kind data.Kind, home string) (client.BeamShards, func(), error) {
	bin, err := client.FindBeam(f.pf.dirs)
	if err != nil {
		return client.BeamShards{}, nil, usagef("--engine beam: %v", err)
	}
	features, err := beamFeatures(f.df.features)
	if err != nil {
		return client.BeamShards{}, nil, err
	}
	dir, cleanup, err := client.BeamWorkDir(home)
	if err != nil {
		return client.BeamShards{}, nil, fail(ExitError, err)
	}
	return client.BeamShards{Binary: bin, Data: f.df.path, Runner: f.beam.runner, BeamFlags: f.beam.flags, Format: f.df.format, Header: f.df.header,
		Scale: f.df.scale, Features: features, FeatureList: f.beam.list, UserColumn: f.df.userCol, ResponseColumn: f.df.responseCol,
		Kind: kind, D1: f.df.d1, D2: f.df.d2, Stderr: env.Stderr, Work: dir}, cleanup, nil
}
