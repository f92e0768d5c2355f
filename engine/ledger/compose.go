package ledger

import (
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/privacy"
)

// slack is the relative tolerance on budget comparisons, the same as the
// per-run accountant's, so that sums of decimal fractions that should equal
// the total are not refused for rounding.
const slack = 1e-9

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

// GrantCharge is the charge of a run granted g, before it reports what it
// achieved: a pure ε grant is (ε, 0)-DP and ε²/2-zCDP, an (ε, δ) grant is
// (ε, δ)-DP only, a ρ grant is ρ-zCDP only.
func GrantCharge(g privacy.Grant) Charge {
	switch g.Kind {
	case privacy.GrantPure:
		return Charge{Epsilon: g.Epsilon, Rho: g.Epsilon * g.Epsilon / 2}
	case privacy.GrantApprox:
		return Charge{Epsilon: g.Epsilon, Delta: g.Delta}
	case privacy.GrantZCDP:
		return Charge{Rho: g.Rho}
	}
	return Charge{}
}

// Spent is the composed privacy cost of a data set's charges.
type Spent struct {
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// Rho is the total ρ for a ρ budget, or the ρ of the zCDP group when the
	// composition is "zcdp+basic" or "zcdp".
	Rho float64 `json:"rho,omitempty"`
	// Composition names the accounting: "none" (nothing spent), "pure",
	// "zcdp", "basic", "zcdp+basic" (see the package doc), or "sum" for a
	// data set without a budget, where Epsilon/Delta are the plain sums of
	// the (ε, δ) statements (0 if some charge has none) and Rho the sum of
	// the ρ statements (0 if some charge has none).
	Composition string `json:"composition"`
}

// Remaining is the budget left. Its meaning depends on the total's form:
//   - pure ε total: Epsilon is the largest further pure ε grant that fits;
//   - ρ total: Rho is the largest further ρ (or ε²/2 of a pure) grant;
//   - (ε, δ) total: Epsilon and Delta are the largest further (ε, δ) grant
//     under basic composition (both 0 when some charge has no (ε, δ)
//     statement), and Rho is the largest further ρ grant (zCDP group
//     composed with the rest, see the package doc). A further grant that
//     fits neither description may still fit: use [Status.Fits].
type Remaining struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta,omitempty"`
	Rho     float64 `json:"rho,omitempty"`
}

// sums are the aggregates of a set of non-zero charges that composition
// needs; the ledger computes them in SQL.
type sums struct {
	N        int     // non-zero charges
	NoED     int     // charges without an (ε, δ) statement
	NotPure  int     // charges that are not pure ε-DP
	NoRho    int     // charges without a ρ statement
	Eps      float64 // Σ ε over all charges
	Delta    float64 // Σ δ over all charges
	Rho      float64 // Σ ρ over all charges
	EpsNoRho float64 // Σ ε over charges without ρ
	DelNoRho float64 // Σ δ over charges without ρ
	RhoNoED  float64 // Σ ρ over charges without (ε, δ)
}

func (s *sums) add(c Charge) {
	if c.IsZero() {
		return
	}
	if !c.HasEpsDelta() {
		c.Delta = 0 // δ without ε is no statement (as the ledger stores it)
	}
	s.N++
	if !c.HasEpsDelta() {
		s.NoED++
		s.RhoNoED += c.Rho
	}
	if !c.IsPure() {
		s.NotPure++
	}
	if !c.HasRho() {
		s.NoRho++
		s.EpsNoRho += c.Epsilon
		s.DelNoRho += c.Delta
	}
	s.Eps += c.Epsilon
	s.Delta += c.Delta
	s.Rho += c.Rho
}

func sumsOf(charges []Charge) sums {
	var s sums
	for _, c := range charges {
		s.add(c)
	}
	return s
}

// Compose composes charges against total and returns what they spend. The
// error wraps ErrIncompatible when some charge cannot be counted against a
// budget of that form (e.g. an (ε, δ) charge against a pure total), and
// ErrBudgetExceeded when the charges do not fit; Spent is then still the
// best composition found (for reporting). The rules are in the package doc.
func Compose(total privacy.Grant, charges []Charge) (Spent, error) {
	if err := total.Validate(); err != nil {
		return Spent{}, fmt.Errorf("budget: %w", err)
	}
	return compose(total, sumsOf(charges))
}

func within(x, limit float64) bool { return x <= limit*(1+slack) }

