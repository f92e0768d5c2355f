// Package privacy is dplr's privacy core: the random source every mechanism
// draws from, exact release-noise samplers, calibration of the Gaussian,
// Laplace and exponential mechanisms, conversions between zCDP, μ-GDP and
// (ε, δ)-DP, the per-run accountant that estimators spend through, the
// Guarantee a released result carries, and the budget filters the ledger
// admits runs by. The methods, their proofs and references are in
// docs/privacy.md ("Inside engine/privacy").
package privacy
