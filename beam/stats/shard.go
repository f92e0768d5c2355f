package stats

import (
	"context"
	"fmt"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// shard is the content of one input file: n rows of p features
// (row-major), and for trace and users data the responses, for users data
// each row's user key (UserKey) and its index in the file (the loader
// groups a CSV file's rows by user); d1, d2 are the trace samples' shape.
type shard struct {
	n, p   int
	d1, d2 int
	x      []float64
	y      []float64
	users  []string
	pos    []int
	// pooled says x is a range's buffer (readSplit, release).
	pooled bool
}

// row returns row i's features.
func (s *shard) row(i int) []float64 { return s.x[i*s.p : (i+1)*s.p] }

// readShard reads the shard at path (any Beam filesystem) as data of the
// given kind: Parquet with readParquet, every other format with the
// single-machine reader (dataio.Load), so that a bad shard fails with that
// reader's message. Rows features are returned unscaled; trace and users
// features are scaled. With id not nil it adds to id, in the same read,
// the source identity of the shard's records (before scaling): for .npy,
// IDX and CSV files the parts the single-machine reader computes
// (dataio.LoadIdentityParts), so that the merged parts of all shards are
// the identity of the one file holding their records; for Parquet files
// those of the equivalent array source (the features, then the response,
// then the user id of each row, as dataio.IdentityOf orders them).
func readShard(ctx context.Context, path string, kind data.Kind, ro ReadOptions, d1, d2 int, id *dataio.IdentityParts) (*shard, error) {
	local, cleanup, err := localCopy(ctx, path)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	sh, err := readLocal(local, kind, ro, d1, d2, id)
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", path, err)
	}
	return sh, nil
}

func readLocal(local string, kind data.Kind, ro ReadOptions, d1, d2 int, id *dataio.IdentityParts) (*shard, error) {
	if isParquet(local, ro.Format) {
		sh, err := readParquet(local, kind, ro.Parquet)
		if err != nil {
			return nil, err
		}
		if kind == data.Trace && sh.p != d1*d2 {
			return nil, fmt.Errorf("%s: %d features, want d1·d2 = %d×%d", local, sh.p, d1, d2)
		}
		sh.d1, sh.d2 = d1, d2
		if id != nil {
			var fl []float64
			var ints []int64
			for i := range sh.n {
				fl, ints = fl[:0], ints[:0]
				if sh.y != nil {
					fl = append(fl, sh.y[i])
				}
				if sh.users != nil {
					ints = append(ints, userIdentityInt(sh.users[i]))
				}
				id.AddRecord(sh.row(i), fl, ints)
			}
		}
		if kind != data.Rows && ro.Scale != 0 && ro.Scale != 1 {
			for i := range sh.x {
				sh.x[i] *= ro.Scale
			}
		}
		return sh, nil
	}
	lo, err := ro.loadFor(local, kind, d1, d2)
	if err != nil {
		return nil, err
	}
	if kind != data.Rows {
		lo.Scale = ro.Scale
	}
	var ds *data.Dataset
	if id != nil {
		var parts dataio.IdentityParts
		ds, parts, err = dataio.LoadIdentityParts(local, lo)
		id.Merge(parts)
	} else {
		ds, err = dataio.Load(local, lo)
	}
	if err != nil {
		return nil, err
	}
	n, p := ds.X.Dims()
	raw := ds.X.RawMatrix()
	sh := &shard{n: n, p: p, d1: ds.D1, d2: ds.D2, x: raw.Data[:n*p], y: ds.Y}
	if raw.Stride != p {
		sh.x = make([]float64, 0, n*p)
		for i := range n {
			sh.x = append(sh.x, ds.X.RawRowView(i)...)
		}
	}
	if kind == data.Users {
		// Users data from a file other than CSV needs side files the
		// loader was not given: it has failed above.
		if sh.users, sh.pos, err = csvUserKeys(local, lo, ds); err != nil {
			return nil, fmt.Errorf("%s: %w", local, err)
		}
	}
	return sh, nil
}

// loadFor returns the single-machine reader's options for the shard at
// local (a local file, not Parquet) read as data of the given kind.
func (ro ReadOptions) loadFor(local string, kind data.Kind, d1, d2 int) (dataio.LoadOptions, error) {
	lo, err := ro.load()
	if err != nil {
		return lo, err
	}
	if err := csvColumns(local, &lo, ro.Parquet); err != nil {
		return lo, err
	}
	lo.Kind, lo.D1, lo.D2 = kind, d1, d2
	return lo, nil
}

// csvColumns sets the column options of lo from the columns ps names:
// for a CSV shard its user, response and feature columns (header names or
// 0-based indexes, with the single-machine reader's defaults). The list
// column is Parquet's only, and an array shard (.npy, IDX) has no named
// columns: a glob may mix such shards with Parquet ones.
func csvColumns(local string, lo *dataio.LoadOptions, ps ParquetSchema) error {
	if ps.User == "" && ps.Response == "" && len(ps.Features) == 0 {
		return nil
	}
	f := lo.Format
	if f == dataio.FormatAuto {
		var err error
		if f, _, err = dataio.DetectFormat(local); err != nil {
			return fmt.Errorf("%s: %w", local, err)
		}
	}
	if f == dataio.FormatCSV {
		lo.UserColumn, lo.ResponseColumn, lo.FeatureColumns = ps.User, ps.Response, ps.Features
	}
	return nil
}

// ReadOptions says how a shard is read (a subset of dataio.LoadOptions
// that is serialisable).
type ReadOptions struct {
	// Format forces the shard format ("npy", "csv", ...); empty: detected.
	Format string
	// Header is "auto", "yes" or "no" for CSV shards.
	Header string
	// Scale multiplies every feature value after the source identity is
	// taken (as dplr fit's --scale); 0 means 1.
	Scale float64
	// Parquet names the columns of Parquet shards, and its User, Response
	// and Features those of CSV shards (see ParquetSchema).
	Parquet ParquetSchema
}

func (o ReadOptions) load() (dataio.LoadOptions, error) {
	lo := dataio.LoadOptions{SkipHash: true}
	if o.Format != "" {
		f, err := dataio.ParseFormat(o.Format)
		if err != nil {
			return lo, err
		}
		lo.Format = f
	}
	switch o.Header {
	case "", "auto":
	case "yes":
		lo.Header = dataio.HeaderYes
	case "no":
		lo.Header = dataio.HeaderNo
	default:
		return lo, fmt.Errorf("header %q: want auto, yes or no", o.Header)
	}
	return lo, nil
}
