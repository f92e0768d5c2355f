package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dplr/dplr/engine/proto/dplrpb"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// ErrPlugin is wrapped by every error caused by a misbehaving plugin.
var ErrPlugin = errors.New("plugin failure")

// Options configures how plugins are started.
type Options struct {
	// StartTimeout bounds the handshake (default 10 s).
	StartTimeout time.Duration
	// CallTimeout bounds a catalogue call (default 10 s). Fits are bounded
	// by their context only.
	CallTimeout time.Duration
	// Manifest, when non-nil, pins plugin binaries: a plugin missing from
	// it or with another checksum is refused.
	Manifest Manifest
	// Stderr receives the plugins' own log output (nil discards it).
	Stderr io.Writer
}

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return 10 * time.Second
}

func (o Options) callTimeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return 10 * time.Second
}

// Plugin is a running plugin process.
type Plugin struct {
	Path       string
	Catalogue  *dplrpb.CatalogueResponse
	Estimators []sdk.Info
	client     *plugin.Client
	rpc        dplrpb.EstimatorsClient
}

// Start launches the plugin at path, completes the handshake and fetches
// its catalogue.
func Start(ctx context.Context, path string, opt Options) (p *Plugin, err error) {
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  transport.Handshake,
		Plugins:          transport.PluginSet(nil),
		Cmd:              exec.Command(path),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     opt.startTimeout(),
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "dplr", Output: discardIfNil(opt.Stderr), Level: hclog.Warn}),
		SyncStderr:       discardIfNil(opt.Stderr),
	}
	if opt.Manifest != nil {
		sum, ok := opt.Manifest[filepath.Base(path)]
		if !ok {
			return nil, fmt.Errorf("plugin %s is not listed in the checksum manifest: %w", path, ErrPlugin)
		}
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	client := plugin.NewClient(cfg)
	defer func() {
		if err != nil {
			client.Kill()
		}
	}()
	rpcClient, err := client.Client()
	if err != nil {
		return nil, fmt.Errorf("starting plugin %s: %w: %w", path, err, ErrPlugin)
	}
	raw, err := rpcClient.Dispense(transport.PluginName)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w: %w", path, err, ErrPlugin)
	}
	est, ok := raw.(dplrpb.EstimatorsClient)
	if !ok {
		return nil, fmt.Errorf("plugin %s: unexpected client type %T: %w", path, raw, ErrPlugin)
	}
	cctx, cancel := context.WithTimeout(ctx, opt.callTimeout())
	defer cancel()
	cat, err := est.Catalogue(cctx, &dplrpb.CatalogueRequest{})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: catalogue call: %w: %w", path, err, ErrPlugin)
	}
	if err := checkCatalogue(cat); err != nil {
		return nil, fmt.Errorf("plugin %s: malformed catalogue: %w: %w", path, err, ErrPlugin)
	}
	p = &Plugin{Path: path, Catalogue: cat, client: client, rpc: est}
	for _, e := range cat.GetEstimators() {
		p.Estimators = append(p.Estimators, transport.InfoFromProto(e))
	}
	return p, nil
}

func discardIfNil(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func checkCatalogue(c *dplrpb.CatalogueResponse) error {
	if c.GetPlugin() == "" {
		return errors.New("no plugin name")
	}
	if c.GetProtocolVersion() != transport.ProtocolVersion {
		return fmt.Errorf("protocol version %d, host speaks %d", c.GetProtocolVersion(), transport.ProtocolVersion)
	}
	if len(c.GetEstimators()) == 0 {
		return errors.New("no estimators")
	}
	seen := map[string]bool{}
	for _, e := range c.GetEstimators() {
		if e.GetName() == "" || seen[e.GetName()] {
			return fmt.Errorf("estimator name %q empty or repeated", e.GetName())
		}
		seen[e.GetName()] = true
		if err := sdk.CheckSpecs(transport.InfoFromProto(e).Params); err != nil {
			return fmt.Errorf("estimator %s: %w", e.GetName(), err)
		}
	}
	return nil
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.Catalogue.GetPlugin() }

// Backend is the linear-algebra backend the plugin was built with.
func (p *Plugin) Backend() string { return p.Catalogue.GetBackend() }

// Estimator returns the catalogue entry of the named estimator.
func (p *Plugin) Estimator(name string) (sdk.Info, bool) {
	for _, e := range p.Estimators {
		if e.Name == name {
			return e, true
		}
	}
	return sdk.Info{}, false
}

// Exited reports whether the plugin process has exited.
func (p *Plugin) Exited() bool { return p.client.Exited() }

// Close stops the plugin process.
func (p *Plugin) Close() { p.client.Kill() }
