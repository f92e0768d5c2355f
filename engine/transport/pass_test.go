package transport

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

func ramp(name string, rows, cols int) data.Array {
	a := data.Array{Name: name, Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}
	for i := range a.Data {
		a.Data[i] = float64(i) / 7
	}
	return a
}

// TestPassMessagesRoundTrip: requests and replies of any size are split
// into messages of at most MaxChunk values (well under gRPC's 4 MiB) and
// reassembled exactly.
func TestPassMessagesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		arrays []data.Array
	}{
		{"none", nil},
		{"empty array", []data.Array{{Name: "e"}}},
		{"small", []data.Array{ramp("a", 1, 3), ramp("b", 2, 2)}},
		{"a 784×784 moment", []data.Array{ramp("sum", 1, 784), ramp("moment", 784, 784)}},
		{"exactly one chunk", []data.Array{ramp("a", 1, MaxChunk)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := data.PassRequest{Kind: "k.x", Params: map[string]float64{"clip": 2}, Inputs: tc.arrays}
			ms := PassRequestMessages(3, req)
			asm := NewPassRequestAssembler(3, 1<<30)
			var got *data.PassRequest
			for i, m := range ms {
				values := 0
				for _, c := range m.m.GetInputs() {
					values += len(c.GetData())
				}
				assert.LessOrEqual(t, values, MaxChunk)
				assert.Less(t, proto.Size(m.m), 4<<20)
				r, err := asm.Add(m)
				require.NoError(t, err)
				if i < len(ms)-1 {
					assert.Nil(t, r)
				}
				got = r
			}
			require.NotNil(t, got)
			assert.Equal(t, req.Kind, got.Kind)
			assert.Equal(t, req.Params, got.Params)
			require.Len(t, got.Inputs, len(tc.arrays))
			for i, a := range tc.arrays {
				assert.Equal(t, a.Name, got.Inputs[i].Name)
				assert.Equal(t, a.Rows*a.Cols, len(got.Inputs[i].Data))
				if len(a.Data) > 0 {
					assert.Equal(t, a.Data, got.Inputs[i].Data)
				}
			}

			res := &data.PassResult{Records: 9, Outputs: tc.arrays, Scalars: map[string]float64{"loss": 1.5}}
			rasm := newPassReplyAssembler(3, 1<<30)
			var out *data.PassResult
			for _, m := range passReplyMessages(3, res, "") {
				r, errText, done, err := rasm.Add(m)
				require.NoError(t, err)
				assert.Empty(t, errText)
				if done {
					out = r
				}
			}
			require.NotNil(t, out)
			assert.Equal(t, int64(9), out.Records)
			assert.Equal(t, res.Scalars, out.Scalars)
			require.Len(t, out.Outputs, len(tc.arrays))
		})
	}
	_, errText, done, err := newPassReplyAssembler(1, 10).Add(passReplyMessages(1, nil, "shard 3 is corrupt")[0])
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, "shard 3 is corrupt", errText)
}

