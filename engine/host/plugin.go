package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// ErrPlugin is wrapped by every error caused by a misbehaving plugin.
var ErrPlugin = errors.New("plugin failure")

// Options configures how plugins are started.
type Options struct {
	// StartTimeout bounds starting a plugin: executing it, its handshake
	// and the connection (default 10 s).
	StartTimeout time.Duration
	// CallTimeout bounds a catalogue call and a plugin's shutdown (default
	// 10 s). Fits are bounded by their context only.
	CallTimeout time.Duration
	// Manifest, when non-nil, pins plugin binaries: a plugin missing from
	// it or with another checksum is refused, and the bytes verified are
	// the bytes executed (from a private copy).
	Manifest Manifest
	// Stderr receives the plugins' own log output (nil discards it).
	Stderr io.Writer
	// MaxStdout and MaxStderr bound the bytes read from a plugin's
	// standard output and standard error (defaults DefaultMaxStdout and
	// DefaultMaxStderr). A plugin that writes more is killed and reported.
	MaxStdout, MaxStderr int64
	// MaxOutputBytes bounds the total size of a fit's output matrices
	// (default DefaultMaxOutputBytes()).
	MaxOutputBytes int64
	// NoSandbox starts plugins without Landlock confinement even where the
	// kernel supports it.
	NoSandbox bool
	// CatalogueDir, when set, caches each plugin executable's catalogue
	// (see Start).
	CatalogueDir string
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

func (o Options) ioLimits() ioLimits {
	l := ioLimits{stdout: o.MaxStdout, stderr: o.MaxStderr}
	if l.stdout <= 0 {
		l.stdout = DefaultMaxStdout
	}
	if l.stderr <= 0 {
		l.stderr = DefaultMaxStderr
	}
	return l
}

// Plugin is a plugin executable, its catalogue and the processes it runs.
type Plugin struct {
	Path       string
	Catalogue  transport.Catalogue
	Estimators []sdk.Info
	// Sandboxed reports whether the plugin runs confined by Landlock.
	Sandboxed bool

	opt     Options
	image   *execImage
	outputs OutputBudget

	// The process that answers checks (and fits when not sandboxed),
	// started by Start or, when the catalogue was cached, by warm; ready
	// is closed once proc or procErr is set.
	starting sync.Once
	ready    chan struct{}
	proc     *proc
	rpc      *transport.Client
	procErr  error
	closed   bool

	mu   sync.Mutex
	fits map[*proc]bool // processes running fits (sandboxed plugins)
	fit  *proc          // the fit process Exited reports on, if not proc
}

// proc is one started plugin process and its connection.
type proc struct {
	client  *plugin.Client
	run     *procRunner
	rpc     *transport.Client
	release sync.Once // of the run directory
}

// Start returns the plugin at path with its catalogue: read from the
// catalogue cache (Options.CatalogueDir) when it holds the executable's,
// else from a started process (kept to answer checks), then cached. Every
// phase is bounded (Options.StartTimeout, CallTimeout); whatever fails, no
// process is left behind.
func Start(ctx context.Context, path string, opt Options) (p *Plugin, err error) {
	img, err := prepareExec(path, opt.Manifest)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w: %w", path, err, ErrPlugin)
	}
	if cat, ok := cachedCatalogue(opt.CatalogueDir, path); ok {
		return newPlugin(path, cat, opt, img), nil
	}
	pr, cat, err := startCatalogue(ctx, path, img.path, opt)
	if err != nil {
		img.remove()
		return nil, err
	}
	keepCatalogue(opt.CatalogueDir, path, cat)
	p = newPlugin(path, cat, opt, img)
	p.starting.Do(func() { p.proc, p.rpc = pr, pr.rpc; close(p.ready) })
	return p, nil
}

func newPlugin(path string, cat transport.Catalogue, opt Options, img *execImage) *Plugin {
	return &Plugin{Path: path, Catalogue: cat, Sandboxed: sandboxed(opt), opt: opt, image: img,
		Estimators: cat.Estimators, outputs: OutputBudget{MaxBytes: opt.MaxOutputBytes}, ready: make(chan struct{})}
}

