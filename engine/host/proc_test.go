//go:build linux

package host

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/dataio"
)

// safety bounds a test step that hangs without the containment under
// test; it is a failure bound, not a performance claim.
const safety = 30 * time.Second

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

// buildHostile compiles engine/transport/testdata/dplr-hostile once per test binary.
func buildHostile(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dplr-hostile")
		if err != nil {
			hostileErr = err
			return
		}
		hostileBin = filepath.Join(dir, "dplr-hostile")
		if out, err := exec.Command("go", "build", "-o", hostileBin, "../transport/testdata/dplr-hostile").CombinedOutput(); err != nil {
			hostileErr = fmt.Errorf("%w: %s", err, out)
		}
	})
	require.NoError(t, hostileErr)
	return hostileBin
}

// within runs f and fails the test if it has not returned after safety.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(safety):
		t.Fatalf("%s did not return within %s", what, safety)
	}
}

// versionField returns key's value in the hostile plugin's catalogue
// version ("pid=1;home=;read=ok;child=2").
func versionField(p *Plugin, key string) string {
	for _, kv := range strings.Split(p.Catalogue.Version, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// gone reports whether pid no longer runs (a zombie counts as gone: it
// has exited and only waits for a parent to reap it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(safety)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) still runs %s later", what, pid, safety)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHostHelperProcess is not a test: run by TestPluginsDieWithTheirHost
// as a host process, it starts the plugin named by DPLR_TEST_HOST_PLUGIN,
// prints the plugin's pid and waits to be killed.
func TestHostHelperProcess(t *testing.T) {
	path := os.Getenv("DPLR_TEST_HOST_PLUGIN")
	if path == "" {
		t.Skip("helper process only")
	}
	p, err := Start(context.Background(), path, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("pid %d %s %t\n", p.proc.run.pid, strings.Join(childPIDs(p.proc.run.pid), ","), PIDNamespaces())
	// Keep writing: once the reader is gone, the next write raises SIGPIPE,
	// which kills the host as `dplr plugins | head -1` does.
	for {
		time.Sleep(20 * time.Millisecond)
		fmt.Println("tick")
	}
}

// childPIDs lists pid's children (host pids, whatever namespace they run
// in).
func childPIDs(pid int) []string {
	var out []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err == nil {
			out = append(out, strings.Fields(string(b))...)
		}
	}
	return out
}

func TestPluginsDieWithTheirHost(t *testing.T) {
	bin := buildHostile(t)
	for _, death := range []string{"SIGKILL", "SIGPIPE"} {
		t.Run(death, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHostHelperProcess$")
			cmd.Env = append(os.Environ(), "DPLR_TEST_HOST_PLUGIN="+bin, "DPLR_HOSTILE_MODE=grandchild")
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var line string
			within(t, "the helper host's plugin start", func() {
				line, err = bufio.NewReader(out).ReadString('\n')
			})
			require.NoError(t, err)
			f := strings.Fields(line)
			require.Len(t, f, 4, line)
			require.Equal(t, "pid", f[0], line)
			pid, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			require.False(t, gone(pid))
			child, err := strconv.Atoi(f[2])
			require.NoError(t, err, "the plugin's child: %s", line)
			defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()

			if death == "SIGKILL" {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL)) // kill -9 of the host
			} else {
				require.NoError(t, out.Close()) // the reader goes away, as head does
			}
			within(t, "the helper host's death", func() { _ = cmd.Wait() })
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled(), "the host died by a signal: %v", cmd.ProcessState)
			waitGone(t, pid, "the plugin of a host killed by "+death)
			if f[3] != "true" {
				t.Logf("user namespaces unavailable: the plugin's own child (pid %d) may outlive a host killed by %s", child, death)
				return
			}
			waitGone(t, child, "the child of the plugin of a host killed by "+death)
		})
	}
}

// A plugin that leaves its process group (setsid) still dies on Close.
func TestCloseKillsAPluginThatLeftItsGroup(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "setsid-escape")
	p, err := Start(context.Background(), bin, Options{})
	require.NoError(t, err)
	pid := p.proc.run.pid
	within(t, "Close", p.Close)
	waitGone(t, pid, "a plugin that left its process group")
}

func TestCloseKillsGrandchildrenHoldingThePipes(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "grandchild")
	p, err := Start(context.Background(), bin, Options{})
	require.NoError(t, err)
	kids := childPIDs(p.proc.run.pid)
	require.Len(t, kids, 1)
	child, err := strconv.Atoi(kids[0])
	require.NoError(t, err)
	within(t, "Close", p.Close)
	waitGone(t, child, "the plugin's child")
}

