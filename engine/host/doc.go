// Package host finds, starts and talks to dplr estimator plugins, and runs
// fits through them. It never trusts a plugin: a plugin that fails the
// handshake, crashes, hangs past a timeout or returns malformed or
// over-budget results is reported as an error naming the plugin, and the
// host carries on.
//
// Runner is the fit pipeline `dplr fit` uses, usable without the command
// line:
//
//  1. validate: the estimator exists, the parameters fit its catalogue,
//     the budget and real-valued parameters are within sane bounds
//     (SaneGrant), the rank fits the data;
//  2. pre-flight check: the plugin validates the request against the
//     data's public shape, estimates its peak memory (Plugin.Check),
//     refused above Runner.MaxMemory, and may declare the privacy
//     mechanisms its fit will use (sdk.MechanismDeclarer); a declared
//     request the data set's budget rule cannot admit — a Laplace or
//     exponential step, granted (ε, δ) or ρ, under the Gaussian-DP filter
//     — is refused here (ErrBudget wrapping ledger.ErrMechanism), and the
//     ledger repeats the check atomically when reserving;
//  3. reserve the grant in the ledger (nothing above this line spends);
//  4. fit: the plugin streams progress, each privacy step before drawing
//     its noise, the outputs and a result (Plugin.Fit);
//  5. verify: the steps announced equal the steps the result lists, each
//     step's cost follows from its mechanism, sensitivity and scale
//     (privacy.VerifyStep), they compose within the grant, and the stated
//     guarantee follows from them (privacy.Certify); a private estimator
//     may not release a public output under a "none" guarantee; a step of
//     a mechanism the plugin did not declare is a false declaration
//     (ErrPlugin: nothing released, charged). An undeclared estimator is
//     checked as before, and a result the budget rule cannot admit is
//     withheld at settlement, charged its reservation;
//  6. settle: a verified run is charged its steps; a failed one is
//     refunded if the plugin announced no step and returned no result, and
//     charged its full grant otherwise;
//  7. report: FitResult holds the outputs as SDK types, the host's
//     certified guarantee and the ledger's position.
//
// Data too large for one machine never reach the host as rows. An
// estimator with a path through aggregation passes (sdk.RemoteEstimator,
// Info.Remote) runs on a data set held remotely
// (FitRequest.Remote: a public shape, a source identity and a
// data.Passer, e.g. one running dplr-beam for each pass). Its pre-flight
// check declares the pass kinds the fit will request, and the fit goes
// over the FitPasses stream: the plugin, sandboxed with no file to read,
// asks for each pass; the host checks every request (a declared kind, at
// most Runner.MaxPasses passes, one at a time, allocations bounded by the
// public shape, pass.Validate), runs it with the Passer, checks the result
// against the kind's bounds (pass.CheckResult) and sends it back. A
// request the host refuses ends the fit (ErrPlugin); a pass its runner
// fails ends it too (ErrPass). Either is settled by rule 6.
//
// Plugin.Transform maps new rows through a fitted model in the plugin of
// the estimator that made it (sdk.Transformer), run as a fit is: it is
// post-processing of released outputs, involves no ledger, and a plugin
// that sends anything but one finite matrix fails.
//
// The package speaks SDK types (sdk.Info, privacy.Step, privacy.Guarantee,
// sdk.Scalar, …) through transport.Client; the wire forms stay in
// engine/transport.
package host
