package ledger

import (
	"os"
	"sync"
)

// owner identifies the process that reserved a run, so that a reservation
// left behind by a dead process can be told from one still running.
type owner struct {
	Host  string // host name
	Boot  string // boot id ("" where unknown)
	PID   int
	Start string // process start time token ("" where unknown)
}

// liveness of a reservation's owner.
type liveness int

const (
	ownerUnknown liveness = iota // another host, or no way to tell
	ownerAlive
	ownerDead
)

var (
	selfOnce sync.Once
	selfVal  owner
)

// currentOwner describes this process.
func currentOwner() owner {
	selfOnce.Do(func() {
		host, _ := os.Hostname()
		pid := os.Getpid()
		selfVal = owner{Host: host, Boot: bootID(), PID: pid, Start: startToken(pid)}
	})
	return selfVal
}

// check reports whether o is alive, as seen from me.
func (me owner) check(o owner) liveness {
	if o.Host != me.Host {
		return ownerUnknown
	}
	if o.Boot != "" && me.Boot != "" && o.Boot != me.Boot {
		return ownerDead // the machine has rebooted since
	}
	if o == me {
		return ownerAlive
	}
	return processLiveness(o.PID, o.Start)
}
