package ledger

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dplr/dplr/engine/privacy"
)

// Charge is what one run counts against its data set's budget: the privacy
// statements known to hold for the run. A zero field means that statement is
// not available; an all-zero Charge costs nothing.
type Charge struct {
	// Epsilon and Delta: the run is (Epsilon, Delta)-DP; Delta = 0 is pure
	// ε-DP. Epsilon = 0: no (ε, δ) statement.
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// Rho: the run is Rho-zCDP. 0: no zCDP statement.
	Rho float64 `json:"rho,omitempty"`
	// Mu2: the run is μ-GDP with μ² = Mu2 (Gaussian differential privacy,
	// Dong, Roth & Su 2022). Set for runs whose steps are all Gaussian, and
	// on a reservation as the largest μ² the grant allows a Gaussian-only
	// run (see reserveCharge). 0: no GDP statement. It is used only by the
	// Gaussian-DP filter (see the package doc) and is no statement on its
	// own: a charge with only Mu2 costs nothing under the other rules.
	Mu2 float64 `json:"mu2,omitempty"`
}

// IsZero reports whether the charge costs nothing.
func (c Charge) IsZero() bool { return !(c.Epsilon > 0) && !(c.Rho > 0) }

// HasEpsDelta reports whether the charge carries an (ε, δ) statement.
func (c Charge) HasEpsDelta() bool { return c.Epsilon > 0 }

// IsPure reports whether the charge is a pure ε-DP statement.
func (c Charge) IsPure() bool { return c.Epsilon > 0 && c.Delta == 0 }

// HasRho reports whether the charge carries a ρ-zCDP statement.
func (c Charge) HasRho() bool { return c.Rho > 0 }

// String describes the charge.
func (c Charge) String() string {
	switch {
	case c.IsZero():
		return "nothing"
	case c.IsPure() && c.HasRho():
		return fmt.Sprintf("ε=%.4g (pure; ρ=%.4g)", c.Epsilon, c.Rho)
	case c.IsPure():
		return fmt.Sprintf("ε=%.4g (pure)", c.Epsilon)
	case c.HasEpsDelta() && c.HasRho():
		return fmt.Sprintf("ε=%.4g, δ=%.3g (ρ=%.4g)", c.Epsilon, c.Delta, c.Rho)
	case c.HasEpsDelta():
		return fmt.Sprintf("ε=%.4g, δ=%.3g", c.Epsilon, c.Delta)
	}
	return fmt.Sprintf("ρ=%.4g", c.Rho)
}

// HasMu reports whether the charge carries a μ-GDP statement.
func (c Charge) HasMu() bool { return c.Mu2 > 0 && !c.IsZero() }

// valid reports whether every field is finite and non-negative, δ < 1.
func (c Charge) valid() bool {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }
	return ok(c.Epsilon) && ok(c.Rho) && ok(c.Mu2) && c.Delta >= 0 && c.Delta < 1
}

// grantMu2 is the largest μ² a run granted g can spend when it is
// admitted under the Gaussian-DP filter: a Gaussian-only run whose steps
// meet an (ε, δ) grant is μ-GDP with δ_μ(ε) ≤ δ, and δ_μ(ε) increases in
// μ, so μ ≤ privacy.GDPMu(ε, δ) (this holds whichever valid accounting
// admitted the steps, since the GDP curve of the composition is exact and
// every valid bound lies above it); a Gaussian run within ρ-zCDP has
// μ² = 2ρ exactly (a Gaussian step is Δ²/2σ²-zCDP and (Δ/σ)-GDP). A run
// granted a pure ε, whatever its (pure) mechanisms, is ε-DP and hence
// μ_ε-GDP (pureMu): the fallback that lets Laplace and exponential-
// mechanism runs join a Gaussian-DP history.
func grantMu2(g privacy.Grant) float64 {
	switch g.Kind {
	case privacy.GrantPure:
		mu := pureMu(g.Epsilon)
		return mu * mu
	case privacy.GrantApprox:
		mu, err := privacy.GDPMu(g.Epsilon, g.Delta)
		if err != nil {
			return 0
		}
		return mu * mu
	case privacy.GrantZCDP:
		return 2 * g.Rho
	}
	return 0
}

