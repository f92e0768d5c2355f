// Package fedrepstudy holds the experiments behind bench/results/fedrep.md:
// the replication of Snedeker, Zhou & Bassily's synthetic experiment
// (Private FedRep, Priv-AltMin and non-private FedRep on the users-lowrank
// model) and the Fashion-MNIST private classification run. The estimators
// themselves live in plugins/fedrep.
package fedrepstudy

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// StudyConfig is the paper-replication experiment of Snedeker, Zhou & Bassily (2025).
type StudyConfig struct {
	Users, Samples, Dim, Rank int
	Noise, Delta              float64
	Eps                       []float64
	Seeds                     int
	Methods                   []StudyMethod
	// Progress, when set, receives one line per finished fit.
	Progress func(string)
}

// StudyMethod is one estimator configuration of the study.
type StudyMethod struct {
	Label     string
	Estimator sdk.Estimator
	Params    map[string]string
	// Private methods are run once per ε; others once per seed.
	Private bool
}

// PaperStudyConfig returns the configuration of the paper's synthetic experiment:
// d = 50, k = 2, m = 10 (5 + 5), n = 20000, R = 0.01, δ = 1e-6,
// ε ∈ {1, 2, 4, 8}, T = 5, η = 2.5, ψ = 10, AltMin clip 1e-4, 5 seeds.
func PaperStudyConfig() StudyConfig {
	return StudyConfig{Users: 20000, Samples: 10, Dim: 50, Rank: 2, Noise: 0.01, Delta: 1e-6,
		Eps: []float64{1, 2, 4, 8}, Seeds: 5, Methods: []StudyMethod{
			{Label: "Private FedRep (zCDP, ψ=10)", Estimator: fedrep.PrivateFedRep{}, Params: paperFedRep(map[string]string{"clip": "10", "noise": "zcdp"}), Private: true},
			{Label: "Private FedRep (exact, ψ=10)", Estimator: fedrep.PrivateFedRep{}, Params: paperFedRep(map[string]string{"clip": "10"}), Private: true},
			{Label: "Private FedRep (paper σ̂, ψ=10)", Estimator: fedrep.PrivateFedRep{}, Params: paperFedRep(map[string]string{"noise": "paper", "clip": "10"}), Private: true},
			{Label: "Private FedRep (zCDP, ψ=1)", Estimator: fedrep.PrivateFedRep{}, Params: paperFedRep(map[string]string{"clip": "1", "noise": "zcdp"}), Private: true},
			{Label: "Private FedRep (exact, ψ=1)", Estimator: fedrep.PrivateFedRep{}, Params: paperFedRep(map[string]string{"clip": "1"}), Private: true},
			{Label: "Private FedRep (defaults, paper's split)", Estimator: fedrep.PrivateFedRep{}, Private: true},
			{Label: "Private FedRep (defaults)", Estimator: fedrep.PrivateFedRep{}, Params: map[string]string{"head_data": "all", "local_fraction": "0"}, Private: true},
			{Label: "Priv-AltMin (disjoint groups, exact)", Estimator: fedrep.PrivAltMin{}, Params: map[string]string{"init_clip": "50"}, Private: true},
			{Label: "Priv-AltMin (all users, code, exact)", Estimator: fedrep.PrivAltMin{}, Params: map[string]string{"groups": "all", "init_clip": "50"}, Private: true},
			{Label: "Non-private FedRep", Estimator: fedrep.NonPrivateFedRep{}, Params: map[string]string{"iterations": "5", "step_guard": "false"}},
		}}
}

// paperFedRep adds the paper experiment's fixed choices (T = 5, η = 2.5,
// ψ_init = 50, init share 0.2, no step guard) to a FedRep method's
// parameters: the replication rows of bench/results/fedrep.md §1.
func paperFedRep(p map[string]string) map[string]string {
	out := map[string]string{"iterations": "5", "step": "2.5", "init_clip": "50", "init_share": "0.2", "step_guard": "false"}
	maps.Copy(out, p)
	if out["noise"] == "paper" {
		delete(out, "init_clip")
	}
	return out
}

// StudyCell is the result of one method at one ε (ε = 0 for non-private
// methods): medians over seeds.
type StudyCell struct {
	Method              string
	Epsilon             float64
	Dist, MSE           float64 // medians
	DistMin, DistMax    float64
	MSEMin, MSEMax      float64
	Seconds             float64 // median wall time of one fit
	Seeds               int
	AchievedEps, Rho    float64
	DistAll, MSEAll     []float64
	SecondsAll          []float64
	GuaranteeDescribing string
}

