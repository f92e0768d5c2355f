// Package transport holds what the dplr host and its plugins must agree on
// to talk over HashiCorp go-plugin: the protocol (dplr.proto, its
// generated code in internal/dplrpb), the versioned handshake, the plugin
// name, and both halves of the adapter: the plugin-side server over SDK
// estimators (Serve, the one line of a plugin's main) and the host-side
// Client. Both speak SDK types; the generated code is internal, so no
// package above this one (the host, the command line) can see it.
package transport

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// ProtocolVersion is the plugin protocol version; it changes whenever
// engine/transport/dplr.proto changes incompatibly.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake dplr hosts and plugins share. The
// cookie only stops a plugin binary from being run by accident; it is not
// a security feature (use checksum pinning for that).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "DPLR_PLUGIN",
	MagicCookieValue: "7b4d1c2e-dplr-estimators-v1",
}

// PluginName is the single plugin kind a dplr plugin binary serves.
const PluginName = "estimators"

// MaxChunk is the number of float64 values per MatrixChunk message
// (512 KiB), well under gRPC's default 4 MiB message limit.
const MaxChunk = 1 << 16

// GRPCPlugin adapts the Estimators gRPC service to go-plugin. Impl is set
// on the plugin side, nil on the host side.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl dplrpb.EstimatorsServer
}

// GRPCServer registers the Estimators service (plugin side).
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	dplrpb.RegisterEstimatorsServer(s, p.Impl)
	return nil
}

// GRPCClient returns a *Client (host side).
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &Client{rpc: dplrpb.NewEstimatorsClient(c)}, nil
}

// PluginSet returns the go-plugin plugin set for a server (nil on the host).
func PluginSet(server dplrpb.EstimatorsServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: server}}
}