// reserveCharge is what a reservation of g charges: the grant's statements
// (GrantCharge) and, for the Gaussian-DP filter, the largest μ² the run
// may spend if it turns out Gaussian-only (grantMu2). A run that turns out
// otherwise cannot settle under that filter (see Settle), so the cap is
// sound whatever the run does.
func reserveCharge(g privacy.Grant) Charge {
	c := GrantCharge(g)
	c.Mu2 = grantMu2(g)
	return c
}

// stepsMu2 is μ² of a list of steps that are all Gaussian with a recorded
// sensitivity and scale (privacy.RunGDP), and false otherwise.
func stepsMu2(steps []privacy.Step) (float64, bool) {
	if len(steps) == 0 {
		return 0, false
	}
	for _, s := range steps {
		if s.Mechanism != privacy.MechGaussian || !(s.Scale > 0) || !(s.Sensitivity > 0) {
			return 0, false
		}
	}
	mu, ok, err := privacy.RunGDP(steps)
	if err != nil || !ok || !(mu > 0) || math.IsInf(mu, 0) {
		return 0, false
	}
	return mu * mu, true
}

// GrantCharge is the charge of a run granted g, before it reports what it
// achieved: a pure ε grant is (ε, 0)-DP and ε²/2-zCDP, an (ε, δ) grant is
// (ε, δ)-DP only, a ρ grant is ρ-zCDP only.
func GrantCharge(g privacy.Grant) Charge {
	switch g.Kind {
	case privacy.GrantPure:
		return Charge{Epsilon: g.Epsilon, Rho: privacy.RhoOfPure(g.Epsilon)}
	case privacy.GrantApprox:
		return Charge{Epsilon: g.Epsilon, Delta: g.Delta}
	case privacy.GrantZCDP:
		return Charge{Rho: g.Rho}
	}
	return Charge{}
}

// achievedCharge turns the privacy package's composition of one run's
// steps into the statements the ledger records for the run: the (ε, δ)
// statement always, and the ρ statement when the composition covers every
// step in zCDP ("zcdp", or a pure run's ε²/2).
func achievedCharge(g privacy.Grant, ach privacy.Achieved) Charge {
	switch {
	case g.Kind == privacy.GrantZCDP:
		return Charge{Rho: ach.Rho}
	case ach.Composition == "pure":
		return Charge{Epsilon: ach.Epsilon, Rho: privacy.RhoOfPure(ach.Epsilon)}
	case ach.Composition == "zcdp":
		return Charge{Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Rho}
	case ach.Composition == privacy.MethodGDP && ach.Mu > 0:
		// Every step Gaussian: μ-GDP, and μ²/2-zCDP as well (a Gaussian
		// step of sensitivity Δ and noise σ is Δ²/2σ²-zCDP, Bun & Steinke
		// 2016, Prop. 1.6; zCDP composes adaptively).
		return Charge{Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Mu * ach.Mu / 2, Mu2: ach.Mu * ach.Mu}
	}
	// "basic" and "mixed": Achieved.Rho, if any, covers only part of the
	// steps, so the run carries no ρ statement.
	return Charge{Epsilon: ach.Epsilon, Delta: ach.Delta}
}

// Spent is the composed privacy cost of a data set's charges.
type Spent struct {
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// Rho is the total ρ for a ρ budget, or the ρ of the steps accounted in
	// zCDP for the "zcdp" and "mixed" compositions.
	Rho float64 `json:"rho,omitempty"`
	// Mu is the GDP parameter of the history under the Gaussian-DP filter
	// (Composition "gdp"); 0 otherwise.
	Mu float64 `json:"mu,omitempty"`
	// Composition names the accounting, as the privacy package names it:
	// "none" (nothing spent), "pure", "zcdp", "mixed", "basic", "gdp"; or "sum" for
	// a data set without a budget, where Epsilon/Delta are the plain sums of
	// the (ε, δ) statements (0 if some charge has none) and Rho the sum of
	// the ρ statements (0 if some charge has none).
	Composition string `json:"composition"`
}