// sandboxed reports whether plugins started with opt are confined.
func sandboxed(opt Options) bool {
	_, err := landlockABI()
	return !opt.NoSandbox && err == nil
}

// startCatalogue starts a process of the executable execPath (shown as
// path) and reads its catalogue; on error nothing is left running.
func startCatalogue(ctx context.Context, path, execPath string, opt Options) (pr *proc, cat transport.Catalogue, err error) {
	pr, err = launch(ctx, path, execPath, opt, nil)
	if err != nil {
		return nil, cat, err
	}
	defer func() {
		if err != nil {
			pr.kill(opt.callTimeout())
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, opt.callTimeout())
	defer cancel()
	cat, err = pr.rpc.Catalogue(cctx)
	if err != nil {
		if ferr := pr.run.floodErr(); ferr != nil {
			return nil, cat, fmt.Errorf("plugin %s: catalogue call: %w: %w", path, ferr, ErrPlugin)
		}
		if ctx.Err() == nil && pr.run.Exited() {
			return nil, cat, fmt.Errorf("plugin %s: catalogue call: %w (%s): %w", path, err, pr.run.exitSummary(), ErrPlugin)
		}
		return nil, cat, fmt.Errorf("plugin %s: catalogue call: %w: %w", path, err, ErrPlugin)
	}
	if err := checkCatalogue(cat); err != nil {
		return nil, cat, fmt.Errorf("plugin %s: malformed catalogue: %w: %w", path, err, ErrPlugin)
	}
	return pr, cat, nil
}

// warm starts, in the background, the process that answers the plugin's
// checks (and its fits when it is not sandboxed), if it is not running.
func (p *Plugin) warm() {
	p.starting.Do(func() {
		go func() {
			pr, err := p.startChecked()
			p.mu.Lock()
			p.proc, p.procErr = pr, err
			if pr != nil {
				p.rpc = pr.rpc
			}
			p.mu.Unlock()
			close(p.ready)
		}()
	})
}

// startChecked starts the process for a plugin whose catalogue was cached
// and checks that it answers the same catalogue (else the entry is
// removed and the plugin refused: it changed since it was cached).
func (p *Plugin) startChecked() (*proc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opt.startTimeout()+p.opt.callTimeout())
	defer cancel()
	pr, cat, err := startCatalogue(ctx, p.Path, p.image.path, p.opt)
	if err != nil {
		return nil, err
	}
	if !sameCatalogue(cat, p.Catalogue) {
		pr.kill(p.opt.callTimeout())
		forgetCatalogue(p.opt.CatalogueDir, p.Path)
		return nil, fmt.Errorf("plugin %s changed since its catalogue was read; run the command again: %w", p.Path, ErrPlugin)
	}
	return pr, nil
}

// process returns the plugin's process, started if needed (see warm).
func (p *Plugin) process(ctx context.Context) (*proc, *transport.Client, error) {
	p.warm()
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, fmt.Errorf("plugin %s: closed: %w", p.Name(), ErrPlugin)
	}
	return p.proc, p.rpc, p.procErr
}

// launch starts one process of the plugin executable execPath (shown as
// name) and connects to it. readPaths are the files the process may read
// beyond its own needs when it is sandboxed. On error nothing is left
// running.
func launch(ctx context.Context, name, execPath string, opt Options, readPaths []string) (*proc, error) {
	base, err := acquireRunDir()
	if err != nil {
		return nil, fmt.Errorf("starting plugin %s: %w: %w", name, err, ErrPlugin)
	}
	released := false
	defer func() {
		if !released {
			releaseRunDir()
		}
	}()
	var sb *sandboxSpec
	if !opt.NoSandbox {
		if _, err := landlockABI(); err == nil {
			sb = &sandboxSpec{exec: append(append([]string(nil), systemReadPaths...), execPath), read: readPaths}
		}
	}
	slot := &runnerSlot{}
	client := plugin.NewClient(clientConfig(name, execPath, base, opt, sb, slot))
	resc := connect(client)
	// go-plugin's own StartTimeout covers the wait for the handshake line
	// only; this one covers the whole start, connection included.
	timer := time.NewTimer(opt.startTimeout())
	defer timer.Stop()
	var res connection
	received := false
	select {
	case res = <-resc:
		received = true
	case <-timer.C:
		res.err = fmt.Errorf("no working connection within %s (--plugin-timeout)", opt.startTimeout())
	case <-ctx.Done():
		res.err = ctx.Err()
	}
	pr := &proc{client: client, run: slot.get(), rpc: res.rpc}
	released = true // pr.kill releases the run directory
	if res.err == nil {
		return pr, nil
	}
	return nil, failedStart(pr, name, opt, res.err, received, resc)
}

