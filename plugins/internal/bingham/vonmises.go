package bingham

import (
	"math"
	"math/rand/v2"
)

// VonMisesLargeKappa is the concentration above which VonMises switches from
// the exact Best–Fisher rejection sampler to the normal approximation
// N(μ, 1/κ), whose total-variation distance to the von Mises law is O(1/κ)
// (below 1e-8 here); below it the draw is exact in exact arithmetic.
const VonMisesLargeKappa = 1e8

// VonMises draws an angle in (−π, π] from the von Mises law with mean mu and
// concentration kappa ≥ 0, density ∝ exp(κ cos(θ − μ)). It uses the
// rejection sampler of Best and Fisher (1979, "Efficient simulation of the
// von Mises distribution", Applied Statistics 28(2)), whose acceptance rate
// is at least about 0.66 for every κ. κ below 1e-12 gives the uniform law.
func VonMises(r *rand.Rand, mu, kappa float64) float64 {
	var th float64
	switch {
	case !(kappa > 1e-12):
		th = math.Pi * (2*r.Float64() - 1)
	case kappa > VonMisesLargeKappa:
		th = mu + r.NormFloat64()/math.Sqrt(kappa)
	default:
		// ρ = (τ − √(2τ))/(2κ) with τ = 1 + s, s = √(1 + 4κ²), rewritten
		// without cancellation (τ − √(2τ) = τ(τ − 2)/(τ + √(2τ)) and
		// τ − 2 = 4κ²/(s + 1)): the direct form rounds to ρ = 0 for
		// κ ≲ 1e-8 and the loop below never accepts.
		sq := math.Sqrt(1 + 4*kappa*kappa)
		tau := 1 + sq
		rho := 2 * kappa * tau / ((sq + 1) * (tau + math.Sqrt(2*tau)))
		rr := (1 + rho*rho) / (2 * rho)
		var f float64
		for {
			z := math.Cos(math.Pi * r.Float64())
			f = (1 + rr*z) / (rr + z)
			c := kappa * (rr - f)
			u2 := r.Float64()
			if c*(2-c)-u2 > 0 {
				break
			}
			if u2 > 0 && math.Log(c/u2)+1-c >= 0 {
				break
			}
		}
		f = math.Max(-1, math.Min(1, f))
		if r.Float64() < 0.5 {
			th = mu + math.Acos(f)
		} else {
			th = mu - math.Acos(f)
		}
	}
	return wrapAngle(th)
}

// wrapAngle maps θ to (−π, π].
func wrapAngle(th float64) float64 {
	th = math.Mod(th+math.Pi, 2*math.Pi)
	if th <= 0 {
		th += 2 * math.Pi
	}
	return th - math.Pi
}
