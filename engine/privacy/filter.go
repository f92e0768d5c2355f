package privacy

import (
	"errors"
	"fmt"
	"math"
)

// Budget filters: the composition of runs across a data set's history.
// A run's privacy statements are a Charge; the charges of a history are
// summed into a Tally, which ComposeTally admits under a total (a Grant)
// by one of two rules, the classic one (Compose of the summed statements)
// or the Gaussian-DP filter (Σ μ_i² ≤ μ_T², Smith & Thakurta 2022). The
// ledger stores the tallies and asks these functions whether a charge is
// admitted; the rules and why they are valid are in docs/ledger.md
// ("Composition across runs").

// ErrIncompatible is wrapped when a charge cannot be counted against a
// total of its form under the total's rule (an (ε, δ) charge against a
// pure total, a charge with no Gaussian-DP statement under that filter).
var ErrIncompatible = errors.New("privacy: statement the budget's rule cannot count")

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
	// run (see ReserveCharge). 0: no GDP statement. It is used only by the
	// Gaussian-DP filter (see the budget filters above) and is no statement on its
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

// Group restates c for k neighbour steps at once (group privacy, k ≥ 1):
// ε-DP becomes kε and (ε, δ)-DP (kε, δ·(1 + e^ε + … + e^{(k−1)ε})) (an
// (ε, δ) statement whose δ reaches 1 is dropped), ρ-zCDP k²ρ (Bun &
// Steinke 2016, Prop. 27), μ-GDP kμ (Dong, Roth & Su 2022, Thm 2.14).
func (c Charge) Group(k int) Charge {
	if k == 1 {
		return c
	}
	out := Charge{Epsilon: float64(k) * c.Epsilon, Rho: float64(k*k) * c.Rho, Mu2: float64(k*k) * c.Mu2}
	if c.Delta > 0 {
		f := 0.0
		for i := 0; i < k; i++ {
			f += math.Exp(float64(i) * c.Epsilon)
		}
		out.Delta = c.Delta * f
		if !(out.Delta < 1) {
			out.Epsilon, out.Delta = 0, 0
		}
	}
	return out
}

// HasMu reports whether the charge carries a μ-GDP statement.
func (c Charge) HasMu() bool { return c.Mu2 > 0 && !c.IsZero() }

// Valid reports whether every field is finite and non-negative, δ < 1.
func (c Charge) Valid() bool {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }
	return ok(c.Epsilon) && ok(c.Rho) && ok(c.Mu2) && c.Delta >= 0 && c.Delta < 1
}

// GrantMu2 is the largest μ² a run granted g can spend when admitted under
// the Gaussian-DP filter: GDPMu(ε, δ)² for a Gaussian-only run within an
// (ε, δ) grant (δ_μ(ε) increases in μ), 2ρ within a ρ grant, and μ_ε²
// (PureMu) for a run granted a pure ε, whatever its mechanisms
// (docs/ledger.md, "Composition across runs").
func GrantMu2(g Grant) float64 {
	switch g.Kind {
	case GrantPure:
		mu := PureMu(g.Epsilon)
		return mu * mu
	case GrantApprox:
		mu, err := GDPMu(g.Epsilon, g.Delta)
		if err != nil {
			return 0
		}
		return mu * mu
	case GrantZCDP:
		return 2 * g.Rho
	}
	return 0
}

// ReserveCharge is what a reservation of g charges: the grant's statements
// (GrantCharge) and, for the Gaussian-DP filter, the largest μ² the run
// may spend if it turns out Gaussian-only (GrantMu2). A run that turns out
// otherwise cannot settle under that filter (it is withheld), so the cap is
// sound whatever the run does.
func ReserveCharge(g Grant) Charge {
	c := GrantCharge(g)
	c.Mu2 = GrantMu2(g)
	return c
}