// runnerSlot holds the process runner go-plugin creates, once it has; the
// forwarded-output writers read it concurrently.
type runnerSlot struct {
	mu  sync.Mutex
	run *procRunner
}

func (s *runnerSlot) get() *procRunner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

func (s *runnerSlot) set(r *procRunner) {
	s.mu.Lock()
	s.run = r
	s.mu.Unlock()
}

// clientConfig is the go-plugin configuration that starts execPath (shown
// as name) with its socket under base, in the sandbox sb if not nil, and
// records its runner in slot.
func clientConfig(name, execPath, base string, opt Options, sb *sandboxSpec, slot *runnerSlot) *plugin.ClientConfig {
	lim := opt.ioLimits()
	logOut := discardIfNil(opt.Stderr)
	return &plugin.ClientConfig{
		HandshakeConfig:  transport.Handshake,
		Plugins:          transport.PluginSet(nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     opt.startTimeout(),
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "dplr", Output: logOut, Level: hclog.Warn}),
		SyncStdout:       &boundedWriter{w: logOut, limit: lim.stderr, what: "stdout (forwarded)", run: slot.get},
		SyncStderr:       &boundedWriter{w: logOut, limit: lim.stderr, what: "stderr (forwarded)", run: slot.get, tail: true},
		SkipHostEnv:      true,
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: base},
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
			cmd := exec.Command(execPath)
			cmd.Args[0] = name
			// The handshake variables go-plugin set on spec, after the
			// host's environment minus what plugins must not see.
			cmd.Env = append(pluginEnv(os.Environ()), spec.Env...)
			var s *sandboxSpec
			if sb != nil {
				cp := *sb
				cp.rw = []string{socketDir}
				s = &cp
			}
			r := newProcRunner(cmd, name, s, lim)
			slot.set(r)
			return r, nil
		},
	}
}

// connection is the outcome of connecting to a started plugin.
type connection struct {
	rpc *transport.Client
	err error
}

// connect starts client's process and dispenses its estimators service in
// a goroutine; the outcome arrives on the returned channel.
func connect(client *plugin.Client) <-chan connection {
	resc := make(chan connection, 1)
	go func() {
		rpcClient, err := client.Client()
		if err != nil {
			resc <- connection{err: err}
			return
		}
		raw, err := rpcClient.Dispense(transport.PluginName)
		if err != nil {
			resc <- connection{err: err}
			return
		}
		est, ok := raw.(*transport.Client)
		if !ok {
			resc <- connection{err: fmt.Errorf("unexpected client type %T", raw)}
			return
		}
		resc <- connection{rpc: est}
	}()
	return resc
}

