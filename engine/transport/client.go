package transport

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// Client is the host's side of a connection to a plugin: the Estimators
// service in the SDK's types. Classify tells how a call failed.
type Client struct{ rpc dplrpb.EstimatorsClient }

// ErrMalformed is wrapped by the errors of a plugin's answer that does not
// follow the protocol.
var ErrMalformed = errors.New("malformed answer")

// Failure is how a call to a plugin failed, as its side reported it.
type Failure int

const (
	// Broken: the call failed below the estimator (the connection, the
	// process, a cancelled stream).
	Broken Failure = iota
	// Refused: the estimator refused the request as such (sdk.BadRequest).
	Refused
	// Failed: the plugin answered that the estimator failed the request.
	Failed
	// Unimplemented: the plugin does not serve the call.
	Unimplemented
)

// Classify says how err, returned by a Client call or stream, failed, and
// gives the message that came with it.
func Classify(err error) (Failure, string) {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.InvalidArgument:
		return Refused, st.Message()
	case codes.FailedPrecondition, codes.NotFound, codes.OutOfRange:
		return Failed, st.Message()
	case codes.Unimplemented:
		return Unimplemented, st.Message()
	}
	return Broken, st.Message()
}

// Catalogue is what a plugin says about itself and its estimators.
type Catalogue struct {
	Plugin, Version, Backend string
	BackendThreads           int
	ProtocolVersion          int
	Estimators               []sdk.Info
}

// Catalogue fetches the plugin's catalogue.
func (c *Client) Catalogue(ctx context.Context) (Catalogue, error) {
	r, err := c.rpc.Catalogue(ctx, &dplrpb.CatalogueRequest{})
	if err != nil {
		return Catalogue{}, err
	}
	out := Catalogue{Plugin: r.GetPlugin(), Version: r.GetVersion(), Backend: r.GetBackend(),
		BackendThreads: int(r.GetBackendThreads()), ProtocolVersion: int(r.GetProtocolVersion())}
	for _, e := range r.GetEstimators() {
		out.Estimators = append(out.Estimators, infoFromProto(e))
	}
	return out, nil
}

// FitRequest is one request to an estimator.
type FitRequest struct {
	Estimator string
	Params    map[string]string
	Grant     privacy.Grant
	// Data is the prepared data set; with Remote set, only its kind, hash
	// and name, the data being held elsewhere with Remote's public shape.
	Data   dataio.Handle
	Remote *data.Remote
	Seed   *uint64
}

func (r FitRequest) proto() *dplrpb.FitRequest {
	h := handleToProto(r.Data)
	if r.Remote != nil {
		h = remoteHandleToProto(r.Data, r.Remote)
	}
	return &dplrpb.FitRequest{Estimator: r.Estimator, Params: r.Params, Grant: grantToProto(r.Grant), Data: h, Seed: r.Seed}
}

// CheckReply is a plugin's answer to the pre-flight check.
type CheckReply struct {
	Footprint  int64 // estimated peak memory of the fit in bytes (0: unknown)
	Mechanisms sdk.Declaration
	Passes     []string // pass kinds a fit on remote data will request
	// Plan is the fit's plan when Check was asked for one and the plugin
	// answers plans (nil otherwise).
	Plan *sdk.Plan
}

// Check asks for the pre-flight check of req on its data's public shape.
// An answer with a negative footprint or a malformed declaration of
// mechanisms is an error wrapping ErrMalformed. With a plan mode other than
// sdk.PlanNone it also asks for the fit's plan (sdk.PlanOf), a dry run
// that spends nothing.
func (c *Client) Check(ctx context.Context, req FitRequest, plan sdk.PlanMode) (CheckReply, error) {
	shape := shapeOf(req.Data)
	if req.Remote != nil {
		shape = remoteShapeOf(req.Data.Kind, req.Remote)
	}
	resp, err := c.rpc.Check(ctx, &dplrpb.CheckRequest{Estimator: req.Estimator, Params: req.Params,
		Grant: grantToProto(req.Grant), Shape: shape, Plan: dplrpb.PlanMode(plan)})
	if err != nil {
		return CheckReply{}, err
	}
	if resp.GetFootprintBytes() < 0 {
		return CheckReply{}, fmt.Errorf("negative memory footprint %d: %w", resp.GetFootprintBytes(), ErrMalformed)
	}
	decl, err := declarationFromProto(resp)
	if err != nil {
		return CheckReply{}, fmt.Errorf("malformed declaration of mechanisms: %w: %w", err, ErrMalformed)
	}
	return CheckReply{Footprint: resp.GetFootprintBytes(), Mechanisms: decl, Passes: resp.GetPasses(), Plan: planFromProto(resp.GetPlan())}, nil
}

// Stream is the stream of a fit's events from the plugin.
type Stream struct {
	recv func() (*dplrpb.FitEvent, error)
	send func(*dplrpb.FitInput) error // nil on a Fit stream
}

