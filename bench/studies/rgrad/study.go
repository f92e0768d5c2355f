// Package rgradstudy is the accuracy study of the rgrad estimators on
// synthetic trace-regression data: median relative Frobenius errors against
// the sample size n and the grant's ε, beside the theoretical rate curve.
// The command `bench study rgrad` prints its tables.
package rgradstudy

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/rgrad"
)

// StudyConfig fixes the synthetic model of an accuracy study (defaults
// d1 = 30, d2 = 20, r = 2, Σ = diag(2, 1), σ_ξ = 0.5).
type StudyConfig struct {
	D1, D2, Rank            int
	Sigma1, SigmaR, SigmaXi float64
	Delta                   float64 // δ of the whole run
	Seeds                   int     // data and noise seeds per cell
	Iterations              int     // T; 0 means ceil(ln n)
	// ModelParams are extra parameters of the model-calibrated variants
	// (rgrad-dp, rgrad-weak), e.g. c3.
	ModelParams map[string]string
}

// DefaultStudyConfig is the default configuration with 10 seeds.
func DefaultStudyConfig() StudyConfig {
	return StudyConfig{D1: 30, D2: 20, Rank: 2, Sigma1: 2, SigmaR: 1, SigmaXi: 0.5, Delta: 1e-5, Seeds: 10}
}

// Variant is one estimator configuration of a study.
type Variant struct {
	Label     string
	Estimator string
	// Params builds the parameters for sample size n (public inputs only).
	Params func(n int) map[string]string
}

// DefaultVariants are the four estimators of the plugin plus rgrad-dp under
// the paper's literal calibration (with the analytic Gaussian mechanism,
// since the classical one is not valid for the per-step ε of most grants).
// The strict mode's clipping bounds are chosen from the public model
// parameters: clip_y = 4·sqrt(Σσ_k² + σ_ξ²) (four response standard
// deviations) and clip = (σ_ξ + σr)·sqrt(r(d1+d2)·ln n)/2 (the paper's
// Δ_l as a clip; plugins/rgrad/DERIVATIONS.md §6). The "rank and budget
// only" variants give neither model parameters nor clips: the estimators
// estimate them privately (plugins/rgrad/DERIVATIONS.md §10).
func DefaultVariants(c StudyConfig) []Variant {
	// basic is the rank (and T when given) under extra; model adds the
	// public model parameters and the study's ModelParams.
	basic := func(extra map[string]string) func(int) map[string]string {
		return func(int) map[string]string {
			p := map[string]string{"rank": strconv.Itoa(c.Rank)}
			if c.Iterations > 0 {
				p["iterations"] = strconv.Itoa(c.Iterations)
			}
			maps.Copy(p, extra)
			return p
		}
	}
	model := func(extra map[string]string) func(int) map[string]string {
		p := map[string]string{"sigma1": ftoa(c.Sigma1), "sigmar": ftoa(c.SigmaR), "sigma_xi": ftoa(c.SigmaXi)}
		maps.Copy(p, c.ModelParams)
		maps.Copy(p, extra)
		return basic(p)
	}
	ssq := 0.0
	for _, s := range singularValues(c) {
		ssq += s * s
	}
	clipY := 4 * math.Sqrt(ssq+c.SigmaXi*c.SigmaXi)
	return []Variant{
		{Label: "rgrad-dp (explicit, zCDP)", Estimator: "rgrad-dp", Params: model(nil)},
		{Label: "rgrad-dp (paper split, analytic Gaussian)", Estimator: "rgrad-dp", Params: model(map[string]string{"sensitivity": "paper", "noise": "analytic"})},
		{Label: "rgrad-weak (explicit, zCDP)", Estimator: "rgrad-weak", Params: model(nil)},
		{Label: "rgrad-strict (clipped, worst-case)", Estimator: "rgrad-strict", Params: func(n int) map[string]string {
			tau := (c.SigmaXi + c.SigmaR) * math.Sqrt(float64(c.Rank*(c.D1+c.D2))*math.Log(float64(n))) / 2
			return basic(map[string]string{"clip_y": ftoa(clipY), "clip": ftoa(tau)})(n)
		}},
		{Label: "rgrad-dp (rank and budget only)", Estimator: "rgrad-dp", Params: basic(c.ModelParams)},
		{Label: "rgrad-strict (rank and budget only)", Estimator: "rgrad-strict", Params: basic(nil)},
		{Label: "rgrad-nonprivate", Estimator: "rgrad-nonprivate", Params: basic(nil)},
	}
}

