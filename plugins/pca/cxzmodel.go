package pca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/rowsrc"
)

// lambdaAuto is the lambda value that asks for private spike bounds;
// rankAuto the rank value that keeps the spikes that stand out.
const (
	lambdaAuto = "auto"
	rankAuto   = "auto"
)

// Plan shares of pca-cxz's private model estimate (DERIVATIONS.md §9).
const (
	shareEstClip     = "estimate clip"
	shareEstTrace    = "estimate trace"
	shareEstSpectrum = "estimate spectrum"
	shareEstInner    = "estimate top block"
)

// Fixed choices of the model estimate's clip (DERIVATIONS.md §9.1): the
// rows are clipped to estimateClipFactor times a private
// estimateQuantile-quantile of their norms, so that under the spiked model
// almost no row is shortened.
const (
	estimateQuantile   = 0.5
	estimateClipFactor = 2.0
)

// Weights of the estimate's steps inside estimate_share (the clip quantile
// only when no clip is given).
const (
	estClipWeight  = 0.1
	estTraceWeight = 0.2
	estInnerWeight = 0.3
)

// checkModel parses σ², λ and their upper bounds, decides whether the model
// parameters are estimated privately, and refuses, from the request and the
// public shape alone, spike bounds that rows clipped to clip cannot have.
func (o *cxzOptions) checkModel(s sdk.Shape) error {
	r := o.rank
	o.estimate = o.Sigma2 == nil || o.Lambda == lambdaAuto
	o.low, o.high = nil, nil
	if o.Lambda == lambdaAuto {
		if o.LambdaUpper != "lambda" {
			return sdk.BadRequest("lambda_upper applies to a given lambda; with lambda=auto both bounds are private estimates")
		}
	} else {
		var err error
		if o.low, err = parseDescending("lambda", o.Lambda, r); err != nil {
			return err
		}
		o.high = o.low
		if o.LambdaUpper != "lambda" {
			if o.high, err = parseDescending("lambda_upper", o.LambdaUpper, r); err != nil {
				return err
			}
		}
		if err := checkLambdaPlausible(o.low, o.CXZClip); err != nil {
			return err
		}
		if o.CXZClip == nil {
			o.warnings = append(o.warnings, "lambda was given without clip, so nothing could check it: a λ above the data's real spikes shrinks the noise and voids the model guarantee (leave lambda unset for a private estimate, or give a public clip)")
		}
	}
	if !o.estimate && s.N > 0 && s.P > 0 {
		if err := (SpikedModel{N: s.N, P: s.P, LambdaLow: o.low, LambdaHigh: o.high, Sigma2: *o.Sigma2}).Validate(); err != nil {
			return err
		}
	}
	if o.estimate && s.N > 0 && s.N < 2 {
		return sdk.BadRequest("the private estimate of σ² and λ needs at least 2 rows")
	}
	return nil
}

// checkLambdaPlausible refuses spike lower bounds that no data set of rows
// with norm ≤ clip can have: the second moment of such rows has trace at
// most clip², and under the spiked model its trace is Σλ_k + p·σ² > Σλ_k
// (DERIVATIONS.md §9.4). Without a clip nothing public bounds λ.
func checkLambdaPlausible(low []float64, clip *float64) error {
	if clip == nil {
		return nil
	}
	var sum float64
	for _, l := range low {
		sum += l
	}
	if c2 := *clip * *clip; sum >= c2 {
		return sdk.BadRequest("lambda %s is implausible: the spikes sum to %.6g, but rows of norm ≤ clip = %.6g have a second moment of trace ≤ clip² = %.6g, so some λ_k is overstated (overstating λ shrinks the noise and voids the guarantee): leave lambda unset for a private estimate",
			fmtFloats(low), sum, *clip, c2)
	}
	return nil
}

