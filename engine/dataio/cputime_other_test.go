//go:build !unix

package dataio

import "time"

// cpuTime is unavailable here; CPU ratios then report as NaN.
func cpuTime() time.Duration { return 0 }
