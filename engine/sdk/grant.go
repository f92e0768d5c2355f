package sdk

import (
	"fmt"
	"strconv"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// CheckGrant checks a grant against an estimator and a request before
// anything is reserved or spent: the grant's own numbers, that the
// estimator accepts its kind, and that an (ε, δ) grant's δ is small against
// the number of people in the data, n (rows, or users for users data). A δ
// ≥ 1/n admits a mechanism that publishes one person's data outright (with
// probability δ each, someone's row is released), so it is refused unless
// the request sets allow_large_delta=true; the returned assumption then
// states it, for the result's guarantee. n is public. Errors are
// BadRequest.
func CheckGrant(info Info, raw map[string]string, s Shape, g privacy.Grant) (assumption string, err error) {
	if err := g.Validate(); err != nil {
		return "", BadRequest("%w", err)
	}
	if !grantAccepted(info.Grants, g.Kind) {
		return "", BadRequest("estimator %s does not accept a %s budget (accepts %v)", info.Name, g.Kind, info.Grants)
	}
	if info.NonPrivate || g.Kind != privacy.GrantApprox {
		return "", nil
	}
	n, who := s.N, "rows"
	if s.Kind == data.Users && s.Users > 0 {
		n, who = s.Users, "users"
	}
	if n < 1 || g.Delta < 1/float64(n) {
		return "", nil
	}
	allow := false
	if v, ok := raw[ParamAllowLargeDelta]; ok {
		if allow, err = strconv.ParseBool(v); err != nil {
			return "", BadRequest("parameter %q: %q is not true or false", ParamAllowLargeDelta, v)
		}
	}
	if !allow {
		return "", BadRequest("δ = %g is not small against the %d %s of the data (δ ≥ 1/%d): such a δ allows publishing one person's data outright. "+
			"Use a δ well below 1/n (e.g. 1/n²), or set %s=true to accept it knowingly", g.Delta, n, who, n, ParamAllowLargeDelta)
	}
	return fmt.Sprintf("δ = %g is not small against the %d %s (δ ≥ 1/n, accepted with %s=true): a guarantee with such a δ permits publishing one person's data outright",
		g.Delta, n, who, ParamAllowLargeDelta), nil
}
