package privacy

import (
	"fmt"
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
}

// String describes the guarantee in words a person can read.
func (g Guarantee) String() string {
	var b strings.Builder
	switch g.Kind {
	case Pure:
		fmt.Fprintf(&b, "pure ε-DP with ε = %.4g", g.Epsilon)
	case Approx:
		fmt.Fprintf(&b, "(ε, δ)-DP with ε = %.4g, δ = %.3g", g.Epsilon, g.Delta)
	case ZCDP:
		fmt.Fprintf(&b, "ρ-zCDP with ρ = %.4g", g.Rho)
		if g.Delta > 0 {
			fmt.Fprintf(&b, ", hence (ε, δ)-DP with ε = %.4g, δ = %.3g", g.Epsilon, g.Delta)
		}
	case Model:
		fmt.Fprintf(&b, "(ε, δ)-DP with ε = %.4g, δ = %.3g, holding with probability ≥ %.4g over data drawn from the %s model", g.Epsilon, g.Delta, 1-g.Beta, g.Model)
	case Nominal:
		fmt.Fprintf(&b, "nominal ε = %.4g", g.Epsilon)
		if g.Delta > 0 {
			fmt.Fprintf(&b, ", δ = %.3g", g.Delta)
		}
		b.WriteString(" (the sampler is not certified: the guarantee holds only for an exact sampler)")
	case None:
		b.WriteString("not private (reference output computed from the raw data)")
	default:
		fmt.Fprintf(&b, "unknown guarantee %q", g.Kind)
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