// estimateShares returns the plan shares of the private model estimate
// (nil when σ² and λ are both given) and the weight they take.
func (c *cxzConfig) estimateShares(rest float64) ([]privacy.Share, float64) {
	if !c.estimate {
		return nil, 0
	}
	e := rest * c.EstimateShare
	var out []privacy.Share
	spectrum := e * (1 - estTraceWeight)
	if c.clip == 0 {
		out = append(out, privacy.Share{Name: shareEstClip, Weight: e * estClipWeight, Mechanism: privacy.MechExponential})
		spectrum -= e * estClipWeight
	}
	out = append(out,
		privacy.Share{Name: shareEstTrace, Weight: e * estTraceWeight, Mechanism: privacy.MechGaussian},
		privacy.Share{Name: shareEstSpectrum, Weight: spectrum - e*estInnerWeight, Mechanism: privacy.MechGaussian},
		privacy.Share{Name: shareEstInner, Weight: e * estInnerWeight, Mechanism: privacy.MechGaussian})
	return out, e
}

// SpikeStats are the released statistics the model estimate post-processes:
// the trace and the top-r eigenvalues (descending) of a noisy second-moment
// matrix S + E of n rows in p columns, with the standard deviations of the
// noise on the trace and on each released entry of the matrix (0: no
// noise); and, optionally, the eigenvalues of a second release VᵀSV + E′
// (V the top-r eigenvectors of S + E, E′ an r×r noise of entry deviation
// InnerSD), which locate spikes the p×p noise hides. Looked is the number
// of spikes the statistics were released for (InnerDim the side of the
// inner release) when Top and Inner keep only their first entries (0: all
// of them are kept); the failure probability is split over the statements
// of all Looked spikes.
type SpikeStats struct {
	N, P       int
	Trace      float64
	Top        []float64
	TraceSD    float64
	SpectrumSD float64
	Inner      []float64
	InnerSD    float64
	Looked     int
	InnerDim   int
}

// prefix returns the statistics of the k largest spikes alone (the
// eigenvalues sorted in descending order first).
func (st SpikeStats) prefix(k int) SpikeStats {
	desc := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		return descending(v)[:k]
	}
	out := st
	out.Looked = max(st.Looked, len(st.Top))
	if st.Inner != nil {
		out.InnerDim = max(st.InnerDim, len(st.Inner))
	}
	out.Top, out.Inner = desc(st.Top), desc(st.Inner)
	return out
}

// spikeStop is EstimateSpikes' answer when the statistics cannot certify
// the spikes above the noise: a decision on released values, which
// pca-cxz turns into a planned stop.
type spikeStop struct{ why string }

func (e *spikeStop) Error() string { return "spike estimate: " + e.why }

// SpikeEstimate holds point estimates of σ² and λ_1 ≥ … ≥ λ_r and the
// confidence bounds pca-cxz calibrates with: an upper bound for σ², lower
// bounds for λ (Δ1) and upper bounds for λ (Δ2, τ).
type SpikeEstimate struct {
	Sigma2                   float64
	Lambda                   []float64
	Sigma2Upper, Sigma2Lower float64
	LambdaLow, LambdaHigh    []float64
	// Z is the normal quantile the bounds are set at.
	Z float64
}

