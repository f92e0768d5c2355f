package pca

import (
	"testing"

	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// The core conformance suite on every pca estimator: catalogue from typed
// options, bad requests refused before any step, seeds reproduce, every
// step through a release and every release drawn, release classes on every
// output, the guarantee the steps compose to.
func TestSDKConformance(t *testing.T) {
	g := spiked(t, 2000, 12, 2, "24,20", "gaussian", 61)
	cxz := map[string]string{"rank": "2", "sigma2": "1", "lambda": "24,20"}
	cases := map[string][]sdktest.Case{
		"pca-cxz": {
			{Name: "explicit", Data: g.Data, Params: with(cxz, "output_sigma", "true"), Grant: approx(1, 1e-6)},
			{Name: "paper, centred", Data: g.Data, Params: with(cxz, "sensitivity", "paper", "center", "private", "mean_clip", "15"), Grant: approx(1, 1e-6)},
			{Name: "zCDP grant, guarded", Data: g.Data, Params: with(cxz, "guarded", "true"), Grant: zcdp(0.5)},
			{Name: "rank vs p", Data: g.Data, Params: with(cxz, "rank", "6", "lambda", "24"), Grant: approx(1, 1e-6), Refuse: "2r < p"},
		},
		"pca-analyze-gauss": {
			{Name: "exact (default)", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "12", "output_sigma": "true"}, Grant: approx(1, 1e-6)},
			{Name: "zcdp, clip=auto", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "auto", "noise": "zcdp"}, Grant: approx(1, 1e-6)},
			{Name: "analytic, centred", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "12", "noise": "analytic", "center": "private"}, Grant: approx(1, 1e-6)},
			{Name: "rank above p", Data: g.Data, Params: map[string]string{"rank": "13", "clip": "12"}, Grant: approx(1, 1e-6), Refuse: "exceeds the dimension"},
		},
		"pca-amin": {
			{Name: "pure", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "12", "output_sigma": "true"}, Grant: pure(1)},
			{Name: "full rank, centred", Data: g.Data, Params: map[string]string{"rank": "12", "clip": "12", "center": "private"}, Grant: approx(1, 1e-6)},
			{Name: "exact, clip=auto", Data: g.Data, Params: map[string]string{"rank": "4", "clip": "auto"}, Grant: approx(2, 1e-6)},
			{Name: "zcdp", Data: g.Data, Params: map[string]string{"rank": "4", "clip": "12", "noise": "zcdp"}, Grant: approx(1, 1e-6)},
			{Name: "zcdp under a pure grant", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "12", "noise": "zcdp"}, Grant: pure(1), Refuse: "noise=zcdp needs an (ε, δ) grant"},
			{Name: "sigma without eigenvalues", Data: g.Data, Params: map[string]string{"rank": "2", "clip": "12", "eigenvalue_share": "0", "output_sigma": "true"}, Grant: pure(1), Refuse: "output_sigma needs eigenvalues"},
		},
		"pca-nonprivate": {
			{Name: "reference", Data: g.Data, Params: map[string]string{"rank": "2", "evaluate": "true"}, Grant: approx(1, 1e-6)},
		},
	}
	for _, est := range Estimators() {
		name := est.Info().Name
		t.Run(name, func(t *testing.T) { sdktest.Run(t, est, cases[name]...) })
	}
}
