package transport

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// statsEst is testEst with a from-statistics path that refuses clip 7.
type statsEst struct{ testEst }

func (statsEst) CheckStats(opts any) error {
	if opts.(*testOptions).Clip.Value == 7 {
		return errors.New("clip 7 needs the rows")
	}
	return nil
}

func (statsEst) FitStats(context.Context, *sdk.Run) (*sdk.Result, error) {
	return nil, errors.New("not run in these tests")
}

// The catalogue says which estimators run on statistics, and the
// pre-flight check on a statistics shape refuses the others (and the
// requests the estimator's CheckStats refuses), with a footprint that
// does not count the rows.
func TestServerCheckStatistics(t *testing.T) {
	info := sdk.Info{DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: testOptions{}}
	rowsOnly, withStats := info, info
	rowsOnly.Name, withStats.Name = "rows", "stats"
	srv, err := NewServer("p", "0", testEst{rowsOnly}, statsEst{testEst{withStats}})
	require.NoError(t, err)
	cat, err := srv.Catalogue(context.Background(), &dplrpb.CatalogueRequest{})
	require.NoError(t, err)
	flags := map[string]bool{}
	for _, e := range cat.GetEstimators() {
		flags[e.GetName()] = infoFromProto(e).Statistics
	}
	assert.Equal(t, map[string]bool{"rows": false, "stats": true}, flags)

	approx := grantToProto(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6})
	shape := &dplrpb.Shape{Kind: "rows", N: 1e9, P: 100, Statistics: true}
	check := func(est string, params map[string]string) (*dplrpb.CheckResponse, error) {
		return srv.Check(context.Background(), &dplrpb.CheckRequest{Estimator: est, Params: params, Grant: approx, Shape: shape})
	}
	_, err = check("rows", map[string]string{"rank": "2"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
	assert.Contains(t, err.Error(), "needs the rows")
	_, err = check("stats", map[string]string{"rank": "2", "clip": "7"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
	resp, err := check("stats", map[string]string{"rank": "2"})
	require.NoError(t, err)
	assert.Less(t, resp.GetFootprintBytes(), int64(1e6), "the rows are not counted")
}

// A statistics handle survives the wire and opens into a data set holding
// only the statistics; a handle whose files disagree with it is refused.
func TestOpenStatistics(t *testing.T) {
	dir := t.TempDir()
	const p = 3
	sum := []float64{1, 2, 3}
	mom := []float64{4, 1, 0, 1, 5, 2, 0, 2, 6}
	write := func(name string, v []float64) dataio.FileRef {
		path := filepath.Join(dir, name)
		require.NoError(t, dataio.SaveNPYFloat64(path, []int{len(v)}, v))
		ds, err := dataio.Load(path, dataio.LoadOptions{})
		require.NoError(t, err)
		require.Equal(t, len(v), ds.N()*ds.P())
		h, err := dataio.Prepare(ds, t.TempDir())
		require.NoError(t, err)
		return h.X
	}
	h := dataio.Handle{Version: dataio.HandleVersion, Kind: data.Rows, Hash: "00", N: 10, P: p,
		Stats: &dataio.StatsRef{Clip: 2, Sum: write("sum.npy", sum), Moment: write("mom.npy", mom)}}
	wire := handleToProto(h)
	require.NotNil(t, wire.GetStatistics())
	ds, closer, err := openHandle(wire)
	require.NoError(t, err)
	defer closer.Close()
	require.NotNil(t, ds.Stats)
	assert.Nil(t, ds.X)
	assert.Equal(t, sum, ds.Stats.Sum)
	assert.Equal(t, 5.0, ds.Stats.Moment.At(1, 1))
	assert.Equal(t, sdk.Shape{Kind: data.Rows, N: 10, P: p, Statistics: true}, sdk.ShapeOf(ds))

	bad := handleToProto(h)
	bad.Statistics.Moment.Count = 4
	_, _, err = openHandle(bad)
	require.Error(t, err)
	bad = handleToProto(h)
	bad.P = MaxStatsP + 1
	_, _, err = openHandle(bad)
	require.Error(t, err)
}