// Remaining is what admission will still allow, found with the very rule
// Reserve applies (see the package doc). Its meaning depends on the total's
// form:
//   - pure ε total: Epsilon is the largest further pure ε grant that fits;
//   - ρ total: Rho is the largest further ρ grant;
//   - (ε, δ) total: Epsilon and Delta describe the largest further (ε, δ)
//     grant at the δ left by basic composition (both 0 when no (ε, δ) grant
//     fits), and Rho the largest further ρ grant.
//
// Leftovers below a relative 1e-9 of the total (float rounding) are 0.
type Remaining struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta,omitempty"`
	Rho     float64 `json:"rho,omitempty"`
	// Mu is the GDP parameter still available under the Gaussian-DP filter
	// (0 under the other rules).
	Mu float64 `json:"mu,omitempty"`
	// PureEpsilon, under the Gaussian-DP filter, is the largest further
	// pure ε grant (an ε-DP run counts μ_ε = 2Φ⁻¹(e^ε/(1+e^ε))); 0 under
	// the other rules, where Epsilon says it for a pure total.
	PureEpsilon float64 `json:"pure_epsilon,omitempty"`
}

// Admission rules of an (ε, δ) total (see the package doc).
const (
	filterGDP     = "gdp"     // Gaussian-DP filter: Σ μ_i² ≤ μ_T²
	filterClassic = "classic" // zCDP/Rényi, pure or basic composition
)

// group is the sum of the charges of one statement shape.
type group struct {
	N     int     `json:"n,omitempty"`
	Eps   float64 `json:"eps,omitempty"`
	Delta float64 `json:"delta,omitempty"`
	Rho   float64 `json:"rho,omitempty"`
}

// agg sums a set of charges into the four shapes the privacy package's
// composition distinguishes. Composing the four sums as four steps gives
// exactly what composing every charge as its own step gives: each candidate
// accounting of privacy.Compose depends only on these sums and on which
// shapes are present.
type agg struct {
	P group `json:"p"` // pure (ε > 0, δ = 0); Rho holds Σ ρ (ε²/2 when none declared)
	A group `json:"a"` // (ε, δ) with ρ
	B group `json:"b"` // (ε, δ) without ρ
	C group `json:"c"` // ρ only
	// NMu2 counts the charges with a GDP statement and Mu2 sums their μ².
	NMu2 int     `json:"nmu2,omitempty"`
	Mu2  float64 `json:"mu2,omitempty"`
	// Filter is the admission rule of an (ε, δ) total once decided
	// (filterGDP or filterClassic; "" while undecided). Only the settled
	// aggregate (dsState.Final) sets it; see apply.
	Filter string `json:"filter,omitempty"`
}

func (a *agg) add(c Charge) {
	if c.IsZero() {
		return
	}
	if !c.HasEpsDelta() {
		c.Delta = 0 // δ without ε is no statement
	}
	var g *group
	switch {
	case c.IsPure():
		if !c.HasRho() {
			c.Rho = privacy.RhoOfPure(c.Epsilon)
		}
		g = &a.P
	case c.HasEpsDelta() && c.HasRho():
		g = &a.A
	case c.HasEpsDelta():
		g = &a.B
	default:
		g = &a.C
	}
	if c.Mu2 > 0 {
		a.NMu2++
		a.Mu2 += c.Mu2
	}
	g.N++
	g.Eps += c.Epsilon
	g.Delta += c.Delta
	g.Rho += c.Rho
}

func (a agg) n() int { return a.P.N + a.A.N + a.B.N + a.C.N }

// allMu reports whether every charge carries a GDP statement.
func (a agg) allMu() bool { return a.NMu2 == a.n() }

