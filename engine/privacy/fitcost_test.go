package privacy

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The accounting of three whole fits, pinned to the bit: the per-step
// budgets and noise scales their plans calibrate, and the figures the
// composition charges and the certification states. A change that only
// makes the accounting faster must leave every one of them as it was.

// fitCase is a fit's plan and the releases it makes from it, in order.
type fitCase struct {
	name   string
	grant  Grant
	plan   func(*Accountant) (*Plan, error)
	spends func(*Accountant, *Plan) error
}

func gaussianSpend(a *Accountant, p *Plan, share, name string, sens float64, dim int) error {
	b, err := p.Budget(share)
	if err == nil {
		_, err = a.Gaussian(name, sens, dim, b)
	}
	return err
}

func exponentialSpend(a *Accountant, p *Plan, share, name string) error {
	b, err := p.Budget(share)
	if err == nil {
		_, err = a.Exponential(name, 1, b)
	}
	return err
}

// readmeShares is the plan of the README's Fashion-MNIST fit
// (pca-analyze-gauss, clip=auto, center=private): three private
// quantiles (the mean's clip, the clip of the offsets from the first
// mean, the rows' clip), the two-step private mean and the second moment,
// under noise=exact.
var readmeShares = []Share{
	{Name: "clip", Weight: 0.1, Steps: 3, Mechanism: MechExponential},
	{Name: "mean", Weight: 0.2, Steps: 2, Mechanism: MechGaussian},
	{Name: "moment", Weight: 0.7, Mechanism: MechGaussian},
}

