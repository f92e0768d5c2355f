package privacy

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuaranteeString(t *testing.T) {
	cases := []struct {
		g    Guarantee
		want []string
	}{
		{Guarantee{Kind: Pure, Epsilon: 0.5}, []string{"pure ε-differential privacy with ε = 0.5"}},
		{Guarantee{Kind: Approx, Epsilon: 1, Delta: 1e-6, Neighbours: "one row replaced"},
			[]string{"(ε, δ)-differential privacy with ε = 1, δ = 1e-06", "neighbouring data sets differ by one row replaced"}},
		{Guarantee{Kind: ZCDP, Rho: 0.0244, Epsilon: 1, Delta: 1e-6},
			[]string{"ρ = 0.0244", "which implies (ε, δ)-differential privacy with ε = 1, δ = 1e-06"}},
		{Guarantee{Kind: Model, Epsilon: 2, Delta: 1e-5, Model: "spiked Gaussian covariance", Beta: 0.01, Assumptions: []string{"spike ≥ 3", "noise level 1"}},
			[]string{"probability at least 0.99 over data drawn from the spiked Gaussian covariance model", "assuming spike ≥ 3, noise level 1"}},
		{Guarantee{Kind: Model, Epsilon: 1, Delta: 1e-6, Model: "Gaussian design", Beta: 1.2e-13},
			[]string{"probability at least 1 − 1.2e-13 over data"}},
		{Guarantee{Kind: Model, Rho: 0.02, Model: "spiked Gaussian covariance", Beta: 1e-6},
			[]string{"ρ-zero-concentrated differential privacy with ρ = 0.02, holding with probability at least 1 − 1e-06"}},
		{Guarantee{Kind: Nominal, Epsilon: 1, Delta: 1e-6}, []string{"nominal ε = 1, δ = 1e-06", "not certified"}},
		// A ρ grant carries no δ: the tight conversion is stated at δ = 1e-6
		// (ε = 2.14193892838547… by mpmath, 60 digits).
		{Guarantee{Kind: ZCDP, Rho: 0.1},
			[]string{"ρ = 0.1, which implies (ε, δ)-differential privacy for every δ > 0, e.g. ε = 2.142 at δ = 1e-06"}},
		// A nominal guarantee under a ρ grant names ρ, not a zero ε.
		{Guarantee{Kind: Nominal, Rho: 0.05}, []string{"nominal ρ-zero-concentrated differential privacy with ρ = 0.05", "not certified"}},
		{Guarantee{Kind: None}, []string{"not private"}},
		{Guarantee{Kind: Approx, Epsilon: 1, Delta: 1e-6, Seeded: true}, []string{"NOT private against anyone who knows the seed"}},
		{Guarantee{Kind: "odd"}, []string{`unknown guarantee "odd"`}},
	}
	for _, c := range cases {
		s := c.g.String()
		for _, w := range c.want {
			assert.Contains(t, s, w)
		}
	}
	assert.NotContains(t, Guarantee{Kind: ZCDP}.String(), "implies", "no conversion of a zero ρ")
	assert.NotContains(t, Guarantee{Kind: Nominal, Rho: 0.05}.String(), "ε = 0")
}

func TestGuaranteeJSONRoundTrip(t *testing.T) {
	g := Guarantee{Kind: Model, Epsilon: 2, Delta: 1e-5, Model: "m", Beta: 0.05, Assumptions: []string{"a"}, Neighbours: "one user", Seeded: true}
	b, err := json.Marshal(g.JSON())
	require.NoError(t, err)
	assert.Contains(t, string(b), `"kind":"model"`)
	assert.Contains(t, string(b), `"text":"(ε, δ)-differential privacy`)
	var j GuaranteeJSON
	require.NoError(t, json.Unmarshal(b, &j))
	assert.Equal(t, g, j.Guarantee())
	b, _ = json.Marshal(Guarantee{Kind: Pure, Epsilon: 1}.JSON())
	assert.NotContains(t, string(b), "delta")
}

func TestGuaranteeValidate(t *testing.T) {
	assert.NoError(t, Guarantee{Kind: Approx, Epsilon: 1, Delta: 1e-6}.Validate())
	assert.NoError(t, Guarantee{Kind: None}.Validate())
	assert.ErrorIs(t, Guarantee{Kind: Approx, Epsilon: 1, Delta: 1}.Validate(), ErrInvalidBudget)
	assert.ErrorIs(t, Guarantee{Kind: Model, Epsilon: 1, Delta: 1e-6, Beta: 1}.Validate(), ErrInvalidBudget)
	assert.ErrorIs(t, Guarantee{Kind: ZCDP, Rho: -1}.Validate(), ErrInvalidBudget)
	assert.NoError(t, Guarantee{Kind: Nominal, Rho: 0.05}.Validate())
	for _, k := range []GuaranteeKind{Approx, Model, Nominal} {
		assert.ErrorIs(t, Guarantee{Kind: k, Epsilon: 1, Delta: 1e-6, Rho: math.NaN()}.Validate(), ErrInvalidBudget, k)
		assert.ErrorIs(t, Guarantee{Kind: k, Epsilon: 1, Delta: 1e-6, Rho: math.Inf(1)}.Validate(), ErrInvalidBudget, k)
	}
	assert.ErrorIs(t, Guarantee{Kind: "x"}.Validate(), ErrInvalidBudget)
}
