package client

import (
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/sdk"
)

// Result is a released fit.
type Result struct {
	// Estimator is the estimator's name, Info its catalogue entry, Plugin
	// the plugin that ran it.
	Estimator string
	Info      sdk.Info
	Plugin    PluginInfo
	// Data describes the data set the plugin read.
	Data DataInfo
	// Params are the parameters as the catalogue types them (defaults
	// included); RawParams as given.
	Params    map[string]any
	RawParams map[string]string
	// Grant is the budget the run was granted (zero for a non-private
	// reference run).
	Grant Grant
	// Guarantee is the certified guarantee: the estimator's kind, model,
	// assumptions and neighbour relation with the host's own figures, from
	// the composition of the privacy steps it verified (never the plugin's
	// word).
	Guarantee Guarantee
	// Composition names the accounting behind Guarantee's figures.
	Composition string
	// Steps are the verified privacy steps the ledger was charged.
	Steps []Step
	// Matrices, Scalars and Series are the outputs, each with its release
	// class: sdk.Public (covered by Guarantee), sdk.PerUser (one row per
	// user, for that user only) or an evaluation/diagnostic class (computed
	// from the raw data: never publish it).
	Matrices []Matrix
	Scalars  []sdk.Scalar
	Series   []sdk.Series
	// Warnings are the notes that change what a user should conclude
	// (nothing model-based was released, a fallback to the worst case, a
	// component that is one column alone): show them first.
	Warnings []string
	// Notes are the other remarks (deprecations, clipping, budget splits).
	Notes []string
	// Metrics are the errors against a generated data set's truth
	// (evaluation only; empty for other data).
	Metrics []Metric
	// Ledger is the run's ledger entry and the data set's budget position
	// after it (nil for a non-private run).
	Ledger *LedgerEntry
	// Footprint is the plugin's estimate of the fit's peak memory (bytes).
	Footprint int64
	// Timings in seconds: prepare_s, check_s, fit_s, plugin_fit_s,
	// plugin_load_s; plugin_max_rss_kib (KiB);
	// plugin_footprint_estimate_bytes. They are of release class
	// sdk.TimingRelease (diagnostic): times and memory depend on the data,
	// so they are not covered by the guarantee.
	Timings map[string]float64
}

// DataInfo describes the data set a fit read.
type DataInfo struct {
	Kind data.Kind
	// Hash is the content hash of what the plugin read; Source the
	// identity of the source records, the key of the data set's budget.
	Hash, Source, Name string
	N, P, D1, D2       int
}

// Matrix is a matrix output.
type Matrix struct {
	Name    string
	Value   *mat.Dense
	Release Release
	Doc     string
}

// LedgerEntry is a run's ledger entry.
type LedgerEntry struct {
	RunID RunID
	// Path is the ledger's file.
	Path string
	// Status is the data set's budget position after the run.
	Status BudgetStatus
}

// Matrix returns the named matrix output.
func (r *Result) Matrix(name string) (*mat.Dense, bool) {
	for _, m := range r.Matrices {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// Scalar returns the named scalar output.
func (r *Result) Scalar(name string) (float64, bool) {
	for _, s := range r.Scalars {
		if s.Name == name {
			return s.Value, true
		}
	}
	return 0, false
}

// SeriesValues returns the named series output.
func (r *Result) SeriesValues(name string) ([]float64, bool) {
	for _, s := range r.Series {
		if s.Name == name {
			return s.Values, true
		}
	}
	return nil, false
}

// Public returns the names of the outputs covered by the guarantee.
func (r *Result) Public() []string {
	var out []string
	for _, m := range r.Matrices {
		if m.Release == sdk.Public {
			out = append(out, m.Name)
		}
	}
	for _, s := range r.Scalars {
		if s.Release == sdk.Public {
			out = append(out, s.Name)
		}
	}
	for _, s := range r.Series {
		if s.Release == sdk.Public {
			out = append(out, s.Name)
		}
	}
	return out
}
