package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin/runner"
)

// Default bounds on what the host reads from a plugin process.
const (
	// DefaultMaxStdout bounds the bytes the host reads from a plugin's
	// standard output file descriptor. Only the handshake line belongs
	// there (go-plugin forwards os.Stdout writes made after the handshake
	// through its stdio stream, bounded separately); the line is a few
	// hundred bytes.
	DefaultMaxStdout = 32 << 10
	// DefaultMaxStderr bounds the bytes the host reads from a plugin's
	// standard error, counting both the file descriptor and go-plugin's
	// forwarded stream. Plugins report progress and logs as fit events.
	DefaultMaxStderr = 16 << 20
	// stderrTail is how much of a plugin's stderr is kept for error
	// messages.
	stderrTail = 2 << 10
)

// errFlood is wrapped when a plugin wrote more than the host reads.
var errFlood = errors.New("output flood")

// procRunner runs one plugin process for go-plugin (it implements
// runner.Runner). Unlike go-plugin's own runner it starts the process from
// a dedicated OS thread (spawn), optionally confined with Landlock, in its
// own process group that it kills whole; bounds what it reads from stdout
// and stderr, keeping stderr's tail for errors; and reaps the process
// itself, so its exit is known even while a grandchild holds its pipes.
type procRunner struct {
	cmd     *exec.Cmd
	name    string // the plugin path shown to users
	sandbox *sandboxSpec
	limits  ioLimits

	stdoutR, stderrR *os.File
	stdout, stderr   io.ReadCloser

	started    chan struct{} // closed once Start has returned successfully
	done       chan struct{} // closed once the process has been reaped
	stderrDone chan struct{} // closed once stderr has been read to its end
	process    *os.Process
	pid        int

	mu         sync.Mutex
	waitErr    error
	state      *os.ProcessState
	flood      error
	tail       tailBuffer
	closed     bool
	hostKilled bool // the host killed the process (its exit says nothing)
	killOnce   sync.Once
}

// ioLimits are the byte bounds of one plugin's output streams.
type ioLimits struct {
	stdout, stderr int64
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(cmd *exec.Cmd, name string, sb *sandboxSpec, lim ioLimits) *procRunner {
	return &procRunner{cmd: cmd, name: name, sandbox: sb, limits: lim,
		started: make(chan struct{}), done: make(chan struct{}), stderrDone: make(chan struct{})}
}

// Start implements runner.Runner.
func (r *procRunner) Start(ctx context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("plugin stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("plugin stderr pipe: %w", err)
	}
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	r.stdoutR, r.stderrR = outR, errR
	r.stdout = &boundedReader{r: outR, limit: r.limits.stdout, what: "stdout", run: r}
	r.stderr = &boundedReader{r: errR, limit: r.limits.stderr, what: "stderr", run: r, tail: true, ended: r.stderrDone}
	proc, err := spawn(r.cmd, r.sandbox, r.reaped)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fmt.Errorf("executing plugin %s: %w", r.name, err)
	}
	r.process, r.pid = proc, proc.Pid
	close(r.started)
	return nil
}

// reaped records the process's exit; spawn calls it from the thread that
// started the process, once the process is gone.
func (r *procRunner) reaped(st *os.ProcessState, err error) {
	r.mu.Lock()
	r.waitErr = err
	r.state = st
	r.mu.Unlock()
	close(r.done)
	// Grandchildren may still hold the pipes: they belong to the plugin's
	// process group and die with it. Whatever escaped the group cannot
	// keep the host's readers blocked for long.
	if st != nil {
		killGroup(st.Pid())
	}
	time.AfterFunc(pipeGrace, r.closePipes)
}

// pipeGrace is how long the pipes stay open after the plugin exited, for
// its last stderr lines to be read.
const pipeGrace = 500 * time.Millisecond

func (r *procRunner) closePipes() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.stdoutR != nil {
		r.stdoutR.Close()
	}
	if r.stderrR != nil {
		r.stderrR.Close()
	}
}

// Wait implements runner.Runner.
func (r *procRunner) Wait(ctx context.Context) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitErr
}

