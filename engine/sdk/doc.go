// Package sdk is what a dplr estimator plugin is written against. An
// estimator is a type implementing Estimator; a plugin binary's main calls
// transport.Serve with its estimators. The same Estimator can be run
// in-process with RunLocal (tests, benchmarks), and package sdktest checks
// it against the SDK's contract.
//
// An estimator declares its parameters as an options struct with field tags
// (Info.Options; see SpecsOf and the shared fields in shared.go). Before Fit
// runs, Prepare validates the request, binds it into a fresh options value
// and calls the options' Check hook on the data's public Shape; every
// refusal there is a BadRequest, decided before any budget is touched. The
// optional Footprint hook estimates the fit's memory, and the Plan hook
// (Planner; Declare) gives the fit's plan as data, from which the SDK
// declares the privacy mechanisms the fit will use and checks the whole
// plan against the grant, so that the host can refuse, before reserving, a
// request the grant or the data set's budget rule cannot admit; the host
// then holds the fit's steps to that declaration.
//
// During a fit the estimator reads its options with Opts, its budgets
// from Run.Plan (built from the same answer), declares each privacy step through Run.Acct (Gaussian,
// Laplace, Exponential), whose release draws the step's noise from
// Run.Rand, reports progress with Run.Progress, and returns a Result whose
// Guarantee the SDK states from the accountant's steps (privacy.Certify).
//
// An estimator that reads its data only through aggregation passes may
// implement RemoteEstimator: it then also runs on data held elsewhere
// (data.Remote, e.g. shards a Beam pipeline reads) with the same plan and
// steps as on the rows.
package sdk
