package privacy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// GuaranteeKind classifies what a released result promises.
type GuaranteeKind string

// Guarantee kinds, from strongest to weakest claim.
const (
	// Pure is pure ε-DP against worst-case neighbours.
	Pure GuaranteeKind = "pure"
	// Approx is (ε, δ)-DP against worst-case neighbours.
	Approx GuaranteeKind = "approx"
	// ZCDP is ρ-zCDP against worst-case neighbours (with its (ε, δ) conversion).
	ZCDP GuaranteeKind = "zcdp"
	// Model is (ε, δ)-DP holding with probability ≥ 1−β over data drawn
	// from a named model, assuming listed public parameters.
	Model GuaranteeKind = "model"
	// Nominal is a guarantee that would hold for an exact sampler, produced
	// by a sampler (e.g. MCMC) that is not certified.
	Nominal GuaranteeKind = "nominal"
	// None marks a non-private reference output.
	None GuaranteeKind = "none"
)

// Guarantee is the privacy statement attached to a released result.
//
// For Pure, Epsilon is the pure ε and Delta is 0; a Pure guarantee may
// also carry the zCDP total Rho of its steps and, when the grant named a
// δ, a tighter (ε, δ) statement (TightEpsilon, TightDelta; see Tighter).
// Certify computes the figures from the composition; Statements lists
// every statement the guarantee makes, each in its own fields.
type Guarantee struct {
	Kind        GuaranteeKind
	Epsilon     float64
	Delta       float64
	Rho         float64
	Model       string   // for Model: the data model, e.g. "spiked Gaussian covariance"
	Beta        float64  // for Model: failure probability over the data
	Assumptions []string // public parameters and other assumptions
	Neighbours  string   // what neighbouring data sets differ by, e.g. "one row replaced"
	Seeded      bool     // noise came from a user seed: not private against whoever knows it
	// Accounting names the composition that produced the figures ("pure",
	// "zcdp", "gdp", "pld", "mixed", "basic"; empty when not recorded).
	Accounting string
	// Mu is the Gaussian-DP parameter when Accounting is "gdp": the run is
	// then μ-GDP, equivalently ρ = μ²/2 zCDP.
	Mu float64
	// TightEpsilon and TightDelta are, for Pure, the tighter (ε, δ)
	// statement the steps also satisfy (0 when none is stated).
	TightEpsilon, TightDelta float64
}

// Statements are the true statements of a guarantee, each in its own
// fields: a field is set only when the run satisfies that statement, so
// that no field qualifies another.
type Statements struct {
	// PureEpsilon: the run is ε′-DP (every step pure).
	PureEpsilon float64 `json:"pure_epsilon,omitempty"`
	// Epsilon and Delta: the run is (ε, δ)-DP with δ > 0.
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	// Rho: the run is ρ-zCDP.
	Rho float64 `json:"rho,omitempty"`
	// Mu: the run is μ-GDP.
	Mu float64 `json:"mu,omitempty"`
}

// Statements lists the worst-case statements of g (none for the model-based,
// nominal and non-private kinds, whose figures hold only as qualified).
func (g Guarantee) Statements() Statements {
	switch g.Kind {
	case Pure:
		s := Statements{PureEpsilon: g.Epsilon, Rho: g.Rho}
		if eps, delta, ok := g.Tighter(); ok {
			s.Epsilon, s.Delta = eps, delta
		}
		return s
	case Approx:
		s := Statements{Epsilon: g.Epsilon, Delta: g.Delta}
		if g.Accounting == "gdp" && g.Mu > 0 {
			s.Mu, s.Rho = g.Mu, g.Mu*g.Mu/2
		}
		return s
	case ZCDP:
		s := Statements{Rho: g.Rho}
		if g.Delta > 0 {
			s.Epsilon, s.Delta = g.Epsilon, g.Delta
		}
		return s
	}
	return Statements{}
}

