// Command dplr-fedrep is the plugin binary serving the fedrep estimators.
package main

import (
	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/plugins/fedrep"
)

func main() { transport.Serve(fedrep.Estimators()...) }