// EstimateSpikes turns released spectrum statistics into σ², λ and their
// confidence bounds at total failure probability beta (post-processing:
// the noise and sampling corrections and the bounds of DERIVATIONS.md
// §9.2–9.3). An error says that the statistics cannot certify r spikes
// above the noise.
func EstimateSpikes(st SpikeStats, beta float64) (SpikeEstimate, error) {
	r := len(st.Top)
	if r < 1 || st.N < 1 || st.P <= r || (st.Inner != nil && len(st.Inner) != r) {
		return SpikeEstimate{}, fmt.Errorf("spike estimate: need 1 ≤ r < p, n ≥ 1 and r inner eigenvalues (r = %d, p = %d, n = %d, inner %d)", r, st.P, st.N, len(st.Inner))
	}
	if !(beta > 0 && beta < 1) {
		return SpikeEstimate{}, fmt.Errorf("spike estimate: failure probability %v outside (0, 1)", beta)
	}
	top, inner := descending(st.Top), descending(st.Inner)
	looked, dIn := max(st.Looked, r), max(st.InnerDim, r)
	est := SpikeEstimate{Z: math.Sqrt2 * math.Erfcinv(2*beta/float64(3*looked+2))}
	// Point estimates: the larger of the two readings of each spike.
	point := func(k int, s2 float64) float64 {
		l := spikeOf(st.P, st.P, st.N, st.SpectrumSD, top[k], s2)
		if inner != nil {
			l = math.Max(l, spikeOf(dIn, st.P, st.N, st.InnerSD, inner[k], s2))
		}
		return l
	}
	est.Sigma2, est.Lambda = spikeFixedPoint(st.P, st.Trace, r, point)
	// Standard deviations at the point estimate: a Gaussian row gives
	// Var(uᵀΣ̂u) = 2ℓ²/n and Var(tr Σ̂) = 2·tr Σ²/n; the noise adds at most
	// 2s² to an eigenvalue (first order) and TraceSD² to the trace.
	n := float64(st.N)
	sd, sdIn := make([]float64, r), make([]float64, r)
	var tr2 float64
	for k, l := range est.Lambda {
		ell := l + est.Sigma2
		sd[k] = math.Sqrt(2*st.SpectrumSD*st.SpectrumSD + 2*ell*ell/n)
		sdIn[k] = math.Sqrt(2*st.InnerSD*st.InnerSD + 2*ell*ell/n)
		tr2 += ell * ell
	}
	tr2 += float64(st.P-r) * est.Sigma2 * est.Sigma2
	sdT := math.Sqrt(st.TraceSD*st.TraceSD + 2*tr2/n)
	z := est.Z
	lower := func(k int, s2 float64) float64 {
		l := spikeOf(st.P, st.P, st.N, st.SpectrumSD, top[k]-z*sd[k], s2)
		if inner != nil {
			l = math.Max(l, spikeOf(dIn, st.P, st.N, st.InnerSD, inner[k]-z*sdIn[k], s2))
		}
		return l
	}
	upper := func(k int, s2 float64) float64 {
		return spikeAbove(st.P, st.N, st.SpectrumSD, top[k]+z*sd[k], s2)
	}
	est.Sigma2Upper, _ = spikeFixedPoint(st.P, st.Trace+z*sdT, r, lower)
	est.Sigma2Lower, _ = spikeFixedPoint(st.P, st.Trace-z*sdT, r, upper)
	est.LambdaLow = make([]float64, r)
	est.LambdaHigh = make([]float64, r)
	for k := range top {
		est.LambdaLow[k] = lower(k, est.Sigma2Upper)
		est.LambdaHigh[k] = math.Max(upper(k, math.Max(est.Sigma2Lower, 0)), est.LambdaLow[k])
	}
	if !(est.Sigma2Upper > 0) || !(est.Sigma2 > 0) {
		return est, &spikeStop{fmt.Sprintf("the private noise variance σ² is not positive (%.4g): the released trace is below the released spikes", est.Sigma2)}
	}
	if !(est.LambdaLow[r-1] > 0) {
		return est, &spikeStop{fmt.Sprintf("the private lower bound for spike %d is %.4g ≤ 0: at this budget component %d does not rise above the noise (σ² ≈ %.4g, spikes ≈ %s), so no model-based calibration can stand on it", r, est.LambdaLow[r-1], r, est.Sigma2, fmtFloats(est.Lambda))}
	}
	return est, nil
}

// descending returns a sorted copy of v, largest first.
func descending(v []float64) []float64 {
	out := append([]float64(nil), v...)
	sort.Sort(sort.Reverse(sort.Float64Slice(out)))
	return out
}

// spikeFixedPoint returns σ² = (trace − Σλ_k)/p and λ_k = lam(k, σ²) at
// their common fixed point (σ² is floored at a tiny positive value so that
// a noisy trace cannot make it negative mid-iteration; the caller refuses a
// non-positive result).
func spikeFixedPoint(p int, trace float64, r int, lam func(k int, s2 float64) float64) (float64, []float64) {
	floor := 1e-12 * math.Max(math.Abs(trace), 1e-300)
	out := make([]float64, r)
	s2 := trace / float64(p)
	for it := 0; it < 200; it++ {
		if s2 < floor {
			s2 = floor
		}
		var sl float64
		for k := range out {
			out[k] = lam(k, s2)
			sl += out[k]
		}
		next := (trace - sl) / float64(p)
		if math.Abs(next-s2) <= 1e-13*math.Abs(s2) {
			s2 = next
			break
		}
		s2 = next
	}
	if s2 > 0 {
		for k := range out {
			out[k] = lam(k, s2)
		}
	}
	return s2, out
}

