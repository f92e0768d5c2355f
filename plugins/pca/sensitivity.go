package pca

import (
	"fmt"
	"math"
)

// SpikedModel holds the public parameters of the spiked covariance model
// Σ = U·diag(λ)·Uᵀ + σ²I_p that the Cai–Xia–Zha sensitivities depend on.
type SpikedModel struct {
	N, P int
	// LambdaLow are public lower bounds for the spikes λ_1..λ_r (one per
	// component); they enter the projector sensitivity Δ1, which decreases
	// in λ.
	LambdaLow []float64
	// LambdaHigh are public upper bounds for the spikes; they enter the
	// eigenvalue sensitivity Δ2 and the row-norm bound τ.
	LambdaHigh []float64
	// Sigma2 is a public upper bound for the noise variance σ².
	Sigma2 float64
}

// Validate checks the model's numbers.
func (m SpikedModel) Validate() error {
	r := len(m.LambdaLow)
	if m.N < 1 || m.P < 2 {
		return fmt.Errorf("spiked model: n = %d, p = %d", m.N, m.P)
	}
	if r < 1 || len(m.LambdaHigh) != r {
		return fmt.Errorf("spiked model: %d lower and %d upper spike bounds", r, len(m.LambdaHigh))
	}
	if 2*r >= m.P {
		return fmt.Errorf("spiked model: rank %d too large for dimension %d (need 2r < p)", r, m.P)
	}
	if err := finitePositive("sigma2", m.Sigma2); err != nil {
		return err
	}
	for k := 0; k < r; k++ {
		if err := finitePositive("lambda", m.LambdaLow[k]); err != nil {
			return err
		}
		if err := finitePositive("lambda_upper", m.LambdaHigh[k]); err != nil {
			return err
		}
		if m.LambdaHigh[k] < m.LambdaLow[k] {
			return fmt.Errorf("spike %d: upper bound %v below lower bound %v", k+1, m.LambdaHigh[k], m.LambdaLow[k])
		}
	}
	return nil
}

func (m SpikedModel) r() int { return len(m.LambdaLow) }

func (m SpikedModel) lambdaMinLow() float64 {
	v := math.Inf(1)
	for _, l := range m.LambdaLow {
		v = math.Min(v, l)
	}
	return v
}

func (m SpikedModel) lambdaMaxHigh() float64 {
	v := 0.0
	for _, l := range m.LambdaHigh {
		v = math.Max(v, l)
	}
	return v
}

// ExplicitDelta1 is the closed-form bound, holding for all rows at once
// with probability ≥ 1−β, on the Frobenius change of the sample spectral
// projector ÛÛᵀ when one row is replaced by a model draw: Δ1 = 2√2·√(AB)/n
// with A and B as in DERIVATIONS.md §2.2.
func ExplicitDelta1(m SpikedModel, beta float64) float64 {
	r := m.r()
	t := math.Log(4 * float64(m.N) / beta)
	var sa, sa2, amax float64
	for _, l := range m.LambdaLow {
		a := (l + m.Sigma2) / (l * l)
		sa += a
		sa2 += a * a
		amax = math.Max(amax, a)
	}
	A := sa + 2*math.Sqrt(t*sa2) + 2*t*amax
	q := float64(m.P - r)
	B := m.Sigma2 * (q + 2*math.Sqrt(q*t) + 2*t)
	return 2 * math.Sqrt2 * math.Sqrt(A*B) / float64(m.N)
}

// RowNormBound is τ, a bound on max ‖X_i‖² over all 2n rows of a data set
// and its neighbours holding with probability ≥ 1−β under the Gaussian
// model: τ = T + 2F√t + 2Mt with t = log(2n/β), T = tr Σ, F = ‖Σ‖_F,
// M = ‖Σ‖ (computed from the upper spike bounds).
func RowNormBound(m SpikedModel, beta float64) float64 {
	r := m.r()
	t := math.Log(2 * float64(m.N) / beta)
	s2 := m.Sigma2
	var T, F2 float64
	for _, l := range m.LambdaHigh {
		T += l
		F2 += (l + s2) * (l + s2)
	}
	T += float64(m.P) * s2
	F2 += float64(m.P-r) * s2 * s2
	M := m.lambdaMaxHigh() + s2
	return T + 2*math.Sqrt(F2*t) + 2*M*t
}

