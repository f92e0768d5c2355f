// Command dplr-pca is the dplr plugin serving the PCA estimators.
package main

import (
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/pca"
)

func main() { sdk.Serve(pca.Estimators()...) }
