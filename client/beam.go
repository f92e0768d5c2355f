package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host"
)

// BeamRemote describes the shards b names with dplr-beam (their public
// shape and source identity: one pipeline run, before anything is
// reserved) and returns them as a remote data set whose aggregation
// passes dplr-beam runs while an estimator with a path through passes
// (Info.Remote) fits: the data of `dplr fit EST --engine beam`. name, when
// set, names the data set in the ledger. b.Kind must be the estimator's
// data kind (trace data need b.D1 and b.D2). Errors are ErrData, or
// ErrInterrupted when ctx ends; nothing is spent.
func BeamRemote(ctx context.Context, b host.BeamData, name string) (Data, error) {
	sh, id, err := host.DescribeBeam(ctx, b)
	if err != nil {
		if ctx.Err() != nil {
			return Data{}, classed(ErrInterrupted, err)
		}
		return Data{}, classed(ErrData, fmt.Errorf("%w; nothing was reserved or spent", err))
	}
	return RemoteOf(b.Kind, sh, id, b.Passer(sh, id), name)
}

// RemoteOf is the remote data set of kind k with public shape sh and
// source identity id whose passes p runs (see RemoteData).
func RemoteOf(k data.Kind, sh *data.Remote, id dataio.Identity, p data.Passer, name string) (Data, error) {
	if sh == nil || p == nil {
		return Data{}, classed(ErrData, errors.New("the remote data set has no shape or no pass runner"))
	}
	r := *sh
	r.Passer = p
	h := dataio.Handle{Version: dataio.HandleVersion, Kind: k, Hash: id.Hash, Name: name,
		N: r.N, P: r.P, D1: r.D1, D2: r.D2, Source: &id}
	return RemoteData(h, &r), nil
}
