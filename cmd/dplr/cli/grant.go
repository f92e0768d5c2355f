package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dplr/dplr/client"
)

// grantFlags read a privacy budget: --epsilon and --delta for (ε, δ)-DP,
// --epsilon alone for pure ε-DP, --rho for ρ-zCDP.
type grantFlags struct {
	eps, delta, rho float64
}

func (g *grantFlags) register(fs *flag.FlagSet, what string) {
	nan := math.NaN()
	g.eps, g.delta, g.rho = nan, nan, nan
	fs.Var(floatVar{&g.eps}, "epsilon", what+": ε = `E` > 0 (with --delta: (ε, δ)-DP; alone: pure ε-DP)")
	fs.Var(floatVar{&g.delta}, "delta", what+": δ = `D` in (0, 1), with --epsilon")
	fs.Var(floatVar{&g.rho}, "rho", what+": ρ = `R` > 0 for a ρ-zCDP budget (instead of --epsilon/--delta)")
}

func (g *grantFlags) grant() (client.Grant, error) {
	set := func(v float64) bool { return !math.IsNaN(v) }
	var out client.Grant
	switch {
	case set(g.rho) && (set(g.eps) || set(g.delta)):
		return out, usagef("give either --rho or --epsilon [--delta], not both")
	case set(g.rho):
		out = client.ZCDP(g.rho)
	case set(g.eps) && set(g.delta):
		out = client.ApproxDP(g.eps, g.delta)
	case set(g.eps):
		out = client.PureDP(g.eps)
	case set(g.delta):
		return out, usagef("--delta needs --epsilon")
	default:
		return out, usagef("a privacy budget is required: --epsilon E --delta D, --epsilon E (pure), or --rho R")
	}
	if err := out.Validate(); err != nil {
		return out, fail(ExitUsage, err)
	}
	return out, nil
}

// floatVar is a flag.Value for a float that may stay unset (NaN).
type floatVar struct{ p *float64 }

func (f floatVar) String() string {
	if f.p == nil || math.IsNaN(*f.p) {
		return ""
	}
	return fmt.Sprint(*f.p)
}

// Set parses the whole of s as a number. NaN is refused: it is the
// "unset" sentinel, and never a meaningful budget. Infinities are left to
// client.Grant's Validate, which names the parameter.
func (f floatVar) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if (err != nil && !errors.Is(err, strconv.ErrRange)) || math.IsNaN(v) {
		return fmt.Errorf("%q is not a number", s)
	}
	*f.p = v
	return nil
}
