//go:build linux

package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// spawn starts cmd from a dedicated, locked OS thread and reaps it from
// that same thread, calling reaped with cmd.Wait's error. The thread lives
// exactly as long as the plugin:
//
//   - Linux sends a process's parent-death signal when the *thread* that
//     created it exits, not the process; starting plugins from arbitrary
//     goroutines would kill them whenever the Go runtime retires a thread.
//     Here the signal (SIGKILL) fires only when the host itself dies, by
//     kill -9, an out-of-memory crash, SIGPIPE or a plain exit.
//   - When sb is non-nil the thread confines itself with Landlock before
//     forking: the plugin inherits the confinement, and the thread, now
//     tainted, is never reused (a goroutine that exits while locked takes
//     its thread with it). The host's other threads are not affected.
//
// The plugin is put in its own process group so that killGroup reaches its
// children too.
func spawn(cmd *exec.Cmd, sb *sandboxSpec, reaped func(*os.ProcessState, error)) (*os.Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	type started struct {
		proc *os.Process
		err  error
	}
	res := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: see above.
		if sb != nil {
			if err := sb.restrictThread(); err != nil {
				res <- started{err: fmt.Errorf("sandboxing the plugin: %w", err)}
				return
			}
		}
		c, err := startInNamespace(cmd)
		if err != nil {
			res <- started{err: err}
			return
		}
		res <- started{proc: c.Process}
		err = c.Wait()
		reaped(c.ProcessState, err)
	}()
	r := <-res
	return r.proc, r.err
}

// noPIDNamespaces is set once starting a plugin in its own user and PID
// namespaces has failed (unprivileged user namespaces disabled).
var noPIDNamespaces atomic.Bool

// startInNamespace starts cmd as the first process of a new PID namespace
// (inside a new user namespace, which is what lets an unprivileged host
// create it),
// falling back to a plain start where unprivileged user namespaces are
// disabled. When the first process of a PID namespace dies, the kernel
// kills every other process in it: whatever children the plugin started
// die with it, even when the host was killed with SIGKILL and could not
// kill them itself.
func startInNamespace(cmd *exec.Cmd) (*exec.Cmd, error) {
	if noPIDNamespaces.Load() {
		return cmd, cmd.Start()
	}
	plain := *cmd.SysProcAttr
	ns := plain
	ns.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
	// No uid/gid maps: writing them is the parent's job, and the starting
	// thread may already be confined by Landlock, /proc included. Unmapped,
	// the plugin sees itself as the overflow user, while the kernel checks
	// its file accesses with the host user's own credentials.
	cmd.SysProcAttr = &ns
	err := cmd.Start()
	if err == nil {
		return cmd, nil
	}
	// A Cmd that failed to start cannot be reused: retry with a fresh one.
	retry := &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: &plain}
	if rerr := retry.Start(); rerr != nil {
		return nil, err
	}
	noPIDNamespaces.Store(true)
	return retry, nil
}

// PIDNamespaces reports whether plugins run in their own PID namespace
// (false until a plugin has been started, or where user namespaces are
// unavailable).
func PIDNamespaces() bool { return !noPIDNamespaces.Load() }

// runBase returns d/dplr-u<uid> (mode 0700), this user's directory for
// dplr's run directories, so that the sweep of dead hosts' reads a few
// entries, not a shared /tmp's thousands; false when it cannot be made or
// is not this user's alone (another user may have taken the name first).
func runBase(d string) (string, bool) {
	p := filepath.Join(d, fmt.Sprintf("dplr-u%d", os.Getuid()))
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || !ownedByUs(fi) || fi.Mode().Perm()&0o077 != 0 {
		return "", false
	}
	return p, true
}

// pidAlive reports whether a process with this pid exists.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByUs reports whether a file belongs to the host's user.
func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// exitText describes how a process ended.
func exitText(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}

