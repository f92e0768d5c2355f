// Command dplr-rgrad is the dplr plugin serving the low-rank trace-regression
// estimators of package rgrad.
package main

import (
	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/plugins/rgrad"
)

func main() { transport.Serve(rgrad.Estimators()...) }
