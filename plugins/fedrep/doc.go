// Package fedrep is dplr's plugin for private model personalization with a
// shared low-rank representation: n users each hold a few samples of
// y ≈ ⟨x, U* v_i*⟩, and the estimators release a d×k representation U under
// user-level differential privacy while every user fits its own head v_i
// locally.
//
// Estimators:
//   - fedrep-private: Private FedRep (Snedeker, Zhou & Bassily 2025, Alg. 1)
//     with the private U-statistic initialization (their Alg. 2);
//   - fedrep-nonprivate: the same iteration without clipping or noise;
//   - fedrep-privaltmin: Priv-AltMin (Jain et al. 2021), the prior method;
//   - fedrep-classify-exact and fedrep-classify: private classification
//     with a shared representation (their Alg. 3, exact exponential
//     mechanism over a net for tiny sizes, and a practical surrogate).
//
// DERIVATIONS.md in this directory states each algorithm, every sensitivity
// the code calibrates to, the user-level neighbour relation and the errata
// of the sources that matter. The paper-replication study lives in
// bench/studies/fedrep (command `bench study fedrep`).
package fedrep

import "github.com/dplr/dplr/engine/sdk"

// Estimators returns every estimator the plugin serves.
func Estimators() []sdk.Estimator {
	return []sdk.Estimator{PrivateFedRep{}, NonPrivateFedRep{}, PrivAltMin{}, ClassifyExact{}, Classify{}}
}