// TestPassRequestAssemblerRefuses: malformed requests are refused with the
// problem named, and nothing larger than the limit is allocated.
func TestPassRequestAssemblerRefuses(t *testing.T) {
	many := map[string]float64{}
	for i := 0; i < MaxPassParams+1; i++ {
		many[string(rune('a'+i%26))+string(rune('a'+i/26))] = 1
	}
	chunk := func(name string, rows, cols, off int64, v ...float64) *dplrpb.ArrayChunk {
		return &dplrpb.ArrayChunk{Name: name, Rows: rows, Cols: cols, Offset: off, Data: v}
	}
	for _, tc := range []struct {
		name string
		ms   []*dplrpb.PassRequest
		want string
	}{
		{"wrong id", []*dplrpb.PassRequest{{Id: 2, Kind: "k", Done: true}}, "numbered 2, want 1"},
		{"no kind", []*dplrpb.PassRequest{{Id: 1, Done: true}}, "names no kind"},
		{"NaN parameter", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Params: map[string]float64{"clip": math.NaN()}, Done: true}}, "not finite"},
		{"too many parameters", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Params: many, Done: true}}, "more than 64"},
		{"huge input", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", 1<<20, 1<<20, 0, 1)}}}, "more than the 100 values"},
		{"negative shape", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", -1, 2, 0)}}}, "shape -1×2"},
		{"starts at an offset", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", 2, 2, 1, 1)}}}, "offset 1"},
		{"out of order", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", 2, 2, 0, 1), chunk("x", 2, 2, 3, 1)}}}, "out of order"},
		{"overflow", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", 1, 2, 0, 1), chunk("x", 1, 2, 1, 1, 2)}}}, "beyond"},
		{"interleaved", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", 1, 2, 0, 1), chunk("y", 1, 1, 0, 1)}}}, "incomplete"},
		{"incomplete at the end", []*dplrpb.PassRequest{{Id: 1, Kind: "k", Inputs: []*dplrpb.ArrayChunk{chunk("x", 1, 2, 0, 1)}, Done: true}}, "incomplete"},
		{"kind repeated", []*dplrpb.PassRequest{{Id: 1, Kind: "k"}, {Id: 1, Kind: "k", Done: true}}, "repeats its kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asm := NewPassRequestAssembler(1, 100)
			var err error
			for _, m := range tc.ms {
				if _, err = asm.add(m); err != nil {
					break
				}
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// sumEst is a non-private remote estimator returning the clipped sum of a
// rows.moment pass.
type sumEst struct{}

type sumOptions struct {
	sdk.Clip `default:"1"`
}

func (sumEst) Info() sdk.Info {
	return sdk.Info{Name: "sum", DataKind: data.Rows, Grants: []privacy.GrantKind{privacy.GrantZCDP}, NonPrivate: true, Options: sumOptions{}}
}

func (sumEst) Passes(opts any, s sdk.Shape) ([]string, error) {
	if opts.(*sumOptions).Clip.Value > 100 {
		return nil, errors.New("clip above 100 needs the rows")
	}
	return []string{pass.RowsMoment}, nil
}

func (sumEst) Fit(ctx context.Context, run *sdk.Run) (*sdk.Result, error) {
	o := sdk.Opts[sumOptions](run)
	res, err := run.Data.Remote.Passer.Pass(ctx, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": o.Clip.Value}})
	if err != nil {
		return nil, err
	}
	sum, _ := res.Output("sum")
	out := &sdk.Result{Guarantee: privacy.Guarantee{Kind: privacy.None}}
	out.AddMatrix("sum", mat.NewDense(1, sum.Cols, sum.Data), sdk.Evaluation, "clipped sum")
	return out, nil
}

// dial serves srv over an in-memory connection.
func dial(t *testing.T, srv *Server) dplrpb.EstimatorsClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	dplrpb.RegisterEstimatorsServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///buf", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return dplrpb.NewEstimatorsClient(conn)
}

// TestServerFitPasses: the plugin's server declares the passes in Check,
// asks for them over FitPasses and gets the host's answers; an estimator
// needing the rows refuses the check.
func TestServerFitPasses(t *testing.T) {
	srv, err := NewServer("p", "0", sumEst{})
	require.NoError(t, err)
	cl := dial(t, srv)
	ctx := context.Background()
	x := mat.NewDense(3, 2, []float64{3, 4, 0.3, 0.4, -1, 0})
	ds := &data.Dataset{Kind: data.Rows, X: x}
	rm := pass.ShapeOf(ds)
	grant := grantToProto(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1})

	resp, err := cl.Check(ctx, &dplrpb.CheckRequest{Estimator: "sum", Grant: grant, Shape: remoteShapeOf(data.Rows, rm)})
	require.NoError(t, err)
	assert.Equal(t, []string{pass.RowsMoment}, resp.GetPasses())
	_, err = cl.Check(ctx, &dplrpb.CheckRequest{Estimator: "sum", Params: map[string]string{"clip": "1000"}, Grant: grant, Shape: remoteShapeOf(data.Rows, rm)})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), "needs the rows")
	local, err := cl.Check(ctx, &dplrpb.CheckRequest{Estimator: "sum", Grant: grant, Shape: &dplrpb.Shape{Kind: "rows", N: 3, P: 2}})
	require.NoError(t, err)
	assert.Empty(t, local.GetPasses())

	st, err := cl.FitPasses(ctx)
	require.NoError(t, err)
	h := &dplrpb.DatasetHandle{Kind: "rows", Hash: "h", N: 3, P: 2, Remote: remoteToProto(rm)}
	require.NoError(t, st.Send(&dplrpb.FitInput{Input: &dplrpb.FitInput_Request{Request: &dplrpb.FitRequest{Estimator: "sum", Grant: grant, Data: h}}}))
	var sum []float64
	passes := 0
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch e := ev.GetEvent().(type) {
		case *dplrpb.FitEvent_Pass:
			passes++
			req, err := NewPassRequestAssembler(e.Pass.GetId(), 100).add(e.Pass)
			require.NoError(t, err)
			res, err := pass.Local(ds).Pass(ctx, *req)
			require.NoError(t, err)
			for _, m := range passReplyMessages(e.Pass.GetId(), res, "") {
				require.NoError(t, st.Send(&dplrpb.FitInput{Input: &dplrpb.FitInput_Reply{Reply: m}}))
			}
		case *dplrpb.FitEvent_Matrix:
			sum = e.Matrix.GetData()
		}
	}
	assert.Equal(t, 1, passes)
	assert.InDeltaSlice(t, []float64{0.6 + 0.3 - 1, 0.8 + 0.4}, sum, 1e-15)

	// The host's refusal reaches the estimator as an error.
	st, err = cl.FitPasses(ctx)
	require.NoError(t, err)
	require.NoError(t, st.Send(&dplrpb.FitInput{Input: &dplrpb.FitInput_Request{Request: &dplrpb.FitRequest{Estimator: "sum", Grant: grant, Data: h}}}))
	for {
		ev, err := st.Recv()
		if err != nil {
			assert.Contains(t, err.Error(), "the host refused or failed it: no")
			break
		}
		if p := ev.GetPass(); p != nil {
			require.NoError(t, st.Send(&dplrpb.FitInput{Input: &dplrpb.FitInput_Reply{Reply: passReplyMessages(p.GetId(), nil, "no")[0]}}))
		}
	}

	// Fit refuses a remote handle.
	fs, err := cl.Fit(ctx, &dplrpb.FitRequest{Estimator: "sum", Grant: grant, Data: h})
	require.NoError(t, err)
	_, err = fs.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}
