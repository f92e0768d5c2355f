package client

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/sdk"
)

// Client runs dplr: it starts plugins as they are needed, keeps them
// running for later calls, and stops them on Close. It is safe for
// concurrent use.
type Client struct {
	opt  Options
	hopt host.Options

	mu       sync.Mutex
	plugins  []*host.Plugin   // started, in search order
	failed   map[string]error // plugin path → why it did not start
	failures []error          // start failures and ignored duplicates, in order
	shadowed []Shadowed
	all      bool // every discovered plugin was tried
	closed   bool
	closing  []chan struct{} // ledgers closing after a fit (closeLater)
}

// New validates opts once and returns a Client. No plugin is started yet.
func New(opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	hopt, err := opts.hostOptions()
	if err != nil {
		return nil, err
	}
	return &Client{opt: opts, hopt: hopt, failed: map[string]error{}}, nil
}

// Close waits for the ledgers of finished fits to close and stops every
// plugin the client started. The client is unusable afterwards.
func (c *Client) Close() error {
	c.mu.Lock()
	closing := c.closing
	c.closing = nil
	c.mu.Unlock()
	for _, done := range closing {
		<-done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.plugins {
		p.Close()
	}
	c.plugins, c.closed = nil, true
	return nil
}

// closeLater closes a fit's ledger while the caller goes on releasing
// the result (Close waits for it): a fit's records are synced when they
// commit, so what remains is the marker (see ledger.Ledger.Close).
func (c *Client) closeLater(led *ledger.Ledger) {
	done := make(chan struct{})
	c.mu.Lock()
	c.closing = append(slices.DeleteFunc(c.closing, isClosed), done)
	c.mu.Unlock()
	go func() {
		defer close(done)
		_ = led.Close()
	}()
}

func isClosed(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// PluginInfo describes a started plugin.
type PluginInfo struct {
	Name, Version, Path, Backend string
	// Threads is the backend's thread count.
	Threads int
	// Sandboxed reports whether the plugin runs confined by Landlock.
	Sandboxed bool
	// Estimators is the plugin's catalogue.
	Estimators []sdk.Info
}

func pluginInfo(p *host.Plugin) PluginInfo {
	return PluginInfo{Name: p.Name(), Version: p.Version(), Path: p.Path, Backend: p.Backend(),
		Threads: p.Threads(), Sandboxed: p.Sandboxed, Estimators: p.Estimators}
}

// Estimator is one estimator's catalogue entry and the plugin serving it.
type Estimator struct {
	sdk.Info
	Plugin PluginInfo
}

// Plugins starts every plugin of the search path and returns those that
// started, in search order. Plugins that fail are reported by
// StartFailures, never fatal; it is an ErrPlugin error when no plugin is
// installed at all.
func (c *Client) Plugins(ctx context.Context) ([]PluginInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.startAll(ctx); err != nil {
		return nil, err
	}
	out := make([]PluginInfo, len(c.plugins))
	for i, p := range c.plugins {
		out[i] = pluginInfo(p)
	}
	return out, nil
}

// Describe returns an estimator's catalogue entry, starting its plugin if
// needed: first the plugin named after the estimator's prefix before its
// first '-' (dplr-pca for pca-cxz), then, if that one does not serve it,
// every plugin. An unknown estimator is ErrUsage; an estimator whose
// plugin did not start is ErrPlugin.
func (c *Client) Describe(ctx context.Context, estimator string) (Estimator, error) {
	p, info, err := c.lookup(ctx, estimator)
	if err != nil {
		return Estimator{}, err
	}
	return Estimator{Info: info, Plugin: pluginInfo(p)}, nil
}

// StartFailures lists the plugins that did not start and the plugins
// ignored because an earlier one serves an estimator of the same name.
func (c *Client) StartFailures() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.failures...)
}

// Shadowed lists the plugin executables never used because one of the
// same name comes earlier in the search path.
func (c *Client) Shadowed() []Shadowed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Shadowed(nil), c.shadowed...)
}

// find returns the started plugin serving estimator. Callers hold mu.
func (c *Client) find(estimator string) (*host.Plugin, sdk.Info, bool) {
	return host.Plugins(c.plugins).Find(estimator)
}

// discover lists the search path's plugins; none at all is ErrPlugin.
func (c *Client) discover() ([]string, error) {
	dirs := c.opt.pluginDirs()
	paths, shadowed := host.DiscoverAll(dirs)
	c.shadowed = nil
	for _, s := range shadowed {
		c.shadowed = append(c.shadowed, Shadowed{Path: s.Path, By: s.By})
	}
	if len(paths) == 0 {
		return nil, classedf(ErrPlugin, "no dplr-* plugins found in %s (build them with `make build`)", strings.Join(dirs, ", "))
	}
	return paths, nil
}

// lookup finds, starting plugins as needed, the plugin serving estimator.
func (c *Client) lookup(ctx context.Context, estimator string) (*host.Plugin, sdk.Info, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, sdk.Info{}, classedf(ErrUsage, "the client is closed")
	}
	if p, info, ok := c.find(estimator); ok {
		return p, info, nil
	}
	prefixErr, err := c.startPrefix(ctx, estimator)
	if err != nil {
		return nil, sdk.Info{}, err
	}
	if p, info, ok := c.find(estimator); ok {
		return p, info, nil
	}
	if err := c.startAll(ctx); err != nil {
		return nil, sdk.Info{}, err
	}
	if p, info, ok := c.find(estimator); ok {
		return p, info, nil
	}
	if prefixErr != nil {
		// The plugin that should serve the estimator is broken: a plugin
		// failure, with its exit status and stderr.
		return nil, sdk.Info{}, classed(ErrPlugin, prefixErr)
	}
	return nil, sdk.Info{}, c.unserved(estimator)
}

// startPrefix starts the plugin named after the estimator's prefix (the
// first-party convention) and keeps it if it serves the estimator. It
// returns why that plugin did not start (nil if it did or is absent).
func (c *Client) startPrefix(ctx context.Context, estimator string) (prefixErr, err error) {
	if c.all {
		return nil, nil
	}
	paths, err := c.discover()
	if err != nil {
		return nil, err
	}
	prefix, _, _ := strings.Cut(estimator, "-")
	for _, path := range paths {
		if filepath.Base(path) != host.PluginPrefix+prefix || slices.ContainsFunc(c.plugins, func(p *host.Plugin) bool { return p.Path == path }) {
			continue
		}
		p, err := host.Start(ctx, path, c.hopt)
		if err != nil {
			return err, nil
		}
		if _, ok := p.Estimator(estimator); ok {
			c.plugins = append(c.plugins, p)
			return nil, nil
		}
		p.Close()
		return nil, nil
	}
	return nil, nil
}

// unserved is the error for an estimator no started plugin serves.
func (c *Client) unserved(estimator string) error {
	prefix, _, _ := strings.Cut(estimator, "-")
	for path, err := range c.failed {
		if filepath.Base(path) == host.PluginPrefix+prefix {
			return classed(ErrPlugin, fmt.Errorf("estimator %q: its plugin did not start: %w", estimator, err))
		}
	}
	var names []string
	for _, p := range c.plugins {
		for _, e := range p.Estimators {
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	msg := fmt.Errorf("no plugin serves estimator %q (known: %s)", estimator, strings.Join(names, ", "))
	return classed(ErrUsage, also{msg, host.ErrUnknownEstimator})
}

// also is an error with the message of err that also matches extra with
// errors.Is.
type also struct{ err, extra error }

func (a also) Error() string   { return a.err.Error() }
func (a also) Unwrap() []error { return []error{a.err, a.extra} }