// spikeOf maps a released eigenvalue m of a d×d noisy matrix (entry
// deviation s) to a spike λ at noise level σ², undoing the noise and the
// sampling bias (DERIVATIONS.md §9.2); 0 when m does not rise above them.
func spikeOf(d, p, n int, s, m, s2 float64) float64 {
	theta := m
	if s > 0 {
		disc := (m-s2)*(m-s2) - 4*float64(d)*s*s
		if disc < 0 || m <= s2 {
			return 0
		}
		theta = (m + s2 + math.Sqrt(disc)) / 2
	}
	return sampledSpike(theta, s2, p, n)
}

// sampledSpike inverts the sampling bias θ = (λ + σ²)(1 + γσ²/λ) of n
// rows in p columns, γ = p/n (0 below the bulk edge).
func sampledSpike(theta, s2 float64, p, n int) float64 {
	gamma := float64(p) / float64(n)
	b := theta - s2*(1+gamma)
	disc := b*b - 4*gamma*s2*s2
	if b <= 0 || disc < 0 {
		return 0
	}
	return (b + math.Sqrt(disc)) / 2
}

// spikeAbove is an upper bound for the spike behind a released eigenvalue
// m of the p×p release: spikeOf when m rises above the noise, and
// otherwise the largest spike the noise could hide, θ = σ² + s√p (the
// spike that reaches the noise's edge σ² + 2s√p).
func spikeAbove(p, n int, s, m, s2 float64) float64 {
	if l := spikeOf(p, p, n, s, m, s2); l > 0 || s == 0 {
		return l
	}
	return sampledSpike(s2+s*math.Sqrt(float64(p)), s2, p, n)
}

// modelEstimate is the released outcome of the private model estimate.
type modelEstimate struct {
	spikeDecision
	stats    SpikeStats // the released statistics
	spectrum []float64  // the top eigenvalues of the released S_c + E (one more than stats.Top)
	v        *mat.Dense // the top eigenvectors of the released S_c + E (p × looked)
	clip     float64    // the rows' clip in the estimate
	autoClip bool       // clip came from a private quantile
	beta     float64    // failure probability of the bounds
}

// estimateModel releases the trace and the spectrum of the clipped second
// moment (after a private clip quantile when no clip is given), the
// statistics σ² and λ are read from (DERIVATIONS.md §9), and decides from
// them alone how many spikes stand out (decideSpikes). Every step is
// worst-case DP on the clipped rows.
func estimateModel(ctx context.Context, run *sdk.Run, plan *privacy.Plan, cfg *cxzConfig, src *rowsrc.Source, mu []float64) (*modelEstimate, error) {
	n, p := src.Dims()
	out := &modelEstimate{clip: cfg.clip, beta: cfg.betaEst}
	if out.clip == 0 {
		q, err := privateClip(ctx, run, plan, shareEstClip, "estimate: clip quantile", src, mu, estimateQuantile)
		if err != nil {
			return nil, err
		}
		out.clip, out.autoClip = estimateClipFactor*q, true
	}
	run.Progress("model estimate", 0, 1)
	s, _, err := gramOf(ctx, src, mu, out.clip)
	if err != nil {
		return nil, err
	}
	c2n := out.clip * out.clip / float64(n)
	relT, err := releaseAt(run, plan, shareEstTrace, "estimate: trace of the clipped second moment", c2n, 1)
	if err != nil {
		return nil, err
	}
	tr := []float64{mat.Trace(s)}
	if err := relT.Add(run.Rand, tr); err != nil {
		return nil, err
	}
	clean := mat.NewSymDense(p, nil)
	clean.CopySym(s)
	relS, err := releaseAt(run, plan, shareEstSpectrum, "estimate: clipped second moment (spectrum)", math.Sqrt2*c2n, p*(p+1)/2)
	if err != nil {
		return nil, err
	}
	if err := relS.AddSym(run.Rand, s); err != nil {
		return nil, err
	}
	top, v, err := topEigen(ctx, run.Backend, s, cfg.r+1)
	if err != nil {
		return nil, err
	}
	out.spectrum, top, v = descending(top), top[:cfg.r], v.Slice(0, p, 0, cfg.r).(*mat.Dense)
	inner, innerSD, err := innerSpectrum(ctx, run, plan, clean, v, math.Sqrt2*c2n)
	if err != nil {
		return nil, err
	}
	run.Progress("model estimate", 1, 1)
	out.v = v
	out.stats = SpikeStats{N: n, P: p, Trace: tr[0], Top: top, TraceSD: relT.Scale(), SpectrumSD: relS.Scale(), Inner: inner, InnerSD: innerSD}
	if out.spikeDecision, err = decideSpikes(out.stats, out.beta, cfg.auto); err != nil {
		return nil, fmt.Errorf("pca-cxz: %w", err)
	}
	return out, nil
}