func singularValues(c StudyConfig) []float64 {
	s := make([]float64, c.Rank)
	for k := range s {
		if c.Rank == 1 {
			s[k] = c.Sigma1
		} else {
			s[k] = c.Sigma1 - (c.Sigma1-c.SigmaR)*float64(k)/float64(c.Rank-1)
		}
	}
	return s
}

// StudyCell is the outcome of one (variant, n, ε) cell: relative Frobenius
// errors ‖M̂ − M‖_F/‖M‖_F of the final and initial estimates, one per seed.
type StudyCell struct {
	Variant string
	N       int
	Epsilon float64 // +Inf: the non-private estimator stands in
	Rel     []float64
	InitRel []float64
}

// Median returns the median final relative error.
func (c StudyCell) Median() float64 { return evaluate.Median(c.Rel) }

// InitMedian returns the median relative error of the initial estimate.
func (c StudyCell) InitMedian() float64 { return evaluate.Median(c.InitRel) }

// RateCurve is the theoretical rate σ_ξ·sqrt(r(d1+d2)/n) +
// (σ_ξ + σr)·r(d1+d2)/(nε) of Theorem 3 without constants or logs, relative
// to ‖M‖_F.
func RateCurve(c StudyConfig, n int, eps float64) float64 {
	k := float64(c.Rank * (c.D1 + c.D2))
	fn := float64(n)
	rate := c.SigmaXi * math.Sqrt(k/fn)
	if !math.IsInf(eps, 1) {
		rate += (c.SigmaXi + c.SigmaR) * k / (fn * eps)
	}
	ssq := 0.0
	for _, s := range singularValues(c) {
		ssq += s * s
	}
	return rate / math.Sqrt(ssq)
}

// RunStudy fits every variant on Seeds data sets for each n and each total
// ε (grant (ε, Delta)); ε = +Inf runs the non-private estimator for every
// variant. Data sets are shared across variants and ε within a seed.
func RunStudy(ctx context.Context, c StudyConfig, ns []int, eps []float64, variants []Variant, progress func(string)) ([]StudyCell, error) {
	model, err := gen.Lookup(gen.TraceModelName)
	if err != nil {
		return nil, err
	}
	est := map[string]sdk.Estimator{}
	for _, e := range rgrad.Estimators() {
		est[e.Info().Name] = e
	}
	cells := map[string]*StudyCell{}
	var order []string
	for _, n := range ns {
		for s := 0; s < c.Seeds; s++ {
			g, err := gen.Run(model, map[string]string{
				"n": strconv.Itoa(n), "d1": strconv.Itoa(c.D1), "d2": strconv.Itoa(c.D2), "rank": strconv.Itoa(c.Rank),
				"sigma1": ftoa(c.Sigma1), "sigmar": ftoa(c.SigmaR), "sigma_xi": ftoa(c.SigmaXi),
			}, uint64(1000+s))
			if err != nil {
				return nil, err
			}
			truth := g.Truth["M"]
			norm := mat.Norm(truth, 2)
			var np [2]float64
			npDone := false
			for _, v := range variants {
				for _, e := range eps {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					key := fmt.Sprintf("%s|%d|%g", v.Label, n, e)
					cell, ok := cells[key]
					if !ok {
						cell = &StudyCell{Variant: v.Label, N: n, Epsilon: e}
						cells[key] = cell
						order = append(order, key)
					}
					if math.IsInf(e, 1) && npDone {
						cell.Rel = append(cell.Rel, np[0])
						cell.InitRel = append(cell.InitRel, np[1])
						continue
					}
					name := v.Estimator
					grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: e, Delta: c.Delta}
					params := v.Params(n)
					if math.IsInf(e, 1) {
						name = "rgrad-nonprivate"
						grant.Epsilon = 1
						params = map[string]string{"rank": strconv.Itoa(c.Rank)}
						if c.Iterations > 0 {
							params["iterations"] = strconv.Itoa(c.Iterations)
						}
					}
					seed := uint64(7 + s)
					res, _, err := sdk.RunLocal(ctx, est[name], g.Data, params, grant, sdk.LocalOptions{Seed: &seed})
					if err != nil {
						return nil, fmt.Errorf("%s at n=%d, ε=%g: %w", v.Label, n, e, err)
					}
					var fin, init float64
					for _, m := range res.Matrices {
						var d mat.Dense
						switch m.Name {
						case "M":
							d.Sub(m.M, truth)
							fin = mat.Norm(&d, 2) / norm
						case "M0":
							d.Sub(m.M, truth)
							init = mat.Norm(&d, 2) / norm
						}
					}
					cell.Rel = append(cell.Rel, fin)
					cell.InitRel = append(cell.InitRel, init)
					if math.IsInf(e, 1) {
						np, npDone = [2]float64{fin, init}, true
					}
				}
			}
			if progress != nil {
				progress(fmt.Sprintf("n=%d seed %d/%d done", n, s+1, c.Seeds))
			}
		}
	}
	out := make([]StudyCell, 0, len(order))
	for _, k := range order {
		out = append(out, *cells[k])
	}
	return out, nil
}

