package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// Serve runs the plugin server for ests and does not return. A plugin
// binary's main is one line: transport.Serve(mypkg.Estimators()...). The plugin
// name is the executable's name without its "dplr-" prefix.
//
// Run directly (not by a dplr host), the binary prints a short notice and
// exits with status 1.
func Serve(ests ...sdk.Estimator) {
	srv, err := NewServer(pluginName(), sdk.Version, ests...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dplr plugin:", err)
		os.Exit(1)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         PluginSet(srv),
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "dplr-plugin", Output: os.Stderr, Level: hclog.Warn,
		}),
	})
}

func pluginName() string {
	n := filepath.Base(os.Args[0])
	n = strings.TrimSuffix(n, filepath.Ext(n))
	return strings.TrimPrefix(n, "dplr-")
}

// Server implements the Estimators gRPC service over a set of estimators.
// It is exported so that tests and in-process hosts can serve estimators
// without go-plugin.
type Server struct {
	dplrpb.UnimplementedEstimatorsServer
	name, version string
	ests          []sdk.Estimator
	infos         []sdk.Info // resolved catalogue entries (sdk.InfoOf), in ests order
	byName        map[string]sdk.Estimator
}

// NewServer checks ests (unique names, valid parameter specs) and returns a
// Server for them.
func NewServer(name, version string, ests ...sdk.Estimator) (*Server, error) {
	if len(ests) == 0 {
		return nil, fmt.Errorf("plugin %q serves no estimators", name)
	}
	s := &Server{name: name, version: version, ests: ests, byName: map[string]sdk.Estimator{}}
	for _, e := range ests {
		info, err := sdk.InfoOf(e)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
		if info.Name == "" {
			return nil, fmt.Errorf("plugin %q: an estimator has no name", name)
		}
		if _, dup := s.byName[info.Name]; dup {
			return nil, fmt.Errorf("plugin %q: estimator %q served twice", name, info.Name)
		}
		if err := sdk.CheckSpecs(info.Params); err != nil {
			return nil, fmt.Errorf("plugin %q: estimator %q: invalid parameter specs: %w", name, info.Name, err)
		}
		s.byName[info.Name] = e
		s.infos = append(s.infos, info)
	}
	return s, nil
}

// Catalogue implements dplrpb.EstimatorsServer.
func (s *Server) Catalogue(context.Context, *dplrpb.CatalogueRequest) (*dplrpb.CatalogueResponse, error) {
	be := backend.Default()
	out := &dplrpb.CatalogueResponse{
		Plugin: s.name, Version: s.version, Backend: be.Name(), BackendThreads: int32(be.Threads()),
		ProtocolVersion: ProtocolVersion,
	}
	for _, info := range s.infos {
		out.Estimators = append(out.Estimators, infoToProto(wireInfo(info)))
	}
	return out, nil
}

// Check implements dplrpb.EstimatorsServer: the pre-flight check the host
// makes before reserving budget. It refuses (InvalidArgument) a request
// the estimator would refuse before spending: parameters outside the
// catalogue, a grant of a form the estimator does not accept, data of the
// wrong kind. The footprint is the estimator's estimate of its peak memory
// (0 when it gives none), and the mechanisms those its options declare
// (the shares of their sdk.Planner; mechanisms_declared false without it).
//
// With plan set it also answers the fit's plan (sdk.PlanOf): a dry run of
// the estimator on a public reference data set of the request's shape
// (gen.Reference), which spends nothing and reads no data.
func (s *Server) Check(ctx context.Context, req *dplrpb.CheckRequest) (*dplrpb.CheckResponse, error) {
	est, ok := s.byName[req.GetEstimator()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "plugin %s has no estimator %q", s.name, req.GetEstimator())
	}
	pre, err := prepare(est, req.GetParams(), grantFromProto(req.GetGrant()), shapeFromProto(req.GetShape()))
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%v", err)
	}
	resp := &dplrpb.CheckResponse{FootprintBytes: pre.footprint, Passes: pre.passes}
	declarationToProto(pre.decl, resp)
	if mode := sdk.PlanMode(req.GetPlan()); mode != sdk.PlanNone {
		p, err := sdk.PlanOf(ctx, est, req.GetParams(), grantFromProto(req.GetGrant()), shapeFromProto(req.GetShape()), gen.Reference, mode)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%v", err)
		}
		resp.Plan = planToProto(p)
	}
	return resp, nil
}

// prepared is what the pre-flight preparation found.
type prepared struct {
	footprint int64
	decl      sdk.Declaration
	// passes are the pass kinds a fit on remote data requests.
	passes []string
}