func TestStartFailuresAreBoundedAndExplained(t *testing.T) {
	bin := buildHostile(t)
	cases := []struct {
		mode, bytes string
		want        []string
	}{
		// A plugin that cannot start: its exit status and stderr, not
		// go-plugin's "Unrecognized remote plugin message".
		{"fail-start", "", []string{"exited with status 7", "cannot load libfoo.so"}},
		// It exits but a child holds its stdout: no wait for EOF.
		{"grandchild-exit", "", []string{"exited with status 3"}},
		// Floods without a handshake.
		{"stdout-flood", "", []string{"more than 32768 bytes on stdout"}},
		{"stdout-lines", "", []string{"not a plugin handshake", `"garbage garbage`}},
		{"stderr-flood", strconv.Itoa(40 << 20), []string{"more than 16777216 bytes on stderr"}},
		{"stderr-flood-noline", strconv.Itoa(40 << 20), []string{"more than 16777216 bytes on stderr"}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv("DPLR_HOSTILE_MODE", tc.mode)
			t.Setenv("DPLR_HOSTILE_BYTES", tc.bytes)
			var err error
			within(t, "Start", func() {
				var p *Plugin
				p, err = Start(context.Background(), bin, Options{StartTimeout: 20 * time.Second})
				if p != nil {
					p.Close()
				}
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrPlugin)
			assert.NotContains(t, err.Error(), "Unrecognized remote plugin message")
			if tc.mode == "stdout-lines" && strings.Contains(err.Error(), "output flood") {
				// Many garbage lines: which refusal comes first, the
				// handshake parser's or the byte bound's, depends on
				// scheduling (seen under -race); both end the start.
				return
			}
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestFloodAfterTheHandshakeKillsThePlugin(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "post-handshake-flood")
	p, err := Start(context.Background(), bin, Options{})
	if err != nil {
		// The flood may already have been caught during the start.
		assert.Contains(t, err.Error(), "bytes on stdout")
		return
	}
	defer p.Close()
	deadline := time.Now().Add(safety)
	for !p.Exited() {
		require.False(t, time.Now().After(deadline), "a plugin flooding its stdout after the handshake keeps running")
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFitStderrFloodIsBounded(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "fit-stderr-flood")
	t.Setenv("DPLR_HOSTILE_BYTES", strconv.Itoa(40<<20))
	p, err := Start(context.Background(), bin, Options{})
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	_, err = p.Fit(ctx, fitReq("hostile-fit-stderr-flood"), Events{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the flood, not the test's safety timeout, ends the fit")
	assert.ErrorIs(t, err, ErrPlugin)
}

func TestOutputsAreBoundedInTotal(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "big-outputs")
	// Three 8 MiB matrices; each fits the bound, all three do not.
	p, err := Start(context.Background(), bin, Options{MaxOutputBytes: 20 << 20})
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	_, err = p.Fit(ctx, fitReq("hostile-big-outputs"), Events{})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPlugin)
	assert.Contains(t, err.Error(), `matrix "c"`)
	assert.Contains(t, err.Error(), "20971520 bytes in all")
}

func TestLongTMPDIRStillStartsPlugins(t *testing.T) {
	dir := buildPlugins(t)
	long := t.TempDir()
	for len(long) < 150 {
		long = filepath.Join(long, "a-rather-long-directory-name")
	}
	require.NoError(t, os.MkdirAll(long, 0o700))
	t.Setenv("TMPDIR", long)
	p, err := Start(context.Background(), filepath.Join(dir, "dplr-example"), Options{})
	require.NoError(t, err, "a long TMPDIR must not make the plugin socket path too long")
	p.Close()
}

func TestPluginsDoNotSeeTheLedgerHome(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "ok")
	t.Setenv("DPLR_HOME", "/secret/dplr-home")
	p, err := Start(context.Background(), bin, Options{})
	require.NoError(t, err)
	defer p.Close()
	assert.Equal(t, "", versionField(p, "home"), "DPLR_HOME reached the plugin")
}

func TestManifestExecutesTheVerifiedBytes(t *testing.T) {
	dir := buildPlugins(t)
	work := t.TempDir()
	good := filepath.Join(work, "good")
	bad := filepath.Join(work, "bad")
	copyFile(t, filepath.Join(dir, "dplr-example"), good)
	copyFile(t, filepath.Join(dir, "dplr-bad"), bad)
	sum, err := fileSHA256(good)
	require.NoError(t, err)
	mf := filepath.Join(work, "SHA256SUMS")
	require.NoError(t, os.WriteFile(mf, []byte(hex.EncodeToString(sum)+"  dplr-example\n"), 0o644))
	m, err := ReadManifest(mf)
	require.NoError(t, err)

	target := filepath.Join(work, "plugins", "dplr-example")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
	require.NoError(t, os.Link(good, target))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Swap the listed binary and an unlisted one, atomically, in a loop.
		defer wg.Done()
		tmp := target + ".tmp"
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src := good
			if i%2 == 1 {
				src = bad
			}
			_ = os.Remove(tmp)
			if os.Link(src, tmp) == nil {
				_ = os.Rename(tmp, target)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	t.Setenv("DPLR_BAD_MODE", "ok")
	started := 0
	for i := 0; i < 40; i++ {
		p, err := Start(context.Background(), target, Options{Manifest: m})
		if err != nil {
			assert.ErrorIs(t, err, ErrPlugin)
			continue
		}
		started++
		assert.Equal(t, "example", p.Name(), "an unlisted binary was executed")
		p.Close()
	}
	t.Logf("%d of 40 starts passed the checksum", started)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o755))
}

func TestSandboxConfinesPluginsToTheirData(t *testing.T) {
	ok, status := SandboxStatus()
	t.Log(status)
	if !ok {
		t.Skip(status)
	}
	bin := buildHostile(t)
	secret := filepath.Join(t.TempDir(), "ledger.db")
	require.NoError(t, os.WriteFile(secret, []byte("budget"), 0o600))
	dataFile := filepath.Join(t.TempDir(), "x.f64")
	require.NoError(t, os.WriteFile(dataFile, make([]byte, 64), 0o600))
	t.Setenv("DPLR_HOSTILE_MODE", "read")
	t.Setenv("DPLR_HOSTILE_READ", secret)

	fitLog := func(p *Plugin) string {
		req := fitReq("hostile-read")
		req.Data = dataio.Handle{X: dataio.FileRef{Path: dataFile}}
		var log string
		_, _ = p.Fit(context.Background(), req, Events{Log: func(s string) { log += s }})
		return log
	}

	p, err := Start(context.Background(), bin, Options{})
	require.NoError(t, err)
	defer p.Close()
	assert.True(t, p.Sandboxed)
	assert.Equal(t, "denied", versionField(p, "read"), "the catalogue process read a file outside its sandbox")
	assert.Equal(t, "data=ok;other=denied", fitLog(p), "a fit reads its data set and nothing else")
	// A second fit runs in a fresh process as well.
	assert.Equal(t, "data=ok;other=denied", fitLog(p))

	// Without the sandbox the same plugin reads the file: the check above
	// is the sandbox's doing.
	q, err := Start(context.Background(), bin, Options{NoSandbox: true})
	require.NoError(t, err)
	defer q.Close()
	assert.False(t, q.Sandboxed)
	assert.Equal(t, "ok", versionField(q, "read"))
	assert.Equal(t, "data=ok;other=ok", fitLog(q))
}

// Concurrent fits on one sandboxed plugin each run in their own process;
// one fit's start does not stop another's.
func TestConcurrentFitsOnOnePlugin(t *testing.T) {
	bin := buildHostile(t)
	t.Setenv("DPLR_HOSTILE_MODE", "slow")
	p, err := Start(context.Background(), bin, Options{})
	require.NoError(t, err)
	defer p.Close()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.Fit(context.Background(), fitReq("hostile-slow"), Events{})
		}()
		time.Sleep(50 * time.Millisecond) // overlapping, not simultaneous, starts
	}
	within(t, "four concurrent fits", wg.Wait)
	for _, err := range errs {
		// Each stream ends as the plugin ends it (without a result), none
		// cut short by another fit's start.
		require.Error(t, err)
		assert.Contains(t, err.Error(), "without a result")
	}
}

