package ledger

import (
	"math"

	"github.com/dplr/dplr/engine/privacy"
)

// pureMu is the GDP parameter an ε-DP run is known to have: every ε-DP
// mechanism is μ_ε-GDP with
//
//	μ_ε = 2 Φ⁻¹(e^ε / (1 + e^ε)),
//
// and no smaller μ holds for all of them (randomized response attains the
// bound). Proof: an ε-DP mechanism's trade-off curve lies above
// f_ε(α) = max(1 − e^ε α, e^{−ε}(1 − α)) (Dong, Roth & Su 2022, Prop. 2.5),
// two lines meeting at α* = 1/(1 + e^ε), where f_ε(α*) = α*. The Gaussian
// trade-off G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) is convex with G_μ(0) = 1 = f_ε(0)
// and G_μ(1) = 0 = f_ε(1), so on each of [0, α*] and [α*, 1] the convex
// G_μ − f_ε is at most its larger endpoint value: G_μ ≤ f_ε everywhere iff
// G_μ(α*) ≤ α*, i.e. μ ≥ Φ⁻¹(1 − α*) − Φ⁻¹(α*) = 2x* with Φ(−x*) = α*.
// x* is found by bisection on Φ(−x) = erfc(x/√2)/2, accurate in the far
// tail (math.Erfcinv is not: it computes Erfinv(1 − y)), taking the upper
// end of the bracket so that μ is never understated. For small ε,
// μ_ε ≈ √(π/2)·ε.
func pureMu(eps float64) float64 {
	if !(eps > 0) {
		return 0
	}
	alpha := math.Exp(-eps) / (1 + math.Exp(-eps)) // α* = 1/(1 + e^ε), accurate for large ε
	lo, hi := 0.0, 1.0
	for normalTail(hi) > alpha {
		lo, hi = hi, 2*hi
		if hi > 64 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := lo + (hi-lo)/2
		if normalTail(mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 2 * hi * (1 + 1e-12)
}

// normalTail is Φ(−x), accurate far into the tail.
func normalTail(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// pureEpsilonForMu inverts pureMu: the largest ε whose μ_ε is at most mu,
// ε = ln(Φ(μ/2)/Φ(−μ/2)), rounded down by a relative 1e-9.
func pureEpsilonForMu(mu float64) float64 {
	if !(mu > 0) {
		return 0
	}
	lo := normalTail(mu / 2) // Φ(−μ/2)
	eps := math.Log((1 - lo) / lo)
	eps *= 1 - 1e-9
	for eps > 0 && pureMu(eps) > mu {
		eps *= 1 - 1e-9
	}
	return eps
}

// pureRunMu2 is μ² of a run whose steps compose to a pure ε under the pure
// grant it was given: the smaller of two valid GDP statements, μ_ε² of the
// whole run (it is ε-DP) and Σ μ_j² over its steps (each pure ε_j step,
// Laplace or exponential mechanism, is μ_{ε_j}-GDP, and GDP composes by
// adding μ², Dong, Roth & Su 2022, Cor. 3.3; a pure grant admits no
// Gaussian step). Both are at most μ² of the grant's ε, which its
// reservation held. As for a Gaussian-only run's μ² = Σ (Δ_i/σ_i)², the
// per-step sum relies on the run's plan fixing each step's ε_j from public
// inputs before any noise is drawn (sdk/privacy plans span the whole grant
// up front), so that the settled μ² is one the ledger could have reserved
// exactly.
func pureRunMu2(eps float64, steps []privacy.Step) float64 {
	best := pureMu(eps)
	best *= best
	var sum float64
	for _, s := range steps {
		var mu float64
		switch {
		case (s.Mechanism == privacy.MechLaplace || s.Mechanism == privacy.MechExponential) && s.Epsilon > 0 && s.Delta == 0:
			mu = pureMu(s.Epsilon)
		default:
			return best
		}
		sum += mu * mu
	}
	if len(steps) > 0 && sum < best {
		return sum
	}
	return best
}

// drawnMu2 is the GDP statement of a run that is not Gaussian-only and
// drew noise in steps (a failure after noise, or a result withheld at
// settle); reserved is the μ² its reservation held. Every step has a GDP
// statement of its own — a Gaussian step (Δ/σ)-GDP, a pure Laplace or
// exponential step of ε_j μ_{ε_j}-GDP — and GDP composes by adding μ²
// (with each step's cost fixed by the run's plan, as for pureRunMu2); the
// run is charged that sum, never less than its reservation's. A step
// without one, or unknown steps (nil), give 0: no GDP statement.
func drawnMu2(reserved float64, steps []privacy.Step) float64 {
	if len(steps) == 0 {
		return 0
	}
	var sum float64
	for _, s := range steps {
		var mu float64
		switch {
		case s.Mechanism == privacy.MechGaussian && s.Scale > 0 && s.Sensitivity > 0:
			mu = s.Sensitivity / s.Scale
		case (s.Mechanism == privacy.MechLaplace || s.Mechanism == privacy.MechExponential) && s.Epsilon > 0 && s.Delta == 0:
			mu = pureMu(s.Epsilon)
		default:
			return 0
		}
		sum += mu * mu
	}
	if math.IsInf(sum, 0) || math.IsNaN(sum) {
		return 0
	}
	return math.Max(sum, reserved)
}
