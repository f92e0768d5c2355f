// Command dplr-bad is a deliberately misbehaving (or hostile) dplr plugin
// used by the host's tests. DPLR_BAD_MODE selects the failure; its one
// estimator is named "bad-<mode>". Unless a mode says otherwise, its
// privacy steps are Gaussian steps whose declared ρ follows from their
// sensitivity and scale, so that only the misbehaviour under test fails.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

type server struct {
	dplrpb.UnimplementedEstimatorsServer
	mode string
}

func (s *server) Catalogue(context.Context, *dplrpb.CatalogueRequest) (*dplrpb.CatalogueResponse, error) {
	if s.mode == "hang-catalogue" {
		time.Sleep(time.Hour)
	}
	c := &dplrpb.CatalogueResponse{Plugin: "bad", Version: "0", Backend: "gonum", ProtocolVersion: transport.ProtocolVersion,
		Estimators: []*dplrpb.EstimatorInfo{{Name: "bad-" + s.mode, DataKind: "rows", Grants: []string{"pure", "approx", "zcdp"},
			Remote: strings.HasPrefix(s.mode, "pass-")}}}
	if s.mode == "bad-catalogue" {
		c.Estimators = append(c.Estimators, c.Estimators[0])
	}
	return c, nil
}

// gauss is a Gaussian step of sensitivity 1 whose σ = 1/sqrt(2ρ) implies
// exactly the declared ρ.
func gauss(rho float64) *dplrpb.Step {
	return &dplrpb.Step{Name: "s", Mechanism: "gaussian", Calibration: "zcdp", Sensitivity: 1, Scale: 1 / math.Sqrt(2*rho), Rho: rho}
}

func announce(s *dplrpb.Step) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Step{Step: s}}
}

func step(rho float64) *dplrpb.FitEvent { return announce(gauss(rho)) }

func resultOf(kind string, steps ...*dplrpb.Step) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Result{Result: &dplrpb.FitResult{
		Guarantee: &dplrpb.Guarantee{Kind: kind}, Composition: "zcdp", Steps: steps}}}
}

func result(rho float64) *dplrpb.FitEvent { return resultOf("zcdp", gauss(rho)) }

// Check implements the pre-flight check: modes "footprint" (claims 1 PiB),
// "check-refuse" (refuses the request), "hang-check" (never answers) and
// "no-check" (a plugin built before the call); the others accept.
func (s *server) Check(ctx context.Context, req *dplrpb.CheckRequest) (*dplrpb.CheckResponse, error) {
	s = s.forEstimator(req.GetEstimator())
	if req.GetShape().GetRemote() {
		// The pass modes declare rows.moment, except pass-declare-none
		// (declares nothing) and pass-declare-unknown (a kind no host
		// knows).
		switch s.mode {
		case "pass-declare-none":
			return &dplrpb.CheckResponse{FootprintBytes: 1 << 20}, nil
		case "pass-declare-unknown":
			return &dplrpb.CheckResponse{FootprintBytes: 1 << 20, Passes: []string{"rows.everything"}}, nil
		}
		return &dplrpb.CheckResponse{FootprintBytes: 1 << 20, Passes: []string{"rows.moment"}}, nil
	}
	switch s.mode {
	case "hang-check":
		<-ctx.Done()
		time.Sleep(time.Hour)
	case "footprint":
		return &dplrpb.CheckResponse{FootprintBytes: 1 << 50}, nil
	case "check-refuse":
		return nil, status.Errorf(codes.InvalidArgument, "clip = 1e-300 leaves no representable noise scale")
	case "no-check":
		return nil, status.Errorf(codes.Unimplemented, "method Check not implemented")
	case "declare-gauss", "under-declare":
		// under-declare declares Gaussian steps only, then takes a Laplace
		// step: the lie the host must catch after the fit.
		return declare(use("gaussian", "the released matrix")), nil
	case "declare-exponential":
		// Honest Gaussian steps, but declares an exponential-mechanism
		// quantile too (as pca's clip=auto does).
		return declare(use("gaussian", "the released matrix"), use("exponential", "clip quantile (clip=auto)")), nil
	case "declare-laplace":
		// Declares, and takes, one Laplace step.
		return declare(use("laplace", "the mean")), nil
	case "declare-unknown":
		return declare(use("quantum", "a mechanism no host can verify")), nil
	case "declare-undeclared":
		// Lists mechanisms without declaring them: malformed.
		r := declare(use("gaussian", ""))
		r.MechanismsDeclared = false
		return r, nil
	}
	return &dplrpb.CheckResponse{FootprintBytes: 1 << 20}, nil
}

func use(mech, purpose string) *dplrpb.CheckResponse_MechanismUse {
	return &dplrpb.CheckResponse_MechanismUse{Mechanism: mech, Purpose: purpose}
}

func declare(uses ...*dplrpb.CheckResponse_MechanismUse) *dplrpb.CheckResponse {
	return &dplrpb.CheckResponse{FootprintBytes: 1 << 20, MechanismsDeclared: true, Mechanisms: uses}
}

