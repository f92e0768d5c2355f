// Package privacy is dplr's privacy core: the random source every mechanism
// draws from, exact release-noise samplers, calibration of the Gaussian,
// Laplace and exponential mechanisms, conversions between zCDP and (ε, δ)-DP,
// the per-run accountant that estimators spend through, and the Guarantee
// type a released result carries.
//
// # Randomness
//
// A Source is a ChaCha8 stream (math/rand/v2) keyed with 256 bits from
// crypto/rand. ChaCha8 is the ChaCha stream cipher reduced to 8 rounds, run
// in counter mode; math/rand/v2 documents its ChaCha8 as a cryptographically
// strong generator (it is also the generator behind the Go runtime's own
// randomness), and it periodically replaces its key with words of its own
// output that it never hands out, so a later memory disclosure does not reveal earlier output
// (forward secrecy).
// Predicting its output without the key means breaking ChaCha8, for which
// no attack better than brute force over the key is known (Aumasson 2019,
// "Too much crypto", argues 8 rounds keep a wide margin). A user seed
// replaces the OS key by SHA-256(label ‖ seed): runs become reproducible and
// every result says it is not private against anyone who knows the seed.
// Split derives independent streams for goroutines.
//
// # Release noise and the floating-point attack
//
// Mironov (CCS 2012) showed that textbook Laplace noise computed in floating
// point (b·ln U added to a double) leaks the noiseless value through the
// pattern of low-order bits: the set of doubles the sum can take depends on
// the input, so some outputs are impossible under one neighbour and possible
// under the other, and the privacy loss is unbounded. The same holds for
// floating-point Gaussian samplers.
//
// dplr follows Canonne, Kamath & Steinke ("The Discrete Gaussian for
// Differential Privacy", NeurIPS 2020): release noise is integer-valued and
// drawn exactly, on a grid γ that is a power of two chosen from the noise
// scale, γ = 2^(⌊log2 σ⌋ − 40), so that σ spans 2^40 to 2^41 grid steps
// (Grid). AddGaussian(x, σ):
//
//  1. rounds every coordinate of x to the nearest multiple of γ (exact in
//     floating point because γ is a power of two);
//  2. adds γ·k with k drawn exactly from the discrete Gaussian N_Z(0, s²),
//     s = ⌈σ/γ⌉ (so the noise is never smaller than asked for);
//  3. returns the double nearest to the exact sum, which is a fixed function
//     of the exact lattice point and hence post-processing.
//
// The output's support is the grid whatever the input's low bits, which is
// what defeats the attack. Step 1 moves each coordinate by at most γ/2, so
// neighbouring inputs differ after rounding by at most Δ + γ·sqrt(dim) in ℓ2
// (Δ + γ·dim in ℓ1 for Laplace); the release constructors take dim for exactly this
// reason, calibrate σ to the enlarged sensitivity (a fixed point, since γ
// depends on σ) and record both sensitivities and γ in the Step. At the
// scales dplr uses the allowance is about 1e-9 of Δ.
//
// Privacy of the discrete noise. For integer shifts v the Rényi divergence
// of order α between N_Z(0, s²)^d and N_Z(v, s²)^d is at most α‖v‖²/(2s²)
// (CKS 2020; completing the square leaves a shifted theta series, which is
// largest at integer centres), so a discrete Gaussian step costs exactly the
// continuous ρ = Δ²/(2σ²) in zCDP. The discrete Laplace with scale t is
// pure ‖v‖₁/t-DP. For Gaussian steps calibrated directly to (ε, δ)
// ("classical", "analytic"), whose proofs are for the continuous Gaussian,
// the lattice changes the privacy curve by a relative amount of order
// (γ/σ)² ≈ 1e-24 (CKS 2020, §3, where the two curves agree numerically);
// the Spend helper adds a 1e-9 relative margin to σ, which lowers δ by far
// more. Such steps also record their exact ρ, so the accountant can (and
// usually does) account them by zCDP instead.
//
// Exact samplers. Every random decision compares random bits with the
// binary expansion of a rational number, with the bits of another random
// deviate, or with rigorous outward-rounded bounds of an irrational
// constant, in integer or big.Float interval arithmetic; no float64 value
// decides anything. The discrete Gaussian follows Karney's algorithm D
// ("Sampling exactly from the normal distribution", ACM TOMS 2016),
// specialised to an integer scale s and zero mean: an integer part k with
// P(k) ∝ e^(−k²/2), a uniform j in [0, s), and a final acceptance
// e^(−x(2k+x)/2), x = j/s, built from von Neumann's alternating-run
// Bernoulli(e^(−p)) construction (Karney's algorithm B). Karney draws k by
// a geometric proposal with rejection (a third of the candidates lost);
// dplr draws the same k by inversion: U is compared with the boundaries
// F_j = Σ_{i<j} e^(−i²/2)/Z, whose outward-rounded bounds are computed once
// with big.Float (directed rounding, series with explicit remainders). A
// 16-bit table settles k from U's first 16 bits for all but a few cells,
// 64-bit thresholds settle nearly all the rest, and in the remaining
// ~2^-50 of cases more bits of U are drawn and the bounds recomputed at
// doubled precision until the comparison is decided. This leaves about 1.4
// candidates per draw. The discrete Laplace is CKS Algorithm 2 with an
// integer scale. Uniform deviates are generated lazily, bit by bit, so a
// comparison reads about two bits. The draws are exact, not approximations;
// the only events ever cut have probability below e^(−500000).
//
// Timing: the samplers' running time depends on the random draws, not on
// the data (the only data-dependent branch skips rounding for values
// already beyond 2^52 grid steps), so it reveals nothing about the input.
//
// Float64 and NormFloat64 are ordinary samplers for non-release uses
// (proposals, sketches, random test matrices).
//
// # Calibration and conversions
//
//   - Gaussian, classical: σ = Δ·sqrt(2 ln(1.25/δ))/ε, refused for ε > 1
//     (Dwork & Roth 2014, Thm A.1).
//   - Gaussian, analytic: the smallest σ with
//     Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ (Balle & Wang, ICML 2018,
//     Thm 8), evaluated in log space and bisected to 1e-15 relative; valid
//     for any ε.
//   - Gaussian, zCDP: σ = Δ/sqrt(2ρ) (Bun & Steinke, TCC 2016).
//   - Laplace: b = Δ₁/ε, pure ε-DP, ρ = ε²/2.
//   - Exponential mechanism: β = ε/(2Δu), pure ε-DP, ρ = ε²/8 by its
//     bounded-range property (Cesar & Rogers, ALT 2021).
//   - ρ-zCDP → (ε, δ): EpsilonFromRho and DeltaFromRho use the tight bound
//     of CKS 2020 (Prop. 12, Cor. 13), minimised over the Rényi order α by
//     bisection on its optimality condition; EpsilonFromRhoSimple and
//     DeltaFromRhoSimple give the classic ρ + 2·sqrt(ρ ln(1/δ)).
//   - RhoForEpsDelta, the largest ρ meeting a target (ε, δ) under the tight
//     bound, by bracketed bisection (10–40% more ρ than the simple inverse
//     RhoForEpsDeltaSimple at typical (ε, δ), i.e. 5–15% less noise for the
//     same guarantee).
//
// # Accounting
//
// An Accountant holds a Grant (pure ε, (ε, δ), or ρ) and the Steps an
// estimator declares before drawing each step's noise. Spend refuses a step
// that would exceed the grant, leaving the state unchanged. An (ε, δ) grant
// is met by the tightest valid accounting among pure composition, zCDP
// (tight conversion), "mixed" (pure steps' ε plus the converted ρ of the
// others, by Rényi composition), basic composition, the exact Gaussian
// composition of Gaussian differential privacy ("gdp": μ² = Σ(Δ_i/σ_i)²,
// then the analytic Gaussian curve) and a pessimistic discretised privacy
// loss distribution ("pld", for Gaussian and pure steps together); Achieved
// says which. The PLD is computed only when the cheaper accountings do not
// fit (Spend) or when the figures are reported (Achieved, Certify). See
// gdp.go and pld.go for the definitions and the discretisation bound, and
// TightEpsilon for the accounting of a list of steps.
//
// # Privacy loss distributions
//
// For output distributions P = M(D) and Q = M(D') on neighbouring data
// sets, the privacy loss of an output o is L(o) = ln(P(o)/Q(o)), and its
// law under o ~ P is the privacy loss distribution (PLD). The pair's
// privacy profile — the smallest δ at which it is (ε, δ)-DP — is the
// hockey-stick divergence
//
//	δ(ε) = E_P[(1 − e^(ε−L))₊] + P(L = +∞).
//
// A pair (P', Q') dominates a mechanism when its profile is at least the
// mechanism's at every ε, for every neighbouring pair in both orders. If
// every step of an adaptive composition is dominated by its own pair, the
// composition is dominated by the product pair, whose PLD is the
// convolution of the factors' PLDs (Zhu, Dong & Wang, "Optimal accounting
// of differential privacy via characteristic function", AISTATS 2022,
// Thm 10; Koskela, Jälkö & Honkela 2020 for the FFT view). dplr assumes,
// as every estimator's plan guarantees, that the list of mechanisms and
// their parameters is fixed by public inputs.
//
// A profile as a function of x = e^ε, h(x) = δ(ln x), is convex and
// non-increasing with h(0) = 1; conversely every such function bounded
// below by (1 − x)₊ is the profile of some pair (Zhu, Dong & Wang 2022),
// and the pointwise maximum of profiles is again one. A PLD supported on a
// grid ε_0 < … < ε_n (plus +∞) has a profile that is linear in x between
// grid points, with slope −Σ_{i>k} p_i e^(−ε_i) on (x_k, x_(k+1)).
//
// Connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi,
// "Connect the dots: tighter discrete approximations of privacy loss
// distributions", PETS 2022) is the default discretisation
// (PLDFromProfile). Evaluate an upper bound δ(ε) of the mechanism's
// profile on the grid hℤ ∩ [lo, hi], and take the PLD whose profile is
// the polygon through the points (e^(ε_k), δ(ε_k)), closed by the chord to
// (0, 1) on the left and flat (mass δ(hi) at +∞) on the right. The
// polygon's slopes give the masses: with m_k the magnitude of the slope
// left of point k and m_(n+1) = 0, p_k = e^(ε_k)(m_k − m_(k+1)). Because
// the true profile is convex, the chords lie above it: the PLD dominates
// the mechanism, at every ε, not only at grid points; and at grid points
// it is exact. Only a profile is needed, so the same construction serves
// every mechanism whose profile is known or bounded. Below ε = 0 the
// profile of a symmetric statement is 1 − e^ε + e^ε δ(−ε) (the swapped
// pair's), which dplr uses to compute the tiny masses far below 0 without
// cancellation. Floating point: profile values are raised by 1e-12
// relative, slopes are forced monotone by raising the polygon, and the
// finished PLD's δ is checked at every grid point against the profile,
// any shortfall (from rounding) being added to the mass at +∞.
//
// The older discretisation, "privacy buckets", rounds every loss up to
// the grid (GaussianPLD, LaplacePLD, PurePLD; PLDOptions.RoundUp). It too
// is pessimistic, but looser: its profile is also piecewise linear in x
// with values at the grid points at least the true ones, so it dominates
// the connect-the-dots PLD of the same grid (and composition preserves
// domination).
//
// Error bound, both methods. Rounding every loss up by at most h couples
// the discretised composed loss to the true one with L' ≤ L + k·h, for k
// discretised factors, except on the event that some factor's loss was
// cut off above hi (probability τ ≤ Σ_factors δ(hi), below 1e-20 for the
// factors built here). Hence, for the round-up PLD and a fortiori for
// connect-the-dots,
//
//	δ_true(ε) ≤ δ_PLD(ε) ≤ δ_true(ε − k·h) + τ,
//
// i.e. the reported ε(δ) is never below the truth and at most k·h above
// the exact composition of the factors' pairs at δ − τ. In practice
// connect-the-dots is far closer (a single Gaussian factor at h = 1e-3:
// ε(1e-6) within 1e-6 of the analytic curve). RunPLD composes all
// Gaussian steps first into one μ-GDP factor (exact), so k is the number
// of Laplace and exponential steps, plus one when there is a Gaussian
// step; DefaultPLDGrid is h = 1e-3. Delta adds a relative 1e-10 per
// factor for the rounding of the construction, of sums and of direct
// convolutions, and the bound PLD.Err on FFT rounding (Higham's error bound for the FFT, carried through every
// convolution): no rounding can lower a reported δ.
//
// Factors used. Gaussian steps: the GDP curve at μ = sqrt(Σ(Δ_i/σ_i)²)
// (times the 1e-9 lattice allowance), on μ²/2 ± 10μ. Laplace steps with
// Δ/b = ε: δ(ε') = 1 − e^((ε'−ε)/2) for 0 ≤ ε' ≤ ε (ε raised by the same
// 1e-9 allowance for the discrete Laplace, whose curve differs from the
// continuous one by a relative O(γ/b) ≈ 1e-12). A Laplace step's ℓ1
// sensitivity may be spread over many coordinates, whose losses add up;
// one coordinate carrying the whole shift is the worst case (a spread
// shift composes to a profile no larger; TestLaplaceSingleCoordinateWorst
// checks splits), so the factor is the one-dimensional Laplace pair.
// Exponential mechanism: bounded range, below.
//
// # The exponential mechanism as bounded range
//
// A mechanism is ε-bounded-range (ε-BR; Durfee & Rogers 2019) when, for
// every pair of neighbours, its privacy loss takes values in an interval
// of length at most ε: L(o) ∈ [−tε, (1−t)ε] for some t ∈ [0, 1] that may
// depend on the pair. (The interval must contain 0, as P and Q both have
// mass 1, so ε-BR implies ε-DP.)
//
// Which BR parameter dplr's steps have. Accountant.Exponential samples o
// with probability ∝ exp(β·u(D, o)), β = ε/(2Δ), where Δ bounds
// |u(D, o) − u(D', o)| for every o. Then
//
//	L(o) = β(u(D, o) − u(D', o)) − ln(Z_D/Z_D'),
//
// the normalising term is the same for every o, and the first term lies in
// [−βΔ, βΔ]: the loss spans an interval of length at most 2βΔ = ε. The
// step is ε-BR with the same ε it is charged as pure DP — not 2ε, which a
// naive "ε-DP, so losses in [−ε, ε]" reading would suggest.
// Accountant.ExponentialMonotone sets β = ε/Δ for a utility whose
// differences u(D, o) − u(D', o) all have one sign, so they lie in
// [0, Δ] (or [−Δ, 0]) and β times them spans an interval of length
// βΔ = ε: again ε-BR with the declared ε. In both cases the BR parameter
// is the step's ε; the accountant uses max(ε, 2Δβ) (max(ε, Δβ) for a
// monotone step), which VerifyStep makes equal to ε.
//
// The worst pair for a given t. Write the profile as h(x) = E_Q[(Y − x)₊]
// with Y = e^L under Q (E_Q[Y] = 1). For Y confined to [e^(−tε),
// e^((1−t)ε)] with mean 1, (y − x)₊ is convex in y, so E_Q[(Y − x)₊] is
// largest when Y sits on the two endpoints (the two-point law is the
// largest in convex order): the binary pair with losses (1−t)ε and −tε,
// P = (p, 1 − p), Q = (q, 1 − q), q = (e^(tε) − 1)/(e^ε − 1),
// p = q·e^((1−t)ε). Its profile at ε' ∈ [0, (1−t)ε) is
// p − e^(ε')q = (e^ε − e^((1−t)ε) − e^(ε')(e^(tε) − 1))/(e^ε − 1).
//
// The supremum over t. t is not known (it depends on the neighbours), so
// dplr uses the supremum of these profiles over t ∈ [0, 1], a valid
// profile (a maximum of profiles), which dominates every ε-BR mechanism.
// The numerator is concave in t with its maximum at t = (ε − ε')/(2ε),
// which gives, for 0 ≤ ε' ≤ ε (BoundedRangeDelta),
//
//	δ_BR(ε') = (e^(ε/2) − e^(ε'/2))² / (e^ε − 1),
//
// and 0 beyond. The family is closed under swapping P and Q (t ↔ 1 − t),
// so the supremum is symmetric and the pair built from it (by
// connect-the-dots) dominates both orders. At ε' = 0 it is tanh(ε/4),
// against tanh(ε/2) for randomized response at ε, the bound any pure
// ε-DP step gets (and which dplr used before). Composing the supremum
// pairs is valid for adaptive compositions but not optimal: Dong, Durfee
// & Rogers ("Optimal differential privacy composition for exponential
// mechanisms", ICML 2020) compose with t chosen per step, which is tighter
// still and far costlier. A k-fold composition is never worse than both
// other valid bounds it replaces, kε (pure) and the ε²/8-zCDP bound of
// Cesar & Rogers 2021 (tested).
//
// A Plan with NoiseExact calibrates through the same curves: a
// Gaussian-only plan splits the μ² that the grant allows (at (1, 1e-6)
// σ/Δ = 4.22 for one step where zCDP needs 4.53), a mixed plan scales the
// zCDP split by the largest factor its PLD allows.
//
// # Plans and releases
//
// An estimator splits its grant once, up front, with NewPlan: named Shares
// under one noise calibration (NoiseZCDP, NoiseExact, NoiseClassical,
// NoiseAnalytic or NoisePure). A share is spent in a number of equal steps
// and sized by a weight (a fraction of the grant), by a fixed per-step cost
// that a formula dictates (a paper's σ turned into its ρ), or as the rest
// the others leave. NewPlan checks the whole plan before anything is spent:
// the grant's kind against the calibration, the sizes, and that every
// per-step Budget is usable. Plan.Budget gives one step's Budget.
// Accountant.Gaussian, Laplace, Exponential and ExponentialMonotone declare
// a step paid from a Budget and return a release that owns the step's scale
// and grid: Release.Add (AddSym, AddDense, AddParts) rounds the values to
// the grid and adds the noise, refusing a length other than the declared
// one and a second draw; ExponentialRelease.Sample hands β to the sampler
// once. Accountant.Undrawn lists the releases declared but never drawn,
// WithoutRelease the steps declared without one (through the raw Spend,
// which the host and tests use; estimators declare through releases only,
// the older separate spend-then-draw helpers are gone from the API).
//
// # Guarantees
//
// Certify states the guarantee a run's steps give under its grant: the
// figures, and for worst-case results the kind, come from the composition,
// never from the estimator's word. A run whose steps are all pure is pure
// ε-DP with ε the sum of the steps' ε — the only ε for which pure DP
// holds — and, when the tightest accounting of an (ε, δ) grant does better,
// also (ε', δ)-DP with the smaller ε' (Guarantee.Tighter). An estimator
// that declares pure ε-DP over a Gaussian step is refused.
package privacy