// String describes the guarantee in words a person can read, e.g.
// "(ε, δ)-differential privacy with ε = 1, δ = 1e-06; neighbouring data
// sets differ by one row replaced".
func (g Guarantee) String() string {
	var b strings.Builder
	switch g.Kind {
	case Pure:
		fmt.Fprintf(&b, "pure ε-differential privacy with ε = %s", num(g.Epsilon))
		if eps, delta, ok := g.Tighter(); ok {
			fmt.Fprintf(&b, ", and also (ε, δ)-differential privacy with ε = %s, δ = %s", num(eps), num(delta))
			if g.Rho > 0 {
				fmt.Fprintf(&b, " (its steps compose to ρ-zCDP with ρ = %s)", num(g.Rho))
			}
		} else if g.Rho > 0 {
			fmt.Fprintf(&b, ", and also ρ-zero-concentrated differential privacy with ρ = %s", num(g.Rho))
		}
	case Approx:
		fmt.Fprintf(&b, "(ε, δ)-differential privacy with ε = %s, δ = %s", num(g.Epsilon), num(g.Delta))
		switch g.Accounting {
		case "gdp":
			fmt.Fprintf(&b, " (exact Gaussian composition: μ-Gaussian differential privacy with μ = %s, ρ = %s)", num(g.Mu), num(g.Mu*g.Mu/2))
		case "pld":
			b.WriteString(" (privacy loss distribution accounting, " + PLDAccountingNote + ")")
		}
	case ZCDP:
		fmt.Fprintf(&b, "ρ-zero-concentrated differential privacy with ρ = %s", num(g.Rho))
		if g.Delta > 0 {
			fmt.Fprintf(&b, ", which implies (ε, δ)-differential privacy with ε = %s, δ = %s", num(g.Epsilon), num(g.Delta))
		} else if g.Rho > 0 {
			// A ρ grant names no δ: state the conversion at a reference δ.
			fmt.Fprintf(&b, ", which implies (ε, δ)-differential privacy for every δ > 0, e.g. ε = %s at δ = %s",
				num(EpsilonFromRho(g.Rho, exampleDelta)), num(exampleDelta))
		}
	case Model:
		if g.Epsilon == 0 && g.Rho > 0 {
			fmt.Fprintf(&b, "ρ-zero-concentrated differential privacy with ρ = %s", num(g.Rho))
		} else {
			fmt.Fprintf(&b, "(ε, δ)-differential privacy with ε = %s, δ = %s", num(g.Epsilon), num(g.Delta))
		}
		fmt.Fprintf(&b, ", holding with probability at least %s over data drawn from the %s model", oneMinus(g.Beta), modelName(g.Model))
	case Nominal:
		if g.Epsilon == 0 && g.Rho > 0 {
			fmt.Fprintf(&b, "nominal ρ-zero-concentrated differential privacy with ρ = %s", num(g.Rho))
		} else {
			fmt.Fprintf(&b, "nominal ε = %s", num(g.Epsilon))
			if g.Delta > 0 {
				fmt.Fprintf(&b, ", δ = %s", num(g.Delta))
			}
		}
		b.WriteString(" (the sampler is not certified: the guarantee would hold only for an exact sampler)")
	case None:
		b.WriteString("not private (a reference output computed from the raw data)")
	default:
		fmt.Fprintf(&b, "unknown guarantee %q", string(g.Kind))
	}
	if g.Neighbours != "" {
		fmt.Fprintf(&b, "; neighbouring data sets differ by %s", g.Neighbours)
	}
	if len(g.Assumptions) > 0 {
		fmt.Fprintf(&b, "; assuming %s", strings.Join(g.Assumptions, ", "))
	}
	if g.Seeded {
		b.WriteString("; noise drawn from a user seed: reproducible, and NOT private against anyone who knows the seed")
	}
	return b.String()
}

// exampleDelta is the δ at which String states the (ε, δ) conversion of a
// ρ-zCDP guarantee that carries no δ of its own (a ρ grant).
const exampleDelta = 1e-6