// Fit starts a fit on local data.
func (c *Client) Fit(ctx context.Context, req FitRequest) (*Stream, error) {
	s, err := c.rpc.Fit(ctx, req.proto())
	if err != nil {
		return nil, err
	}
	return &Stream{recv: s.Recv}, nil
}

// FitPasses starts a fit whose aggregation passes the host runs (its data
// set is remote): the stream then carries PassParts, answered by Reply.
func (c *Client) FitPasses(ctx context.Context, req FitRequest) (*Stream, error) {
	s, err := c.rpc.FitPasses(ctx)
	if err == nil {
		err = s.Send(&dplrpb.FitInput{Input: &dplrpb.FitInput_Request{Request: req.proto()}})
	}
	if err != nil {
		return nil, err
	}
	return &Stream{recv: s.Recv, send: s.Send}, nil
}

// Event is one message of a fit's stream: an sdk.Progress, a Log, a
// privacy.Step announced before its noise is drawn, a MatrixChunk, the
// Result, or a PassPart; nil for a message of no kind this host knows.
type Event any

// Log is a line the plugin logged.
type Log string

// MatrixChunk is a piece of a matrix output, row-major from Offset.
type MatrixChunk struct {
	Name               string
	Rows, Cols, Offset int64
	Data               []float64
	Release            sdk.Release
	Doc                string
}

// Result ends a fit's stream.
type Result struct {
	Steps                   []privacy.Step
	Scalars                 []sdk.Scalar
	Series                  []sdk.Series
	Guarantee               privacy.Guarantee // zero when the plugin stated none
	Notes                   []string
	Warnings                []string // notes that change the conclusion (sdk.Result.Warnings)
	FitSeconds, LoadSeconds float64
	MaxRSSKiB               int64
}

// PassPart is one message of a pass request (PassRequestAssembler puts
// them together).
type PassPart struct {
	ID   uint64
	Kind string // set on the first message of a request
	m    *dplrpb.PassRequest
}

// Recv returns the next event; io.EOF after the last.
func (s *Stream) Recv() (Event, error) {
	e, err := s.recv()
	if err != nil {
		return nil, err
	}
	switch x := e.GetEvent().(type) {
	case *dplrpb.FitEvent_Progress:
		p := x.Progress
		return sdk.Progress{Stage: p.GetStage(), Done: int(p.GetDone()), Total: int(p.GetTotal()), Message: p.GetMessage()}, nil
	case *dplrpb.FitEvent_Log:
		return Log(x.Log), nil
	case *dplrpb.FitEvent_Step:
		return stepFromProto(x.Step), nil
	case *dplrpb.FitEvent_Matrix:
		c := x.Matrix
		return MatrixChunk{Name: c.GetName(), Rows: c.GetRows(), Cols: c.GetCols(), Offset: c.GetOffset(), Data: c.GetData(),
			Release: sdk.Release(c.GetRelease()), Doc: c.GetDoc()}, nil
	case *dplrpb.FitEvent_Result:
		r := x.Result
		return Result{Steps: stepsFromProto(r.GetSteps()), Scalars: scalarsFromProto(r.GetScalars()), Series: seriesFromProto(r.GetSeries()),
			Guarantee: guaranteeFromProto(r.GetGuarantee()), Notes: r.GetNotes(), Warnings: r.GetWarnings(),
			FitSeconds: r.GetFitSeconds(), LoadSeconds: r.GetLoadSeconds(), MaxRSSKiB: r.GetMaxRssKb()}, nil
	case *dplrpb.FitEvent_Pass:
		return PassPart{ID: x.Pass.GetId(), Kind: x.Pass.GetKind(), m: x.Pass}, nil
	}
	return nil, nil
}

// Reply sends the plugin the result of the pass numbered id (or, with res
// nil, the error text errText).
func (s *Stream) Reply(id uint64, res *data.PassResult, errText string) error {
	if s.send == nil {
		return errors.New("a Fit stream takes no pass replies")
	}
	for _, m := range passReplyMessages(id, res, errText) {
		if err := s.send(&dplrpb.FitInput{Input: &dplrpb.FitInput_Reply{Reply: m}}); err != nil {
			return err
		}
	}
	return nil
}

// TransformRequest asks the estimator that fitted Model to map the rows of
// Data through it, under the transform's own Options.
type TransformRequest struct {
	Model   sdk.Model
	Options map[string]string
	Data    dataio.Handle
}

// Transform starts a transform; its stream carries the output matrix.
func (c *Client) Transform(ctx context.Context, req TransformRequest) (*Stream, error) {
	m := req.Model
	r := &dplrpb.TransformRequest{Estimator: m.Estimator, Params: m.Params, Scalars: m.Scalars, Options: req.Options, Data: handleToProto(req.Data)}
	for _, o := range m.Outputs {
		r.Outputs = append(r.Outputs, &dplrpb.ModelOutput{Name: o.Name, Rows: int64(o.Rows), Cols: int64(o.Cols), Path: o.File, Values: o.Value})
	}
	s, err := c.rpc.Transform(ctx, r)
	if err != nil {
		return nil, err
	}
	return &Stream{recv: s.Recv}, nil
}
