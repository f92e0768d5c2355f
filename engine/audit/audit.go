// Package audit holds the statistics of dplr's empirical privacy audit: from
// the outputs of many fresh-noise runs of an estimator on two neighbouring
// data sets, it computes a Clopper–Pearson lower bound on the ε the
// estimator can claim (threshold tests, Jagielski et al. 2020, Nasr et al.
// 2021) and, for Gaussian releases, the measured shift-over-noise ratio the
// calibration predicts as μ = Δ/σ. The method is in docs/privacy.md
// ("Inside engine/audit").
package audit

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson returns the exact two-sided confidence interval at level
// 1 − alpha for a binomial proportion with k successes out of n trials.
// Use alpha = 2a for a one-sided bound at level 1 − a.
func ClopperPearson(k, n int, alpha float64) (lo, hi float64, err error) {
	if n < 1 || k < 0 || k > n {
		return 0, 0, fmt.Errorf("audit: %d successes out of %d trials", k, n)
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, 0, fmt.Errorf("audit: confidence level α = %v must lie in (0, 1)", alpha)
	}
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha / 2)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha/2)
	}
	return lo, hi, nil
}

// Bound is the result of EpsilonLowerBound.
type Bound struct {
	// Epsilon is the lower bound on ε at confidence 1 − Alpha (0 when the
	// runs do not tell the data sets apart).
	Epsilon float64
	Alpha   float64
	Delta   float64
	// Threshold and Upper describe the chosen event: statistic > Threshold
	// (Upper) or statistic ≤ Threshold (!Upper), counted under the first
	// data set (P) against the second (Q), or mirrored when Mirrored.
	Threshold float64
	Upper     bool
	Mirrored  bool
	// PLow and QHigh are the Clopper–Pearson bounds used.
	PLow, QHigh float64
	// Runs is the number of runs per data set used to estimate (the half
	// not used to choose the threshold).
	Runs int
	// Reach is the largest ε this audit could report from its run count,
	// δ and α (see Reach): a claim above it cannot be refuted by these
	// runs, whatever the mechanism does.
	Reach float64
}

// Reach returns the largest lower bound EpsilonLowerBound can report from
// runs runs per data set at confidence 1 − alpha and the claimed δ: the
// bound of a perfect test, whose event holds in every estimation run on
// one data set and in none on the other. With m = runs − ⌊runs/2⌋
// estimation runs, the one-sided Clopper–Pearson bounds at level α/2 are
// p_lo = (α/2)^{1/m} and q_hi = 1 − (α/2)^{1/m}, so the reach is
// ln((p_lo − δ) / q_hi). It grows like ln(m) − ln ln(2/α): every further
// unit of ε takes about e times as many runs. An audit can refute only
// claims below its reach.
func Reach(runs int, delta, alpha float64) float64 {
	m := runs - runs/2
	if m < 1 || !(alpha > 0 && alpha < 1) || !(delta >= 0 && delta < 1) {
		return 0
	}
	pLo := math.Pow(alpha/2, 1/float64(m))
	qHi := -math.Expm1(math.Log(alpha/2) / float64(m))
	if pLo-delta <= qHi {
		return 0
	}
	return math.Log((pLo - delta) / qHi)
}

