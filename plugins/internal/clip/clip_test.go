package clip

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/plugins/internal/quantile"
)

// clip_share's default: MinShare where the quantiles locate their values
// at it, MaxShare on small data, and in between exactly the share whose
// nominal inverse temperature is quantile.LocatingBeta; never more than
// leaves the estimate half the grant; a given clip_share is kept.
func TestShare(t *testing.T) {
	approx := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	pureG := privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}
	zcdp := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.02}
	given := 0.25
	rho, err := privacy.RhoForEpsDelta(1, 1e-6)
	require.NoError(t, err)
	grid := len(kernel.DefaultGrid())
	cases := []struct {
		name   string
		share  *float64
		n, k   int
		g      privacy.Grant
		pure   bool
		others float64
		want   float64 // NaN: the share of LocatingBeta, strictly between the bounds
	}{
		{"given", &given, 100, 3, approx, false, 0.2, 0.25},
		{"no quantile", nil, 100, 0, approx, false, 0, MinShare},
		{"large n", nil, 60000, 3, approx, false, 0.2, MinShare},
		{"digits", nil, 1797, 3, approx, false, 0.2, MinShare},
		{"small n", nil, 200, 3, approx, false, 0.2, MaxShare},
		{"small n, others take more", nil, 200, 3, approx, false, 0.35, 0.15},
		{"others take half", nil, 200, 3, approx, false, 0.5, MinShare},
		{"pure small n", nil, 100, 2, pureG, true, 0.1, MaxShare},
		{"between", nil, 330, 3, approx, false, 0.2, math.NaN()},
		{"zcdp between", nil, 330, 3, zcdp, false, 0.2, math.NaN()},
		{"pure between", nil, 500, 2, pureG, true, 0, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Options{ClipShare: c.share, ClipQuantile: 0.5}
			got := o.Share(c.n, c.k, c.g, c.pure, c.others)
			if !math.IsNaN(c.want) {
				assert.InDelta(t, c.want, got, 1e-12)
				return
			}
			require.Greater(t, got, MinShare)
			require.Less(t, got, MaxShare)
			var beta float64
			switch {
			case c.pure:
				beta = got * c.g.Epsilon / float64(c.k) / 2
			case c.g.Kind == privacy.GrantZCDP:
				beta = math.Sqrt(2 * got * c.g.Rho / float64(c.k))
			default:
				beta = math.Sqrt(2 * got * rho / float64(c.k))
			}
			assert.InDelta(t, quantile.LocatingBeta(0.5, c.n, grid), beta, 1e-12)
		})
	}
	// More rows or more budget never take a larger share.
	o := Options{ClipQuantile: 0.5}
	prev := math.Inf(1)
	for n := 50; n < 5000; n += 50 {
		s := o.Share(n, 3, approx, false, 0.2)
		assert.LessOrEqual(t, s, prev)
		prev = s
	}
	assert.LessOrEqual(t, o.Share(300, 3, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 4, Delta: 1e-6}, false, 0.2), o.Share(300, 3, approx, false, 0.2))
}