func compose(total privacy.Grant, s sums) (Spent, error) {
	if s.N == 0 {
		return Spent{Composition: "none"}, nil
	}
	switch total.Kind {
	case privacy.GrantPure:
		if s.NotPure > 0 {
			return Spent{}, fmt.Errorf("%d run(s) are not pure ε-DP and cannot count against a pure ε budget: %w", s.NotPure, ErrIncompatible)
		}
		sp := Spent{Epsilon: s.Eps, Composition: "pure"}
		if !within(s.Eps, total.Epsilon) {
			return sp, fmt.Errorf("ε %.6g exceeds the total ε = %.6g: %w", s.Eps, total.Epsilon, ErrBudgetExceeded)
		}
		return sp, nil
	case privacy.GrantZCDP:
		if s.NoRho > 0 {
			return Spent{}, fmt.Errorf("%d run(s) have no zCDP accounting and cannot count against a ρ budget: %w", s.NoRho, ErrIncompatible)
		}
		sp := Spent{Rho: s.Rho, Composition: "zcdp"}
		if !within(s.Rho, total.Rho) {
			return sp, fmt.Errorf("ρ %.6g exceeds the total ρ = %.6g: %w", s.Rho, total.Rho, ErrBudgetExceeded)
		}
		return sp, nil
	case privacy.GrantApprox:
		return composeApprox(total, s)
	}
	return Spent{}, fmt.Errorf("unknown budget kind %q: %w", total.Kind, ErrInvalid)
}

// composeApprox tries the options of the package doc and returns the fitting
// one with the smallest ε, or the best non-fitting one and an error.
func composeApprox(total privacy.Grant, s sums) (Spent, error) {
	var cands []Spent
	if s.NoED == 0 {
		comp := "basic"
		if s.NotPure == 0 {
			comp = "pure"
		}
		cands = append(cands, Spent{Epsilon: s.Eps, Delta: s.Delta, Composition: comp})
	}
	// hybrid returns the zCDP group rho composed with an (epsR, delR) rest.
	hybrid := func(rho, epsR, delR float64) (Spent, bool) {
		dz := total.Delta - delR
		if !(rho > 0) || !(dz > 0) {
			return Spent{}, false
		}
		comp := "zcdp+basic"
		if epsR == 0 && delR == 0 {
			comp = "zcdp"
		}
		return Spent{Epsilon: privacy.EpsilonFromRho(rho, dz) + epsR, Delta: total.Delta, Rho: rho, Composition: comp}, true
	}
	// Z = every charge with ρ; R = the rest, which all have (ε, δ).
	if sp, ok := hybrid(s.Rho, s.EpsNoRho, s.DelNoRho); ok {
		cands = append(cands, sp)
	}
	// Z = only the charges without (ε, δ); R = all charges with (ε, δ).
	if s.NoED > 0 && s.NoED < s.N {
		if sp, ok := hybrid(s.RhoNoED, s.Eps, s.Delta); ok {
			cands = append(cands, sp)
		}
	}
	if len(cands) == 0 {
		return Spent{}, fmt.Errorf("the runs' δ already exhausts the total δ = %.3g: %w", total.Delta, ErrBudgetExceeded)
	}
	best, bestFit := Spent{}, false
	for _, c := range cands {
		fit := within(c.Epsilon, total.Epsilon) && within(c.Delta, total.Delta)
		switch {
		case fit && (!bestFit || c.Epsilon < best.Epsilon):
			best, bestFit = c, true
		case !fit && !bestFit && (best.Composition == "" || c.Epsilon < best.Epsilon):
			best = c
		}
	}
	if !bestFit {
		return best, fmt.Errorf("runs compose to ε = %.6g, δ = %.3g (%s), beyond the total (ε = %.6g, δ = %.3g): %w",
			best.Epsilon, best.Delta, best.Composition, total.Epsilon, total.Delta, ErrBudgetExceeded)
	}
	return best, nil
}

// uncomposed is the Spent of a data set without a budget.
func uncomposed(s sums) Spent {
	if s.N == 0 {
		return Spent{Composition: "none"}
	}
	sp := Spent{Composition: "sum"}
	if s.NoED == 0 {
		sp.Epsilon, sp.Delta = s.Eps, s.Delta
	}
	if s.NoRho == 0 {
		sp.Rho = s.Rho
	}
	return sp
}

// remaining computes the headroom described on Remaining.
func remaining(total privacy.Grant, s sums) Remaining {
	pos := func(x float64) float64 { return math.Max(0, x) }
	switch total.Kind {
	case privacy.GrantPure:
		if s.NotPure > 0 {
			return Remaining{}
		}
		return Remaining{Epsilon: pos(total.Epsilon - s.Eps)}
	case privacy.GrantZCDP:
		if s.NoRho > 0 {
			return Remaining{}
		}
		return Remaining{Rho: pos(total.Rho - s.Rho)}
	}
	var r Remaining
	if s.NoED == 0 && total.Epsilon-s.Eps > 0 && total.Delta-s.Delta > 0 {
		r.Epsilon, r.Delta = total.Epsilon-s.Eps, total.Delta-s.Delta
	}
	// A further ρ grant joins the zCDP group; take the better grouping.
	head := func(rho, epsR, delR float64) float64 {
		e, d := total.Epsilon-epsR, total.Delta-delR
		if !(e > 0) || !(d > 0) {
			return 0
		}
		capRho, err := privacy.RhoForEpsDelta(e, d)
		if err != nil {
			return 0
		}
		return pos(capRho - rho)
	}
	r.Rho = head(s.Rho, s.EpsNoRho, s.DelNoRho)
	if s.NoED < s.N {
		r.Rho = math.Max(r.Rho, head(s.RhoNoED, s.Eps, s.Delta))
	}
	return r
}