// gaussianOnly reports whether every charge is a Gaussian-only run's: each
// carries a GDP statement and none is pure (a pure run's GDP statement is
// the fallback of pureMu, which does not make the history Gaussian-only).
func (a agg) gaussianOnly() bool { return a.allMu() && a.P.N == 0 }

// mode is the admission rule for an (ε, δ) total: the decided one, or
// filterClassic while undecided when some charge is not a Gaussian-only
// run's (the Gaussian-DP filter cannot be fixed for that history), or ""
// (undecided: both rules must admit).
func (a agg) mode() string {
	if a.Filter == "" && !a.gaussianOnly() {
		return filterClassic
	}
	return a.Filter
}

// steps is the aggregate as privacy steps, one per shape present.
func (a agg) steps() []privacy.Step {
	var s []privacy.Step
	if a.P.N > 0 {
		s = append(s, privacy.Step{Name: "pure runs", Epsilon: a.P.Eps, Rho: a.P.Rho})
	}
	if a.A.N > 0 {
		s = append(s, privacy.Step{Name: "(ε, δ) runs with ρ", Epsilon: a.A.Eps, Delta: a.A.Delta, Rho: a.A.Rho})
	}
	if a.B.N > 0 {
		s = append(s, privacy.Step{Name: "(ε, δ) runs", Epsilon: a.B.Eps, Delta: a.B.Delta})
	}
	if a.C.N > 0 {
		s = append(s, privacy.Step{Name: "ρ runs", Rho: a.C.Rho})
	}
	return s
}

// Compose composes charges against total with the privacy package's
// composition and returns what they spend. The error wraps ErrIncompatible
// when some charge cannot be counted against a budget of that form (e.g. an
// (ε, δ) charge against a pure total), and ErrBudgetExceeded when the charges
// do not fit. The rules are in the package doc.
func Compose(total privacy.Grant, charges []Charge) (Spent, error) {
	if err := total.Validate(); err != nil {
		return Spent{}, fmt.Errorf("budget: %w", err)
	}
	var a agg
	for _, c := range charges {
		if !c.valid() {
			return Spent{}, fmt.Errorf("charge %v: %w", c, ErrInvalid)
		}
		a.add(c)
	}
	return compose(total, a)
}

// compose is the admission rule: the charges fit the total iff
// privacy.Compose accepts them as steps under the total as a grant.
func compose(total privacy.Grant, a agg) (Spent, error) {
	if a.n() == 0 {
		return Spent{Composition: "none"}, nil
	}
	switch total.Kind {
	case privacy.GrantPure:
		if n := a.n() - a.P.N; n > 0 {
			return Spent{}, fmt.Errorf("%d run(s) are not pure ε-DP and cannot count against a pure ε budget: %w", n, ErrIncompatible)
		}
	case privacy.GrantZCDP:
		if a.B.N > 0 {
			return Spent{}, fmt.Errorf("%d run(s) have no zCDP accounting and cannot count against a ρ budget: %w", a.B.N, ErrIncompatible)
		}
	case privacy.GrantApprox:
		switch a.mode() {
		case filterGDP:
			return composeGDP(total, a)
		case "":
			sp, err := composeClassic(total, a)
			if err != nil {
				return Spent{}, err
			}
			if _, err := composeGDP(total, a); err != nil {
				return Spent{}, err
			}
			return sp, nil
		}
	}
	return composeClassic(total, a)
}