func modelName(m string) string {
	if m == "" {
		return "stated"
	}
	return m
}

// num formats a privacy parameter compactly: 4 significant digits, no
// exponent for moderate values.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// Validate checks that the guarantee's numbers fit its kind.
func (g Guarantee) Validate() error {
	bad := func(what string, v float64) error {
		return fmt.Errorf("%s guarantee: %s = %v: %w", g.Kind, what, v, ErrInvalidBudget)
	}
	switch g.Kind {
	case Pure, Approx, Model, Nominal:
		if !(g.Epsilon >= 0) || math.IsInf(g.Epsilon, 0) {
			return bad("ε", g.Epsilon)
		}
		if !(g.Rho >= 0) || math.IsInf(g.Rho, 0) {
			return bad("ρ", g.Rho)
		}
		if !(g.Delta >= 0 && g.Delta < 1) {
			return bad("δ", g.Delta)
		}
		if g.Kind == Model && !(g.Beta >= 0 && g.Beta < 1) {
			return bad("β", g.Beta)
		}
	case ZCDP:
		if !(g.Rho >= 0) || math.IsInf(g.Rho, 0) {
			return bad("ρ", g.Rho)
		}
	case None:
	default:
		return fmt.Errorf("unknown guarantee kind %q: %w", string(g.Kind), ErrInvalidBudget)
	}
	return nil
}

// GuaranteeJSON is a JSON-friendly form of a Guarantee (lower-case keys,
// empty fields omitted) with its String in Text.
type GuaranteeJSON struct {
	Kind        GuaranteeKind `json:"kind"`
	Epsilon     float64       `json:"epsilon,omitempty"`
	Delta       float64       `json:"delta,omitempty"`
	Rho         float64       `json:"rho,omitempty"`
	Model       string        `json:"model,omitempty"`
	Beta        float64       `json:"beta,omitempty"`
	Assumptions []string      `json:"assumptions,omitempty"`
	Neighbours  string        `json:"neighbours,omitempty"`
	Seeded      bool          `json:"seeded,omitempty"`
	Accounting  string        `json:"accounting,omitempty"`
	Mu          float64       `json:"mu,omitempty"`
	// TightEpsilon, TightDelta: see Guarantee.TightEpsilon.
	TightEpsilon float64 `json:"tight_epsilon,omitempty"`
	TightDelta   float64 `json:"tight_delta,omitempty"`
	// Statements: see Guarantee.Statements.
	Statements Statements `json:"statements"`
	Text       string     `json:"text"`
}

// JSON returns the JSON-friendly form of g.
func (g Guarantee) JSON() GuaranteeJSON {
	return GuaranteeJSON{Kind: g.Kind, Epsilon: g.Epsilon, Delta: g.Delta, Rho: g.Rho, Model: g.Model, Beta: g.Beta,
		Assumptions: append([]string(nil), g.Assumptions...), Neighbours: g.Neighbours, Seeded: g.Seeded,
		Accounting: g.Accounting, Mu: g.Mu, TightEpsilon: g.TightEpsilon, TightDelta: g.TightDelta, Statements: g.Statements(), Text: g.String()}
}

// Guarantee converts the JSON form back (Text is ignored).
func (j GuaranteeJSON) Guarantee() Guarantee {
	return Guarantee{Kind: j.Kind, Epsilon: j.Epsilon, Delta: j.Delta, Rho: j.Rho, Model: j.Model, Beta: j.Beta,
		Assumptions: append([]string(nil), j.Assumptions...), Neighbours: j.Neighbours, Seeded: j.Seeded,
		Accounting: j.Accounting, Mu: j.Mu, TightEpsilon: j.TightEpsilon, TightDelta: j.TightDelta}
}

// oneMinus writes 1 − β so that a tiny β stays visible ("1 − 1.2e-13"
// rather than a rounded "1").
func oneMinus(beta float64) string {
	if beta >= 1e-3 {
		return num(1 - beta)
	}
	return "1 − " + num(beta)
}
