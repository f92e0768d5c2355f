package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A plugin that cannot start is a plugin failure (exit 4) reported with its
// exit status, not a usage error with go-plugin's "Unrecognized remote
// plugin message".
func TestPluginStartFailureExitsFour(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DPLR_BAD_MODE", "exit-start")
	r := dplr(t, home, "describe", "bad-exit-start")
	assert.Equal(t, ExitPlugin, r.code, r.stderr)
	assert.Contains(t, r.stderr, "exited with status 2")
	assert.NotContains(t, r.stderr, "Unrecognized remote plugin message")
}