// RunStudy runs every method at every ε over the seeds on freshly drawn
// users-lowrank data sets (data seed s, estimator seed 1000·s + index) and
// returns median subspace distances to U* and closed-form population MSEs.
func RunStudy(ctx context.Context, cfg StudyConfig) ([]StudyCell, error) {
	mod, err := gen.Lookup(gen.UsersLowRankName)
	if err != nil {
		return nil, err
	}
	type key struct {
		m   int
		eps float64
	}
	acc := map[key]*StudyCell{}
	var order []key
	for s := 1; s <= cfg.Seeds; s++ {
		g, err := gen.Run(mod, map[string]string{"users": fmt.Sprint(cfg.Users), "samples": fmt.Sprint(cfg.Samples),
			"dim": fmt.Sprint(cfg.Dim), "rank": fmt.Sprint(cfg.Rank), "noise": fmt.Sprint(cfg.Noise)}, uint64(s))
		if err != nil {
			return nil, err
		}
		for mi, m := range cfg.Methods {
			epss := cfg.Eps
			if !m.Private {
				epss = []float64{0}
			}
			for ei, eps := range epss {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: math.Max(eps, 1), Delta: cfg.Delta}
				seed := uint64(1000*s + 10*mi + ei)
				raw := map[string]string{"rank": fmt.Sprint(cfg.Rank), "head_data": "local", "local_fraction": "0.5"} // the paper's halves; heads on S¹ only
				maps.Copy(raw, m.Params)
				t0 := time.Now()
				res, _, err := sdk.RunLocal(ctx, m.Estimator, g.Data, raw, grant, sdk.LocalOptions{Seed: &seed})
				if err != nil {
					return nil, fmt.Errorf("%s at ε = %g: %w", m.Label, eps, err)
				}
				secs := time.Since(t0).Seconds()
				var u, v = findMatrix(res, "U"), findMatrix(res, "V")
				if u == nil || v == nil {
					return nil, fmt.Errorf("%s: result lacks U or V", m.Label)
				}
				dist, _, err := evaluate.SinTheta(u, g.Truth["U"])
				if err != nil {
					return nil, err
				}
				mse, err := fedrep.PopulationMSE(u, v, g.Truth["U"], g.Truth["V"], cfg.Noise)
				if err != nil {
					return nil, err
				}
				k := key{mi, eps}
				c, ok := acc[k]
				if !ok {
					c = &StudyCell{Method: m.Label, Epsilon: eps, GuaranteeDescribing: res.Guarantee.String()}
					acc[k] = c
					order = append(order, k)
				}
				c.DistAll = append(c.DistAll, dist)
				c.MSEAll = append(c.MSEAll, mse)
				c.SecondsAll = append(c.SecondsAll, secs)
				c.AchievedEps, c.Rho = res.Guarantee.Epsilon, res.Guarantee.Rho
				if cfg.Progress != nil {
					cfg.Progress(fmt.Sprintf("seed %d %s ε=%g: dist %.4f MSE %.5f (%.2fs)", s, m.Label, eps, dist, mse, secs))
				}
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		if order[a].m != order[b].m {
			return order[a].m < order[b].m
		}
		return order[a].eps < order[b].eps
	})
	out := make([]StudyCell, 0, len(order))
	for _, k := range order {
		c := acc[k]
		c.Seeds = len(c.DistAll)
		c.Dist, c.DistMin, c.DistMax = medianRange(c.DistAll)
		c.MSE, c.MSEMin, c.MSEMax = medianRange(c.MSEAll)
		c.Seconds, _, _ = medianRange(c.SecondsAll)
		out = append(out, *c)
	}
	return out, nil
}

// findMatrix returns the result's matrix of that name, nil when absent.
func findMatrix(res *sdk.Result, name string) *mat.Dense {
	for _, m := range res.Matrices {
		if m.Name == name {
			return m.M
		}
	}
	return nil
}

// medianRange returns the median, minimum and maximum of x (NaN when empty).
func medianRange(x []float64) (med, lo, hi float64) {
	return evaluate.Median(x), evaluate.Quantile(0, x), evaluate.Quantile(1, x)
}

// StudyMarkdown renders the cells as a markdown table (median [min–max]).
func StudyMarkdown(cells []StudyCell) string {
	var b strings.Builder
	b.WriteString("| method | ε | dist (median [min–max]) | population MSE (median [min–max]) | s/fit |\n|---|---|---|---|---|\n")
	for _, c := range cells {
		eps := fmt.Sprint(c.Epsilon)
		if c.Epsilon == 0 {
			eps = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %.4f [%.4f–%.4f] | %.5f [%.5f–%.5f] | %.2f |\n", c.Method, eps, c.Dist, c.DistMin, c.DistMax, c.MSE, c.MSEMin, c.MSEMax, c.Seconds)
	}
	return b.String()
}

// BeatsAtEveryEps reports whether method a has a lower median MSE than
// method b at every ε present for both.
func BeatsAtEveryEps(cells []StudyCell, a, b string) (bool, []string) {
	mse := map[string]map[float64]float64{}
	for _, c := range cells {
		if mse[c.Method] == nil {
			mse[c.Method] = map[float64]float64{}
		}
		mse[c.Method][c.Epsilon] = c.MSE
	}
	ok := true
	var lines []string
	for eps, ma := range mse[a] {
		mb, found := mse[b][eps]
		if !found {
			continue
		}
		if ma >= mb {
			ok = false
		}
		lines = append(lines, fmt.Sprintf("ε=%g: %.5f vs %.5f (ratio %.2f)", eps, ma, mb, mb/ma))
	}
	sort.Strings(lines)
	return ok, lines
}