// composeGDP is the Gaussian-DP filter for an (ε, δ) total: every charge
// must be μ_i-GDP and Σ μ_i² ≤ μ_T² with μ_T = privacy.GDPMu(ε_T, δ_T).
// Valid for fully adaptive choices of the μ_i (Smith & Thakurta 2022,
// "Fully adaptive composition for Gaussian differential privacy", Thm 1):
// the whole history is then μ_T-GDP, hence (ε_T, δ_T)-DP by the GDP curve
// (Dong, Roth & Su 2022, Cor. 2.13).
func composeGDP(total privacy.Grant, a agg) (Spent, error) {
	if n := a.n() - a.NMu2; n > 0 {
		return Spent{}, fmt.Errorf("%d run(s) have no Gaussian-DP statement (neither Gaussian-only nor granted a pure ε), and this budget follows the Gaussian-DP filter since its first run was Gaussian-only (such runs need a pure ε grant or a data set of their own): %w", n, ErrIncompatible)
	}
	muT, err := gdpMu(total.Epsilon, total.Delta)
	if err != nil {
		return Spent{}, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if !within(a.Mu2, muT*muT) {
		return Spent{}, fmt.Errorf("Gaussian-DP filter: μ² spent %.6g > %.6g (μ_T = %.6g for ε = %.6g, δ = %.3g): %w",
			a.Mu2, muT*muT, muT, total.Epsilon, total.Delta, ErrBudgetExceeded)
	}
	mu := math.Sqrt(a.Mu2)
	eps, err := privacy.GDPEpsilon(mu, total.Delta)
	if err != nil {
		return Spent{}, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return Spent{Epsilon: math.Min(eps, total.Epsilon), Delta: total.Delta, Rho: a.Mu2 / 2, Mu: mu, Composition: filterGDP}, nil
}

// gdpMuCache memoises privacy.GDPMu (a bisection of about 2 ms), which
// admission and the headroom search call for the same few totals.
var gdpMuCache sync.Map // [2]float64 → float64

// gdpMu is privacy.GDPMu(eps, delta), memoised.
func gdpMu(eps, delta float64) (float64, error) {
	k := [2]float64{eps, delta}
	if v, ok := gdpMuCache.Load(k); ok {
		return v.(float64), nil
	}
	mu, err := privacy.GDPMu(eps, delta)
	if err != nil {
		return 0, err
	}
	gdpMuCache.Store(k, mu)
	return mu, nil
}

// within allows float rounding at the boundary of the GDP filter.
func within(x, limit float64) bool { return x <= limit*(1+1e-12) }

// composeClassic is the zCDP/Rényi, pure or basic rule: the charges fit iff
// privacy.Compose accepts them as steps under the total as a grant.
func composeClassic(total privacy.Grant, a agg) (Spent, error) {
	if total.Kind == privacy.GrantApprox {
		if a.B.N > 0 && a.C.N > 0 {
			return Spent{}, fmt.Errorf("%d run(s) have only an (ε, δ) statement and %d only a ρ statement: no composition covers both (grant the runs ρ or (ε, δ) alike): %w", a.B.N, a.C.N, ErrIncompatible)
		}
	}
	ach, err := privacy.Compose(total, a.steps())
	if err != nil {
		if errors.Is(err, privacy.ErrOverBudget) {
			return Spent{}, fmt.Errorf("%w: %w", err, ErrBudgetExceeded)
		}
		return Spent{}, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return Spent{Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Rho, Composition: ach.Composition}, nil
}

// fits reports whether a further charge c is admitted on top of a.
func fits(total privacy.Grant, a agg, c Charge) error {
	a.add(c)
	_, err := compose(total, a)
	return err
}

// uncomposed is the Spent of a data set without a budget.
func uncomposed(a agg) Spent {
	if a.n() == 0 {
		return Spent{Composition: "none"}
	}
	sp := Spent{Composition: "sum"}
	if a.C.N == 0 {
		sp.Epsilon, sp.Delta = a.P.Eps+a.A.Eps+a.B.Eps, a.P.Delta+a.A.Delta+a.B.Delta
	}
	if a.B.N == 0 {
		sp.Rho = a.P.Rho + a.A.Rho + a.C.Rho
	}
	return sp
}

// tiny is the relative leftover, against the total, shown as nothing left.
const tiny = 1e-9

// largest is the largest x in [0, hi] for which ok(x) holds, by bisection,
// assuming ok is monotone; 0 when even a tiny fraction of hi fails.
func largest(hi float64, ok func(float64) bool) float64 {
	if !(hi > 0) || !ok(hi*tiny) {
		return 0
	}
	if ok(hi) {
		return hi
	}
	lo := hi * tiny
	for i := 0; i < 100 && hi-lo > lo*1e-12; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Prefer a round figure: lo rounded down to 10 significant digits, when
	// admitted (it is the exact leftover up to rounding in the sums).
	if lo > 0 {
		p := math.Pow(10, 9-math.Floor(math.Log10(lo)))
		if r := math.Floor(lo*p) / p; r > 0 && ok(r) {
			return r
		}
	}
	return lo
}

// remainingGDP is the headroom under the Gaussian-DP filter, in closed
// form: μ = sqrt(μ_T² − Σ μ_i²), the (ε, δ_T) grant whose GDPMu is that μ,
// and the ρ = μ²/2 grant; each checked against admission itself (and
// nudged down by float rounding when needed), so that what Show reports is
// what Reserve admits.
func remainingGDP(total privacy.Grant, a agg) Remaining {
	var r Remaining
	muT, err := gdpMu(total.Epsilon, total.Delta)
	if err != nil || !(muT*muT-a.Mu2 > muT*muT*tiny) {
		return r
	}
	mu := math.Sqrt(muT*muT - a.Mu2)
	admitted := func(g privacy.Grant) bool { return fits(total, a, reserveCharge(g)) == nil }
	if e, err := privacy.GDPEpsilon(mu, total.Delta); err == nil {
		e = math.Min(e, total.Epsilon)
		for i := 0; i < 8 && !admitted(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: e, Delta: total.Delta}); i++ {
			e *= 1 - 1e-9*math.Pow(10, float64(i))
		}
		if admitted(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: e, Delta: total.Delta}) {
			r.Epsilon, r.Delta, r.Mu = e, total.Delta, mu
		}
	}
	if e := pureEpsilonForMu(mu); e > 0 {
		for i := 0; i < 8 && !admitted(privacy.Grant{Kind: privacy.GrantPure, Epsilon: e}); i++ {
			e *= 1 - 1e-9*math.Pow(10, float64(i))
		}
		if admitted(privacy.Grant{Kind: privacy.GrantPure, Epsilon: e}) {
			r.PureEpsilon = e
		}
	}
	rho := mu * mu / 2
	for i := 0; i < 8 && !admitted(privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho}); i++ {
		rho *= 1 - 1e-12*math.Pow(10, float64(i))
	}
	if admitted(privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho}) {
		r.Rho = rho
	}
	return r
}

