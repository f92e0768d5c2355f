package orbit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// TestScreenAgreesWithDryRuns: wherever an orbit estimator's public
// screen calls a fit near random, dplr plan's dry runs (PlanFull) say
// near random too; it never calls a fit far (it has no far half). On this
// grid it decides 26 requests (dry runs within 0.014 of random), some of
// each estimator.
func TestScreenAgreesWithDryRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("dry runs on a grid of requests")
	}
	ctx := context.Background()
	decided := map[string]int{}
	for _, sh := range [][2]int{{1797, 64}, {500, 100}, {1000, 200}, {20000, 100}} {
		for _, r := range []int{1, 3, 10} {
			for _, c := range []struct {
				est   sdk.Estimator
				grant privacy.Grant
			}{
				{EM{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.25}},
				{EM{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 8}},
				{RankK{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.25}},
				{RankK{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}},
				{Deflation{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.25}},
				{Deflation{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 1}},
				{Gauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.1, Delta: 1e-6}},
				{Gauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 8, Delta: 1e-6}},
			} {
				name := fmt.Sprintf("%s %+v n=%d p=%d r=%d", c.est.Info().Name, c.grant, sh[0], sh[1], r)
				raw := map[string]string{"rank": fmt.Sprint(r)}
				shape := sdk.Shape{Kind: data.Rows, N: sh[0], P: sh[1]}
				check, err := sdk.PlanOf(ctx, c.est, raw, c.grant, shape, gen.Reference, sdk.PlanIndicator)
				require.NoError(t, err, name)
				if !strings.HasPrefix(check.Note, sdk.ScreenDecided) {
					continue
				}
				assert.True(t, check.NearRandom, "%s: %s", name, check.Note)
				full, err := sdk.PlanOf(ctx, c.est, raw, c.grant, shape, gen.Reference, sdk.PlanFull)
				require.NoError(t, err, name)
				t.Logf("%s: screen near random; dry runs %.3f against %.3f", name, full.ExpectedScore, full.RandomScore)
				if !full.Scored {
					continue // the dry runs did not finish
				}
				assert.True(t, full.NearRandom, "%s: screen %q, dry runs %.3f against %.3f", name, check.Note, full.ExpectedScore, full.RandomScore)
				decided[c.est.Info().Name]++
			}
		}
	}
	t.Logf("decided near random: %v", decided)
	for _, name := range []string{"orbit-rank-k", "orbit-deflation"} {
		assert.Positive(t, decided[name], name)
	}
}