var fitCases = []fitCase{{
	name:  "readme",
	grant: approxGrant,
	plan:  func(a *Accountant) (*Plan, error) { return NewPlan(a, NoiseExact, readmeShares...) },
	spends: func(a *Accountant, p *Plan) error {
		for _, err := range []error{
			exponentialSpend(a, p, "clip", "mean clip"),
			gaussianSpend(a, p, "mean", "mean", 2.0/60000, 784),
			exponentialSpend(a, p, "clip", "offset clip"),
			gaussianSpend(a, p, "mean", "mean offsets", 1.0/60000, 784),
			exponentialSpend(a, p, "clip", "clip"),
			gaussianSpend(a, p, "moment", "moment", 1.4142/60000, 784*785/2),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	},
}, {
	name:  "pure-exact",
	grant: approxGrant,
	plan: func(a *Accountant) (*Plan, error) {
		return NewPurePlan(a, NoiseExact,
			Share{Name: "counts", Weight: 0.5, Mechanism: MechLaplace},
			Share{Name: "pick", Weight: 0.5, Steps: 10, Mechanism: MechExponential})
	},
	spends: func(a *Accountant, p *Plan) error {
		b, err := p.Budget("counts")
		if err == nil {
			_, err = a.Laplace("counts", 2, 10, b)
		}
		for i := 0; i < 10 && err == nil; i++ {
			err = exponentialSpend(a, p, "pick", fmt.Sprintf("pick %d", i))
		}
		return err
	},
}, {
	name:  "pure-grant",
	grant: Grant{Kind: GrantPure, Epsilon: 1},
	plan: func(a *Accountant) (*Plan, error) {
		return NewPurePlan(a, NoiseExact, Share{Name: "pick", Weight: 1, Steps: 3, Mechanism: MechExponential})
	},
	spends: func(a *Accountant, p *Plan) error {
		var err error
		for i := 0; i < 3 && err == nil; i++ {
			err = exponentialSpend(a, p, "pick", fmt.Sprintf("pick %d", i))
		}
		return err
	},
}, {
	name:  "fedrep",
	grant: approxGrant,
	plan: func(a *Accountant) (*Plan, error) {
		return NewPlan(a, NoiseExact,
			Share{Name: "tune", Weight: 0.1, Steps: 2, Mechanism: MechGaussian},
			Share{Name: "init", Weight: 0.27, Mechanism: MechGaussian},
			Share{Name: "rounds", Weight: 0.63, Steps: 20, Mechanism: MechGaussian})
	},
	spends: func(a *Accountant, p *Plan) error {
		err := gaussianSpend(a, p, "tune", "tune 1", 0.5, 40)
		if err == nil {
			err = gaussianSpend(a, p, "tune", "tune 2", 0.5, 40)
		}
		if err == nil {
			err = gaussianSpend(a, p, "init", "init", 0.01, 200)
		}
		for i := 0; i < 20 && err == nil; i++ {
			err = gaussianSpend(a, p, "rounds", fmt.Sprintf("round %d", i), 0.02, 200)
		}
		return err
	},
}}

// run makes c's plan, spends it and certifies the steps as the SDK and
// the host do; it returns every figure a user sees or the ledger records,
// keyed by name.
func (c fitCase) run(tb testing.TB) map[string]float64 {
	a, err := NewAccountant(c.grant)
	require.NoError(tb, err)
	p, err := c.plan(a)
	require.NoError(tb, err)
	require.NoError(tb, c.spends(a, p))
	out := map[string]float64{"factor": p.Factor()}
	t := p.Total()
	out["total rho"], out["total eps"] = t.Rho, t.Epsilon
	for _, s := range p.Shares() {
		b, err := p.Budget(s.Name)
		require.NoError(tb, err)
		out["budget "+s.Name+" rho"], out["budget "+s.Name+" eps"], out["budget "+s.Name+" delta"] = b.Rho, b.Epsilon, b.Delta
	}
	for _, s := range a.Steps() {
		out["step "+s.Name+" scale"], out["step "+s.Name+" sens"] = s.Scale, s.Sensitivity
		out["step "+s.Name+" eps"], out["step "+s.Name+" rho"] = s.Epsilon, s.Rho
	}
	ach, err := Compose(c.grant, a.Steps())
	require.NoError(tb, err)
	out["charged eps"], out["charged delta"], out["charged rho"] = ach.Epsilon, ach.Delta, ach.Rho
	g, err := Certify(Guarantee{}, c.grant, a.Steps())
	require.NoError(tb, err)
	out["certified eps"], out["certified delta"], out["certified rho"], out["certified mu"] = g.Epsilon, g.Delta, g.Rho, g.Mu
	out["certified tight eps"], out["certified tight delta"] = g.TightEpsilon, g.TightDelta
	out["accounting "+ach.Composition+" "+g.Accounting+" "+string(g.Kind)] = 1
	return out
}

// TestFitAccountingPinned compares every figure of the fit cases with
// the values main 4dff6a7 computed, before the accounting was memoised (exact
// float64 bits, hexadecimal). DPLR_PIN_PRINT=1 prints the current values.
func TestFitAccountingPinned(t *testing.T) {
	for _, c := range fitCases {
		t.Run(c.name, func(t *testing.T) {
			got := c.run(t)
			hex := map[string]string{}
			for k, v := range got {
				hex[k] = strconv.FormatFloat(v, 'x', -1, 64)
			}
			if os.Getenv("DPLR_PIN_PRINT") != "" {
				keys := make([]string, 0, len(hex))
				for k := range hex {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				fmt.Printf("\t%q: {\n", c.name)
				defer fmt.Printf("\t},\n")
				for _, k := range keys {
					fmt.Printf("\t\t%q: %q,\n", k, hex[k])
				}
			}
			require.Equal(t, pinnedFits[c.name], hex)
		})
	}
}

// BenchmarkFitAccounting times the accounting of each fit case in a
// fresh process (memoised results forgotten first) and, "again", when the
// same fit is accounted a second time in the process.
func BenchmarkFitAccounting(b *testing.B) {
	for _, c := range fitCases {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				forgetMemos()
				c.run(b)
			}
		})
		b.Run(c.name+"/again", func(b *testing.B) {
			c.run(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.run(b)
			}
		})
	}
}

// forgetMemos empties the process's memoised accounting.
func forgetMemos() {
	pldMemo.Lock()
	clear(pldMemo.m)
	pldMemo.Unlock()
	gdpMuCache.Clear()
}

