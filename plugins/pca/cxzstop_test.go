package pca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/sdk/sdktest"
)

// estimateSteps are the step names of the private model estimate without
// a clip.
var estimateSteps = []string{"estimate: clip quantile", "estimate: trace of the clipped second moment",
	"estimate: clipped second moment (spectrum)", "estimate: top-r block VᵀS_cV"}

// releasedStats rebuilds the model estimate's statistics from the
// released outputs and the public n and p alone.
func releasedStats(t *testing.T, res *sdk.Result, n, p int) SpikeStats {
	t.Helper()
	sd := series(t, res, "estimate_noise_sd")
	require.Len(t, sd, 3)
	return SpikeStats{N: n, P: p, Trace: scalar(t, res, "estimate_trace"), Top: series(t, res, "estimate_top_eigenvalues"),
		Inner: series(t, res, "estimate_inner_eigenvalues"), TraceSD: sd[0], SpectrumSD: sd[1], InnerSD: sd[2]}
}

// A planned stop (DERIVATIONS.md §12): two spikes in the data, four asked
// for. The fit returns a result instead of failing; it ran only the
// estimate's steps, whose composition (closed form under noise=zcdp:
// estimate_share × the grant's ρ) is what the ledger charges, less than
// the grant; it releases the estimate, the spikes that stand out and
// their directions and nothing model-based; and the decision, rerun on
// the released values alone, gives the same spikes, estimate and stop.
func TestCXZPlannedStop(t *testing.T) {
	const n, p = 4000, 12
	g := spiked(t, n, p, 2, "24,20", "gaussian", 71)
	grant := approx(2, 1e-6)
	res, acct := fit(t, CXZ{}, g, map[string]string{"rank": "4", "noise": "zcdp"}, grant, 5)
	var names []string
	for _, s := range acct.Steps() {
		names = append(names, s.Name)
	}
	assert.Equal(t, estimateSteps, names, "only the estimate ran")
	rho, err := privacy.RhoForEpsDelta(2, 1e-6)
	require.NoError(t, err)
	ach, err := privacy.Compose(grant, acct.Steps())
	require.NoError(t, err)
	assert.InEpsilon(t, 0.2*rho, ach.Rho, 1e-9, "charged estimate_share of the grant's ρ")
	assert.InEpsilon(t, privacy.EpsilonFromRho(0.2*rho, 1e-6), ach.Epsilon, 1e-9)
	assert.Less(t, ach.Epsilon, 0.5*grant.Epsilon)
	assert.LessOrEqual(t, res.Guarantee.Epsilon, ach.Epsilon*(1+1e-12), "the guarantee states no more than the charge (its composition may be tighter)")
	assert.Positive(t, res.Guarantee.Epsilon)
	assert.NotEqual(t, privacy.Model, res.Guarantee.Kind, "only worst-case DP steps ran")
	// What is released: the estimate and what follows from it.
	var out []string
	for _, m := range res.Matrices {
		out = append(out, m.Name)
	}
	for _, s := range res.Scalars {
		out = append(out, s.Name)
	}
	for _, s := range res.Series {
		out = append(out, s.Name)
	}
	assert.ElementsMatch(t, []string{"U", "sigma2_estimate", "sigma2_upper", "estimate_clip", "estimate_trace", "spikes",
		"lambda_estimate", "lambda_lower", "lambda_upper", "estimate_top_eigenvalues", "estimate_inner_eigenvalues", "estimate_noise_sd"}, out)
	spikes := int(scalar(t, res, "spikes"))
	assert.Equal(t, 2, spikes, "the two spikes of the data stand out")
	u := matrix(t, res, "U")
	_, k := u.Dims()
	assert.Equal(t, spikes, k)
	assert.Less(t, maxAbsOffIdentity(u), 1e-9)
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "planned stop")
	// The decision from the released values alone.
	d, err := decideSpikes(releasedStats(t, res, n, p), 1e-6, false)
	require.NoError(t, err)
	assert.Equal(t, spikes, d.stand)
	assert.Zero(t, d.rank)
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], d.stop)
	assert.Equal(t, scalar(t, res, "sigma2_estimate"), d.Sigma2)
	assert.Equal(t, series(t, res, "lambda_lower"), d.LambdaLow)
}

