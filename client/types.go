package client

import (
	"context"
	"io"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/evaluate"
	"github.com/dplr/dplr/engine/host"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// The value types the client's API hands out and accepts. They are the
// engine's own plain types under the client's names, so that a program
// (the dplr command first) talks to the client alone; their methods and
// JSON forms are the engine's.
type (
	// Grant is a privacy budget: (ε, δ)-DP, pure ε-DP or ρ-zCDP (see
	// ApproxDP, PureDP, ZCDP).
	Grant = privacy.Grant
	// Guarantee is the certified guarantee of a run.
	Guarantee = privacy.Guarantee
	// GuaranteeJSON is a guarantee's JSON form.
	GuaranteeJSON = privacy.GuaranteeJSON
	// Statements are a guarantee's true statements, each in its own
	// fields: result.json's privacy.statements.
	Statements = privacy.Statements
	// Step is one verified privacy step of a run.
	Step = privacy.Step
	// Plan is what a fit would spend and an indication of what it would
	// give, answered before anything is reserved (Client.Plan).
	Plan = sdk.Plan
	// PlanStep is one planned privacy step and its noise multiplier.
	PlanStep = sdk.PlanStep

	// EstimatorInfo is an estimator's catalogue entry.
	EstimatorInfo = sdk.Info
	// ParamSpec is one parameter of an estimator's or a data model's
	// catalogue entry.
	ParamSpec = sdk.ParamSpec
	// Progress is a plugin's progress event.
	Progress = sdk.Progress
	// Release is an output's release class.
	Release = sdk.Release

	// Metric is an error against a generated data set's truth.
	Metric = evaluate.Metric

	// LoadOptions say how a data file is read.
	LoadOptions = dataio.LoadOptions
	// HeaderMode says whether a CSV file's first record is a header.
	HeaderMode = dataio.HeaderMode
	// Handle is a data set prepared for plugins.
	Handle = dataio.Handle
	// Identity names a data set's source records (its budget key).
	Identity = dataio.Identity

	// BudgetStatus is a data set's budget position.
	BudgetStatus = ledger.Status
	// DatasetEntry is a data set of the ledger.
	DatasetEntry = ledger.Dataset
	// Run is a run of the ledger.
	Run = ledger.Run
	// Change is a change to a data set's budget.
	Change = ledger.Change
	// Relation is a neighbour relation.
	Relation = ledger.Relation
	// RunID names a run of the ledger.
	RunID = ledger.RunID
	// Spent is what a data set's runs spent.
	Spent = ledger.Spent
	// Remaining is what a data set's budget has left.
	Remaining = ledger.Remaining
	// VerifyReport is what a full ledger check found.
	VerifyReport = ledger.VerifyReport
)

// Release classes of outputs.
const (
	// Public outputs are covered by the guarantee.
	Public = sdk.Public
	// PerUser outputs hold one row per user, for that user only.
	PerUser = sdk.PerUser
	// TimingRelease is the class of timings and memory figures:
	// diagnostic, as they depend on the data.
	TimingRelease = sdk.TimingRelease
)

// Relations are the neighbour relations a budget can count in.
var Relations = ledger.Relations

// ParseRelation parses a neighbour relation's name.
func ParseRelation(s string) (Relation, error) { return ledger.ParseRelation(s) }

// GrantString writes a grant as the ledger shows it.
func GrantString(g Grant) string { return ledger.GrantString(g) }

// HomeDir is the default dplr home: $DPLR_HOME, else the user data
// directory.
func HomeDir() (string, error) { return ledger.HomeDir() }

// ParseFormat parses a data format's name (csv, npy, idx; empty: detect).
func ParseFormat(s string) (dataio.Format, error) { return dataio.ParseFormat(s) }

// ParseBytes parses a byte count with an optional unit (K, M, G, T, P).
func ParseBytes(s string) (int64, error) { return dataio.ParseBytes(s) }

// ReadColumnScales reads public per-column scales (one CSV line, or a .npy
// vector) for LoadOptions.ColumnScales.
func ReadColumnScales(path string) ([]float64, error) { return dataio.ReadColumnScales(path) }

// FormatBytes writes a data size in binary units, one decimal (as the
// cache reports it).
func FormatBytes(n int64) string { return dataio.FormatBytes(n) }

// FormatMemory writes a memory size in binary units, three significant
// digits (as the memory checks report it).
func FormatMemory(n int64) string { return host.FormatBytes(n) }

// MaxRSSKiB is this process's peak resident memory in KiB.
func MaxRSSKiB() int64 { return sdk.MaxRSSKiB() }

// DefaultMaxMemory is the default Options.MaxMemory: three quarters of
// the machine's physical memory (0, no limit, when it is unknown).
func DefaultMaxMemory() int64 { return host.PhysicalMemory() / 4 * 3 }

// SandboxStatus says whether plugins run confined by Landlock, and why.
func SandboxStatus() (bool, string) { return host.SandboxStatus() }

// Shadowed is a plugin executable never used because one of the same
// name comes earlier in the search path.
type Shadowed struct {
	Path string // the hidden executable
	By   string // the executable used instead
}

// LoadData reads a data set in memory as opt says, interrupted by ctx:
// what a command needs that maps new rows through a model (transform).
func LoadData(ctx context.Context, path string, opt LoadOptions) (*data.Dataset, error) {
	return dataio.Interruptible(ctx, func() (*data.Dataset, error) { return dataio.Load(path, opt) })
}

// SaveNPY writes a row-major float64 array of the given shape as .npy.
func SaveNPY(path string, shape []int, values []float64) error {
	return dataio.SaveNPYFloat64(path, shape, values)
}

// WriteFileAtomic writes the file at path through write, atomically (a
// temporary file beside it, renamed into place once complete).
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return dataio.WriteFileAtomic(path, write)
}
