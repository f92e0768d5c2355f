package sdk

import (
	"fmt"
	"os"
)

// Serve runs the plugin server for ests and never returns. A plugin
// binary's main is one line: sdk.Serve(mypkg.Estimators()...).
func Serve(ests ...Estimator) {
	// Replaced by the go-plugin gRPC server (in progress).
	fmt.Fprintln(os.Stderr, "dplr plugin server: not yet wired", len(ests))
	os.Exit(1)
}