// sandboxSpec lists what a confined plugin may touch; everything else on
// the file system is denied, as are TCP and (kernel permitting) signals and
// abstract unix sockets reaching outside the plugin.
type sandboxSpec struct {
	exec []string // files and directories the plugin may read and execute
	read []string // files and directories the plugin may read
	rw   []string // directories the plugin may create files and sockets in
}

var (
	abiOnce sync.Once
	abiVer  int
	abiErr  error
)

// landlockABI returns the kernel's Landlock ABI version (0 and an error
// when Landlock is unavailable).
func landlockABI() (int, error) {
	abiOnce.Do(func() {
		v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		switch {
		case e == unix.ENOSYS:
			abiErr = errors.New("the kernel has no Landlock support (Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)")
		case e == unix.EOPNOTSUPP:
			abiErr = errors.New("this system has Landlock disabled (not in the kernel's lsm= list)")
		case e != 0:
			abiErr = fmt.Errorf("cannot use Landlock: %w", e)
		default:
			abiVer = int(v)
		}
	})
	return abiVer, abiErr
}

// SandboxStatus describes how plugins are confined on this system, for
// `dplr plugins` and docs/plugins.md (Plugin trust and containment).
func SandboxStatus() (bool, string) {
	v, err := landlockABI()
	if err != nil {
		return false, "plugins are NOT sandboxed: " + err.Error()
	}
	return true, fmt.Sprintf("plugins are sandboxed with Landlock (ABI v%d): no file access beyond system libraries, their own binary and, during a fit, the data set's files; no TCP", v)
}

const (
	llFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llRead   = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llExec   = llRead | unix.LANDLOCK_ACCESS_FS_EXECUTE
	llSocket = llRead | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// handledFS is every file-system right the ABI version knows.
func handledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // v1: EXECUTE … MAKE_SYM
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// restrictThread confines the calling OS thread (and so every process it
// starts afterwards) to spec. The caller must have locked the goroutine
// to its thread and must never unlock it.
func (s *sandboxSpec) restrictThread() error {
	abi, err := landlockABI()
	if err != nil {
		return err
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handledFS(abi)}
	size := unsafe.Sizeof(attr.Handled_access_fs)
	if abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.Handled_access_net)
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.Scoped)
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	for _, g := range []struct {
		paths  []string
		access uint64
	}{{s.exec, llExec}, {s.read, llRead}, {s.rw, llSocket}} {
		for _, p := range g.paths {
			if err := addPathRule(int(fd), p, g.access&attr.Handled_access_fs); err != nil {
				return err
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// addPathRule allows access beneath path; a missing path is skipped, and
// a file gets only the rights that apply to files.
func addPathRule(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES) {
			return nil
		}
		return fmt.Errorf("sandbox rule for %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox rule for %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFileRights
	}
	rule := struct {
		allowed uint64
		parent  int32
	}{access, int32(fd)}
	// The kernel's struct landlock_path_beneath_attr is packed (12 bytes);
	// Go's layout matches it up to its trailing padding, which the kernel
	// does not read.
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
		return fmt.Errorf("sandbox rule for %s: landlock_add_rule: %w", path, e)
	}
	return nil
}

// systemReadPaths are what a plugin process needs from the system: the
// dynamic loader and shared libraries (cgo/OpenBLAS builds), CPU topology
// and cgroup limits read by the Go runtime and BLAS libraries, the load
// the OpenBLAS backend reads before it threads a call (which it never does
// blind), and the harmless device files.
var systemReadPaths = []string{
	"/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64", "/lib32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/usr/share/zoneinfo",
	"/sys/devices/system/cpu", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage",
	"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg",
	"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
}

// fileIdentity is what tells a file apart beyond its size and
// modification time: its device, inode and change time.
func fileIdentity(st os.FileInfo) string {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d %d %d.%d", s.Dev, s.Ino, s.Ctim.Sec, s.Ctim.Nsec)
}