// remaining computes the headroom described on Remaining by asking the
// admission rule itself.
func remaining(total privacy.Grant, a agg) Remaining {
	var r Remaining
	switch total.Kind {
	case privacy.GrantPure:
		r.Epsilon = largest(total.Epsilon, func(e float64) bool {
			return fits(total, a, GrantCharge(privacy.Grant{Kind: privacy.GrantPure, Epsilon: e})) == nil
		})
	case privacy.GrantZCDP:
		r.Rho = largest(total.Rho, func(rho float64) bool {
			return fits(total, a, reserveCharge(privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho})) == nil
		})
	case privacy.GrantApprox:
		d := total.Delta - (a.P.Delta + a.A.Delta + a.B.Delta)
		if a.mode() == filterGDP {
			return remainingGDP(total, a)
		}
		if d > total.Delta*tiny {
			e := largest(total.Epsilon, func(e float64) bool {
				return fits(total, a, reserveCharge(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: e, Delta: d})) == nil
			})
			if e > 0 {
				r.Epsilon, r.Delta = e, d
			}
		}
		capRho, err := privacy.RhoForEpsDelta(total.Epsilon, total.Delta)
		if err == nil {
			r.Rho = largest(capRho, func(rho float64) bool {
				return fits(total, a, reserveCharge(privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho})) == nil
			})
		}
	}
	return r
}
