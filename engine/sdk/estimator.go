package sdk

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/privacy"
)

// Info is an estimator's catalogue entry.
type Info struct {
	Name        string
	Version     string
	Summary     string // one line
	Description string // paragraphs for `dplr describe`
	DataKind    data.Kind
	// Guarantee describes, in words, the kind of guarantee the estimator
	// gives (e.g. "(ε,δ)-DP w.p. ≥ 1−β over spiked Gaussian data").
	Guarantee string
	// Grants lists the budget forms the estimator accepts.
	Grants []privacy.GrantKind
	// Options is the prototype of the estimator's options struct (e.g.
	// myOptions{}); when set, the SDK derives Params from its tags (see
	// SpecsOf), binds each request into a fresh copy before Fit, and Fit
	// reads it with Opts. Leave Params empty then.
	Options    any
	Params     []ParamSpec
	References []string
	// NonPrivate marks a non-private reference estimator (its result's
	// guarantee Kind is privacy.None and it declares no privacy step). The
	// host runs it only when asked explicitly and never on a data set whose
	// owner set a budget.
	NonPrivate bool
	// Remote says the estimator also runs on a data set held elsewhere and
	// reached only through aggregation passes (data.Remote). InfoOf sets
	// it for an estimator implementing RemoteEstimator.
	Remote bool
}

// Estimator is implemented by every dplr estimator.
type Estimator interface {
	Info() Info
	// Fit runs the estimator. It must honour ctx cancellation, declare each
	// privacy step to run.Acct before drawing that step's noise from
	// run.Rand (with the budgets of run.Plan when its options are a
	// Planner), and return an error (never panic) on bad input.
	Fit(ctx context.Context, run *Run) (*Result, error)
}

// Run is everything a fit needs.
type Run struct {
	Data   *data.Dataset
	Params Params
	Acct   *privacy.Accountant
	// Plan is the fit's plan, built by the SDK from its options' Planner
	// answer and checked in full before Fit (nil for options that are not
	// a Planner); a candidate of a private selection gets its view of the
	// selection's plan (privacy.Plan.Prefixed).
	Plan    *privacy.Plan
	Rand    *privacy.Source
	Backend backend.Backend
	// opts is the bound options struct (a pointer), nil for an estimator
	// without Info.Options.
	opts any
	// progress receives progress events; nil discards them.
	progress func(Progress)
	logf     func(format string, args ...any)
}

// Progress is one progress event.
type Progress struct {
	Stage   string
	Done    int
	Total   int
	Message string
}

// Progress reports that done of total units of stage are complete.
func (r *Run) Progress(stage string, done, total int) {
	if r.progress != nil {
		r.progress(Progress{Stage: stage, Done: done, Total: total})
	}
}

// Logf sends a log line to the host (shown on stderr with -v).
func (r *Run) Logf(format string, args ...any) {
	if r.logf != nil {
		r.logf(format, args...)
	}
}

// Release says who may see an output.
type Release string

// Release classes.
const (
	// Public outputs carry the run's guarantee.
	Public Release = "public"
	// PerUser outputs are computed for and released only to each user
	// (e.g. personal heads in federated personalization).
	PerUser Release = "per-user"
	// Evaluation outputs are computed from the raw data for evaluation
	// only; they are NOT private and must not be published.
	Evaluation Release = "evaluation"
	// Diagnostic outputs describe how the computation ran: timings, memory,
	// sampler proposal counts, how many rows were clipped. They depend on
	// the private data through the run itself, carry no privacy guarantee,
	// and are for the operator only: never publish them with the public
	// outputs. Timings are always Diagnostic.
	Diagnostic Release = "diagnostic"
)

// TimingRelease is the release class of every timing and memory figure of
// a fit (the plugin's fit and load times, its peak memory, an estimator's
// own timings): Diagnostic, because they depend on the data.
const TimingRelease = Diagnostic

// Releases lists the release classes.
var Releases = []Release{Public, PerUser, Evaluation, Diagnostic}

// Valid reports whether r is one of the release classes.
func (r Release) Valid() bool {
	for _, c := range Releases {
		if r == c {
			return true
		}
	}
	return false
}

// Note is a short warning to print beside a non-public output ("" for a
// public one).
func (r Release) Note() string {
	switch r {
	case Public:
		return ""
	case PerUser:
		return "per-user: release each part only to its user"
	case Evaluation:
		return "evaluation only: computed from the raw data, NOT private"
	case Diagnostic:
		return "diagnostic: depends on the private data, NOT private; for the operator only"
	}
	return "unknown release class " + string(r) + ": treat as NOT private"
}

