// Command dplr-orbit is the dplr plugin serving the orbit estimators
// (private matrix approximation on orthogonal orbits).
package main

import (
	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/plugins/orbit"
)

func main() { transport.Serve(orbit.Estimators()...) }