// Kill implements runner.Runner: it kills the plugin's process group, waits
// (boundedly) for the plugin to be reaped and releases the pipes.
func (r *procRunner) Kill(ctx context.Context) error {
	select {
	case <-r.started:
	default:
		return nil
	}
	r.killOnce.Do(func() {
		r.mu.Lock()
		r.hostKilled = true
		r.mu.Unlock()
		killGroup(r.pid)
		_ = r.process.Kill()
	})
	select {
	case <-r.done:
	case <-time.After(killWait):
	}
	r.closePipes()
	return nil
}

// killWait bounds how long Kill waits for a killed process to be reaped
// (a process in uninterruptible sleep cannot be hurried).
const killWait = 5 * time.Second

// Exited reports whether the process has been reaped.
func (r *procRunner) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Stdout implements runner.Runner.
func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr implements runner.Runner.
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }

// Name implements runner.Runner.
func (r *procRunner) Name() string { return r.name }

// ID implements runner.Runner.
func (r *procRunner) ID() string {
	select {
	case <-r.started:
		return fmt.Sprint(r.pid)
	default:
		return ""
	}
}

// Diagnose implements runner.Runner.
func (r *procRunner) Diagnose(context.Context) string { return r.exitSummary() }

// PluginToHost implements runner.AddrTranslator (identity).
func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }

// HostToPlugin implements runner.AddrTranslator (identity).
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// flooded records that a stream exceeded its bound and kills the plugin.
func (r *procRunner) flooded(what string, limit int64) {
	r.mu.Lock()
	first := r.flood == nil
	if first {
		r.flood = fmt.Errorf("it wrote more than %d bytes on %s, the most the host reads: %w", limit, what, errFlood)
	}
	r.mu.Unlock()
	if first {
		go func() { _ = r.Kill(context.Background()) }()
	}
}

// floodErr is the error recorded when a bound was exceeded, or nil.
func (r *procRunner) floodErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flood
}

// exitSummary describes how the process ended and the tail of its stderr,
// for error messages ("" while it runs and said nothing).
func (r *procRunner) exitSummary() string {
	var b strings.Builder
	if r.Exited() {
		r.mu.Lock()
		st := r.state
		if r.hostKilled && st != nil && st.ExitCode() == -1 {
			st = nil // killed by a signal, most likely the host's own
		}
		r.mu.Unlock()
		if st != nil {
			fmt.Fprintf(&b, "the plugin process %s", exitText(st))
		}
	}
	r.mu.Lock()
	tail := strings.TrimSpace(string(r.tail.bytes()))
	r.mu.Unlock()
	if tail != "" {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "its stderr ends with:\n%s", indent(tail))
	}
	return b.String()
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// boundedReader reads at most limit bytes from r; past that it reports
// the flood to its runner (which kills the plugin) and fails.
type boundedReader struct {
	r     io.ReadCloser
	limit int64
	n     int64
	what  string
	run   *procRunner
	tail  bool
	ended chan struct{} // closed at the first error or end of stream (nil: none)
	once  sync.Once
}

