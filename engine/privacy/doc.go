// Package privacy is dplr's privacy core: the random source every mechanism
// draws from, noise samplers, calibration of the Gaussian, Laplace and
// exponential mechanisms, conversions between zCDP and (ε, δ)-DP, the
// per-run accountant that estimators spend through, and the Guarantee type a
// released result carries.
package privacy
