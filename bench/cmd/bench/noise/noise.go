// Package noise holds the subcommands "bench noise" and "bench pldnoise"
// (pld.go). "bench noise" tabulates, for every private estimator, the noise
// scale of every privacy step under the exact accounting, zCDP and the
// paper's own calibration, side by side; the table's header explains it.
//
//	go run ./bench/cmd/bench noise > bench/results/noise.md
package noise

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

type comparison struct {
	estimator   string
	model       string
	modelParams map[string]string
	params      map[string]string
	paper       map[string]string // overrides for the paper calibration (nil: none)
	paperLabel  string
	pure        bool // pure ε grant
}

var comparisons = []comparison{
	{"example-mean", "spiked", map[string]string{"n": "20000", "p": "20"}, map[string]string{"clip": "10"}, nil, "—", false},
	{"pca-cxz", "spiked", map[string]string{"n": "20000", "p": "50"}, map[string]string{"rank": "2", "sigma2": "1", "lambda": "20"},
		map[string]string{"noise": "classical"}, "paper split (ε/2, δ/2 per stage), classical Gaussian; same explicit sensitivities", false},
	{"pca-analyze-gauss", "spiked", map[string]string{"n": "20000", "p": "50"}, map[string]string{"rank": "2", "clip": "12"},
		map[string]string{"noise": "classical"}, "classical Gaussian on the whole (ε, δ)", false},
	{"pca-analyze-gauss", "spiked", map[string]string{"n": "20000", "p": "50"}, map[string]string{"rank": "2", "clip": "12", "center": "private"},
		nil, "(centred privately: mean + covariance)", false},
	{"rgrad-dp", "trace-regression", map[string]string{"n": "16000"}, map[string]string{"rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5", "iterations": "5"},
		map[string]string{"sensitivity": "paper", "noise": "analytic"}, "paper split and literal sensitivities (analytic Gaussian per step)", false},
	{"rgrad-weak", "trace-regression", map[string]string{"n": "16000"}, map[string]string{"rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5", "iterations": "5"},
		map[string]string{"sensitivity": "paper", "noise": "analytic"}, "paper split and literal sensitivities (analytic Gaussian per step)", false},
	{"rgrad-strict", "trace-regression", map[string]string{"n": "16000"}, map[string]string{"rank": "2", "clip_y": "8", "clip": "6", "iterations": "5"},
		nil, "—", false},
	{"fedrep-private", "users-lowrank", map[string]string{"users": "20000"}, map[string]string{"rank": "2"},
		map[string]string{"noise": "paper"}, "the paper's σ̂ per round (experiment code), start gets the rest", false},
	{"fedrep-privaltmin", "users-lowrank", map[string]string{"users": "20000"}, map[string]string{"rank": "2"},
		map[string]string{"noise": "paper"}, "Jain et al.'s multiplier √(8 ln(1/δ))/ε on A and b (disjoint groups), start gets the rest", false},
	{"pca-analyze-gauss", "spiked", map[string]string{"n": "20000", "p": "50"}, map[string]string{"rank": "2", "clip": "auto", "center": "private"},
		nil, "(clip=auto and center=private: the issue-17 defaults; pure quantile steps mixed in, PLD)", false},
	{"pca-amin", "spiked", map[string]string{"n": "20000", "p": "50"}, map[string]string{"rank": "10", "clip": "12"},
		map[string]string{"noise": "pure"}, "diffprivlib's split: ε/(r+1) per release, basic composition (pure ε; dplr's default before exact)", false},
	{"pca-amin", "spiked", map[string]string{"n": "20000", "p": "50"}, map[string]string{"rank": "2", "clip": "auto", "center": "private"},
		map[string]string{"noise": "pure"}, "the pure split (basic composition; dplr's default before exact)", false},
	{"orbit-em", "orbit-spiked", nil, map[string]string{"rank": "1", "clip": "1"},
		map[string]string{"sensitivity": "paper", "noise": "pure"}, "the paper's β = ε/(4λ₁), pure ε (exponential mechanism: β is the scale)", false},
	{"orbit-rank-k", "orbit-spiked", nil, map[string]string{"rank": "2", "clip": "1", "iterations": "20"},
		map[string]string{"sensitivity": "paper", "noise": "pure"}, "the paper's split ε/2 + ε/2 (pure), β = ε/(4λ̃₁) for the orbit step", false},
	{"orbit-deflation", "orbit-spiked", nil, map[string]string{"rank": "8", "clip": "1"},
		map[string]string{"noise": "pure"}, "Amin et al.'s split ε/(d−1) per draw (pure ε)", false},
	{"orbit-gauss", "orbit-spiked", nil, map[string]string{"rank": "2", "clip": "1"},
		map[string]string{"noise": "classical"}, "classical Gaussian on the whole (ε, δ) (Dwork, Talwar, Thakurta & Zhang)", false},
	{"orbit-deflation", "orbit-spiked", nil, map[string]string{"rank": "3", "clip": "1"},
		nil, "(a pure ε grant: every calibration is the pure plan)", true},
	{"fedrep-classify", "users-lowrank", map[string]string{"users": "20000", "samples": "20", "dim": "50", "rank": "2", "noise": "0.01", "heads": "unit", "labels": "classification"},
		map[string]string{"rank": "2", "iterations": "5", "step": "1", "clip": "1", "holdout": "0.5", "output_v": "false"}, nil, "—", false},
}

