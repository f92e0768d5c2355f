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
// groups a CSV file's rows by user).
type shard struct {
	n, p  int
	x     []float64
	y     []float64
	users []string
	pos   []int
}

// row returns row i's features.
func (s *shard) row(i int) []float64 { return s.x[i*s.p : (i+1)*s.p] }

// readShard reads the shard at path (any Beam filesystem) as data of the
// given kind: Parquet with readParquet, every other format with the
// single-machine reader (dataio.Load), so that a bad shard fails with that
// reader's message. Rows features are returned unscaled (the source
// identity is taken before scaling); trace and users features are scaled.
func readShard(ctx context.Context, path string, kind data.Kind, ro ReadOptions, d1, d2 int) (*shard, error) {
	local, cleanup, err := localCopy(ctx, path)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	sh, err := readLocal(local, kind, ro, d1, d2)
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", path, err)
	}
	return sh, nil
}

func readLocal(local string, kind data.Kind, ro ReadOptions, d1, d2 int) (*shard, error) {
	if isParquet(local, ro.Format) {
		sh, err := readParquet(local, kind, ro.Parquet)
		if err != nil {
			return nil, err
		}
		if kind == data.Trace && sh.p != d1*d2 {
			return nil, fmt.Errorf("%s: %d features, want d1·d2 = %d×%d", local, sh.p, d1, d2)
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
	ds, err := dataio.Load(local, lo)
	if err != nil {
		return nil, err
	}
	n, p := ds.X.Dims()
	raw := ds.X.RawMatrix()
	sh := &shard{n: n, p: p, x: raw.Data[:n*p], y: ds.Y}
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
