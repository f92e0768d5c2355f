// Package stats holds dplr's aggregation passes on Apache Beam (the pass
// kinds of engine/pass, RunPass) and the description of sharded data
// (Describe: public shape and source identity): each pipeline reads
// sharded files, bounds every record's (or user's) contribution before
// any aggregation, and aggregates with associative combiners, so that the
// same pipeline runs on the embedded prism runner or on a Flink, Spark or
// Dataflow cluster. What leaves a pipeline is the few aggregates a pass
// returns (or the data set's shape and source identity), never a row.
//
// Inputs are shards matched by a glob on any filesystem Beam knows: .npy,
// IDX and CSV files are read by the single-machine reader (engine/dataio),
// so a bad shard fails with its message; Parquet files (.parquet, or
// ReadOptions.Format "parquet") are read with the Parquet library Beam's
// parquetio uses, with the columns described by ParquetSchema. A user's
// rows are grouped across shards by the text of their id under the
// single-machine loader's rules (UserKey), so that the grouping does not
// depend on the sharding.
package stats

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	pathpkg "path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// Runner names a Beam runner: "prism" (embedded, in-process, the only one
// tested here) or any runner beamx knows ("flink", "spark", "dataflow",
// "universal"), configured by Beam's usual flags.
type Runner string

// execute runs p on the runner.
func execute(ctx context.Context, runner Runner, p *beam.Pipeline) error {
	switch runner {
	case "", "prism":
		_, err := prism.Execute(ctx, p)
		return err
	default:
		_, err := beamx.RunWithMetrics(ctx, p) // honours --runner and the runner's flags
		return err
	}
}

// errNoMatch is wrapped when a glob matches no file.
var errNoMatch = errors.New("no file matches")

// Expand returns the sorted paths matching glob on any filesystem Beam
// knows (local paths here; gs://, s3:// when their packages are linked).
func Expand(ctx context.Context, glob string) ([]string, error) {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", glob, err)
	}
	defer fs.Close()
	paths, err := fs.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", glob, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("data %s: %w", glob, errNoMatch)
	}
	sort.Strings(paths)
	return paths, nil
}

// localCopy returns a local path holding the file at path: path itself
// when it is local, else a temporary copy (removed by cleanup).
func localCopy(ctx context.Context, path string) (string, func(), error) {
	if !strings.Contains(path, "://") {
		return path, func() {}, nil
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return "", nil, err
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, path)
	if err != nil {
		return "", nil, fmt.Errorf("shard %s: %w", path, err)
	}
	defer r.Close()
	// The copy keeps the file's name, whose suffixes the readers use
	// (.tsv.gz: gzip-compressed, tab-separated).
	f, err := os.CreateTemp("", "dplr-shard-*-"+strings.ReplaceAll(pathpkg.Base(path), "*", "_"))
	if err != nil {
		return "", nil, err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", nil, fmt.Errorf("shard %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", nil, err
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// encodeGob and decodeGob are the coders of the pipelines' own types
// (Beam's default coders do not cover fixed-size arrays).
func encodeGob[T any](v T) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decodeGob[T any](b []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return v, err
}

func writeFile(ctx context.Context, path string, b []byte) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func readFile(ctx context.Context, path string) ([]byte, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Options configure a pipeline run.
type Options struct {
	// Runner is the Beam runner (default prism).
	Runner Runner
	// Read says how shards are read.
	Read ReadOptions
	// TempDir receives the pipeline's output (any Beam filesystem; default
	// a local temporary directory). It must be reachable from the workers
	// and the driver.
	TempDir string
	// Progress, when set, receives progress lines (shard, row and user
	// counts; never how many records the clip shrank, which depends on the
	// data: that count stays in the returned statistics).
	Progress func(format string, args ...any)
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

func (o Options) tempPath(name string) (string, func(), error) {
	if o.TempDir != "" {
		return strings.TrimSuffix(o.TempDir, "/") + "/" + name, func() {}, nil
	}
	d, err := os.MkdirTemp("", "dplr-beam-*")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(d, name), func() { os.RemoveAll(d) }, nil
}

func orDefault(r Runner) Runner {
	if r == "" {
		return "prism"
	}
	return r
}

// initBeam initialises the SDK when the program's main has not (a library
// caller); beam.Init must run before any pipeline is built.
func initBeam() {
	if !beam.Initialized() {
		beam.Init()
	}
}
