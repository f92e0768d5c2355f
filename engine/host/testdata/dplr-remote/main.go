// Command dplr-remote serves remotetest's estimator, which runs on data the
// host holds remotely (through aggregation passes), for the host's and
// the command line's tests.
package main

import (
	"github.com/dplr/dplr/engine/host/internal/remotetest"
	"github.com/dplr/dplr/engine/transport"
)

func main() { transport.Serve(remotetest.Mean{}) }
