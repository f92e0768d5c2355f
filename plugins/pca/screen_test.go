package pca

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

// screenCase is one request of the screen's table against dplr plan.
type screenCase struct {
	est    sdk.Estimator
	grant  privacy.Grant
	n, p   int
	rank   int
	center string
	clip   string // "" for the default (auto)
}

func (c screenCase) String() string {
	return fmt.Sprintf("%s %s n=%d p=%d r=%d center=%s clip=%s", c.est.Info().Name, grantText(c.grant), c.n, c.p, c.rank, c.center, c.clip)
}

// grantText writes g for a test's name.
func grantText(g privacy.Grant) string {
	if g.Kind == privacy.GrantPure {
		return fmt.Sprintf("ε=%g", g.Epsilon)
	}
	return fmt.Sprintf("(ε=%g, δ=%g)", g.Epsilon, g.Delta)
}

// screenGrid is a grid of shapes, budgets, ranks, centrings and clips on
// which dplr plan's dry runs finish, wide shapes (p = 400) included.
func screenGrid() []screenCase {
	var out []screenCase
	shapes := [][2]int{{200, 10}, {2000, 30}, {1000, 100}, {20000, 30}, {1797, 64}, {1000, 400}}
	for _, sh := range shapes {
		for _, r := range []int{1, 3, 10} {
			if r >= sh[1] {
				continue
			}
			for _, center := range []string{"private", "none"} {
				for _, eps := range []float64{0.1, 1, 8} {
					out = append(out, screenCase{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: 1e-6}, sh[0], sh[1], r, center, ""})
				}
				if sh[1] > 100 {
					continue // pca-amin's dry runs at p = 400 take longer than the plan's time limit
				}
				for _, eps := range []float64{0.5, 8} {
					out = append(out, screenCase{Amin{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: eps}, sh[0], sh[1], r, center, ""})
				}
			}
		}
	}
	// Public clips (applied to the reference as given), on small n.
	for _, clip := range []string{"0.3", "3"} {
		for _, sh := range [][2]int{{200, 100}, {400, 200}} {
			for _, r := range []int{3, 10} {
				out = append(out,
					screenCase{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.1, Delta: 1e-6}, sh[0], sh[1], r, "private", clip},
					screenCase{AnalyzeGauss{}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 0.5, Delta: 1e-6}, sh[0], sh[1], r, "none", clip},
					screenCase{Amin{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.5}, sh[0], sh[1], r, "private", clip},
					screenCase{Amin{}, privacy.Grant{Kind: privacy.GrantPure, Epsilon: 0.1}, sh[0], sh[1], r, "none", clip})
			}
		}
	}
	return out
}

// TestScreenAgreesWithDryRuns: wherever the public screen decides, dplr
// plan's dry runs (PlanFull, eight where they fit) agree: near random only
// where they say near random, far never where they do. The screen decides
// a fair share of the grid both ways.
func TestScreenAgreesWithDryRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("dry runs on a grid of requests")
	}
	ctx := context.Background()
	decided := map[sdk.Verdict]int{}
	for _, c := range screenGrid() {
		raw := map[string]string{"rank": fmt.Sprint(c.rank), "center": c.center}
		if c.clip != "" {
			raw["clip"] = c.clip
		}
		shape := sdk.Shape{Kind: data.Rows, N: c.n, P: c.p}
		check, err := sdk.PlanOf(ctx, c.est, raw, c.grant, shape, gen.Reference, sdk.PlanIndicator)
		require.NoError(t, err, c)
		full, err := sdk.PlanOf(ctx, c.est, raw, c.grant, shape, gen.Reference, sdk.PlanFull)
		require.NoError(t, err, c)
		t.Logf("%s: check %v %q; plan %.3f against %.3f", c, check.NearRandom, check.Note, full.ExpectedScore, full.RandomScore)
		if !strings.HasPrefix(check.Note, sdk.ScreenDecided) || !full.Scored {
			continue // the screen did not decide, or the dry runs did not finish
		}
		v := sdk.CertainlyFar
		if check.NearRandom {
			v = sdk.CertainlyNearRandom
		}
		decided[v]++
		assert.Equal(t, check.NearRandom, full.NearRandom, "%s: screen %q, dry runs %.3f against %.3f", c, check.Note, full.ExpectedScore, full.RandomScore)
		assert.Contains(t, full.Note, "the public screen agrees", c)
	}
	t.Logf("decided: %d near random, %d far", decided[sdk.CertainlyNearRandom], decided[sdk.CertainlyFar])
	assert.GreaterOrEqual(t, decided[sdk.CertainlyNearRandom], 5)
	assert.GreaterOrEqual(t, decided[sdk.CertainlyFar], 5)
}
