package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// The check cache's key changes with everything a check depends on (the
// plugin executable, the mode, the estimator, a parameter, the grant, the
// data) and nothing else; a kept answer reads back equal; one whose plan
// ran out of time, or a plugin's that answers no checks, is not kept;
// data held elsewhere is not cached.
func TestCheckCache(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "dplr-x")
	require.NoError(t, os.WriteFile(exe, []byte("binary"), 0o700))
	plug := &Plugin{Path: exe, Catalogue: transport.Catalogue{Version: "1"}}
	call := Call{Estimator: "e", Params: map[string]string{"rank": "2", "clip": "3"},
		Grant: privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1},
		Data:  dataio.Handle{Kind: data.Rows, Hash: "h", N: 100, P: 5}}
	key := func(c Call, m sdk.PlanMode) string {
		k, ok := checkKey(plug, c, m)
		require.True(t, ok)
		return k
	}
	base := key(call, sdk.PlanIndicator)
	same := call
	same.Params = map[string]string{"clip": "3", "rank": "2"}
	assert.Equal(t, base, key(same, sdk.PlanIndicator), "parameter order does not matter")
	for name, c := range map[string]func(*Call){
		"estimator": func(c *Call) { c.Estimator = "f" },
		"parameter": func(c *Call) { c.Params = map[string]string{"rank": "3", "clip": "3"} },
		"grant":     func(c *Call) { c.Grant.Epsilon = 2 },
		"data":      func(c *Call) { c.Data.Hash = "other" },
		"shape":     func(c *Call) { c.Data.N = 101 },
	} {
		changed := call
		c(&changed)
		assert.NotEqual(t, base, key(changed, sdk.PlanIndicator), name)
	}
	assert.NotEqual(t, base, key(call, sdk.PlanFull), "mode")
	require.NoError(t, os.Chtimes(exe, time.Now(), time.Now().Add(time.Hour)))
	assert.NotEqual(t, base, key(call, sdk.PlanIndicator), "a rebuilt plugin")
	remote := call
	remote.Remote = &data.Remote{N: 100, P: 5}
	_, ok := checkKey(plug, remote, sdk.PlanIndicator)
	assert.False(t, ok)

	r := &Runner{CheckCache: filepath.Join(dir, "checks")}
	_, ok = r.cachedCheck(base)
	assert.False(t, ok)
	p := &sdk.Plan{Accounting: "pure", Scored: true, ExpectedScore: 0.2, RandomScore: 0.18, NearRandom: true, Note: "model-based indicator",
		Steps: []sdk.PlanStep{{Step: privacy.Step{Name: "s", Mechanism: privacy.MechLaplace, Epsilon: 1}, Multiplier: 2}}}
	decl, err := sdk.NewDeclaration([]sdk.MechanismUse{{Mechanism: privacy.MechLaplace, For: "the mean"}})
	require.NoError(t, err)
	chk := CheckResult{Supported: true, Footprint: 1 << 20, Mechanisms: decl, Plan: p}
	r.keepCheck(base, chk)
	got, ok := r.cachedCheck(base)
	require.True(t, ok)
	assert.Equal(t, chk, got)
	r.keepCheck("late", CheckResult{Supported: true, Plan: &sdk.Plan{Note: "not computed: the dry run did not finish in time"}})
	_, ok = r.cachedCheck("late")
	assert.False(t, ok, "a plan that ran out of time is not kept")
	r.keepCheck("old", CheckResult{})
	_, ok = r.cachedCheck("old")
	assert.False(t, ok, "a plugin that answers no checks is not kept")
}