// spikeDecision is what pca-cxz decides from the released statistics of
// its model estimate alone (DERIVATIONS.md §12): how many spikes stand
// out, the rank it fits and, when it cannot go on, why it stops.
type spikeDecision struct {
	SpikeEstimate        // at the rank fitted (at the rank asked for when it stops)
	stand         int    // how many spikes stand out
	rank          int    // the rank to fit (0 when it stops)
	stop          string // why the fit stops ("" when it goes on)
}

// decideSpikes counts the spikes that stand out: the largest k ≤ r whose
// estimate EstimateSpikes certifies (DERIVATIONS.md §12.2). With auto the
// fit keeps those k and stops when there are none; with a fixed rank it
// goes on only when all r stand out. It reads only released values and
// the public beta.
func decideSpikes(st SpikeStats, beta float64, auto bool) (spikeDecision, error) {
	r := len(st.Top)
	full, err := EstimateSpikes(st.prefix(r), beta)
	var stop *spikeStop
	if err != nil && !errors.As(err, &stop) {
		return spikeDecision{}, err
	}
	d := spikeDecision{SpikeEstimate: full}
	if err == nil {
		d.stand, d.rank = r, r
		return d, nil
	}
	for k := r - 1; k >= 1 && d.stand == 0; k-- {
		if e, err := EstimateSpikes(st.prefix(k), beta); err == nil {
			d.stand = k
			if auto {
				d.SpikeEstimate, d.rank = e, k
			}
		}
	}
	switch {
	case d.rank > 0:
	case auto:
		d.stop = fmt.Sprintf("no spike stands out of the noise at this budget (%v)", err)
	default:
		d.stop = fmt.Sprintf("%v; %d of the %d spikes asked for stand out (rank=auto keeps them)", err, d.stand, r)
	}
	return d, nil
}

// innerSpectrum releases VᵀS_cV + E′ (V public: the top-r eigenvectors of
// the released S_c + E; Frobenius sensitivity at most that of S_c, sens,
// since V has orthonormal columns) and returns its eigenvalues and the
// noise's entry deviation.
func innerSpectrum(ctx context.Context, run *sdk.Run, plan *privacy.Plan, s *mat.SymDense, v *mat.Dense, sens float64) ([]float64, float64, error) {
	_, r := v.Dims()
	in, err := compress(run.Backend, s, v)
	if err != nil {
		return nil, 0, err
	}
	rel, err := releaseAt(run, plan, shareEstInner, "estimate: top-r block VᵀS_cV", sens, r*(r+1)/2)
	if err != nil {
		return nil, 0, err
	}
	if err := rel.AddSym(run.Rand, in); err != nil {
		return nil, 0, err
	}
	vals, _, err := topEigen(ctx, run.Backend, in, r)
	if err != nil {
		return nil, 0, err
	}
	return vals, rel.Scale(), nil
}

