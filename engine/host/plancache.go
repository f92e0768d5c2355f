package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dplr/dplr/engine/sdk"
)

// A plan (sdk.PlanOf) is a deterministic function of the plugin, the
// request's estimator, parameters and grant, and the data's public shape:
// its dry runs use a fixed public seed and public reference data. The
// runner keeps the plans it computed in Runner.PlanCache, so that a fit
// repeated with the same request (a study, a cross-validation) does not
// pay for the dry runs again. A plan holds nothing about the data beyond
// its shape, and a cached plan only decides a warning: a stale or edited
// entry cannot change what is spent or released. Plans whose dry runs did
// not finish in time are not kept.

// planKey is the cache key of a check's plan: the plugin executable's
// path, size and modification time, its catalogue version, the plan mode,
// the request's estimator, parameters and grant, and the data set's content hash and
// shape. Data held elsewhere (Remote) is not cached.
func planKey(plug *Plugin, call Call, mode sdk.PlanMode) (string, bool) {
	if call.Remote != nil {
		return "", false
	}
	st, err := os.Stat(plug.Path)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "plugin %q %d %d %q\n", plug.Path, st.Size(), st.ModTime().UnixNano(), plug.Version())
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

// cachedPlan returns the cached plan of key, if any.
func (r *Runner) cachedPlan(key string) *sdk.Plan {
	b, err := os.ReadFile(filepath.Join(r.PlanCache, key+".json"))
	if err != nil {
		return nil
	}
	var p sdk.Plan
	if json.Unmarshal(b, &p) != nil {
		return nil
	}
	return &p
}

// keepPlan stores p under key, unless its dry runs ran out of time (a
// loaded machine, not a property of the request). Failing to store is not
// an error: the cache only saves time.
func (r *Runner) keepPlan(key string, p *sdk.Plan) {
	if p == nil || p.Late() {
		return
	}
	b, err := json.Marshal(p)
	if err != nil || os.MkdirAll(r.PlanCache, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(r.PlanCache, "plan-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if os.Rename(tmp.Name(), filepath.Join(r.PlanCache, key+".json")) != nil {
		os.Remove(tmp.Name())
	}
}
