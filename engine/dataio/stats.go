package dataio

import "github.com/dplr/dplr/engine/data"

// StatsRef locates a rows data set's statistics (data.Statistics) in raw
// little-endian files: a Handle with Stats set stands for rows known only
// through these aggregates, computed elsewhere (a Beam pipeline) and
// validated by the host; its X is then empty.
type StatsRef struct {
	// Clip is the public row-norm bound applied before aggregation (0: none).
	Clip float64 `json:"clip"`
	// Sum holds Σ w_i x_i (P float64 values).
	Sum FileRef `json:"sum"`
	// Moment holds Σ w_i² x_i x_iᵀ (P·P float64 values, row-major).
	Moment FileRef `json:"moment"`
}

// StatsFormat names the layout of a statistics directory (StatsManifest).
const StatsFormat = "dplr-statistics/1"

// StatsManifestName is the manifest's file name in a statistics directory.
const StatsManifestName = "stats.json"

// StatsManifest is stats.json, written by a statistics pipeline (dplr-beam
// stats) beside two .npy files: Sum (1×P) and Moment (P×P). The host reads
// and validates it (host.LoadStatistics) before any budget is reserved; it
// never sees the rows.
type StatsManifest struct {
	// Format is StatsFormat.
	Format string `json:"format"`
	// Kind is the data kind aggregated: data.Rows.
	Kind data.Kind `json:"kind"`
	// N is the number of rows aggregated, P the number of columns.
	N int64 `json:"n"`
	P int   `json:"p"`
	// Clip is the row-norm bound applied before aggregation (0: none).
	Clip float64 `json:"clip"`
	// Identity holds the source identity's parts over every row (unclipped,
	// as the files hold them), from which the host derives the identity
	// the ledger charges.
	Identity IdentityParts `json:"identity"`
	// Sum and Moment are the file names (in the same directory) of the
	// clipped sum (1×P) and the clipped second moment (P×P, not divided
	// by N).
	Sum    string `json:"sum"`
	Moment string `json:"moment"`
	// Shards is the number of files aggregated; Runner the Beam runner.
	Shards int    `json:"shards,omitempty"`
	Runner string `json:"runner,omitempty"`
}