// apply puts the estimated parameters into the model the sensitivities use:
// σ² from the estimate when not given (its upper bound, its point estimate
// subtracted in stage 2), λ bounds when lambda=auto.
func (e *modelEstimate) apply(cfg *cxzConfig) error {
	cfg.r = e.rank
	if cfg.Sigma2 == nil {
		cfg.model.Sigma2, cfg.sub = e.Sigma2Upper, e.Sigma2
	}
	if cfg.Lambda == lambdaAuto {
		cfg.model.LambdaLow, cfg.model.LambdaHigh = e.LambdaLow, e.LambdaHigh
	}
	if err := cfg.model.Validate(); err != nil {
		return fmt.Errorf("pca-cxz: the privately estimated model: %w", err)
	}
	return nil
}

// report releases the estimate (all post-processing of the declared steps)
// and states its assumptions in the guarantee.
func (e *modelEstimate) report(res *sdk.Result, cfg *cxzConfig) {
	res.AddScalar("sigma2_estimate", e.Sigma2, sdk.Public, "private estimate of the noise variance σ² (subtracted in stage 2 when sigma2 was not given)")
	res.AddScalar("sigma2_upper", e.Sigma2Upper, sdk.Public, "private upper confidence bound for σ² (the σ² the sensitivities use when sigma2 was not given)")
	res.AddSeries("lambda_estimate", e.Lambda, sdk.Public, "private estimates of the spikes λ_1 ≥ … ≥ λ_r")
	res.AddSeries("lambda_lower", e.LambdaLow, sdk.Public, "private lower confidence bounds for the spikes (Δ1 uses them with lambda=auto)")
	res.AddSeries("lambda_upper", e.LambdaHigh, sdk.Public, "private upper confidence bounds for the spikes (Δ2 and τ use them with lambda=auto)")
	res.AddScalar("estimate_clip", e.clip, sdk.Public, "row-norm clip of the model estimate's steps")
	st := e.stats
	res.AddScalar("estimate_trace", st.Trace, sdk.Public, "the released noisy trace of the clipped second moment")
	res.AddSeries("estimate_top_eigenvalues", st.Top, sdk.Public, "the top eigenvalues of the released noisy clipped second moment S_c + E")
	res.AddSeries("estimate_inner_eigenvalues", st.Inner, sdk.Public, "the eigenvalues of the released block VᵀS_cV + E′")
	res.AddSeries("estimate_noise_sd", []float64{st.TraceSD, st.SpectrumSD, st.InnerSD}, sdk.Public, "noise standard deviations of the trace, of each entry of E and of each entry of E′ (public: from the clip and the budget)")
	res.AddScalar("spikes", float64(e.stand), sdk.Public, "how many spikes stand out of the noise: the largest k whose private lower bounds are all positive at a positive private σ² (post-processing of the model estimate)")
	if cfg.auto {
		res.AddScalar("rank", float64(e.rank), sdk.Public, "the rank kept by rank=auto: the spikes that stand out")
	}
	var what []string
	if cfg.Sigma2 == nil {
		what = append(what, "σ²")
	}
	if cfg.Lambda == lambdaAuto {
		what = append(what, "λ")
	}
	how := fmt.Sprintf("rows clipped to the public clip %.6g", e.clip)
	if e.autoClip {
		how = fmt.Sprintf("rows clipped to %.6g = %.3g × a private %.2g-quantile of the row norms", e.clip, estimateClipFactor, estimateQuantile)
	}
	if e.stop != "" || cfg.worst() {
		return
	}
	if cfg.auto {
		res.Guarantee.Assumptions = append(res.Guarantee.Assumptions, fmt.Sprintf("rank=auto: the rank %d is the number of spikes that stand out of the private estimate (post-processing); the model takes the rows to have exactly that many spikes", e.rank))
	}
	res.Guarantee.Assumptions = append(res.Guarantee.Assumptions,
		fmt.Sprintf("the bounds on %s are private estimates from worst-case DP steps (%s; trace and spectrum of the clipped second moment); they are valid bounds with probability ≥ 1 − %.3g over the data and the estimate's noise ONLY IF the rows follow the spiked Gaussian model (that failure probability is included in β); for other data the model-based calibration has no guarantee: use pca-analyze-gauss (worst-case DP)",
			strings.Join(what, " and "), how, e.beta))
}