// prepare runs the SDK's pre-flight preparation (sdk.Prepare: validate,
// bind, the options' Check hook, the Footprint estimate), checks the
// grant's form, as the SDK does before a fit, and asks the bound options
// which mechanisms the fit will use (sdk.Declare), returning the fit's
// estimated peak memory and its declaration; on remote data
// (shape.Remote) also the pass kinds the fit will request (sdk.PassesOf:
// an estimator that needs the rows refuses).
func prepare(est sdk.Estimator, raw map[string]string, grant privacy.Grant, shape sdk.Shape) (prepared, error) {
	var none prepared
	info, err := sdk.InfoOf(est)
	if err != nil {
		return none, err
	}
	if shape.Kind != info.DataKind {
		return none, fmt.Errorf("estimator %s takes %s data, got %s data", info.Name, info.DataKind, shape.Kind)
	}
	opts, footprint, err := sdk.Prepare(info, raw, shape)
	if err != nil {
		return none, err
	}
	var passes []string
	if shape.Remote {
		if passes, err = sdk.PassesOf(est, opts, shape); err != nil {
			return none, err
		}
	}
	if err := grant.Validate(); err != nil {
		return none, err
	}
	if !slices.Contains(info.Grants, grant.Kind) {
		return none, fmt.Errorf("estimator %s does not accept a %s budget (accepts %v)", info.Name, grant.Kind, info.Grants)
	}
	decl, err := sdk.Declare(info, opts, shape, grant)
	if err != nil {
		return none, err
	}
	return prepared{footprint: footprint, decl: decl, passes: passes}, nil
}

// Fit implements dplrpb.EstimatorsServer.
func (s *Server) Fit(req *dplrpb.FitRequest, stream dplrpb.Estimators_FitServer) error {
	est, ok := s.byName[req.GetEstimator()]
	if !ok {
		return status.Errorf(codes.NotFound, "plugin %s has no estimator %q", s.name, req.GetEstimator())
	}
	if req.GetData().GetRemote() != nil {
		return status.Errorf(codes.InvalidArgument, "a remote data set is reached only through aggregation passes: the host must call FitPasses")
	}
	var mu sync.Mutex // stream.Send is not safe for concurrent use
	send := func(ev *dplrpb.FitEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(ev)
	}
	return s.fit(stream.Context(), est, req, send, func() (*data.Dataset, io.Closer, error) { return openHandle(req.GetData()) })
}

// fit runs est on the data set open returns and streams the fit's events
// through send.
func (s *Server) fit(ctx context.Context, est sdk.Estimator, req *dplrpb.FitRequest, send func(*dplrpb.FitEvent) error,
	open func() (*data.Dataset, io.Closer, error)) error {
	t0 := time.Now()
	ds, closer, err := open()
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "opening data set: %v", err)
	}
	defer closer.Close()
	loadSec := time.Since(t0).Seconds()

	var (
		mu           sync.Mutex // guards lastProgress
		lastProgress time.Time
	)
	opt := sdk.LocalOptions{
		Progress: func(p sdk.Progress) {
			// Throttle: at most ~20 events a second, but always the last one.
			mu.Lock()
			now := time.Now()
			skip := now.Sub(lastProgress) < 50*time.Millisecond && p.Done < p.Total
			if !skip {
				lastProgress = now
			}
			mu.Unlock()
			if !skip {
				_ = send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Progress{Progress: &dplrpb.Progress{
					Stage: p.Stage, Done: int64(p.Done), Total: int64(p.Total), Message: p.Message}}})
			}
		},
		Logf: func(format string, args ...any) {
			_ = send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Log{Log: fmt.Sprintf(format, args...)}})
		},
		OnStep: func(st privacy.Step) {
			_ = send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Step{Step: stepToProto(st)}})
		},
	}
	if req.Seed != nil {
		seed := req.GetSeed()
		opt.Seed = &seed
	}
	t1 := time.Now()
	res, acct, err := sdk.RunLocal(ctx, est, ds, req.GetParams(), grantFromProto(req.GetGrant()), opt)
	fitSec := time.Since(t1).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return status.Errorf(codes.Canceled, "%v", err)
		}
		if sdk.IsBadRequest(err) || invalidBeforeSpending(err, acct) {
			return status.Errorf(codes.InvalidArgument, "%v", err)
		}
		return status.Errorf(codes.FailedPrecondition, "%v", err)
	}
	for _, m := range res.Matrices {
		if err := sendMatrix(send, m); err != nil {
			return err
		}
	}
	return send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Result{Result: finalResult(res, acct, fitSec, loadSec)}})
}