// Matrix is a named matrix output.
type Matrix struct {
	Name    string
	M       *mat.Dense
	Release Release
	Doc     string
}

// Scalar is a named scalar output.
type Scalar struct {
	Name    string
	Value   float64
	Release Release
	Doc     string
}

// Series is a named sequence (a training curve, an energy trace).
type Series struct {
	Name    string
	Values  []float64
	Release Release
	Doc     string
}

// Timing is a named duration measured during a fit, in seconds. Its
// release class is always Diagnostic: how long a computation took can
// depend on the data (sampler rejections, clipping, convergence).
type Timing struct {
	Name    string
	Seconds float64
	Doc     string
}

// Result is what a fit returns.
type Result struct {
	Matrices []Matrix
	Scalars  []Scalar
	Series   []Series
	// Timings are sent to the host as Diagnostic scalars, never Public.
	Timings []Timing
	// Guarantee: the estimator sets Kind, Model, Beta, Assumptions and
	// Neighbours; the SDK fills ε, δ, ρ from the accountant and Seeded from
	// the random source.
	Guarantee privacy.Guarantee
	Notes     []string
	// Warnings are the notes that change what a user should conclude from
	// the result (nothing model-based was released, a fallback to the
	// worst case, a component that is one column alone). Hosts show them
	// before anything else and on stderr; keep the rest in Notes.
	Warnings []string
}

// AddMatrix appends a matrix output.
func (r *Result) AddMatrix(name string, m *mat.Dense, rel Release, doc string) {
	r.Matrices = append(r.Matrices, Matrix{Name: name, M: m, Release: rel, Doc: doc})
}

// AddScalar appends a scalar output.
func (r *Result) AddScalar(name string, v float64, rel Release, doc string) {
	r.Scalars = append(r.Scalars, Scalar{Name: name, Value: v, Release: rel, Doc: doc})
}

// AddNote appends a note. A note whose content depends on the data in a way
// the guarantee does not cover (how many rows were clipped, how many
// proposals a sampler needed) must say so: give it its release class
// (Diagnostic, Evaluation) and the note is prefixed with that class's
// warning, so it is never read as part of the public release.
func (r *Result) AddNote(text string, rel Release) {
	if n := rel.Note(); n != "" {
		text = "[" + n + "] " + text
	}
	r.Notes = append(r.Notes, text)
}

// AddWarning appends a warning: a note that changes what a user should
// conclude. Like a note, its text must not depend on the private data
// beyond what the result releases.
func (r *Result) AddWarning(text string) {
	r.Warnings = append(r.Warnings, text)
}

// AddTiming appends a timing (release class Diagnostic).
func (r *Result) AddTiming(name string, seconds float64, doc string) {
	r.Timings = append(r.Timings, Timing{Name: name, Seconds: seconds, Doc: doc})
}

// CheckReleases reports an output without a valid release class, or a name
// used twice among the outputs of one kind (timings and scalars share
// theirs: timings travel as scalars).
func (r *Result) CheckReleases() error {
	seen := map[string]bool{}
	check := func(kind, name string, rel Release) error {
		if !rel.Valid() {
			return fmt.Errorf("%s output %q has release class %q (want one of %v)", kind, name, rel, Releases)
		}
		key := kind + "/" + name
		if kind == "timing" {
			key = "scalar/" + name
		}
		if seen[key] {
			return fmt.Errorf("%s output name %q is used twice", kind, name)
		}
		seen[key] = true
		return nil
	}
	for _, m := range r.Matrices {
		if err := check("matrix", m.Name, m.Release); err != nil {
			return err
		}
	}
	for _, s := range r.Scalars {
		if err := check("scalar", s.Name, s.Release); err != nil {
			return err
		}
	}
	for _, s := range r.Series {
		if err := check("series", s.Name, s.Release); err != nil {
			return err
		}
	}
	for _, tm := range r.Timings {
		if err := check("timing", tm.Name, Diagnostic); err != nil {
			return err
		}
	}
	return nil
}

// AddSeries appends a series output.
func (r *Result) AddSeries(name string, v []float64, rel Release, doc string) {
	r.Series = append(r.Series, Series{Name: name, Values: v, Release: rel, Doc: doc})
}