// TestPLDEpsilonMemo checks that the memoised ε is RunPLD's, on a first
// call and on a repeated one, and that steps or a δ that differ in any
// figure, or list pure factors in another order, get their own entry.
func TestPLDEpsilonMemo(t *testing.T) {
	gauss := func(mu float64) Step {
		return Step{Mechanism: MechGaussian, Sensitivity: 1, Scale: 1 / mu, Rho: mu * mu / 2}
	}
	expo := func(eps float64) Step { return Step{Mechanism: MechExponential, Epsilon: eps} }
	lap := func(eps float64) Step {
		return Step{Mechanism: MechLaplace, Sensitivity: 1, Scale: 1 / eps, Epsilon: eps}
	}
	cases := []struct {
		name  string
		steps []Step
		delta float64
	}{
		{"readme-like", []Step{expo(0.1), gauss(0.05), expo(0.1), gauss(0.2)}, 1e-6},
		{"other delta", []Step{expo(0.1), gauss(0.05), expo(0.1), gauss(0.2)}, 1e-5},
		{"a little more noise", []Step{expo(0.1), gauss(0.05), expo(0.1), gauss(0.2 * (1 - 1e-12))}, 1e-6},
		{"order of pure factors", []Step{lap(0.2), expo(0.1), lap(0.2)}, 1e-6},
		{"order swapped", []Step{expo(0.1), lap(0.2), lap(0.2)}, 1e-6},
		{"gaussian only", []Step{gauss(0.3), gauss(0.4)}, 1e-6},
	}
	forgetMemos()
	seen := map[string]string{}
	for _, c := range cases {
		p, err := RunPLD(c.steps, DefaultPLDGrid)
		require.NoError(t, err, c.name)
		want, err := p.Epsilon(c.delta)
		require.NoError(t, err, c.name)
		for range 2 {
			got, err := pldEpsilon(c.steps, c.delta)
			require.NoError(t, err, c.name)
			require.Equal(t, math.Float64bits(want), math.Float64bits(got), c.name)
		}
		k := fmt.Sprint(c.delta, c.steps)
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s share the memo key %q", prev, c.name, k)
		}
		seen[k] = c.name
	}
	_, err := pldEpsilon(nil, 1e-6)
	require.ErrorIs(t, err, ErrInvalidBudget)
	// The key prints every field of a Step with %v: a String or GoString
	// method could print less and merge different steps.
	_, stringer := any(Step{}).(fmt.Stringer)
	_, goStringer := any(Step{}).(fmt.GoStringer)
	require.False(t, stringer || goStringer, "Step prints itself: pldEpsilon's key must list its fields")
}

// TestExactPlanScaledOnFirstUse checks that an exact plan with a pure
// share runs no PLD until its budgets are read, and that a prefixed view
// and the plan then read the same scaled budgets.
func TestExactPlanScaledOnFirstUse(t *testing.T) {
	forgetMemos()
	a, err := NewAccountant(approxGrant)
	require.NoError(t, err)
	shares := append([]Share(nil), readmeShares...)
	for i := range shares {
		shares[i].Name = "fit/" + shares[i].Name
	}
	p, err := NewPlan(a, NoiseExact, shares...)
	require.NoError(t, err)
	pldMemo.Lock()
	n := len(pldMemo.m)
	pldMemo.Unlock()
	require.Zero(t, n, "NewPlan ran the calibration")
	view, err := p.Prefixed("fit/").Budget("moment")
	require.NoError(t, err)
	whole, err := p.Budget("fit/moment")
	require.NoError(t, err)
	require.Equal(t, whole, view)
	require.Equal(t, pinnedFits["readme"]["budget moment rho"], strconv.FormatFloat(whole.Rho, 'x', -1, 64))
	require.Equal(t, pinnedFits["readme"]["total rho"], strconv.FormatFloat(p.Total().Rho, 'x', -1, 64))
}
