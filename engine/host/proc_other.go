//go:build !linux

package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// spawn starts cmd and reaps it in the background. Outside Linux there
// is no parent-death signal: plugins are killed on the host's exit paths
// only.
func spawn(cmd *exec.Cmd, sb *sandboxSpec, reaped func(*os.ProcessState, error)) (*os.Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := cmd.Wait()
		reaped(cmd.ProcessState, err)
	}()
	return cmd.Process, nil
}

// PIDNamespaces reports whether plugins run in their own PID namespace
// (never outside Linux).
func PIDNamespaces() bool { return false }

func killGroup(int) {}

// runBase returns d itself, once a directory can be made in it: without
// a check of ownership there is no shared per-user directory.
func runBase(d string) (string, bool) {
	probe, err := os.MkdirTemp(d, "dplr-probe")
	if err != nil {
		return "", false
	}
	os.Remove(probe)
	return d, true
}

// pidAlive is conservative outside Linux: run directories of dead hosts
// are not swept.
func pidAlive(int) bool { return true }

func ownedByUs(os.FileInfo) bool { return false }

func exitText(st *os.ProcessState) string {
	return fmt.Sprintf("ended (%s)", st.String())
}

// sandboxSpec is unused outside Linux.
type sandboxSpec struct {
	exec, read, rw []string
}

var errNoSandbox = errors.New("plugin sandboxing uses Landlock, available on Linux only")

func landlockABI() (int, error) { return 0, errNoSandbox }

// SandboxStatus describes how plugins are confined on this system.
func SandboxStatus() (bool, string) {
	return false, "plugins are NOT sandboxed: " + errNoSandbox.Error()
}

var systemReadPaths []string

func physicalMemory() int64 { return 0 }

// fileIdentity is empty outside Linux: a file is told apart by its path,
// size and modification time only.
func fileIdentity(os.FileInfo) string { return "" }
