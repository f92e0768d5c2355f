// Command dplr-rgrad is the dplr plugin serving the low-rank trace-regression
// estimators of package rgrad.
package main

import (
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/rgrad"
)

func main() { sdk.Serve(rgrad.Estimators()...) }