// finalResult is the result message of a fit. fit_seconds, load_seconds
// and max_rss_kb are of release class Diagnostic (sdk.TimingRelease), as are
// the estimator's own timings, which travel as Diagnostic scalars: none of
// them is ever labelled public.
func finalResult(res *sdk.Result, acct *privacy.Accountant, fitSec, loadSec float64) *dplrpb.FitResult {
	final := &dplrpb.FitResult{
		Guarantee: guaranteeToProto(res.Guarantee), Composition: acct.Achieved().Composition,
		Notes: res.Notes, Warnings: res.Warnings, FitSeconds: fitSec, LoadSeconds: loadSec, MaxRssKb: sdk.MaxRSSKiB(),
	}
	for _, st := range acct.Steps() {
		final.Steps = append(final.Steps, stepToProto(st))
	}
	for _, sc := range res.Scalars {
		final.Scalars = append(final.Scalars, &dplrpb.Scalar{Name: sc.Name, Value: sc.Value, Release: string(sc.Release), Doc: sc.Doc})
	}
	for _, tm := range res.Timings {
		final.Scalars = append(final.Scalars, &dplrpb.Scalar{Name: tm.Name, Value: tm.Seconds, Release: string(sdk.TimingRelease), Doc: tm.Doc})
	}
	for _, se := range res.Series {
		final.Series = append(final.Series, &dplrpb.Series{Name: se.Name, Values: se.Values, Release: string(se.Release), Doc: se.Doc})
	}
	return final
}

// invalidBeforeSpending reports a budget no step could be calibrated to
// (privacy.ErrInvalidBudget: a noise scale outside the representable range,
// say, from clip = 1e-300) met before any privacy step was accepted: the
// request as such is unusable, like a BadRequest, and the host reports it
// as a usage error.
func invalidBeforeSpending(err error, acct *privacy.Accountant) bool {
	return errors.Is(err, privacy.ErrInvalidBudget) && (acct == nil || len(acct.Steps()) == 0)
}

// wireInfo is info as the catalogue sends it: exclusive bounds folded into
// inclusive ones (ParamSpec.Inclusive), which the wire form carries.
func wireInfo(info sdk.Info) sdk.Info {
	info.Options = nil
	info.Params = append([]sdk.ParamSpec(nil), info.Params...)
	for i, p := range info.Params {
		p = p.Inclusive()
		info.Params[i] = p
	}
	return info
}

func sendMatrix(send func(*dplrpb.FitEvent) error, m sdk.Matrix) error {
	if m.M == nil || m.M.IsEmpty() {
		return status.Errorf(codes.Internal, "matrix output %q is empty", m.Name)
	}
	r, c := m.M.Dims()
	flat := make([]float64, 0, min(r*c, MaxChunk))
	off := 0
	flush := func() error {
		if len(flat) == 0 {
			return nil
		}
		err := send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Matrix{Matrix: &dplrpb.MatrixChunk{
			Name: m.Name, Rows: int64(r), Cols: int64(c), Release: string(m.Release), Doc: m.Doc,
			Offset: int64(off), Data: flat}}})
		off += len(flat)
		flat = flat[:0:0]
		flat = make([]float64, 0, min(r*c-off, MaxChunk))
		return err
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			flat = append(flat, m.M.At(i, j))
			if len(flat) == MaxChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// openHandle opens the data set of a request, as a plugin does: X
// memory-mapped read-only, no copy. The Closer unmaps it.
func openHandle(h *dplrpb.DatasetHandle) (*data.Dataset, io.Closer, error) {
	if h == nil {
		return nil, nil, errors.New("request carries no data set")
	}
	return dataio.Open(handleFromProto(h))
}

// Transform implements dplrpb.EstimatorsServer: it maps the request's rows
// through the model by the estimator's sdk.Transformer and sends the one
// output matrix. No privacy step can be taken (there is no Run).
func (s *Server) Transform(req *dplrpb.TransformRequest, stream dplrpb.Estimators_TransformServer) error {
	est, ok := s.byName[req.GetEstimator()]
	if !ok {
		return status.Errorf(codes.NotFound, "plugin %s has no estimator %q", s.name, req.GetEstimator())
	}
	t, ok := est.(sdk.Transformer)
	if !ok {
		return status.Errorf(codes.InvalidArgument, "estimator %s has no transform", req.GetEstimator())
	}
	ds, closer, err := openHandle(req.GetData())
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "opening the rows: %v", err)
	}
	defer closer.Close()
	if ds = ds.WithDenseX(); ds.X == nil {
		return status.Errorf(codes.InvalidArgument, "a transform takes rows")
	}
	m := &sdk.Model{Estimator: req.GetEstimator(), Params: req.GetParams(), Scalars: req.GetScalars()}
	for _, o := range req.GetOutputs() {
		m.Outputs = append(m.Outputs, sdk.ModelOutput{Name: o.GetName(), Rows: int(o.GetRows()), Cols: int(o.GetCols()), File: o.GetPath(), Value: o.GetValues()})
	}
	y, err := t.Transform(stream.Context(), m, req.GetOptions(), ds.X)
	if err != nil {
		if sdk.IsBadRequest(err) {
			return status.Errorf(codes.InvalidArgument, "%v", err)
		}
		return status.Errorf(codes.FailedPrecondition, "%v", err)
	}
	return sendMatrix(stream.Send, y)
}
