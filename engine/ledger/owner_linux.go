//go:build linux

package ledger

import (
	"fmt"
	"os"
	"strings"
)

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStat returns the state letter and start time (field 22, in clock
// ticks since boot) of pid from /proc/<pid>/stat.
func procStat(pid int) (state, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return "", "", false
	}
	return f[0], f[19], true
}

func startToken(pid int) string {
	_, start, _ := procStat(pid)
	return start
}

func processLiveness(pid int, start string) liveness {
	state, st, ok := procStat(pid)
	switch {
	case !ok:
		return ownerDead
	case state == "Z" || state == "X":
		return ownerDead // exited, not yet reaped
	case start != "" && st != start:
		return ownerDead // the pid was reused
	}
	return ownerAlive
}
