// Command dplr-fedrep is the plugin binary serving the fedrep estimators.
package main

import (
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

func main() { sdk.Serve(fedrep.Estimators()...) }