// failedStart ends the process of a start that failed with err and says
// why; received is whether the connecting goroutine (resc) has answered.
func failedStart(pr *proc, name string, opt Options, err error, received bool, resc <-chan connection) error {
	// Let a process that is exiting by itself finish, so that its exit
	// status can be reported, then make sure it is gone.
	if r := pr.run; r != nil {
		grace := time.NewTimer(exitGrace)
		select {
		case <-r.done:
			// Its last words: stderr is read to its end once the process
			// (and, in its PID namespace, every child) is gone.
			select {
			case <-r.stderrDone:
			case <-grace.C:
			}
		case <-grace.C:
		}
		grace.Stop()
	}
	why := startFailure(pr.run, err)
	pr.kill(opt.callTimeout())
	if !received {
		// Wait for the connecting goroutine: with the process dead it
		// returns.
		select {
		case <-resc:
		case <-time.After(killWait):
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("starting plugin %s: %s: %w", name, why, err)
	}
	return fmt.Errorf("starting plugin %s: %s: %w", name, why, ErrPlugin)
}

// exitGrace is how long a failed start waits for the plugin to exit by
// itself before killing it, so that its own exit status is reported.
const exitGrace = 250 * time.Millisecond

// startFailure explains why a plugin did not start, from what the host
// observed of its process rather than go-plugin's generic message.
func startFailure(r *procRunner, err error) string {
	if r == nil {
		return clip(firstLine(err.Error()), 300)
	}
	if ferr := r.floodErr(); ferr != nil {
		return ferr.Error()
	}
	why := goPluginReason(err)
	if s := r.exitSummary(); s != "" {
		return why + ": " + s
	}
	return why
}

// goPluginReason rephrases go-plugin's start errors: its "Unrecognized
// remote plugin message" (with a paragraph of generic advice) covers both
// a process that said nothing and one that printed something else, and
// quotes the offending line whole.
func goPluginReason(err error) string {
	m := err.Error()
	if rest, ok := strings.CutPrefix(m, "Unrecognized remote plugin message: "); ok {
		if line := firstLine(rest); line != "" {
			return fmt.Sprintf("its first line on stdout is not a plugin handshake: %q", clip(line, 120))
		}
		return "it did not complete the handshake"
	}
	if m == "plugin exited before we could connect" {
		return "it did not complete the handshake"
	}
	return clip(firstLine(m), 300)
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// kill stops the process (its whole process group), waiting at most wait
// for go-plugin's bookkeeping to finish.
func (pr *proc) kill(wait time.Duration) {
	if pr == nil {
		return
	}
	defer pr.release.Do(releaseRunDir)
	if pr.run != nil {
		_ = pr.run.Kill(context.Background())
	}
	done := make(chan struct{})
	go func() {
		pr.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
}

func discardIfNil(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func checkCatalogue(c transport.Catalogue) error {
	if c.Plugin == "" {
		return errors.New("no plugin name")
	}
	if c.ProtocolVersion != transport.ProtocolVersion {
		return fmt.Errorf("protocol version %d, host speaks %d", c.ProtocolVersion, transport.ProtocolVersion)
	}
	if len(c.Estimators) == 0 {
		return errors.New("no estimators")
	}
	seen := map[string]bool{}
	for _, e := range c.Estimators {
		if e.Name == "" || seen[e.Name] {
			return fmt.Errorf("estimator name %q empty or repeated", e.Name)
		}
		seen[e.Name] = true
		if err := sdk.CheckSpecs(e.Params); err != nil {
			return fmt.Errorf("estimator %s: %w", e.Name, err)
		}
	}
	return nil
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.Catalogue.Plugin }

// Backend is the linear-algebra backend the plugin was built with.
func (p *Plugin) Backend() string { return p.Catalogue.Backend }

// Estimator returns the catalogue entry of the named estimator.
func (p *Plugin) Estimator(name string) (sdk.Info, bool) {
	for _, e := range p.Estimators {
		if e.Name == name {
			return e, true
		}
	}
	return sdk.Info{}, false
}

// Exited reports whether the plugin process has exited (the one running
// the current or last fit, when fits run in their own process).
func (p *Plugin) Exited() bool {
	p.mu.Lock()
	pr := p.fit
	if pr == nil {
		pr = p.proc
	}
	p.mu.Unlock()
	if pr == nil || pr.run == nil {
		return false
	}
	return pr.run.Exited()
}

// Close stops the plugin's processes (with their process groups) and
// removes the private copy of its executable. It returns within the call
// timeout whatever the plugin does, once a process warm is starting has
// started or failed.
func (p *Plugin) Close() {
	p.starting.Do(func() { close(p.ready) })
	<-p.ready
	p.mu.Lock()
	fits, pr := p.fits, p.proc
	p.fits, p.fit, p.proc, p.rpc, p.closed = nil, nil, nil, nil, true
	p.mu.Unlock()
	for f := range fits {
		f.kill(p.opt.callTimeout())
	}
	pr.kill(p.opt.callTimeout())
	p.image.remove()
}

// floodErr is the error recorded when the process wrote more than the
// host reads, or nil.
func (pr *proc) floodErr() error {
	if pr == nil || pr.run == nil {
		return nil
	}
	return pr.run.floodErr()
}
