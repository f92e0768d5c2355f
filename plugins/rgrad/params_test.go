package rgrad

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Parameters that must be positive are bounded away from zero in the
// catalogue, so the host refuses a zero at its parameter check (exit 2, no
// ledger entry) instead of the estimator refusing it after the grant is
// reserved; init_share is bounded inside (0, 1) for the same reason.
func TestPositiveParamsBoundedInCatalogue(t *testing.T) {
	positive := map[string]bool{"sigma1": true, "sigmar": true, "step": true, "c1": true, "c2": true, "c3": true,
		"clip_x": true, "clip_y": true, "clip": true}
	for _, e := range Estimators() {
		info := e.Info()
		for _, ps := range info.Params {
			if positive[ps.Name] {
				require.NotNil(t, ps.Min, "%s %s", info.Name, ps.Name)
				assert.Greater(t, *ps.Min, 0.0, "%s %s", info.Name, ps.Name)
			}
			if ps.Name == "init_share" {
				assert.Greater(t, *ps.Min, 0.0, info.Name)
				assert.Less(t, *ps.Max, 1.0, info.Name)
			}
			if ps.Name == "sigma_xi" {
				assert.Equal(t, 0.0, *ps.Min, "sigma_xi = 0 (noiseless responses) stays allowed for rgrad-dp")
			}
		}
	}
	g := genTrace(t, 31, map[string]string{"n": "300"})
	seed := uint64(1)
	for _, tc := range []struct{ est, name, value string }{
		{"rgrad-dp", "step", "0"}, {"rgrad-dp", "sigma1", "0"}, {"rgrad-dp", "c1", "0"},
		{"rgrad-dp", "init_share", "0"}, {"rgrad-strict", "clip", "0"}, {"rgrad-strict", "init_share", "1"},
	} {
		params := modelParamsFor(g, map[string]string{tc.name: tc.value})
		if tc.est == "rgrad-strict" {
			params = map[string]string{"rank": "2", "clip_y": "3", "clip": "1", tc.name: tc.value}
		}
		_, acct, err := sdk.RunLocal(context.Background(), estimatorByName(t, tc.est), g.Data, params, approx(1, 1e-5), sdk.LocalOptions{Seed: &seed})
		require.Error(t, err, "%s %s=%s", tc.est, tc.name, tc.value)
		assert.Contains(t, err.Error(), tc.name)
		assert.Regexp(t, "below its minimum|above its maximum|must be greater than", err.Error())
		if acct != nil {
			assert.Empty(t, acct.Steps())
		}
	}
}

// noise=classical's note says that the stated guarantee composes the
// paper-calibrated releases by the tightest accounting (and so reports an ε
// below the grant's), not by the basic composition the noise was calibrated
// for.
func TestPaperNoteMatchesReportedGuarantee(t *testing.T) {
	g := genTrace(t, 32, map[string]string{"n": "400"})
	res, _ := fitOK(t, "rgrad-dp", g, modelParamsFor(g, map[string]string{"sensitivity": "paper", "noise": "classical", "iterations": "3"}), approx(1, 1e-5), 2)
	assert.Less(t, res.Guarantee.Epsilon, 1.0)
	note := noteWith(res.Notes, "noise=classical")
	assert.Contains(t, note, "tightest accounting")
	assert.NotContains(t, note, "combined by basic composition")
}

// The former calibration= (split into sensitivity= and noise=) and
// gaussian= (now noise=) are refused before any step, by every estimator
// that had them, with an error naming the replacements and their values.
func TestFormerNamesRefused(t *testing.T) {
	g := genTrace(t, 33, map[string]string{"n": "300"})
	for _, tc := range []struct {
		est, name, value, want string
	}{
		{"rgrad-dp", "calibration", "paper", "calibration= was replaced by sensitivity= (values: explicit, paper) and noise= (values: zcdp, exact, classical, analytic)"},
		{"rgrad-weak", "calibration", "explicit", "calibration= was replaced by sensitivity="},
		{"rgrad-dp", "gaussian", "analytic", "gaussian= was renamed noise= (values: zcdp, exact, classical, analytic)"},
	} {
		_, acct, err := sdk.RunLocal(context.Background(), estimatorByName(t, tc.est), g.Data, modelParamsFor(g, map[string]string{tc.name: tc.value}), approx(1, 1e-5), sdk.LocalOptions{})
		require.Error(t, err, "%s %s=%s", tc.est, tc.name, tc.value)
		assert.ErrorContains(t, err, tc.want)
		assert.True(t, sdk.IsBadRequest(err), "%v", err)
		if acct != nil {
			assert.Empty(t, acct.Steps())
		}
	}
}

