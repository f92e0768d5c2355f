package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/dplr/dplr/engine/sdk"
)

// A pre-flight check's answer (its footprint, its declared mechanisms and
// its plan, sdk.PlanOf) is a deterministic function of the plugin
// executable and its environment, the request's estimator, parameters
// and grant, the plan mode and the data's public shape: the plan's dry
// runs use a fixed public seed and public reference data. The runner
// keeps the answers it received in Runner.CheckCache, so that a fit
// repeated with the same request (a study, a cross-validation) starts no
// process to check it and does not pay for the dry runs again. An answer
// holds nothing about the data beyond its shape. A stale or edited entry
// cannot make a run spend or release more than its grant: the ledger
// reserves the grant, the host verifies every step against it, and
// withholds (charged) a result whose steps break the declaration. Refusals
// are not kept, nor answers whose plan ran out of time (a loaded machine,
// not a property of the request).

// keptCheck is a kept check answer.
type keptCheck struct {
	Footprint  int64           `json:"footprint"`
	Mechanisms sdk.Declaration `json:"mechanisms"`
	Plan       *sdk.Plan       `json:"plan,omitempty"`
}

// checkKey is the cache key of a check: the plugin executable's identity
// and environment (catalogueKey), its catalogue version, the plan mode,
// the request's estimator, parameters and grant, and the data set's
// content hash and shape. Data held elsewhere (Remote) is not cached.
func checkKey(plug *Plugin, call Call, mode sdk.PlanMode) (string, bool) {
	exe, ok := catalogueKey(plug.Path)
	if call.Remote != nil || !ok {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "plugin %s %q\n", exe, plug.Version())
	fmt.Fprintf(h, "estimator %q mode %d\n", call.Estimator, mode)
	keys := make([]string, 0, len(call.Params))
	for k := range call.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "param %q %q\n", k, call.Params[k])
	}
	g := call.Grant
	fmt.Fprintf(h, "grant %q %v %v %v\n", g.Kind, g.Epsilon, g.Delta, g.Rho)
	d := call.Data
	fmt.Fprintf(h, "data %q %q %d %d %d %d\n", d.Kind, d.Hash, d.N, d.P, d.D1, d.D2)
	return hex.EncodeToString(h.Sum(nil)), true
}

// cachedCheck returns the kept answer of key, if any.
func (r *Runner) cachedCheck(key string) (CheckResult, bool) {
	var k keptCheck
	if !readKept(r.CheckCache, key, &k) {
		return CheckResult{}, false
	}
	return CheckResult{Supported: true, Footprint: k.Footprint, Mechanisms: k.Mechanisms, Plan: k.Plan}, true
}

// keepCheck stores the answer c under key, unless it is a plugin's that
// answers no checks or its plan ran out of time.
func (r *Runner) keepCheck(key string, c CheckResult) {
	if !c.Supported || (c.Plan != nil && c.Plan.Late()) {
		return
	}
	keep(r.CheckCache, key, keptCheck{Footprint: c.Footprint, Mechanisms: c.Mechanisms, Plan: c.Plan})
}
