// Package sdk is what a dplr estimator plugin is written against. An
// estimator is a type implementing Estimator; a plugin binary's main calls
// transport.Serve with its estimators. The same Estimator can be run in-process with
// RunLocal (tests, benchmarks).
//
// During a fit the estimator reads its data and parameters from the Run,
// declares every privacy-spending step to Run.Acct before drawing noise
// from Run.Rand, reports progress with Run.Progress, and returns a Result
// whose Guarantee the SDK completes from the accountant.
package sdk