var epsilons = []float64{1, 4}

const delta = 1e-6

// Main runs "bench noise" (it takes no arguments) over ests, every
// estimator by name.
func Main(ests map[string]sdk.Estimator) {
	var b strings.Builder
	b.WriteString("# Noise per step: exact accounting vs zCDP vs the papers' calibration\n\n")
	b.WriteString("Every step's noise scale (σ for Gaussian steps, b for Laplace, the inverse temperature β for the exponential mechanism, where *larger* β means *less* randomisation) ")
	b.WriteString("at (ε, δ) = (1, 1e-6) and (4, 1e-6) under **exact** (noise=exact: μ² split over the Gaussian steps, σ from the grant's exact Gaussian-DP curve; plans with pure steps scaled by the privacy loss distribution), ")
	b.WriteString("**zCDP** (noise=zcdp: ρ split, tight Canonne–Kamath–Steinke conversion; dplr's default before issue 16) and each **paper**'s own calibration. ")
	b.WriteString("\"run\" means the estimator offers noise=exact and the figure is its own; \"derived\" means it does not yet, and the figure is what privacy.NewPlan(NoiseExact) gives for the shares of its zCDP run (same sensitivities, σ_exact = Δ/√(2ρ_exact)). ")
	b.WriteString("The pure estimators (pca-amin, orbit-em, orbit-rank-k, orbit-deflation) run under the same (ε, δ) grants: their exact column is noise=exact (the pure split's proportions scaled by the largest factor the tightest valid accounting certifies, or the pure split when that is tighter), their zCDP column noise=zcdp (the same proportions in zCDP), their paper column the pure split; one orbit-deflation row under a pure grant shows that every calibration is then the pure plan. ")
	b.WriteString("Command: `go run ./bench/cmd/bench noise > bench/results/noise.md` (in-process fits on synthetic data; deterministic; each estimator's noise options read from its catalogue at run time).\n\n")
	b.WriteString("| estimator | step | ε | exact | zCDP | paper | exact / zCDP | exact from | paper calibration used |\n|---|---|---|---|---|---|---|---|---|\n")
	var gaussRatios, mixedRatios []float64
	for _, c := range comparisons {
		compare(&b, c, ests, &gaussRatios, &mixedRatios)
	}
	sort.Float64s(gaussRatios)
	sort.Float64s(mixedRatios)
	b.WriteString("\nexact / zCDP below 1 is the noise exact saves (for β the ratio is inverted, so below 1 is always less randomisation). ")
	b.WriteString("Where a step's sensitivity is itself chosen privately (clip=auto, a private init clip), the exact and zCDP runs may choose different clips, and the ratio carries that difference too. ")
	b.WriteString("For Gaussian and Laplace steps paper / zCDP above 1 is the extra noise the paper's calibration needs for the same guarantee; where the paper's calibration also changes the sensitivities (rgrad, fedrep), the ratio mixes both effects.\n\n")
	if len(gaussRatios) > 0 {
		fmt.Fprintf(&b, "**Goal: at least 6 %% less noise per Gaussian step than zCDP at (1, 1e-6).** Over the %d Gaussian steps of Gaussian-only runs above at ε = 1, σ_exact/σ_zCDP lies in [%.4f, %.4f]: %.1f–%.1f %% less noise (met: %v).",
			len(gaussRatios), gaussRatios[0], gaussRatios[len(gaussRatios)-1], 100*(1-gaussRatios[len(gaussRatios)-1]), 100*(1-gaussRatios[0]), gaussRatios[len(gaussRatios)-1] <= 0.94)
		if len(mixedRatios) > 0 {
			fmt.Fprintf(&b, " In runs that mix pure steps in (clip=auto's quantiles), the %d Gaussian steps at ε = 1 get σ_exact/σ_zCDP in [%.4f, %.4f] (met: %v): there exact scales the zCDP split by the largest factor the privacy loss distribution certifies with the quantile steps in it (the exponential mechanism as bounded range), short of the Gaussian-only curve.",
				len(mixedRatios), mixedRatios[0], mixedRatios[len(mixedRatios)-1], mixedRatios[len(mixedRatios)-1] <= 0.94)
		}
		b.WriteString("\n\n")
	}
	b.WriteString("The accuracy exact gains over zCDP: scenario `rgrad-eps-exact` (trace regression) and bench/results/pca.md, section \"exact vs zCDP accounting\" (Fashion-MNIST PCA). ")
	b.WriteString("How many ε = 1 runs the ledger admits under a (3, 1e-6) total under each rule: `go test ./engine/ledger -run TestGDPFilterCounts -v`.\n")
	fmt.Print(b.String())
}

