package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host"
)

// BeamRunners are the Beam runners dplr-beam accepts (prism: embedded,
// in-process).
var BeamRunners = host.BeamRunners

// FindBeam locates dplr-beam: $DPLR_BEAM when set, else beside the
// running executable, else in pluginDirs, else on $PATH.
func FindBeam(pluginDirs []string) (string, error) { return host.FindBeam(pluginDirs) }

// BeamWorkDir creates a fresh work directory for a Beam fit below the
// data cache of the dplr home (see BeamShards.Work), named after this
// process, and returns it with the cleanup that removes it. It first
// removes the work directories of Beam fits whose process was killed.
func BeamWorkDir(home string) (string, func(), error) {
	base := CacheDir(home)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", nil, classed(ErrRuntime, err)
	}
	host.SweepDead(base, "beam-")
	dir, err := os.MkdirTemp(base, fmt.Sprintf("beam-%d-", os.Getpid()))
	if err != nil {
		return "", nil, classed(ErrRuntime, err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// BeamShards are the sharded files dplr-beam reads: the data of `dplr fit
// EST --engine beam`.
type BeamShards struct {
	// Binary is dplr-beam (FindBeam); Data the glob of shards.
	Binary, Data string
	// Runner is the Beam runner (BeamRunners); BeamFlags are passed
	// through to it.
	Runner    string
	BeamFlags []string
	// Format, Header, Scale, Features (or the one list column
	// FeatureList), UserColumn and ResponseColumn say how every shard is
	// read, with the meaning LoadOptions gives them for one file.
	Format, Header             string
	Scale                      float64
	Features                   []string
	FeatureList                string
	UserColumn, ResponseColumn string
	// Kind is the estimator's data kind; trace data need D1 and D2.
	Kind   data.Kind
	D1, D2 int
	// Stderr receives the pipeline's progress.
	Stderr io.Writer
	// Work is a directory the caller owns and removes after the fit: pass
	// requests and results, and each run's temporary files, go below it.
	Work string
}

func (b BeamShards) host() host.BeamData {
	return host.BeamData{Binary: b.Binary, Data: b.Data, Runner: b.Runner, BeamFlags: b.BeamFlags, Format: b.Format,
		Header: b.Header, Scale: b.Scale, Features: b.Features, FeatureList: b.FeatureList, UserColumn: b.UserColumn,
		ResponseColumn: b.ResponseColumn, Kind: b.Kind, D1: b.D1, D2: b.D2, Stderr: b.Stderr, Work: b.Work}
}

// DescribeBeam runs `dplr-beam describe` over the shards (one pipeline
// run, before anything is reserved) and returns their public shape, their
// source identity and the Passer that runs with dplr-beam each
// aggregation pass an estimator with a path through passes (Info.Remote)
// requests; RemoteOf makes them a data set. Errors are ErrData, or
// ErrInterrupted when ctx ends; nothing is spent.
func DescribeBeam(ctx context.Context, b BeamShards) (*data.Remote, Identity, data.Passer, error) {
	hb := b.host()
	sh, src, err := host.DescribeBeam(ctx, hb)
	if err != nil {
		if ctx.Err() != nil {
			return nil, src.Identity, nil, classed(ErrInterrupted, err)
		}
		return nil, src.Identity, nil, classed(ErrData, err)
	}
	return sh, src.Identity, hb.Passer(sh, src), nil
}

// RemoteOf is the remote data set of kind k with public shape sh and
// source identity id whose passes p runs (see RemoteData).
func RemoteOf(k data.Kind, sh *data.Remote, id Identity, p data.Passer, name string) (Data, error) {
	if sh == nil || p == nil {
		return Data{}, classed(ErrData, errors.New("the remote data set has no shape or no pass runner"))
	}
	r := *sh
	r.Passer = p
	h := dataio.Handle{Version: dataio.HandleVersion, Kind: k, Hash: id.Hash, Name: name,
		N: r.N, P: r.P, D1: r.D1, D2: r.D2, Source: &id}
	return RemoteData(h, &r), nil
}
