// Command dplr-pca is the dplr plugin serving the PCA estimators.
package main

import (
	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/plugins/pca"
)

func main() { transport.Serve(pca.Estimators()...) }
