// "bench pldnoise" measures how much noise each step of the estimators
// that mix Gaussian, Laplace and exponential-mechanism steps needs at
// (ε, δ) = (1, 1e-6) and (4, 1e-6) under zCDP, the privacy loss distribution
// accounting and (all-pure runs) pure composition: every
// accounting scales all of one run's zCDP costs by the largest common
// factor its ε at δ allows. bench/results/privacy.md explains the table.
//
//	go run ./bench/cmd/bench pldnoise

package noise

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

type config struct {
	label       string
	estimator   string
	model       string
	modelParams map[string]string
	params      map[string]string
}

var configs = []config{
	{"pca-amin, private mean, clip=auto", "pca-amin", "spiked", map[string]string{"n": "20000", "p": "20"},
		map[string]string{"rank": "2", "center": "private"}},
	{"orbit-rank-k, clip=auto", "orbit-rank-k", "orbit-spiked", nil, map[string]string{"rank": "2"}},
	{"fedrep-classify, private rank selection", "fedrep-classify", "users-lowrank",
		map[string]string{"users": "2000", "samples": "10", "dim": "10", "rank": "2", "labels": "classification"},
		map[string]string{"rank": "2", "select_rank": "1,2", "local_fraction": "0.5"}},
	{"pca-analyze-gauss, clip=auto", "pca-analyze-gauss", "spiked", map[string]string{"n": "20000", "p": "20"},
		map[string]string{"rank": "2", "noise": "zcdp"}},
}

// accounting returns the ε at delta of steps.
type accounting struct {
	name string
	eps  func(steps []privacy.Step) (float64, error)
}

var accountings = []accounting{
	{"zCDP", func(s []privacy.Step) (float64, error) {
		var rho float64
		for _, st := range s {
			rho += st.Rho
		}
		return privacy.EpsilonFromRho(rho, delta), nil
	}},
	{"new PLD (CTD + BR)", func(s []privacy.Step) (float64, error) {
		p, err := privacy.RunPLD(s, privacy.DefaultPLDGrid)
		if err != nil {
			return 0, err
		}
		return p.Epsilon(delta)
	}},
}

// MainPLD runs "bench pldnoise" (it takes no arguments) over ests, every
// estimator by name.
func MainPLD(ests map[string]sdk.Estimator) {
	var b strings.Builder
	b.WriteString("| estimator | step | mechanism | ε | pure | zCDP | PLD (CTD + BR) | default (best valid) | PLD / zCDP |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	var timings []string
	for _, c := range configs {
		est, g := setup(ests, c.estimator, c.model, c.modelParams)
		for _, eps := range epsilons {
			grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: delta}
			steps, err := trySteps(est, g.Data, c.params, grant)
			if err != nil {
				check(fmt.Errorf("%s: %w", c.label, err))
			}
			base := unitCosts(steps)
			cs := make([]float64, len(accountings))
			for i, a := range accountings {
				if cs[i], err = largestScale(base, eps, a.eps); err != nil {
					check(fmt.Errorf("%s, %s: %w", c.label, a.name, err))
				}
			}
			// The default: every valid accounting's c, the largest wins
			// (pure composition too, for an all-pure run).
			best := math.Max(cs[0], cs[1])
			pureCell := "—"
			if cp, ok := pureScale(base, eps); ok {
				best = math.Max(best, cp)
				pureCell = "%"
			}
			if eps == 1 {
				t0 := time.Now()
				const reps = 5
				for r := 0; r < reps; r++ {
					if _, err := accountings[1].eps(scaled(base, cs[1])); err != nil {
						check(err)
					}
				}
				ms := float64(time.Since(t0).Microseconds()) / 1000 / reps
				timings = append(timings, fmt.Sprintf("%s: %d steps, %.1f ms", c.label, len(steps), ms))
			}
			for _, row := range rows(base) {
				cell := func(c float64) string { return fmt.Sprintf("%.4g", row.value(c)) }
				pc := pureCell
				if pc == "%" {
					cp, _ := pureScale(base, eps)
					pc = cell(cp)
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %g | %s | %s | %s | %s | %.3f |\n", c.label, row.name, row.mech, eps,
					pc, cell(cs[0]), cell(cs[1]), cell(best), row.value(cs[1])/row.value(cs[0]))
			}
		}
	}
	b.WriteString("\nFigures: σ/Δ for Gaussian steps (smaller is less noise), ε for Laplace and exponential steps (larger is less noise; an exponential step's β is ε/(2Δ)). Steps of equal cost are shown once (\"and N more\"). \"pure\" applies to all-pure runs only (ε add up).\n\n")
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "Accounting time of one run at ε = 1 (RunPLD + Epsilon, mean of 5 calls, wall; load average %s):\n\n", strings.Join(strings.Fields(string(load))[:3], " "))
	for _, s := range timings {
		b.WriteString("- " + s + "\n")
	}
	fmt.Print(b.String())
}