// noteWith returns the first note containing sub ("" if none).
func noteWith(notes []string, sub string) string {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return n
		}
	}
	return ""
}

// Requests rgrad refuses as such (rank against min(d1, d2), σ1 < σr, weak
// DP without response noise, a paper calibration the grant cannot carry, an
// unknown design) are sdk.BadRequest — usage errors for the host — and are
// refused before any privacy step.
func TestRefusedRequestsAreBadRequests(t *testing.T) {
	g := genTrace(t, 33, map[string]string{"n": "300"})
	seed := uint64(1)
	cases := []struct {
		name, est string
		over      map[string]string
		grant     privacy.Grant
	}{
		{"rank above min(d1, d2)", "rgrad-dp", map[string]string{"rank": "21"}, approx(1, 1e-5)},
		{"sigma1 below sigmar", "rgrad-dp", map[string]string{"sigma1": "1", "sigmar": "2"}, approx(1, 1e-5)},
		{"unknown design", "rgrad-dp", map[string]string{"design": "foo"}, approx(1, 1e-5)},
		{"AR(1) correlation out of range", "rgrad-dp", map[string]string{"design": "ar1:1.5"}, approx(1, 1e-5)},
		{"paper calibration under ρ", "rgrad-dp", map[string]string{"sensitivity": "paper", "noise": "classical"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.1}},
		{"weak DP without response noise", "rgrad-weak", map[string]string{"sigma_xi": "0"}, approx(1, 1e-5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, acct, err := sdk.RunLocal(context.Background(), estimatorByName(t, tc.est), g.Data, modelParamsFor(g, tc.over), tc.grant, sdk.LocalOptions{Seed: &seed})
			require.Error(t, err)
			assert.True(t, sdk.IsBadRequest(err), "refusal not marked: %v", err)
			if acct != nil {
				assert.Empty(t, acct.Steps())
			}
		})
	}
}

// Prepare (the host's pre-flight) reports a footprint that grows with the
// matrix size and refuses a rank above min(d1, d2) from the shape alone.
func TestPrepareFootprintAndRefusal(t *testing.T) {
	info, err := sdk.InfoOf(estimatorByName(t, "rgrad-dp"))
	require.NoError(t, err)
	raw := map[string]string{"rank": "2", "sigma1": "2", "sigmar": "1", "sigma_xi": "0.5"}
	shape := func(d1, d2 int) sdk.Shape { return sdk.Shape{Kind: data.Trace, N: 1000, P: d1 * d2, D1: d1, D2: d2} }
	_, small, err := sdk.Prepare(info, raw, shape(10, 8))
	require.NoError(t, err)
	_, big, err := sdk.Prepare(info, raw, shape(100, 80))
	require.NoError(t, err)
	assert.Greater(t, small, int64(0))
	assert.Greater(t, big, 50*small)
	raw["rank"] = "9"
	_, _, err = sdk.Prepare(info, raw, shape(10, 8))
	require.Error(t, err)
	assert.True(t, sdk.IsBadRequest(err))
	assert.Contains(t, err.Error(), "rank")
}

// noise=exact is the default: the releases compose exactly as Gaussian DP
// (the guarantee says accounting=gdp and states μ), every step's σ is
// below noise=zcdp's by at least 6 % at (1, 1e-5), and the stated ε meets
// the grant.
func TestExactIsDefault(t *testing.T) {
	g := genTrace(t, 32, map[string]string{"n": "400"})
	for _, tc := range []struct {
		name   string
		params map[string]string
	}{
		{"rgrad-dp", modelParamsFor(g, map[string]string{"iterations": "3"})},
		{"rgrad-strict", map[string]string{"rank": "2", "clip_y": "8", "clip": "6", "iterations": "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, acct := fitOK(t, tc.name, g, tc.params, approx(1, 1e-5), 1)
			assert.Equal(t, "gdp", res.Guarantee.Accounting)
			assert.Greater(t, res.Guarantee.Mu, 0.0)
			assert.LessOrEqual(t, res.Guarantee.Epsilon, 1.0)
			assert.NotEmpty(t, noteWith(res.Notes, "noise=exact"))
			zp := map[string]string{"noise": "zcdp"}
			for k, v := range tc.params {
				zp[k] = v
			}
			_, zacct := fitOK(t, tc.name, g, zp, approx(1, 1e-5), 1)
			es, zs := acct.Steps(), zacct.Steps()
			require.Equal(t, len(zs), len(es))
			for i := range es {
				assert.Less(t, es[i].Scale, 0.94*zs[i].Scale, "step %q", es[i].Name)
			}
		})
	}
}
