package pca

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The declared non-Gaussian step of a clip=auto request names the option
// that needs it (the host's refusal under the Gaussian-DP filter advises
// a numeric clip from that), and a numeric clip declares Gaussian steps
// only.
func TestDeclarationNamesClipAuto(t *testing.T) {
	s := sdk.Shape{Kind: data.Rows, N: 2000, P: 10}
	g := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	for _, tc := range []struct {
		est  sdk.Estimator
		raw  map[string]string
		want string
	}{
		{AnalyzeGauss{}, map[string]string{"rank": "2"}, "clip=auto"},
		{Amin{}, map[string]string{"rank": "2"}, "clip=auto"},
		{CXZ{}, map[string]string{"rank": "2", "center": "private"}, "mean_clip=auto"},
	} {
		t.Run(tc.est.Info().Name, func(t *testing.T) {
			_, _, d, err := sdk.PrepareDeclared(tc.est.Info(), tc.raw, s, g)
			require.NoError(t, err)
			assert.True(t, slices.ContainsFunc(d.Uses, func(u sdk.MechanismUse) bool {
				return u.Mechanism == privacy.MechExponential && strings.Contains(u.For, tc.want)
			}), "declaration %s", d)
		})
	}
	_, _, d, err := sdk.PrepareDeclared(AnalyzeGauss{}.Info(), map[string]string{"rank": "2", "clip": "5"}, s, g)
	require.NoError(t, err)
	assert.True(t, d.GaussianOnly(), "declaration %s", d)
}