// laplace is a Laplace step of sensitivity 1 and scale 2: ε = 0.5.
func laplace() *dplrpb.Step {
	return &dplrpb.Step{Name: "mean", Mechanism: "laplace", Calibration: "pure", Sensitivity: 1, Scale: 2, Epsilon: 0.5}
}

// grantRho is the zCDP budget of a zCDP grant, and ρ = 0.01 (which fits
// the tests' (ε = 1, δ = 1e-6) grants) otherwise.
func grantRho(g *dplrpb.Grant) float64 {
	if g.GetKind() == "zcdp" {
		return g.GetRho()
	}
	return 0.01
}

// hostile runs the modes that lie about their privacy cost or release.
func (s *server) hostile(req *dplrpb.FitRequest, st dplrpb.Estimators_FitServer) (bool, error) {
	switch s.mode {
	case "tenfold":
		// Announces (and lists) a step costing 10× the grant.
		big := gauss(10 * grantRho(req.GetGrant()))
		_ = st.Send(announce(big))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		return true, st.Send(resultOf("zcdp", big))
	case "tiny-epsilon":
		// A Laplace step of sensitivity 1 and scale 1 costs ε = 1; it
		// declares ε = 1e-6.
		lap := &dplrpb.Step{Name: "s", Mechanism: "laplace", Calibration: "pure", Sensitivity: 1, Scale: 1, Epsilon: 1e-6}
		_ = st.Send(announce(lap))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		return true, st.Send(resultOf("pure", lap))
	case "none-public":
		// No privacy step, guarantee "none", and a public output.
		_ = st.Send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Matrix{Matrix: &dplrpb.MatrixChunk{Name: "m", Rows: 1, Cols: 2, Release: "public", Data: []float64{1, 2}}}})
		return true, st.Send(resultOf("none"))
	case "rho-mismatch":
		// σ = 1 on sensitivity 1 costs ρ = 1/2; it declares ρ = 0.01.
		cheap := &dplrpb.Step{Name: "s", Mechanism: "gaussian", Calibration: "zcdp", Sensitivity: 1, Scale: 1, Rho: 0.01}
		_ = st.Send(announce(cheap))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		return true, st.Send(resultOf("zcdp", cheap))
	case "swap-steps":
		// Announces a step costing the whole grant, lists a cheaper one.
		rho := grantRho(req.GetGrant())
		_ = st.Send(announce(gauss(rho)))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		return true, st.Send(resultOf("zcdp", gauss(rho/100)))
	case "die-before-step":
		// Dies (as on an out-of-memory error) before any privacy step.
		time.Sleep(20 * time.Millisecond)
		os.Exit(2)
	case "under-declare", "laplace", "declare-laplace":
		// A Laplace step (ε = 0.5); under-declare promised Gaussian steps
		// only, laplace declared nothing.
		_ = st.Send(announce(laplace()))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		return true, st.Send(resultOf("approx", laplace()))
	case "bad-neighbours":
		// A valid Gaussian step, and a guarantee whose neighbour relation
		// says neither replace-one nor add/remove.
		rho := grantRho(req.GetGrant())
		_ = st.Send(announce(gauss(rho)))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		r := resultOf("zcdp", gauss(rho))
		r.GetResult().Guarantee.Neighbours = "neighbouring data sets"
		return true, st.Send(r)
	case "hang-before-step":
		// Loads forever without taking a step, until cancelled. It says
		// so first, so that a test can interrupt it at that point.
		_ = st.Send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Progress{Progress: &dplrpb.Progress{Stage: "loading"}}})
		<-st.Context().Done()
		return true, status.Errorf(codes.Canceled, "cancelled while loading")
	}
	return false, nil
}

func chunk(rows, cols, off int64, data ...float64) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Matrix{Matrix: &dplrpb.MatrixChunk{Name: "m", Rows: rows, Cols: cols, Offset: off, Data: data}}}
}

// forEstimator is the server in the mode the requested estimator names
// ("bad-<mode>"): each fit runs in a fresh plugin process started with the
// environment of the moment, so a test holding plugins of several modes
// over one ledger is served by the mode it asks for.
func (s *server) forEstimator(est string) *server {
	if m, ok := strings.CutPrefix(est, "bad-"); ok {
		return &server{mode: m}
	}
	return s
}

