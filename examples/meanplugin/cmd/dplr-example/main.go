// Command dplr-example is the template dplr plugin: it serves the
// example-mean estimator.
package main

import (
	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/examples/meanplugin"
)

func main() { transport.Serve(meanplugin.Estimators()...) }