// setup returns the estimator named estimator and the data model's draw
// (seed 1) with these parameters, or fails.
func setup(ests map[string]sdk.Estimator, estimator, model string, params map[string]string) (sdk.Estimator, *gen.Generated) {
	est, ok := ests[estimator]
	if !ok {
		check(fmt.Errorf("no estimator %s", estimator))
	}
	m, err := gen.Lookup(model)
	check(err)
	g, err := gen.Run(m, params, 1)
	check(err)
	return est, g
}

// compare writes the rows of one comparison: every step's scale under
// exact, zCDP and the paper's calibration at each ε, collecting the
// exact/zCDP ratios of Gaussian steps at ε = 1 into gaussRatios (runs
// whose steps are all Gaussian) or mixedRatios (runs with pure steps too).
func compare(b *strings.Builder, c comparison, ests map[string]sdk.Estimator, gaussRatios, mixedRatios *[]float64) {
	est, g := setup(ests, c.estimator, c.model, c.modelParams)
	choices := noiseChoices(est)
	for _, eps := range epsilons {
		grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: delta}
		if c.pure {
			grant = privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps}
		}
		zp := with(c.params, nil)
		if slices.Contains(choices, "zcdp") && !c.pure {
			zp["noise"] = "zcdp"
		}
		zc := steps(est, g.Data, zp, grant)
		var ex []privacy.Step
		var err error
		from := "run"
		switch {
		case c.pure:
			ex, from = zc, "pure plan"
		case slices.Contains(choices, "exact"):
			ex = steps(est, g.Data, with(c.params, map[string]string{"noise": "exact"}), grant)
		default:
			ex, err = derived(zc, grant)
			if err != nil {
				check(fmt.Errorf("%s: %w", c.estimator, err))
			}
			from = "derived"
		}
		var pap []privacy.Step
		paperNote := ""
		if c.paper != nil {
			pap, err = trySteps(est, g.Data, with(c.params, c.paper), grant)
			if err != nil && c.paper["noise"] == "classical" {
				// The classical formula is not valid for a step's ε > 1.
				pap, err = trySteps(est, g.Data, with(c.params, with(c.paper, map[string]string{"noise": "analytic"})), grant)
				paperNote = " (analytic Gaussian here: the classical formula is not valid for a step's ε > 1)"
			}
			check(err)
		}
		n := max(len(ex), len(zc), len(pap))
		for i := 0; i < n; i++ {
			name := ""
			cell := func(s []privacy.Step) string {
				if i >= len(s) {
					return "—"
				}
				name = cmp.Or(name, s[i].Name)
				return fmt.Sprintf("%.4g", s[i].Scale)
			}
			es, zs, ps := cell(ex), cell(zc), cell(pap)
			ratio := "—"
			if i < len(ex) && i < len(zc) && zc[i].Scale > 0 {
				r := ex[i].Scale / zc[i].Scale
				if ex[i].Mechanism == privacy.MechExponential {
					r = zc[i].Scale / ex[i].Scale // β: larger is less noise
				}
				ratio = fmt.Sprintf("%.3f", r)
				if ex[i].Mechanism == privacy.MechGaussian && eps == 1 && !c.pure {
					if allGaussian(ex) {
						*gaussRatios = append(*gaussRatios, r)
					} else {
						*mixedRatios = append(*mixedRatios, r)
					}
				}
			}
			label := ""
			if i == 0 {
				label = c.paperLabel + paperNote
			}
			fmt.Fprintf(b, "| %s | %s | %g | %s | %s | %s | %s | %s | %s |\n", c.estimator, name, eps, es, zs, ps, ratio, from, label)
		}
	}
}