func (s *server) Fit(req *dplrpb.FitRequest, st dplrpb.Estimators_FitServer) error {
	s = s.forEstimator(req.GetEstimator())
	if done, err := s.hostile(req, st); done {
		return err
	}
	switch s.mode {
	case "crash-fit":
		_ = st.Send(step(0.01))
		time.Sleep(50 * time.Millisecond)
		os.Exit(3)
	case "hang-fit":
		_ = st.Send(step(0.01))
		<-st.Context().Done()
		time.Sleep(time.Hour)
	case "overspend":
		_ = st.Send(step(1e6))
		return st.Send(result(1e6))
	case "nan":
		_ = st.Send(step(0.01))
		_ = st.Send(chunk(1, 2, 0, 1, math.NaN()))
		return st.Send(result(0.01))
	case "short-matrix":
		_ = st.Send(step(0.01))
		_ = st.Send(chunk(2, 2, 0, 1, 2, 3))
		return st.Send(result(0.01))
	case "out-of-order":
		_ = st.Send(step(0.01))
		_ = st.Send(chunk(1, 4, 2, 1, 2))
		return st.Send(result(0.01))
	case "no-result":
		_ = st.Send(step(0.01))
		return nil
	case "unannounced-step":
		return st.Send(result(0.01))
	case "understate":
		// Spends ρ = 0.01 but claims ρ = 1e-9 in its guarantee.
		_ = st.Send(step(0.01))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		r := result(0.01)
		r.GetResult().Guarantee.Rho = 1e-9
		return st.Send(r)
	case "estimator-error":
		return status.Errorf(codes.FailedPrecondition, "rank 99 exceeds the data's 3 columns")
	case "bad-request":
		return status.Errorf(codes.InvalidArgument, "lambda lists 2 values but rank is 3")
	case "late-refusal":
		// Refuses the request after announcing a privacy step: a breach of
		// the protocol's contract the host must still charge for.
		_ = st.Send(step(0.01))
		return status.Errorf(codes.InvalidArgument, "changed its mind")
	}
	_ = st.Send(step(0.01))
	_ = st.Send(chunk(1, 2, 0, 1, 2))
	return st.Send(result(0.01))
}

func passEvent(m *dplrpb.PassRequest) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Pass{Pass: m}}
}

func moment(id uint64, clip float64) *dplrpb.FitEvent {
	return passEvent(&dplrpb.PassRequest{Id: id, Kind: "rows.moment", Params: map[string]float64{"clip": clip}, Done: true})
}

// awaitReply reads the host's reply to one pass (all its messages).
func awaitReply(st dplrpb.Estimators_FitPassesServer) error {
	for {
		in, err := st.Recv()
		if err != nil {
			return err
		}
		if in.GetReply().GetError() != "" {
			return status.Errorf(codes.FailedPrecondition, "host: %s", in.GetReply().GetError())
		}
		if in.GetReply().GetDone() {
			return nil
		}
	}
}

// FitPasses serves the pass modes: each misbehaves in the way its name
// says, on the pass protocol.
func (s *server) FitPasses(st dplrpb.Estimators_FitPassesServer) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	s = s.forEstimator(first.GetRequest().GetEstimator())
	switch s.mode {
	case "pass-undeclared":
		_ = st.Send(passEvent(&dplrpb.PassRequest{Id: 1, Kind: "rows.raw", Done: true}))
	case "pass-after-step":
		// Takes a privacy step, then asks for an undeclared kind.
		_ = st.Send(step(0.01))
		_ = st.Send(passEvent(&dplrpb.PassRequest{Id: 1, Kind: "rows.raw", Done: true}))
	case "pass-nan":
		_ = st.Send(moment(1, math.NaN()))
	case "pass-negative":
		_ = st.Send(moment(1, -1))
	case "pass-huge":
		// An input claiming 2⁶⁰ values: the host must not allocate it.
		_ = st.Send(passEvent(&dplrpb.PassRequest{Id: 1, Kind: "rows.moment", Params: map[string]float64{"clip": 1},
			Inputs: []*dplrpb.ArrayChunk{{Name: "x", Rows: 1 << 30, Cols: 1 << 30, Data: []float64{1}}}}))
	case "pass-wrong-id":
		_ = st.Send(moment(7, 1))
	case "pass-endless":
		// Asks for passes until the host stops it.
		for id := uint64(1); ; id++ {
			if err := st.Send(moment(id, 1)); err != nil {
				return err
			}
			if err := awaitReply(st); err != nil {
				return err
			}
		}
	case "pass-two":
		// Asks for a second pass without waiting for the first's reply.
		_ = st.Send(moment(1, 1))
		_ = st.Send(moment(2, 1))
	case "pass-unread":
		// Asks for a pass and never reads the reply.
		_ = st.Send(moment(1, 1))
	case "pass-ok":
		// Honest: one pass, then one step and a result.
		if err := st.Send(moment(1, 1)); err != nil {
			return err
		}
		if err := awaitReply(st); err != nil {
			return err
		}
		_ = st.Send(step(0.01))
		_ = st.Send(chunk(1, 2, 0, 1, 2))
		return st.Send(result(0.01))
	default:
		return status.Errorf(codes.Unimplemented, "method FitPasses not implemented")
	}
	<-st.Context().Done()
	return status.Errorf(codes.Canceled, "cancelled")
}

func main() {
	mode := os.Getenv("DPLR_BAD_MODE")
	switch mode {
	case "hang-start":
		time.Sleep(time.Hour)
	case "garbage-stdout":
		fmt.Println("this is not a handshake")
		os.Exit(0)
	case "exit-start":
		os.Exit(2)
	}
	hs := transport.Handshake
	if mode == "wrong-version" {
		hs.ProtocolVersion = 99
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         transport.PluginSet(&server{mode: mode}),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
