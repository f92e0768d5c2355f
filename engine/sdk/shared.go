package sdk

// Shared parameters. Each is a single-field struct to embed in an options
// struct, so that a name shared by several estimators means the same thing
// in all of them. Tags on the embedding field adjust one estimator's
// default, bounds, choices or doc, e.g.
//
//	type options struct {
//		sdk.Rank
//		sdk.Clip  `default:"1"`
//		sdk.Noise `choices:"zcdp,analytic"`
//	}
//
// and Fit reads o.Rank.Value, o.Clip.Value, o.Noise.Value.

// Rank is the shared parameter rank: how many directions (components,
// singular vectors) the estimate keeps.
type Rank struct {
	Value int `param:"rank" required:"true" min:"1" doc:"rank of the estimate: the number of directions it keeps"`
}

// Clip is the shared parameter clip: a public bound on the size of one
// person's contribution. Longer rows (or contributions) are scaled down to
// it before anything is computed, which is what bounds the sensitivity.
type Clip struct {
	Value float64 `param:"clip" required:"true" gt:"0" doc:"public bound on the ℓ2 norm of one row (one person's contribution); longer rows are scaled down to it. Choose it without looking at the private data"`
}

// Center values.
const (
	// CenterNone uses the data as given.
	CenterNone = "none"
	// CenterPrivate subtracts a privately released mean first.
	CenterPrivate = "private"
)

// Center is the shared parameter center: whether the data are centred
// before the estimate, and how.
type Center struct {
	Value string `param:"center" default:"none" choices:"none,private" doc:"none: use the data as given; private: first subtract a mean released privately (it costs part of the budget)"`
}

// Evaluate is the shared parameter evaluate: also report figures computed
// from the raw data, for testing on data one may see.
type Evaluate struct {
	Value bool `param:"evaluate" default:"false" doc:"also report evaluation figures computed from the raw data. They are NOT private: use them to test on data you may see, never publish them"`
}

// Iterations is the shared parameter iterations: the number of iterations
// (rounds, sweeps) of an iterative estimator. The budget is split across
// them.
type Iterations struct {
	Value int `param:"iterations" required:"true" min:"1" doc:"number of iterations; the privacy budget is split across them"`
}

// Step is the shared parameter step: the step size of each update of an
// iterative estimator.
type Step struct {
	Value float64 `param:"step" required:"true" gt:"0" doc:"step size of each update"`
}

// Noise is the shared parameter noise: how the noise of a Gaussian step is
// calibrated. Its values are the privacy package's noise calibrations.
type Noise struct {
	Value string `param:"noise" default:"zcdp" choices:"zcdp,exact,classical,analytic" doc:"how Gaussian noise is calibrated: zcdp splits the budget in zero-concentrated DP, which composes well when several steps add up; exact splits it by the tightest accounting dplr can certify (exact Gaussian composition, or the privacy loss distribution when pure steps are mixed in), a little less noise than zcdp; classical uses the textbook (ε, δ) formula for each step (each step's ε at most 1); analytic uses the exact (ε, δ) curve of the Gaussian for each step"`
}

// Sensitivity values (an estimator lists the ones it supports in choices).
const (
	// SensitivityWorstCase is proved for any data within the public bounds.
	SensitivityWorstCase = "worst-case"
	// SensitivityExplicit is computed from public parameters the user gives.
	SensitivityExplicit = "explicit"
	// SensitivityPaper is the formula of the paper the estimator follows.
	SensitivityPaper = "paper"
	// SensitivityModel holds with high probability for data drawn from the
	// estimator's stated model.
	SensitivityModel = "model"
)

// Sensitivity is the shared parameter sensitivity: how the sensitivity the
// noise is calibrated to is obtained. An estimator sets its choices and
// default on the embedding field.
type Sensitivity struct {
	Value string `param:"sensitivity" required:"true" doc:"how the sensitivity is obtained: worst-case (proved for any data within the public bounds), explicit (computed from public parameters you give), paper (the formula of the paper the estimator follows), model (holds with high probability for data drawn from the estimator's stated model)"`
}

// ParamAllowLargeDelta is the SDK's own parameter that lets a request use an
// (ε, δ) budget whose δ is not small against the number of people in the
// data (δ ≥ 1/n). It is added to every private estimator that accepts an
// (ε, δ) budget.
const ParamAllowLargeDelta = "allow_large_delta"

var allowLargeDeltaSpec = ParamSpec{Name: ParamAllowLargeDelta, Type: Bool, Default: "false",
	Doc: "accept an (ε, δ) budget with δ ≥ 1/n (n = rows, or users for users data). Such a δ allows a mechanism that publishes one person's data outright, so it is refused unless this is true; the result then says so"}