// ExplicitDelta2 is the high-probability bound √2·τ/n on
// ‖Σ̂ − Σ̂'‖_F ≥ ‖Ũᵀ(Σ̂ − Σ̂')Ũ‖_F for one replaced row (DERIVATIONS.md §2.3).
func ExplicitDelta2(m SpikedModel, beta float64) float64 {
	return math.Sqrt2 * RowNormBound(m, beta) / float64(m.N)
}

// PaperDelta1 is the paper's Lemma 3 form
// Δ1 = C2·(σ²/λ + √(σ²/λ))·√(p(r + log n))/n, with λ the smallest lower
// spike bound and a user constant C2 (the paper leaves it unspecified).
func PaperDelta1(m SpikedModel, c2 float64) float64 {
	q := m.Sigma2 / m.lambdaMinLow()
	return c2 * (q + math.Sqrt(q)) * math.Sqrt(float64(m.P)*(float64(m.r())+math.Log(float64(m.N)))) / float64(m.N)
}

// PaperDelta2 is the paper's Lemma 4 form Δ2 = C3·(λ(r + log n) + σ²p)/n
// with λ the largest upper spike bound.
func PaperDelta2(m SpikedModel, c3 float64) float64 {
	return c3 * (m.lambdaMaxHigh()*(float64(m.r())+math.Log(float64(m.N))) + m.Sigma2*float64(m.P)) / float64(m.N)
}

// DivergingDelta1 is Corollary 1's form for a growing condition number
// κ0 = λ_1/λ_r: Δ1 = C2·(σ²/λ_r + √(κ0σ²/λ_r))·√(p(r + log n))/n, with λ_r
// the smallest lower bound and λ_1 the largest upper bound.
func DivergingDelta1(m SpikedModel, c2 float64) float64 {
	lr := m.lambdaMinLow()
	k0 := m.lambdaMaxHigh() / lr
	q := m.Sigma2 / lr
	return c2 * (q + math.Sqrt(k0*q)) * math.Sqrt(float64(m.P)*(float64(m.r())+math.Log(float64(m.N)))) / float64(m.N)
}

// DavisKahanDelta1 is the ablation bound the paper improves upon:
// Δ1 = 2√2·Δ2/g with Δ2 = √2τ/n and g = λ_r − 2D̂ a lower bound on the
// sample eigengap, D̂ = C·√((λ_1+σ²)(rλ_1+pσ²)/n). It errors when g ≤ 0.
func DavisKahanDelta1(m SpikedModel, beta, c float64) (float64, error) {
	l1 := m.lambdaMaxHigh()
	d := c * math.Sqrt((l1+m.Sigma2)*(float64(m.r())*l1+float64(m.P)*m.Sigma2)/float64(m.N))
	g := m.lambdaMinLow() - 2*d
	if !(g > 0) {
		return 0, fmt.Errorf("davis-kahan calibration: eigengap bound λ_r − 2D̂ = %.4g ≤ 0 (n too small for this λ)", g)
	}
	return 2 * math.Sqrt2 * ExplicitDelta2(m, beta) / g, nil
}

// PaperFailureProb is the part of the paper's failure probability that has
// explicit constants, 4n⁻⁹ + 10^(−20·r̃) with r̃ = tr Σ/‖Σ‖ (the e^(−c1·p)
// term has an unspecified constant and is listed as an assumption).
func PaperFailureProb(m SpikedModel) float64 {
	var T float64
	for _, l := range m.LambdaLow {
		T += l
	}
	T += float64(m.P) * m.Sigma2
	rt := T / (m.lambdaMaxHigh() + m.Sigma2)
	return 4*math.Pow(float64(m.N), -9) + math.Pow(10, -20*rt)
}