// StepsMu2 is μ² of a list of steps that are all Gaussian with a recorded
// sensitivity and scale (RunGDP), and false otherwise.
func StepsMu2(steps []Step) (float64, bool) {
	mu, ok, err := RunGDP(steps)
	if len(steps) == 0 || err != nil || !ok || !(mu > 0) || math.IsInf(mu, 0) {
		return 0, false
	}
	return mu * mu, true
}

// GrantCharge is the charge of a run granted g, before it reports what it
// achieved: a pure ε grant is (ε, 0)-DP and ε²/2-zCDP, an (ε, δ) grant is
// (ε, δ)-DP only, a ρ grant is ρ-zCDP only.
func GrantCharge(g Grant) Charge {
	switch g.Kind {
	case GrantPure:
		return Charge{Epsilon: g.Epsilon, Rho: RhoOfPure(g.Epsilon)}
	case GrantApprox:
		return Charge{Epsilon: g.Epsilon, Delta: g.Delta}
	case GrantZCDP:
		return Charge{Rho: g.Rho}
	}
	return Charge{}
}

// AchievedCharge turns the privacy package's composition of one run's
// steps into the statements the ledger records for the run: the (ε, δ)
// statement always, and the ρ statement when the composition covers every
// step in zCDP ("zcdp", or a pure run's ε²/2).
func AchievedCharge(g Grant, ach Achieved) Charge {
	switch {
	case g.Kind == GrantZCDP:
		return Charge{Rho: ach.Rho}
	case ach.Composition == "pure":
		return Charge{Epsilon: ach.Epsilon, Rho: RhoOfPure(ach.Epsilon)}
	case ach.Composition == "zcdp":
		return Charge{Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Rho}
	case ach.Composition == MethodGDP && ach.Mu > 0:
		// Every step Gaussian: μ-GDP, and μ²/2-zCDP as well (a Gaussian
		// step of sensitivity Δ and noise σ is Δ²/2σ²-zCDP, Bun & Steinke
		// 2016, Prop. 1.6; zCDP composes adaptively).
		return Charge{Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Mu * ach.Mu / 2, Mu2: ach.Mu * ach.Mu}
	}
	// "basic" and "mixed": Achieved.Rho, if any, covers only part of the
	// steps, so the run carries no ρ statement.
	return Charge{Epsilon: ach.Epsilon, Delta: ach.Delta}
}

// ChargeStatements lists the charges a run's steps truly give: c, its composed
// charge, first; then, when every step is pure and c is not a pure
// charge (an (ε, δ) statement of the privacy loss distribution, say), the
// pure statement ε = Σ ε_i with the steps' zCDP total Σ ρ_i.
func ChargeStatements(c Charge, steps []Step) []Charge {
	if c.IsPure() || len(steps) == 0 {
		return []Charge{c}
	}
	var p Charge
	for _, s := range steps {
		if !isPure(s) {
			return []Charge{c}
		}
		p.Epsilon += s.Epsilon
		p.Rho += stepRho(s)
	}
	return []Charge{c, p}
}

// Roomiest returns, among cands (true statements of one run), the one
// after which the total, with the charges a, admits the largest further
// run (see room); the first when none fits. The choice is a function of
// the history's charges and of the run's steps (its plan, fixed by public
// inputs before it ran), never of its output, so charging it is charging
// an adaptively chosen valid statement, which the budget filters admit.
func Roomiest(total Grant, a Tally, cands []Charge) Charge {
	best, most := cands[0], -1.0
	for _, c := range cands {
		if Fits(total, a, c) != nil {
			continue
		}
		after := a
		after.Add(c)
		if r := room(total, RemainingOf(total, after)); r > most {
			best, most = c, r
		}
	}
	return best
}

