package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/examples/meanplugin"
	"github.com/dplr/dplr/plugins/fedrep"
	"github.com/dplr/dplr/plugins/orbit"
	"github.com/dplr/dplr/plugins/pca"
	"github.com/dplr/dplr/plugins/rgrad"
)

// estimators is every estimator in this repository, by name.
func estimators() map[string]sdk.Estimator {
	ests := map[string]sdk.Estimator{}
	for _, list := range [][]sdk.Estimator{pca.Estimators(), rgrad.Estimators(), fedrep.Estimators(), orbit.Estimators(), meanplugin.Estimators()} {
		for _, e := range list {
			ests[e.Info().Name] = e
		}
	}
	return ests
}

// sets collects repeated --set k=v flags.
type sets map[string]string

func (s sets) String() string { return fmt.Sprint(map[string]string(s)) }

func (s sets) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("--set %q: want key=value", kv)
	}
	s[k] = v
	return nil
}

// inproc is "bench inproc ESTIMATOR [dplr fit flags]": the in-process half
// of the transport scenarios. It prepares the data file as the host does
// (validate, hash, cache in the home), maps it, fits through sdk.RunLocal
// with no plugin process and no ledger, and prints a result holding its
// own peak resident memory as host_max_rss_kib.
func inproc(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: bench inproc ESTIMATOR --data FILE [--scale S] [--epsilon E] [--delta D] [--seed N] [--set k=v ...]")
	}
	est, ok := estimators()[args[0]]
	if !ok {
		return fmt.Errorf("unknown estimator %q", args[0])
	}
	fs := flag.NewFlagSet("bench inproc", flag.ContinueOnError)
	params := sets{}
	fs.Var(params, "set", "estimator parameter key=value (repeatable)")
	dataPath := fs.String("data", "", "data file")
	scale := fs.Float64("scale", 0, "multiply the data's entries by this")
	home := fs.String("home", os.TempDir(), "directory of the decoded-data cache")
	eps := fs.Float64("epsilon", 1, "ε of the grant")
	delta := fs.Float64("delta", 0, "δ of the grant (0: pure ε)")
	seed := fs.Uint64("seed", 1, "noise seed")
	fs.String("plugin-dir", "", "ignored (no plugin process)")
	fs.String("out", "", "ignored (nothing is written)")
	fs.Bool("json", true, "ignored (the result is always JSON)")
	fs.Bool("quiet", true, "ignored")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	h, err := dataio.PrepareFile(*dataPath, dataio.LoadOptions{Scale: *scale}, filepath.Join(*home, "cache"))
	if err != nil {
		return err
	}
	ds, closer, err := dataio.Open(h)
	if err != nil {
		return err
	}
	defer closer.Close()
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: *eps, Delta: *delta}
	if *delta == 0 {
		grant = privacy.Grant{Kind: privacy.GrantPure, Epsilon: *eps}
	}
	if _, _, err := sdk.RunLocal(context.Background(), est, ds, params, grant, sdk.LocalOptions{Seed: seed}); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"timings": map[string]int64{"host_max_rss_kib": sdk.MaxRSSKiB()}})
}