// rank=auto keeps the spikes that stand out and fits them: on two spikes
// it releases rank 2 and a p×2 U after the full set of steps, and the
// rank follows from the released estimate alone. On data whose only spike
// is buried in the noise it stops, releasing no component.
func TestCXZRankAuto(t *testing.T) {
	const n, p = 4000, 12
	g := spiked(t, n, p, 2, "24,20", "gaussian", 72)
	res, acct := fit(t, CXZ{}, g, map[string]string{"rank": "auto", "output_sigma": "true"}, approx(2, 1e-6), 6)
	assert.Equal(t, 2.0, scalar(t, res, "rank"))
	assert.Len(t, acct.Steps(), 6)
	_, k := matrix(t, res, "U").Dims()
	assert.Equal(t, 2, k)
	assert.Len(t, series(t, res, "lambda_lower"), 2)
	d, err := decideSpikes(releasedStats(t, res, n, p), 1e-6, true)
	require.NoError(t, err)
	assert.Equal(t, 2, d.rank)
	assert.Equal(t, privacy.Model, res.Guarantee.Kind)

	weak := spiked(t, 500, p, 1, "0.05", "gaussian", 73)
	res, acct = fit(t, CXZ{}, weak, map[string]string{"rank": "auto", "evaluate": "true"}, approx(1, 1e-6), 7)
	assert.Len(t, acct.Steps(), 4, "the estimate only")
	assert.Zero(t, scalar(t, res, "spikes"))
	for _, m := range res.Matrices {
		assert.NotEqual(t, "U", m.Name)
	}
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "no spike stands out")
}

// The planned stops and rank=auto pass the conformance suite (steps
// declared and drawn, outputs classed, the guarantee their steps compose
// to).
func TestCXZStopConformance(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 74)
	sdktest.Run(t, CXZ{},
		sdktest.Case{Name: "stop", Data: g.Data, Params: map[string]string{"rank": "4"}, Grant: approx(2, 1e-6)},
		sdktest.Case{Name: "auto, centred", Data: g.Data, Params: map[string]string{"rank": "auto", "center": "private"}, Grant: approx(2, 1e-6)},
	)
}

// decideSpikes on statistics without noise: two clear spikes among four
// looked for stand out; with a fixed rank 4 it stops, with auto it keeps
// 2; a trace below the largest spike stops both.
func TestDecideSpikes(t *testing.T) {
	st := SpikeStats{N: 1e6, P: 20, Trace: 64, Top: []float64{25, 21, 1.01, 1.005}}
	fixed, err := decideSpikes(st, 1e-6, false)
	require.NoError(t, err)
	assert.Equal(t, 2, fixed.stand)
	assert.Zero(t, fixed.rank)
	assert.NotEmpty(t, fixed.stop)
	auto, err := decideSpikes(st, 1e-6, true)
	require.NoError(t, err)
	assert.Equal(t, 2, auto.rank)
	assert.Empty(t, auto.stop)
	assert.InDelta(t, 24, auto.Lambda[0], 0.1)
	st.Trace = 20 // below the largest spike
	low, err := decideSpikes(st, 1e-6, true)
	require.NoError(t, err)
	assert.Zero(t, low.stand)
	assert.Contains(t, low.stop, "σ² is not positive")
	_, err = decideSpikes(SpikeStats{N: 10, P: 2, Top: []float64{1, 1}}, 1e-6, true)
	require.Error(t, err, "not a spike statistic")
}

// A calibration that the released bounds cannot support (davis-kahan's
// eigengap bound ≤ 0 at the private λ) is decided from released values
// and public options too: a planned stop after the estimate, not a charged
// failure.
func TestCXZPlannedStopOnCalibration(t *testing.T) {
	g := spiked(t, 4000, 12, 2, "24,20", "gaussian", 75)
	res, acct := fit(t, CXZ{}, g, map[string]string{"rank": "2", "sensitivity": "davis-kahan", "dk_c": "100"}, approx(2, 1e-6), 8)
	assert.Len(t, acct.Steps(), len(estimateSteps))
	assert.Equal(t, 2.0, scalar(t, res, "spikes"))
	assert.Contains(t, res.Warnings[len(res.Warnings)-1], "davis-kahan calibration")
}
