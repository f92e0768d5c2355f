package pca

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplr/dplr/engine/kernel"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/internal/analyzegauss"
)

// The public screen's thresholds (DERIVATIONS.md §14).
const (
	// screenFar: far from random only when every perturbation of the
	// reference's clipped second moment together is at most this share of
	// its clipped eigengap (and the score this bounds is well above a
	// random subspace's).
	screenFar = 0.45
	// screenMiss bounds the chance that a private clip quantile leaves the
	// middle of the reference's norms (quantile ± screenRanks).
	screenMiss = 1e-4
	// screenRanks is how far in rank, as a share of n, a clip quantile may
	// stray for the screen to call a fit far.
	screenRanks = 0.25
	// screenDraws is the number of reference rows the screen draws (with a
	// fixed seed) for the norm quantiles and the clipped eigengap.
	screenDraws = 4000
)

// Screen implements sdk.Screener for pca-analyze-gauss: the noise E on
// the second moment is a symmetric Gaussian matrix of entry deviation σ,
// spectral edge 2σ√p.
func (o *analyzeGaussOptions) Screen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant) (sdk.Screen, error) {
	if o.released() {
		return sdk.Screen{}, nil // a standardised release: not screened
	}
	sd, err := sdk.ShareScale(plan, g, shareMoment, kernel.MomentSensitivity(1, 1/float64(s.N)), analyzegauss.Dim(s.P))
	if err != nil {
		return sdk.Screen{}, err
	}
	return screenRows(s, plan, g, o.Rank.Value, 2*sd*math.Sqrt(float64(s.P)), &o.clipOptions, &o.centerOptions)
}

// Screen implements sdk.Screener for pca-amin: each eigenvector is drawn
// from the density ∝ exp(β uᵀΣ̂u) on the sphere, which finds a spike θ
// only when βθ exceeds about p/2: its edge is p/β on the same scale as
// Analyze Gauss's (the threshold is half the edge).
func (o *aminOptions) Screen(s sdk.Shape, plan *privacy.Plan, g privacy.Grant) (sdk.Screen, error) {
	beta, err := sdk.ShareScale(plan, g, shareVectors, 1/float64(s.N), 1)
	if err != nil {
		return sdk.Screen{}, err
	}
	return screenRows(s, plan, g, o.Rank.Value, float64(s.P)/beta, &o.clipOptions, &o.centerOptions)
}

// screenRows decides a rows estimator's screen from edge, the spectral
// edge of its noise at clip 1 on the reference's scale (rows of typical
// norm 1), DERIVATIONS.md §14. The reference (gen.Reference) has r equal
// spikes θ = 1/(4r) + 1/(4p) over a bulk 1/(4p) about its mean, of norm
// 1/√2.
func screenRows(s sdk.Shape, plan *privacy.Plan, g privacy.Grant, rank int, edge float64, c *clipOptions, ctr *centerOptions) (sdk.Screen, error) {
	r, p, n := float64(rank), float64(s.P), float64(s.N)
	if rank < 1 || rank >= s.P || s.N < 2 || ctr.pairs() || ctr.scaled() {
		return sdk.Screen{}, nil
	}
	theta := 1/(4*r) + 1/(4*p)
	// Near random, at any clip γ (a clipped row's square along a direction
	// is at most γ² times its share of the row, about 2θ).
	if sc := sdk.RowsNearRandom(s.P, rank, edge); sc.Verdict != sdk.Undecided {
		return sc, nil
	}
	// Far: only with private clips (public ones are set against the data,
	// not the reference) that land in the middle of the norms.
	qlo, qhi := c.ClipQuantile-screenRanks-0.05, c.ClipQuantile+screenRanks+0.05 // 0.05 for the sampled norms
	if !c.Auto() || ctr.MeanClip != nil || qlo <= 0 || qhi >= 1 || (!ctr.private() && rank < 2) {
		return sdk.Screen{}, nil
	}
	beta, err := sdk.ShareScale(plan, g, shareClip, 1, 1)
	if err != nil {
		return sdk.Screen{}, err
	}
	if beta*screenRanks*n < math.Log(float64(len(kernel.DefaultGrid())+1)/screenMiss) {
		return sdk.Screen{}, nil
	}
	ref := screenReference(rank, s.P, ctr.private())
	gap, hi := ref.gap(ref.quantile(qlo)/gridStep), ref.quantile(qhi)*gridStep
	// The perturbations: the noise, the sampling error of n rows, and the
	// private mean's error (or, uncentred, the mean's cross terms).
	pert, mean := edge*hi+theta*(2*math.Sqrt(r/n)+r/n)+(2*math.Sqrt(p/n)+p/n)/(4*p), 2/math.Sqrt(n)
	if ctr.private() {
		raw := screenReference(rank, s.P, false)
		mc := raw.quantile(qhi) * gridStep
		mb, err := plan.Budget(shareMean)
		if err != nil {
			return sdk.Screen{}, err
		}
		sens, laplace := kernel.SumSensitivity(math.Sqrt(mc))/n, mb.Mechanism == privacy.MechLaplace
		if laplace {
			sens *= math.Sqrt(p) // ℓ1 (DERIVATIONS.md §5)
		}
		sd, err := sdk.ShareScale(plan, g, shareMean, sens, s.P)
		if err != nil {
			return sdk.Screen{}, err
		}
		if laplace {
			sd *= math.Sqrt2
		}
		mean = 2 * (p*sd*sd + raw.meanBias(raw.quantile(qlo)/gridStep))
	}
	// The score this leaves at least (the captured-variance ratio, as the
	// dry runs score it): every angle's sine² is at most max(t, (t/(1−t))²)
	// (Davis–Kahan with Weyl for additive noise, the sampler's own rate
	// for pca-amin). The mean's error (or, uncentred, the mean itself) is
	// of rank one or two: counted in t, or as one component lost.
	spike, floor := 1/(4*r), r/(4*p)
	best := spike*r + floor
	random := r / (2 * p) / best
	bound := func(t, k float64) float64 {
		if t > screenFar {
			return 0
		}
		sin2 := max(t, (t/(1-t))*(t/(1-t)))
		return (spike*k*(1-sin2) + floor) / best
	}
	t, score := (pert+mean)/gap, 0.0
	if ctr.private() {
		score = bound(t, r)
	}
	if s := bound(pert/gap, r-1); s > score {
		t, score = pert/gap, s
	}
	if score < random+2*sdk.NearRandomMargin {
		return sdk.Screen{}, nil
	}
	return sdk.Screen{Verdict: sdk.CertainlyFar, Why: fmt.Sprintf(
		"the noise and the other perturbations of the reference model come to %.3g of its clipped eigengap, "+
			"so the score is at least %.3f against %.3f for a random subspace", t, score, random)}, nil
}