// room measures what remains as one number: μ under the Gaussian-DP
// filter, ρ under a ρ total, ε under a pure one, and under an (ε, δ) total
// the largest ε a further run could be granted, as (ε, δ) with the δ left
// or as ρ converted at the total's δ.
func room(total Grant, r Remaining) float64 {
	switch {
	case r.Mu > 0:
		return r.Mu
	case total.Kind == GrantZCDP:
		return r.Rho
	case total.Kind == GrantApprox && r.Rho > 0:
		return max(r.Epsilon, EpsilonFromRho(r.Rho, total.Delta))
	}
	return r.Epsilon
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
// Reserve applies (see the budget filters above). Its meaning depends on the total's
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

// Admission rules of an (ε, δ) total (see the budget filters above).
const (
	FilterGDP     = "gdp"     // Gaussian-DP filter: Σ μ_i² ≤ μ_T²
	FilterClassic = "classic" // zCDP/Rényi, pure or basic composition
)

// tallyGroup is the sum of the charges of one statement shape.
type tallyGroup struct {
	N     int     `json:"n,omitempty"`
	Eps   float64 `json:"eps,omitempty"`
	Delta float64 `json:"delta,omitempty"`
	Rho   float64 `json:"rho,omitempty"`
}

// Tally sums a set of charges into the four shapes the privacy package's
// composition distinguishes. Composing the four sums as four steps gives
// exactly what composing every charge as its own step gives: each candidate
// accounting of Compose depends only on these sums and on which
// shapes are present.
type Tally struct {
	P tallyGroup `json:"p"` // pure (ε > 0, δ = 0); Rho holds Σ ρ (ε²/2 when none declared)
	A tallyGroup `json:"a"` // (ε, δ) with ρ
	B tallyGroup `json:"b"` // (ε, δ) without ρ
	C tallyGroup `json:"c"` // ρ only
	// NMu2 counts the charges with a GDP statement and Mu2 sums their μ².
	NMu2 int     `json:"nmu2,omitempty"`
	Mu2  float64 `json:"mu2,omitempty"`
	// Filter is the admission rule of an (ε, δ) total once decided
	// (filterGDP or filterClassic; "" while undecided). Only the settled
	// aggregate (dsState.Final) sets it; see apply.
	Filter string `json:"filter,omitempty"`
}

func (a *Tally) Add(c Charge) {
	if c.IsZero() {
		return
	}
	if !c.HasEpsDelta() {
		c.Delta = 0 // δ without ε is no statement
	}
	var g *tallyGroup
	switch {
	case c.IsPure():
		if !c.HasRho() {
			c.Rho = RhoOfPure(c.Epsilon)
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

// Merge adds every charge of b to a (a keeps its Filter): the tally of the
// union of the two sets of charges.
func (a *Tally) Merge(b Tally) {
	for _, g := range []struct{ to, from *tallyGroup }{{&a.P, &b.P}, {&a.A, &b.A}, {&a.B, &b.B}, {&a.C, &b.C}} {
		g.to.N += g.from.N
		g.to.Eps += g.from.Eps
		g.to.Delta += g.from.Delta
		g.to.Rho += g.from.Rho
	}
	a.NMu2 += b.NMu2
	a.Mu2 += b.Mu2
}

// N is the number of charges in the tally.
func (a Tally) N() int { return a.P.N + a.A.N + a.B.N + a.C.N }

// allMu reports whether every charge carries a GDP statement.
func (a Tally) AllMu() bool { return a.NMu2 == a.N() }

// gaussianOnly reports whether every charge is a Gaussian-only run's: each
// carries a GDP statement and none is pure (a pure run's GDP statement is
// the fallback of PureMu, which does not make the history Gaussian-only).
func (a Tally) GaussianOnly() bool { return a.AllMu() && a.P.N == 0 }

// mode is the admission rule for an (ε, δ) total: the decided one, or
// filterClassic while undecided when some charge is not a Gaussian-only
// run's (the Gaussian-DP filter cannot be fixed for that history), or ""
// (undecided: both rules must admit).
func (a Tally) Mode() string {
	if a.Filter == "" && !a.GaussianOnly() {
		return FilterClassic
	}
	return a.Filter
}

// steps is the aggregate as privacy steps, one per shape present.
func (a Tally) Steps() []Step {
	var s []Step
	if a.P.N > 0 {
		s = append(s, Step{Name: "pure runs", Epsilon: a.P.Eps, Rho: a.P.Rho})
	}
	if a.A.N > 0 {
		s = append(s, Step{Name: "(ε, δ) runs with ρ", Epsilon: a.A.Eps, Delta: a.A.Delta, Rho: a.A.Rho})
	}
	if a.B.N > 0 {
		s = append(s, Step{Name: "(ε, δ) runs", Epsilon: a.B.Eps, Delta: a.B.Delta})
	}
	if a.C.N > 0 {
		s = append(s, Step{Name: "ρ runs", Rho: a.C.Rho})
	}
	return s
}

// ComposeTally is the admission rule: the charges fit the total iff
// Compose accepts them as steps under the total as a grant.
func ComposeTally(total Grant, a Tally) (Spent, error) {
	if a.N() == 0 {
		return Spent{Composition: "none"}, nil
	}
	switch total.Kind {
	case GrantPure:
		if n := a.N() - a.P.N; n > 0 {
			return Spent{}, fmt.Errorf("%d run(s) are not pure ε-DP and cannot count against a pure ε budget: %w", n, ErrIncompatible)
		}
	case GrantZCDP:
		if a.B.N > 0 {
			return Spent{}, fmt.Errorf("%d run(s) have no zCDP accounting and cannot count against a ρ budget: %w", a.B.N, ErrIncompatible)
		}
	case GrantApprox:
		switch a.Mode() {
		case FilterGDP:
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
// must be μ_i-GDP and Σ μ_i² ≤ μ_T² with μ_T = GDPMu(ε_T, δ_T).
// Valid for fully adaptive choices of the μ_i (Smith & Thakurta 2022,
// "Fully adaptive composition for Gaussian differential privacy", Thm 1):
// the whole history is then μ_T-GDP, hence (ε_T, δ_T)-DP by the GDP curve
// (Dong, Roth & Su 2022, Cor. 2.13).
func composeGDP(total Grant, a Tally) (Spent, error) {
	if n := a.N() - a.NMu2; n > 0 {
		return Spent{}, fmt.Errorf("%d run(s) have no Gaussian-DP statement (neither Gaussian-only nor granted a pure ε), and this budget follows the Gaussian-DP filter since its first run was Gaussian-only (such runs need a pure ε grant or a data set of their own): %w", n, ErrIncompatible)
	}
	muT, err := GDPMu(total.Epsilon, total.Delta)
	if err != nil {
		return Spent{}, fmt.Errorf("%w: %w", err, ErrInvalidBudget)
	}
	if !within(a.Mu2, muT*muT) {
		return Spent{}, fmt.Errorf("Gaussian-DP filter: μ² spent %.6g > %.6g (μ_T = %.6g for ε = %.6g, δ = %.3g): %w",
			a.Mu2, muT*muT, muT, total.Epsilon, total.Delta, ErrOverBudget)
	}
	mu := math.Sqrt(a.Mu2)
	eps, err := GDPEpsilon(mu, total.Delta)
	if err != nil {
		return Spent{}, fmt.Errorf("%w: %w", err, ErrInvalidBudget)
	}
	return Spent{Epsilon: math.Min(eps, total.Epsilon), Delta: total.Delta, Rho: a.Mu2 / 2, Mu: mu, Composition: FilterGDP}, nil
}

// composeClassic is the zCDP/Rényi, pure or basic rule: the charges fit iff
// Compose accepts them as steps under the total as a grant.
func composeClassic(total Grant, a Tally) (Spent, error) {
	if total.Kind == GrantApprox {
		if a.B.N > 0 && a.C.N > 0 {
			return Spent{}, fmt.Errorf("%d run(s) have only an (ε, δ) statement and %d only a ρ statement: no composition covers both (grant the runs ρ or (ε, δ) alike): %w", a.B.N, a.C.N, ErrIncompatible)
		}
	}
	ach, err := Compose(total, a.Steps())
	if err != nil {
		if errors.Is(err, ErrOverBudget) {
			return Spent{}, err
		}
		return Spent{}, fmt.Errorf("%w: %w", err, ErrInvalidBudget)
	}
	return Spent{Epsilon: ach.Epsilon, Delta: ach.Delta, Rho: ach.Rho, Composition: ach.Composition}, nil
}

// Fits reports whether a further charge c is admitted on top of a.
func Fits(total Grant, a Tally, c Charge) error {
	a.Add(c)
	_, err := ComposeTally(total, a)
	return err
}

// Uncomposed is the Spent of a data set without a budget.
func Uncomposed(a Tally) Spent {
	if a.N() == 0 {
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
func remainingGDP(total Grant, a Tally) Remaining {
	var r Remaining
	mu := GDPLeft(total, a)
	if mu == 0 {
		return r
	}
	// nudge lowers x by float-rounding steps until the grant it makes is
	// admitted; 0 when it never is.
	nudge := func(x, step float64, grant func(float64) Grant) float64 {
		for i := 0; i < 9; i++ {
			if Fits(total, a, ReserveCharge(grant(x))) == nil {
				return x
			}
			x *= 1 - step*math.Pow(10, float64(i))
		}
		return 0
	}
	if e, err := GDPEpsilon(mu, total.Delta); err == nil {
		if e = nudge(math.Min(e, total.Epsilon), 1e-9, func(e float64) Grant { return Grant{Kind: GrantApprox, Epsilon: e, Delta: total.Delta} }); e > 0 {
			r.Epsilon, r.Delta, r.Mu = e, total.Delta, mu
		}
	}
	if e := PureEpsilonForMu(mu); e > 0 {
		r.PureEpsilon = nudge(e, 1e-9, func(e float64) Grant { return Grant{Kind: GrantPure, Epsilon: e} })
	}
	r.Rho = nudge(mu*mu/2, 1e-12, func(rho float64) Grant { return Grant{Kind: GrantZCDP, Rho: rho} })
	return r
}

// GDPLeft is the GDP parameter an (ε, δ) total still affords under the
// Gaussian-DP filter, sqrt(μ_T² − Σ μ_i²) (0 when float dust or less is
// left, or the total allows no μ).
func GDPLeft(total Grant, a Tally) float64 {
	muT, err := GDPMu(total.Epsilon, total.Delta)
	if err != nil || !(muT*muT-a.Mu2 > muT*muT*tiny) {
		return 0
	}
	return math.Sqrt(muT*muT - a.Mu2)
}

// RemainingOf computes the headroom described on Remaining by asking the
// admission rule itself.
func RemainingOf(total Grant, a Tally) Remaining {
	var r Remaining
	switch total.Kind {
	case GrantPure:
		r.Epsilon = largest(total.Epsilon, func(e float64) bool {
			return Fits(total, a, GrantCharge(Grant{Kind: GrantPure, Epsilon: e})) == nil
		})
	case GrantZCDP:
		r.Rho = largest(total.Rho, func(rho float64) bool {
			return Fits(total, a, ReserveCharge(Grant{Kind: GrantZCDP, Rho: rho})) == nil
		})
	case GrantApprox:
		d := total.Delta - (a.P.Delta + a.A.Delta + a.B.Delta)
		if a.Mode() == FilterGDP {
			return remainingGDP(total, a)
		}
		if d > total.Delta*tiny {
			e := largest(total.Epsilon, func(e float64) bool {
				return Fits(total, a, ReserveCharge(Grant{Kind: GrantApprox, Epsilon: e, Delta: d})) == nil
			})
			if e > 0 {
				r.Epsilon, r.Delta = e, d
			}
		}
		capRho, err := RhoForEpsDelta(total.Epsilon, total.Delta)
		if err == nil {
			r.Rho = largest(capRho, func(rho float64) bool {
				return Fits(total, a, ReserveCharge(Grant{Kind: GrantZCDP, Rho: rho})) == nil
			})
		}
	}
	return r
}

// PureMu is the GDP parameter an ε-DP run is known to have: every ε-DP
// mechanism is μ_ε-GDP with μ_ε = 2 Φ⁻¹(e^ε / (1 + e^ε)), and randomized
// response shows no smaller μ holds. The proof, and why x* is bisected on
// erfc rather than taken from math.Erfcinv, are in docs/ledger.md
// ("Composition across runs"); μ is never understated. For small ε,
// μ_ε ≈ √(π/2)·ε.
func PureMu(eps float64) float64 {
	if !(eps > 0) {
		return 0
	}
	alpha := math.Exp(-eps) / (1 + math.Exp(-eps)) // α* = 1/(1 + e^ε), accurate for large ε
	lo, hi := 0.0, 1.0
	for normalTail(hi) > alpha {
		lo, hi = hi, 2*hi
		if hi > 64 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := lo + (hi-lo)/2
		if normalTail(mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 2 * hi * (1 + 1e-12)
}

// normalTail is Φ(−x), accurate far into the tail.
func normalTail(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// PureEpsilonForMu inverts PureMu: the largest ε whose μ_ε is at most mu,
// ε = ln(Φ(μ/2)/Φ(−μ/2)), rounded down by a relative 1e-9.
func PureEpsilonForMu(mu float64) float64 {
	if !(mu > 0) {
		return 0
	}
	lo := normalTail(mu / 2) // Φ(−μ/2)
	eps := math.Log((1 - lo) / lo)
	eps *= 1 - 1e-9
	for eps > 0 && PureMu(eps) > mu {
		eps *= 1 - 1e-9
	}
	return eps
}

// PureRunMu2 is μ² of a run whose steps compose to a pure ε under the pure
// grant it was given: the smaller of two valid GDP statements, μ_ε² of the
// whole run and Σ μ_{ε_j}² over its steps (GDP composes by adding μ²; the
// plan fixes each ε_j from public inputs), both at most the reservation's
// μ² (docs/ledger.md, "Composition across runs").
func PureRunMu2(eps float64, steps []Step) float64 {
	best := PureMu(eps)
	best *= best
	if sum, ok := stepsMu2(steps, false); ok && len(steps) > 0 && sum < best {
		return sum
	}
	return best
}

// stepsMu2 is Σ μ_j² over steps, each a pure Laplace or exponential step
// (μ_{ε_j}, PureMu) or, when gaussian is set, a Gaussian step with a
// recorded sensitivity and scale (Δ/σ); false when some step is neither.
func stepsMu2(steps []Step, gaussian bool) (float64, bool) {
	var sum float64
	for _, s := range steps {
		var mu float64
		switch {
		case gaussian && s.Mechanism == MechGaussian && s.Scale > 0 && s.Sensitivity > 0:
			mu = s.Sensitivity / s.Scale
		case (s.Mechanism == MechLaplace || s.Mechanism == MechExponential) && s.Epsilon > 0 && s.Delta == 0:
			mu = PureMu(s.Epsilon)
		default:
			return 0, false
		}
		sum += mu * mu
	}
	return sum, true
}

// DrawnMu2 is the GDP statement of a run that is not Gaussian-only and
// drew noise in steps (a failure after noise, or a result withheld at
// settle): Σ μ_j² over its steps (Gaussian Δ/σ, pure ε_j as μ_{ε_j}),
// never less than reserved, its reservation's μ²; 0 (no statement) when a
// step has none or the steps are unknown (nil). See docs/ledger.md.
func DrawnMu2(reserved float64, steps []Step) float64 {
	sum, ok := stepsMu2(steps, true)
	if len(steps) == 0 || !ok || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return 0
	}
	return math.Max(sum, reserved)
}
