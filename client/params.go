package client

import (
	"maps"
	"strconv"
	"strings"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Params are an estimator's parameters by name, as the dplr command's
// --set name=value. The typed setters return the map so that calls chain:
//
//	client.Params{}.Int("rank", 2).Float("clip", 3).String("noise", "zcdp")
//
// Each setter returns a new map and leaves its receiver unchanged, so a
// shared base can be extended safely. Values are checked against the
// estimator's catalogue by Fit.
type Params map[string]string

func (p Params) set(name, v string) Params {
	out := make(Params, len(p)+1)
	maps.Copy(out, p)
	out[name] = v
	return out
}

// Int sets an integer parameter.
func (p Params) Int(name string, v int) Params { return p.set(name, strconv.Itoa(v)) }

// Float sets a real parameter (shortest exact decimal form).
func (p Params) Float(name string, v float64) Params {
	return p.set(name, strconv.FormatFloat(v, 'g', -1, 64))
}

// Bool sets a boolean parameter.
func (p Params) Bool(name string, v bool) Params { return p.set(name, strconv.FormatBool(v)) }

// String sets a string parameter (a choice, a file reference, …).
func (p Params) String(name, v string) Params { return p.set(name, v) }

// Select adds a parameter to the private selection (the select parameter
// of the estimators that have one): the candidates are every combination
// of the values of the selected parameters, fitted, scored on held-out
// units and chosen privately in one run with one stated cost, recorded as
// one ledger run (docs/privacy.md "Private model selection"). The result's
// selected_NAME and candidates_NAME name the choice and the candidates.
//
//	client.Params{}.Int("rank", 10).Select("clip_quantile", 0.5, 0.75, 0.9)
func (p Params) Select(name string, values ...float64) Params {
	vals := make([]string, len(values))
	for i, v := range values {
		vals[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	grid := name + "=" + strings.Join(vals, ",")
	if prev, ok := p["select"]; ok && prev != "" && prev != "none" {
		grid = prev + ";" + grid
	}
	return p.set("select", grid)
}

// ApproxDP is an (ε, δ)-DP budget.
func ApproxDP(epsilon, delta float64) Grant {
	return privacy.Grant{Kind: privacy.GrantApprox, Epsilon: epsilon, Delta: delta}
}

// PureDP is a pure ε-DP budget.
func PureDP(epsilon float64) Grant {
	return privacy.Grant{Kind: privacy.GrantPure, Epsilon: epsilon}
}

// ZCDP is a ρ-zCDP budget.
func ZCDP(rho float64) Grant { return privacy.Grant{Kind: privacy.GrantZCDP, Rho: rho} }

// TypedParams are raw parameters as the catalogue types them (int,
// float64, bool, string), defaults included; empty when they do not
// validate.
func TypedParams(info sdk.Info, raw map[string]string) map[string]any {
	p, err := sdk.ValidateParams(info.Params, raw)
	out := map[string]any{}
	if err != nil {
		return out
	}
	for _, s := range info.Params {
		if !p.Has(s.Name) {
			continue
		}
		switch s.Type {
		case sdk.Int:
			out[s.Name] = p.Int(s.Name)
		case sdk.Float:
			out[s.Name] = p.Float(s.Name)
		case sdk.Bool:
			out[s.Name] = p.Bool(s.Name)
		default:
			out[s.Name] = p.String(s.Name)
		}
	}
	return out
}
