// Command dplr-bad is a deliberately misbehaving dplr plugin used by the
// host's tests. DPLR_BAD_MODE selects the failure.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/proto/dplrpb"
	"github.com/dplr/dplr/engine/transport"
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
		Estimators: []*dplrpb.EstimatorInfo{{Name: "bad-" + s.mode, DataKind: "rows", Grants: []string{"approx"}}}}
	if s.mode == "bad-catalogue" {
		c.Estimators = append(c.Estimators, c.Estimators[0])
	}
	return c, nil
}

func step(rho float64) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Step{Step: &dplrpb.Step{Name: "s", Mechanism: "gaussian", Calibration: "zcdp", Sensitivity: 1, Scale: 1, Rho: rho}}}
}

func result(rho float64) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Result{Result: &dplrpb.FitResult{
		Guarantee: &dplrpb.Guarantee{Kind: "zcdp"}, Composition: "zcdp",
		Steps: []*dplrpb.Step{{Name: "s", Mechanism: "gaussian", Calibration: "zcdp", Sensitivity: 1, Scale: 1, Rho: rho}}}}}
}

func chunk(rows, cols, off int64, data ...float64) *dplrpb.FitEvent {
	return &dplrpb.FitEvent{Event: &dplrpb.FitEvent_Matrix{Matrix: &dplrpb.MatrixChunk{Name: "m", Rows: rows, Cols: cols, Offset: off, Data: data}}}
}

func (s *server) Fit(req *dplrpb.FitRequest, st dplrpb.Estimators_FitServer) error {
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