// unitCosts returns the steps with their zCDP costs in Rho (Gaussian
// Δ²/(2σ²), Laplace ε²/2, exponential ε²/8), the base of every scaling.
func unitCosts(steps []privacy.Step) []privacy.Step {
	out := make([]privacy.Step, len(steps))
	for i, s := range steps {
		out[i] = s
		out[i].Rho = zcdpCost(s)
		if s.Mechanism == privacy.MechGaussian {
			out[i].Epsilon, out[i].Delta = 0, 0
		}
	}
	return out
}

// scaled returns the steps with every zCDP cost multiplied by c, and
// their scales and ε to match.
func scaled(base []privacy.Step, c float64) []privacy.Step {
	out := make([]privacy.Step, len(base))
	for i, s := range base {
		r := s.Rho * c
		out[i] = s
		out[i].Rho = r
		switch s.Mechanism {
		case privacy.MechGaussian:
			out[i].Scale = s.Sensitivity / math.Sqrt(2*r)
		case privacy.MechLaplace:
			out[i].Epsilon = math.Sqrt(2 * r)
			out[i].Scale = s.Sensitivity / out[i].Epsilon
		case privacy.MechExponential:
			e := math.Sqrt(8 * r)
			out[i].Epsilon = e
			out[i].Scale = e / (2 * s.Sensitivity)
			if s.Calibration == privacy.CalibMonotone {
				out[i].Scale = e / s.Sensitivity
			}
		}
	}
	return out
}

// pureScale is the c at which an all-pure run's ε add up to target (ε ∝
// √c), and false for a run with a Gaussian step.
func pureScale(base []privacy.Step, target float64) (float64, bool) {
	var sum float64
	for _, s := range base {
		switch s.Mechanism {
		case privacy.MechGaussian:
			return 0, false
		case privacy.MechLaplace:
			sum += math.Sqrt(2 * s.Rho)
		default:
			sum += math.Sqrt(8 * s.Rho)
		}
	}
	return (target / sum) * (target / sum), true
}

// largestScale is the largest c with epsOf(scaled(base, c)) ≤ target, to
// 1e-6 relative.
func largestScale(base []privacy.Step, target float64, epsOf func([]privacy.Step) (float64, error)) (float64, error) {
	fits := func(c float64) (bool, error) {
		e, err := epsOf(scaled(base, c))
		return err == nil && e <= target, nil
	}
	lo, hi := 1e-3, 1e-3
	for {
		ok, err := fits(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
		if hi > 1e9 {
			return 0, fmt.Errorf("no upper bracket")
		}
	}
	if lo == hi {
		return 0, fmt.Errorf("no step budget fits at c = %g", lo)
	}
	for hi-lo > 1e-6*lo {
		m := (lo + hi) / 2
		ok, err := fits(m)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}

type row struct {
	name, mech string
	value      func(c float64) float64
}

// rows lists the distinct steps by mechanism and cost, labelled with the
// first step's name and how many share that cost.
func rows(base []privacy.Step) []row {
	var out []row
	counts := map[string]int{}
	var order []string
	first := map[string]privacy.Step{}
	for _, s := range base {
		k := fmt.Sprintf("%s|%.9g", s.Mechanism, s.Rho)
		if counts[k] == 0 {
			order = append(order, k)
			first[k] = s
		}
		counts[k]++
	}
	for _, k := range order {
		s := first[k]
		name := shareOf(s.Name)
		if len([]rune(name)) > 60 {
			name = string([]rune(name)[:57]) + "…"
		}
		if counts[k] > 1 {
			name = fmt.Sprintf("%s (and %d more at the same cost)", name, counts[k]-1)
		}
		r := s.Rho
		var v func(c float64) float64
		switch s.Mechanism {
		case privacy.MechGaussian:
			v = func(c float64) float64 { return 1 / math.Sqrt(2*r*c) }
		case privacy.MechLaplace:
			v = func(c float64) float64 { return math.Sqrt(2 * r * c) }
		default:
			v = func(c float64) float64 { return math.Sqrt(8 * r * c) }
		}
		out = append(out, row{name: name, mech: string(s.Mechanism), value: v})
	}
	return out
}

// shareOf strips a trailing step number ("vector 3" → "vector").
func shareOf(name string) string {
	f := strings.Fields(name)
	if len(f) > 1 {
		last := f[len(f)-1]
		if strings.Trim(last, "0123456789/") == "" {
			return strings.Join(f[:len(f)-1], " ")
		}
	}
	return name
}
