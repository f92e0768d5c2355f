package transport

import (
	"context"
	"errors"
	"fmt"
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

// testOptions has a Check hook and a footprint of 8·p² bytes (a p×p
// matrix of float64).
type testOptions struct {
	sdk.Rank
	sdk.Clip `default:"1"`
}

func (o *testOptions) Check(s sdk.Shape) error {
	if o.Rank.Value > s.P {
		return errors.New("rank exceeds the number of columns")
	}
	return nil
}

func (o *testOptions) Footprint(s sdk.Shape) int64 { return 8 * int64(s.P) * int64(s.P) }

type testEst struct{ info sdk.Info }

func (e testEst) Info() sdk.Info { return e.info }
func (e testEst) Fit(context.Context, *sdk.Run) (*sdk.Result, error) {
	return nil, errors.New("not run in these tests")
}

func newTestServer(t *testing.T) *Server {
	t.Helper()
	est := testEst{sdk.Info{Name: "t", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantApprox}, Options: testOptions{}}}
	srv, err := NewServer("p", "0", est)
	require.NoError(t, err)
	return srv
}

// The pre-flight check runs the SDK's preparation: parameters, the options'
// Check hook on the public shape, the grant's form, and the footprint.
func TestServerCheck(t *testing.T) {
	srv := newTestServer(t)
	approx := grantToProto(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6})
	shape := &dplrpb.Shape{Kind: "rows", N: 100, P: 60000}
	resp, err := srv.Check(context.Background(), &dplrpb.CheckRequest{Estimator: "t", Params: map[string]string{"rank": "2"}, Grant: approx, Shape: shape})
	require.NoError(t, err)
	assert.Equal(t, int64(8*60000*60000), resp.GetFootprintBytes())

	cases := []struct {
		name string
		req  *dplrpb.CheckRequest
		code codes.Code
		want string
	}{
		{"unknown estimator", &dplrpb.CheckRequest{Estimator: "u", Grant: approx, Shape: shape}, codes.NotFound, "no estimator"},
		{"missing parameter", &dplrpb.CheckRequest{Estimator: "t", Grant: approx, Shape: shape}, codes.InvalidArgument, "rank"},
		{"Check hook", &dplrpb.CheckRequest{Estimator: "t", Params: map[string]string{"rank": "9"}, Grant: approx,
			Shape: &dplrpb.Shape{Kind: "rows", N: 10, P: 3}}, codes.InvalidArgument, "rank exceeds"},
		{"wrong data kind", &dplrpb.CheckRequest{Estimator: "t", Params: map[string]string{"rank": "2"}, Grant: approx,
			Shape: &dplrpb.Shape{Kind: "users", N: 10, P: 3}}, codes.InvalidArgument, "takes rows data"},
		{"grant form", &dplrpb.CheckRequest{Estimator: "t", Params: map[string]string{"rank": "2"},
			Grant: grantToProto(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}), Shape: shape}, codes.InvalidArgument, "does not accept a zcdp budget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := srv.Check(context.Background(), tc.req)
			require.Error(t, err)
			assert.Equal(t, tc.code, status.Code(err))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The converters lose nothing between the SDK's types and the wire.
func TestConvertersRoundTrip(t *testing.T) {
	st := privacy.Step{Name: "s", Mechanism: privacy.MechGaussian, Calibration: "zcdp", Sensitivity: 1.5, Scale: 2, Epsilon: 0.5,
		Delta: 1e-7, Rho: 0.3, Note: "n", QuerySensitivity: 1.4, Dim: 7, Grid: 0x1p-40}
	assert.Equal(t, st, stepFromProto(stepToProto(st)))
	assert.Equal(t, []privacy.Step{st, st}, stepsFromProto([]*dplrpb.Step{stepToProto(st), stepToProto(st)}))
	g := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	assert.Equal(t, g, grantFromProto(grantToProto(g)))
	gu := privacy.Guarantee{Kind: privacy.Approx, Epsilon: 0.9, Delta: 1e-6, Rho: 0.02, Model: "m", Beta: 0.01,
		Assumptions: []string{"a"}, Neighbours: "one row replaced", Seeded: true, Accounting: "gdp", Mu: 0.2}
	assert.Equal(t, gu, guaranteeFromProto(guaranteeToProto(gu)))
	h := dataio.Handle{Version: dataio.HandleVersion, Kind: data.Users, Hash: "ab", Name: "n", N: 10, P: 2,
		X:         dataio.FileRef{Path: "x", DType: dataio.DTypeFloat64, Count: 20, Size: 160},
		UserStart: &dataio.FileRef{Path: "s", DType: dataio.DTypeInt64, Count: 4, Size: 32},
		UserIDs:   &dataio.FileRef{Path: "u", DType: dataio.DTypeInt64, Count: 3, Size: 24}}
	assert.Equal(t, h, handleFromProto(handleToProto(h)))
	assert.Equal(t, sdk.Shape{Kind: data.Users, N: 10, P: 2, Users: 3}, shapeFromProto(shapeOf(h)))
	h.ColumnScaled = true // divided by the user's column scales: the plugin and its pre-flight see it
	assert.Equal(t, h, handleFromProto(handleToProto(h)))
	assert.Equal(t, sdk.Shape{Kind: data.Users, N: 10, P: 2, Users: 3, ColumnScaled: true}, shapeFromProto(shapeOf(h)))
	info := sdk.Info{Name: "e", Version: "1", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, NonPrivate: true,
		Params: []sdk.ParamSpec{{Name: "k", Type: sdk.Int, Default: "2", Min: sdk.Bound(1), Doc: "d"}}}
	assert.Equal(t, info, infoFromProto(infoToProto(info)))
	sc := []sdk.Scalar{{Name: "a", Value: 1, Release: sdk.Public, Doc: "d"}}
	assert.Equal(t, sc, scalarsFromProto([]*dplrpb.Scalar{{Name: "a", Value: 1, Release: "public", Doc: "d"}}))
	se := []sdk.Series{{Name: "a", Values: []float64{1, 2}, Release: sdk.Evaluation}}
	assert.Equal(t, se, seriesFromProto([]*dplrpb.Series{{Name: "a", Values: []float64{1, 2}, Release: "evaluation"}}))
}

// A budget no step can be calibrated to, met before any step, is a
// refusal of the request (InvalidArgument); after a step it is not.
func TestInvalidBeforeSpending(t *testing.T) {
	invalid := fmt.Errorf("noise scale 1e-303: %w", privacy.ErrInvalidBudget)
	assert.True(t, invalidBeforeSpending(invalid, nil))
	acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1})
	require.NoError(t, err)
	assert.True(t, invalidBeforeSpending(invalid, acct))
	require.NoError(t, acct.Spend(privacy.Step{Name: "s", Mechanism: privacy.MechGaussian, Sensitivity: 1, Scale: 1, Rho: 0.5}))
	assert.False(t, invalidBeforeSpending(invalid, acct), "after a step it is the estimator's failure")
	assert.False(t, invalidBeforeSpending(errors.New("other"), nil))
}