// The run directories live in this user's own directory of the temporary
// directory, so the sweep reads only dplr's entries; a name another user
// (or a careless mode) made first is not used.
func TestRunBaseIsThisUsersPrivateDirectory(t *testing.T) {
	d := t.TempDir()
	p, ok := runBase(d)
	require.True(t, ok)
	assert.Equal(t, filepath.Join(d, fmt.Sprintf("dplr-u%d", os.Getuid())), p)
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	again, ok := runBase(d)
	assert.True(t, ok, "an existing directory of ours is reused")
	assert.Equal(t, p, again)

	require.NoError(t, os.Chmod(p, 0o755))
	_, ok = runBase(d)
	assert.False(t, ok, "a directory others can enter is refused")

	other := t.TempDir()
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(other, fmt.Sprintf("dplr-u%d", os.Getuid()))))
	_, ok = runBase(other)
	assert.False(t, ok, "a symbolic link is refused")
}

// A killed dplr's work directories (named after its process id) are
// removed by the next sweep; those of running processes, and entries of
// any other name, stay.
func TestSweepDeadRemovesOnlyDeadProcessesDirectories(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := cmd.Process.Pid
	base := t.TempDir()
	names := map[string]bool{ // name: removed
		fmt.Sprintf("beam-%d-123", dead):           true,
		fmt.Sprintf("beam-%d-456", os.Getpid()):    false,
		fmt.Sprintf("beam-%d-789", os.Getppid()):   false,
		"beam-123456789":                           false, // no process id
		fmt.Sprintf("other-%d-1", dead):            false,
		fmt.Sprintf("beam-%d-file", dead) + ".txt": false,
	}
	for n := range names {
		if strings.HasSuffix(n, ".txt") {
			require.NoError(t, os.WriteFile(filepath.Join(base, n), nil, 0o600))
			continue
		}
		require.NoError(t, os.Mkdir(filepath.Join(base, n), 0o700))
	}
	SweepDead(base, "beam-")
	for n, removed := range names {
		_, err := os.Stat(filepath.Join(base, n))
		assert.Equal(t, removed, os.IsNotExist(err), n)
	}
}
