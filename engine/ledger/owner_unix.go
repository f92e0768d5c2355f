//go:build unix && !linux

package ledger

import (
	"errors"
	"syscall"
)

func bootID() string        { return "" }
func startToken(int) string { return "" }

func processLiveness(pid int, _ string) liveness {
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		return ownerAlive
	case errors.Is(err, syscall.ESRCH):
		return ownerDead
	}
	return ownerUnknown
}
