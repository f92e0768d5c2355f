package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/dataio"
)

// readUsage lists the flags registerReadFlags adds, for a subcommand's
// usage line.
const readUsage = "[--format npy|csv|idx|parquet] [--header auto|yes|no] [--scale S] " +
	"[--features COL,COL,... | --feature-list COL] [--user-column COL] [--response-column COL]"

// readFlags are the flags that say how every shard is read, shared by the
// subcommands that read shards (stats, pass, describe).
type readFlags struct {
	format, header string
	scale          float64
	features, list string
	user, response string
}

// registerReadFlags adds the shard-reading flags to fs; options returns
// what they say once fs is parsed.
func registerReadFlags(fs *flag.FlagSet) *readFlags {
	r := &readFlags{}
	fs.StringVar(&r.format, "format", "", "shard format: npy, csv, idx or parquet (default: detected; .parquet and .parq files are Parquet)")
	fs.StringVar(&r.header, "header", "", "CSV shards: whether the first record is a header: auto, yes or no (default auto)")
	fs.Float64Var(&r.scale, "scale", 0, "multiply every feature by this after the source identity is taken, as dplr fit --scale (default 1)")
	fs.StringVar(&r.features, "features", "", "the feature columns, in order, comma-separated: Parquet column names (numeric scalar columns), or CSV header names or 0-based indexes (default: every numeric column but the user and response columns; .npy and IDX shards have no named columns and ignore it)")
	fs.StringVar(&r.list, "feature-list", "", "Parquet shards: the one list column (LIST or repeated numeric field, the same length in every row) holding all the features of a row")
	fs.StringVar(&r.user, "user-column", "", "users data: the user id column: in Parquet an INT32, INT64 or text column (default \"user\"); in CSV a header name or 0-based index (default the header's \"user\"); a user's rows are grouped across shards by the id's text, and an id that is a number not written as a canonical integer (07, 1.0, +1) is refused, as by dplr fit")
	fs.StringVar(&r.response, "response-column", "", "trace and users data: the response column: in Parquet a numeric column (default \"y\"); in CSV a header name or 0-based index (default \"y\", else the last column)")
	return r
}

// options returns the read options the parsed flags describe, or a usage
// error.
func (r *readFlags) options() (stats.ReadOptions, error) {
	var ro stats.ReadOptions
	switch f := strings.ToLower(r.format); f {
	case "", "parquet":
		ro.Format = f
	default:
		if _, err := dataio.ParseFormat(f); err != nil {
			return ro, fmt.Errorf("--format %q: want npy, csv, idx or parquet", r.format)
		}
		ro.Format = f
	}
	switch r.header {
	case "", "auto", "yes", "no":
		ro.Header = r.header
	default:
		return ro, fmt.Errorf("--header %q: want auto, yes or no", r.header)
	}
	if math.IsNaN(r.scale) || math.IsInf(r.scale, 0) {
		return ro, fmt.Errorf("--scale %v: want a finite number", r.scale)
	}
	ro.Scale = r.scale
	ps := &ro.Parquet
	if r.features != "" {
		if r.list != "" {
			return ro, errors.New("--features and --feature-list both name the features: give one")
		}
		for _, c := range strings.Split(r.features, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				return ro, fmt.Errorf("--features %q: an empty column name", r.features)
			}
			if slices.Contains(ps.Features, c) {
				return ro, fmt.Errorf("--features %q: column %q named twice", r.features, c)
			}
			ps.Features = append(ps.Features, c)
		}
	}
	ps.List = strings.TrimSpace(r.list)
	ps.User = strings.TrimSpace(r.user)
	ps.Response = strings.TrimSpace(r.response)
	if ps.User != "" && ps.User == ps.Response {
		return ro, fmt.Errorf("--user-column and --response-column both name %q", ps.User)
	}
	for _, c := range append(slices.Clone(ps.Features), ps.List) {
		if c != "" && (c == ps.User || c == ps.Response) {
			return ro, fmt.Errorf("column %q is both a feature and the user or response column", c)
		}
	}
	if ro.Format != "" && ro.Format != "parquet" && ps.List != "" {
		return ro, fmt.Errorf("--feature-list needs Parquet shards, not --format %s", ro.Format)
	}
	if (ro.Format == "npy" || ro.Format == "idx") && (len(ps.Features) > 0 || ps.User != "" || ps.Response != "") {
		return ro, fmt.Errorf("--format %s: arrays have no named columns (--features, --user-column and --response-column are for CSV and Parquet shards)", ro.Format)
	}
	return ro, nil
}