// gridStep is the ratio of two neighbouring clip candidates' squares
// (kernel.DefaultGrid, GridPerOctave per octave of the norm).
var gridStep = math.Pow(2, 2.0/kernel.GridPerOctave)

// screenRef is a fixed public draw of reference rows (screenDraws of
// them), each as its square along the spikes (a), the bulk (b) and, for
// uncentred rows, the mean's part of the norm (m).
type screenRef struct {
	r, p    int
	a, b, m []float64
	norms   []float64 // sorted squared norms
}

// screenReference draws the reference's rows for the screen: centred, or
// about zero with the mean (of norm 1/√2) added.
func screenReference(r, p int, centred bool) screenRef {
	rnd := rand.New(rand.NewPCG(0x73637265, uint64(r)<<20|uint64(p)))
	chi2 := func(k int) float64 { // exact up to 8 degrees of freedom, else Wilson–Hilferty
		if k > 8 {
			h := 2 / (9 * float64(k))
			c := 1 - h + math.Sqrt(h)*rnd.NormFloat64()
			return float64(k) * max(c, 0) * max(c, 0) * max(c, 0)
		}
		var v float64
		for range k {
			z := rnd.NormFloat64()
			v += z * z
		}
		return v
	}
	ref := screenRef{r: r, p: p}
	spike, bulk := 1/(4*float64(r))+1/(4*float64(p)), 1/(4*float64(p))
	for range screenDraws {
		a, b := spike*chi2(r), bulk*chi2(p-r)
		var m float64
		if !centred { // ‖μ + x‖² = ½ + 2μᵀx + ‖x‖², μᵀx of variance about ½·tr(Σ)/p
			m = 0.5 + 2*rnd.NormFloat64()*math.Sqrt(0.25/float64(p))
		}
		ref.a, ref.b, ref.m = append(ref.a, a), append(ref.b, b), append(ref.m, m)
		ref.norms = append(ref.norms, max(a+b+m, 0))
	}
	slices.Sort(ref.norms)
	return ref
}

// quantile is the level-quantile of the squared norms.
func (ref screenRef) quantile(level float64) float64 {
	return ref.norms[min(len(ref.norms)-1, int(level*float64(len(ref.norms))))]
}

// shrink is a row's squared clip factor min(1, γ²/‖x‖²).
func (ref screenRef) shrink(i int, clip2 float64) float64 {
	if nn := ref.a[i] + ref.b[i] + ref.m[i]; nn > clip2 {
		return clip2 / nn
	}
	return 1
}

// gap is the clipped rows' eigengap between the spikes and the bulk:
// E[c²a]/r − E[c²b]/(p−r) (the clip keeps the spikes' and the bulk's
// directions by symmetry).
func (ref screenRef) gap(clip2 float64) float64 {
	var sa, sb float64
	for i := range ref.a {
		w := ref.shrink(i, clip2)
		sa += w * ref.a[i]
		sb += w * ref.b[i]
	}
	k := float64(len(ref.a))
	return sa/k/float64(ref.r) - sb/k/float64(ref.p-ref.r)
}

// meanBias bounds the squared norm of the clip's bias on the mean (rows
// about zero clipped to √clip2): ½·E[1 − c]², the mean's share.
func (ref screenRef) meanBias(clip2 float64) float64 {
	var s float64
	for i := range ref.a {
		s += 1 - math.Sqrt(ref.shrink(i, clip2))
	}
	s /= float64(len(ref.a))
	return 0.5 * s * s
}
