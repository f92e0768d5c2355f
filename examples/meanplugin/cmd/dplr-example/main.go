// Command dplr-example is the template dplr plugin: it serves the
// example-mean estimator.
package main

import (
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/examples/meanplugin"
)

func main() { sdk.Serve(meanplugin.Estimators()...) }