// allGaussian reports whether every step is Gaussian.
func allGaussian(steps []privacy.Step) bool {
	return !slices.ContainsFunc(steps, func(s privacy.Step) bool { return s.Mechanism != privacy.MechGaussian })
}

// noiseChoices are the values the estimator's noise parameter accepts.
func noiseChoices(est sdk.Estimator) []string {
	info := est.Info()
	specs := info.Params
	if len(specs) == 0 && info.Options != nil {
		specs, _ = sdk.SpecsOf(info.Options)
	}
	for _, p := range specs {
		if p.Name == "noise" {
			return p.Choices
		}
	}
	return nil
}

func with(base, over map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

func steps(est sdk.Estimator, d *data.Dataset, params map[string]string, grant privacy.Grant) []privacy.Step {
	st, err := trySteps(est, d, params, grant)
	check(err)
	return st
}

func trySteps(est sdk.Estimator, d *data.Dataset, params map[string]string, grant privacy.Grant) ([]privacy.Step, error) {
	seed := uint64(1)
	_, acct, err := sdk.RunLocal(context.Background(), est, d, params, grant, sdk.LocalOptions{Seed: &seed})
	if err != nil {
		return nil, fmt.Errorf("%s %v: %w", est.Info().Name, params, err)
	}
	return acct.Steps(), nil
}

// zcdpCost is a step's zCDP cost: Gaussian Δ²/(2σ²), Laplace ε²/2,
// exponential mechanism ε²/8.
func zcdpCost(s privacy.Step) float64 {
	switch s.Mechanism {
	case privacy.MechGaussian:
		return privacy.RhoOfGaussian(s.Sensitivity, s.Scale)
	case privacy.MechExponential:
		return privacy.RhoOfExponential(s.Epsilon)
	}
	return privacy.RhoOfPure(s.Epsilon)
}

// derived is what noise=exact would give for a zCDP run's steps: one share
// per step, weighted by its zCDP cost (Gaussian ρ, Laplace ε²/2,
// exponential ε²/8), planned by privacy.NewPlan(NoiseExact) under grant;
// each step keeps its sensitivity and gets the exact per-step budget.
func derived(zc []privacy.Step, grant privacy.Grant) ([]privacy.Step, error) {
	acct, err := privacy.NewAccountant(grant)
	if err != nil {
		return nil, err
	}
	var total float64
	cost := make([]float64, len(zc))
	for i, s := range zc {
		cost[i] = zcdpCost(s)
		total += cost[i]
	}
	shares := make([]privacy.Share, len(zc))
	for i, s := range zc {
		shares[i] = privacy.Share{Name: fmt.Sprintf("s%d", i), Weight: cost[i] / total, Mechanism: s.Mechanism}
	}
	plan, err := privacy.NewPlan(acct, privacy.NoiseExact, shares...)
	if err != nil {
		return nil, err
	}
	out := make([]privacy.Step, len(zc))
	for i, s := range zc {
		bud, err := plan.Budget(fmt.Sprintf("s%d", i))
		if err != nil {
			return nil, err
		}
		out[i] = s
		switch s.Mechanism {
		case privacy.MechGaussian:
			out[i].Scale = s.Sensitivity / math.Sqrt(2*bud.Rho)
		case privacy.MechExponential:
			out[i].Scale = s.Scale * bud.Epsilon / s.Epsilon
		default:
			out[i].Scale = s.Sensitivity / bud.Epsilon
		}
	}
	return out, nil
}

// check reports a non-nil err and exits with status 1.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