// The result message carries an estimator's timings as Diagnostic
// scalars, never public ones.
func TestFinalResultTimingsAreDiagnostic(t *testing.T) {
	acct, err := privacy.NewAccountant(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1})
	require.NoError(t, err)
	res := &sdk.Result{}
	res.AddScalar("v", 0, sdk.Public, "noisy zero")
	res.AddTiming("sampler_s", 0.25, "time spent sampling")
	final := finalResult(res, acct, 1.5, 0.5)
	require.Len(t, final.GetScalars(), 2)
	for _, sc := range final.GetScalars() {
		if sc.GetName() == "sampler_s" {
			assert.Equal(t, string(sdk.Diagnostic), sc.GetRelease())
			assert.Equal(t, 0.25, sc.GetValue())
		} else {
			assert.Equal(t, string(sdk.Public), sc.GetRelease())
		}
	}
	assert.Equal(t, 1.5, final.GetFitSeconds())
}

// The SDK's plan modes are the protocol's enum values.
func TestPlanModeValues(t *testing.T) {
	assert.Equal(t, int32(dplrpb.PlanMode_PLAN_NONE), int32(sdk.PlanNone))
	assert.Equal(t, int32(dplrpb.PlanMode_PLAN_FULL), int32(sdk.PlanFull))
	assert.Equal(t, int32(dplrpb.PlanMode_PLAN_INDICATOR), int32(sdk.PlanIndicator))
}