// StudyMarkdown renders the cells as one table per variant (rows n, columns
// ε) of median relative errors, with the initial error in parentheses, the
// rate curve, and log-log slopes against n for each ε.
func StudyMarkdown(c StudyConfig, cells []StudyCell, ns []int, eps []float64) string {
	var b strings.Builder
	idx := map[string]StudyCell{}
	var labels []string
	for _, cell := range cells {
		k := fmt.Sprintf("%s|%d|%g", cell.Variant, cell.N, cell.Epsilon)
		idx[k] = cell
		if !slices.Contains(labels, cell.Variant) {
			labels = append(labels, cell.Variant)
		}
	}
	head := func() {
		b.WriteString("| n |")
		for _, e := range eps {
			fmt.Fprintf(&b, " ε=%s |", epsLabel(e))
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(eps)) + "\n")
	}
	for _, l := range labels {
		fmt.Fprintf(&b, "\n**%s** — median ‖M̂−M‖_F/‖M‖_F over %d seeds (initial estimate in parentheses)\n\n", l, c.Seeds)
		head()
		for _, n := range ns {
			fmt.Fprintf(&b, "| %d |", n)
			for _, e := range eps {
				cell := idx[fmt.Sprintf("%s|%d|%g", l, n, e)]
				fmt.Fprintf(&b, " %.4f (%.3f) |", cell.Median(), cell.InitMedian())
			}
			b.WriteString("\n")
		}
		if len(ns) > 1 {
			b.WriteString("| slope vs n |")
			for _, e := range eps {
				xs, ys := make([]float64, len(ns)), make([]float64, len(ns))
				for i, n := range ns {
					xs[i], ys[i] = float64(n), idx[fmt.Sprintf("%s|%d|%g", l, n, e)].Median()
				}
				fmt.Fprintf(&b, " %.2f |", evaluate.LogSlope(xs, ys))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\n**rate curve** σ_ξ·sqrt(r(d1+d2)/n) + (σ_ξ+σr)·r(d1+d2)/(nε), relative to ‖M‖_F (no constants, no logs)\n\n")
	head()
	for _, n := range ns {
		fmt.Fprintf(&b, "| %d |", n)
		for _, e := range eps {
			fmt.Fprintf(&b, " %.4f |", RateCurve(c, n, e))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func epsLabel(e float64) string {
	if math.IsInf(e, 1) {
		return "∞"
	}
	return ftoa(e)
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