func (b *boundedReader) Read(p []byte) (n int, err error) {
	defer func() {
		if err != nil && b.ended != nil {
			b.once.Do(func() { close(b.ended) })
		}
	}()
	if b.n >= b.limit {
		b.run.flooded(b.what, b.limit)
		return 0, fmt.Errorf("plugin %s: %w", b.what, errFlood)
	}
	if rem := b.limit - b.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err = b.r.Read(p)
	b.n += int64(n)
	if b.tail && n > 0 {
		b.run.mu.Lock()
		b.run.tail.write(p[:n])
		b.run.mu.Unlock()
	}
	if err != nil && errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

func (b *boundedReader) Close() error { return b.r.Close() }

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct {
	buf []byte
}

func (t *tailBuffer) write(p []byte) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrTail; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

func (t *tailBuffer) bytes() []byte { return t.buf }

// boundedWriter passes at most limit bytes to w (nil: discard) and
// reports a flood past that; go-plugin writes the plugin's forwarded
// os.Stdout/os.Stderr here.
type boundedWriter struct {
	mu    sync.Mutex
	w     io.Writer
	n     int64
	limit int64
	what  string
	run   func() *procRunner
	tail  bool
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(len(p))
	r := b.run()
	if b.n > b.limit {
		if r != nil {
			r.flooded(b.what, b.limit)
		}
		return 0, fmt.Errorf("plugin %s: %w", b.what, errFlood)
	}
	if b.tail && r != nil {
		r.mu.Lock()
		r.tail.write(p)
		r.mu.Unlock()
	}
	if b.w != nil {
		_, _ = b.w.Write(p)
	}
	return len(p), nil
}

// pluginEnv is the environment plugins run with: the host's, minus
// variables that locate the budget ledger or look like secrets. A plugin
// has no business knowing where the ledger lives.
func pluginEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if hiddenFromPlugins(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// hiddenFromPlugins reports whether the environment variable name is
// withheld from plugins.
func hiddenFromPlugins(name string) bool {
	switch name {
	case "DPLR_HOME", "DPLR_PLUGIN_PATH", "XDG_DATA_HOME", "LOCALAPPDATA":
		return true
	}
	up := strings.ToUpper(name)
	for _, s := range []string{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "PRIVATE_KEY"} {
		if strings.Contains(up, s) {
			return true
		}
	}
	return false
}

// socketBase returns the directory under which this host makes its run
// directory: this user's directory for dplr processes (runBase) in the
// first candidate short enough for a unix socket path (108 bytes on
// Linux, 104 on macOS). "dplr-uUUUUUUUUUU/" (up to 17 bytes, Linux only),
// "dplr-PID-NNNNNNNNNN/" (24), "plugin-dirNNNNNNNNNN/" (21) and
// "pluginNNNNNNNNNN" (16) leave 24 bytes for the candidate; a longer
// TMPDIR is skipped for the next candidate.
func socketBase() (string, error) {
	const maxBase = 24
	cands := []string{os.TempDir(), os.Getenv("XDG_RUNTIME_DIR"), "/tmp", "/dev/shm", "/var/tmp"}
	for _, d := range cands {
		if d == "" || len(d) > maxBase {
			continue
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		if b, ok := runBase(d); ok {
			return b, nil
		}
	}
	return "", fmt.Errorf("no writable temporary directory with a path under %d bytes for the plugin socket (TMPDIR=%q is too long for a unix socket path; set TMPDIR to a short directory)", maxBase, os.TempDir())
}

// runDir is the host process's private directory (mode 0700) for plugin
// socket directories and private executable copies. It exists while some
// plugin process or copy uses it. A host that dies without removing it
// (SIGKILL, SIGPIPE) leaves it behind; the next host removes it.
var runDir struct {
	mu    sync.Mutex
	path  string
	users int
}

// acquireRunDir returns the run directory, creating it (and removing
// those of dead hosts) if needed; releaseRunDir must follow.
func acquireRunDir() (string, error) {
	runDir.mu.Lock()
	defer runDir.mu.Unlock()
	if runDir.path == "" {
		base, err := socketBase()
		if err != nil {
			return "", err
		}
		SweepDead(base, "dplr-")
		d, err := os.MkdirTemp(base, fmt.Sprintf("dplr-%d-", os.Getpid()))
		if err != nil {
			return "", fmt.Errorf("plugin run directory: %w", err)
		}
		runDir.path = d
	}
	runDir.users++
	return runDir.path, nil
}

// releaseRunDir drops one use of the run directory, removing it after the
// last.
func releaseRunDir() {
	runDir.mu.Lock()
	defer runDir.mu.Unlock()
	runDir.users--
	if runDir.users <= 0 && runDir.path != "" {
		os.RemoveAll(runDir.path)
		runDir.path, runDir.users = "", 0
	}
}

// SweepDead removes the directories in base named prefix<pid>-… (the
// private work directories of dplr processes, named after their process
// id) whose process no longer runs and that belong to this user: what a
// killed dplr leaves behind. Other entries are left alone.
func SweepDead(base, prefix string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || pidAlive(pid) {
			continue
		}
		if info, err := e.Info(); err == nil && ownedByUs(info) {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}
