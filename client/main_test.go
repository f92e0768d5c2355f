package client_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// pluginDir holds the plugins built for the tests and examples.
var pluginDir string

// TestMain builds the example plugin, the first-party plugins the
// examples use and the misbehaving test plugin, and points the default
// search path ($DPLR_PLUGIN_PATH) and home ($DPLR_HOME) at temporary
// directories so that the examples read like user code.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dplr-client-plugins")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	home, err := os.MkdirTemp("", "dplr-client-home")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(home)
	pkgs := []string{"../examples/meanplugin/cmd/dplr-example", "../plugins/pca/cmd/dplr-pca",
		"../plugins/rgrad/cmd/dplr-rgrad", "../plugins/fedrep/cmd/dplr-fedrep", "../engine/transport/testdata/dplr-bad"}
	args := append([]string{"build", "-o", dir + "/"}, pkgs...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building plugins: %v\n%s", err, out)
		return 1
	}
	pluginDir = dir
	os.Setenv("DPLR_PLUGIN_PATH", dir)
	os.Setenv("DPLR_HOME", home)
	return m.Run()
}