// RunsFor returns the smallest number of runs per data set whose Reach at
// δ and α exceeds eps (0 when no run count below 10⁹ does, e.g. δ too
// large).
func RunsFor(eps, delta, alpha float64) int {
	lo, hi := 1, 1
	for Reach(hi, delta, alpha) <= eps {
		if hi > 1e9 {
			return 0
		}
		lo, hi = hi, hi*2
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if Reach(mid, delta, alpha) > eps {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

// event is a candidate threshold test.
type event struct {
	t        float64
	upper    bool
	mirrored bool
}

func (e event) hit(x float64) bool {
	if e.upper {
		return x > e.t
	}
	return x <= e.t
}

func count(xs []float64, e event) int {
	k := 0
	for _, x := range xs {
		if e.hit(x) {
			k++
		}
	}
	return k
}

// EpsilonLowerBound computes the audit's lower bound on ε from scalar
// statistics a (runs on D) and b (runs on D'), at confidence 1 − alpha and
// the claimed δ. Each sample needs at least 20 runs; the first half of
// each chooses the event, the second half estimates it.
func EpsilonLowerBound(a, b []float64, delta, alpha float64) (Bound, error) {
	if len(a) < 20 || len(b) < 20 {
		return Bound{}, errors.New("audit: at least 20 runs on each data set are needed")
	}
	if !(delta >= 0 && delta < 1) {
		return Bound{}, fmt.Errorf("audit: δ = %v must lie in [0, 1)", delta)
	}
	for _, x := range append(slices.Clip(a), b...) {
		if math.IsNaN(x) {
			return Bound{}, errors.New("audit: a statistic is NaN")
		}
	}
	ha, hb := len(a)/2, len(b)/2
	choose := choose(a[:ha], b[:hb], delta)
	ea, eb := a[ha:], b[hb:]
	p, q := ea, eb
	if choose.mirrored {
		p, q = eb, ea
	}
	kp, kq := count(p, choose), count(q, choose)
	pLo, _, err := ClopperPearson(kp, len(p), alpha)
	if err != nil {
		return Bound{}, err
	}
	_, qHi, err := ClopperPearson(kq, len(q), alpha)
	if err != nil {
		return Bound{}, err
	}
	out := Bound{Alpha: alpha, Delta: delta, Threshold: choose.t, Upper: choose.upper, Mirrored: choose.mirrored,
		PLow: pLo, QHigh: qHi, Runs: min(len(p), len(q)), Reach: Reach(min(len(a), len(b)), delta, alpha)}
	if pLo-delta > qHi && qHi > 0 {
		out.Epsilon = math.Log((pLo - delta) / qHi)
	} else if pLo-delta > 0 && qHi == 0 {
		out.Epsilon = math.Inf(1)
	}
	return out, nil
}

// choose picks, on the selection half, the threshold event with the
// largest plug-in ε estimate (counts smoothed by one so that empty cells
// do not dominate).
func choose(a, b []float64, delta float64) event {
	cands := append(slices.Clone(a), b...)
	slices.Sort(cands)
	best, bestScore := event{t: cands[len(cands)/2], upper: true}, math.Inf(-1)
	for _, t := range cands {
		for _, upper := range []bool{true, false} {
			for _, mirrored := range []bool{false, true} {
				e := event{t: t, upper: upper, mirrored: mirrored}
				p, q := a, b
				if mirrored {
					p, q = b, a
				}
				fp := (float64(count(p, e)) + 1) / float64(len(p)+2)
				fq := (float64(count(q, e)) + 1) / float64(len(q)+2)
				if fp-delta <= 0 {
					continue
				}
				if s := math.Log((fp - delta) / fq); s > bestScore {
					best, bestScore = e, s
				}
			}
		}
	}
	return best
}

// Shift is the result of ShiftRatio.
type Shift struct {
	// Ratio is |mean(a) − mean(b)| / s, s the pooled standard deviation;
	// Low and High bound it at confidence 1 − Alpha.
	Ratio, Low, High float64
	Alpha            float64
}

// ShiftRatio estimates the shift-over-noise ratio of two samples of a
// projected Gaussian release with equal variances.
func ShiftRatio(a, b []float64, alpha float64) (Shift, error) {
	if len(a) < 10 || len(b) < 10 {
		return Shift{}, errors.New("audit: at least 10 runs on each data set are needed")
	}
	if !(alpha > 0 && alpha < 1) {
		return Shift{}, fmt.Errorf("audit: confidence level α = %v must lie in (0, 1)", alpha)
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	df := na + nb - 2
	pooled := ((na-1)*va + (nb-1)*vb) / df
	if !(pooled > 0) {
		return Shift{}, errors.New("audit: the statistic has no spread: is the release noisy?")
	}
	s := math.Sqrt(pooled)
	d := math.Abs(ma - mb)
	// Bonferroni: α/2 for the mean difference, α/2 for the deviation.
	z := distuv.UnitNormal.Quantile(1 - alpha/4)
	half := z * s * math.Sqrt(1/na+1/nb)
	chi := distuv.ChiSquared{K: df}
	sLo := s * math.Sqrt(df/chi.Quantile(1-alpha/4))
	sHi := s * math.Sqrt(df/chi.Quantile(alpha/4))
	return Shift{
		Ratio: d / s,
		Low:   math.Max(0, d-half) / sHi,
		High:  (d + half) / sLo,
		Alpha: alpha,
	}, nil
}
