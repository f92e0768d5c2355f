package stats

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/filter"
	beamstats "github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
)

// Description is the public shape of a sharded data set of one kind and
// the parts of its source identity: what the host learns before it
// reserves any budget (dplr-beam describe), and what each pass re-checks.
type Description struct {
	// Kind is the data kind the shards were read as.
	Kind data.Kind
	// N is the number of rows (samples), P the number of features; D1, D2
	// the sample matrices' shape (trace data); Users the number of distinct
	// user ids across all shards (users data).
	N         int64
	P, D1, D2 int
	Users     int64
	// Shards is the number of files read.
	Shards int
	// Identity holds the parts of the source identity of all rows
	// (Identity.Identity() is the ledger's key).
	Identity dataio.IdentityParts
}

// Remote returns the description as the public shape an estimator sees
// (without a Passer).
func (d *Description) Remote() *data.Remote {
	return &data.Remote{N: int(d.N), P: d.P, D1: d.D1, D2: d.D2, Users: int(d.Users)}
}

// shardIdentity reads the shard at path as data of the given kind and
// returns its description (with, for users data, its distinct user ids) and the parts of its source identity: for .npy, IDX and CSV files
// those the single-machine reader computes for the file
// (dataio.LoadIdentityParts), so that the merged parts of all shards are
// the identity of the one file holding their records; for Parquet files
// those of the equivalent array source (the features, then the response,
// then the user id of each row, as dataio.IdentityOf orders them).
func shardIdentity(ctx context.Context, path string, kind data.Kind, ro ReadOptions, d1, d2 int) (d shardDesc, users []string, err error) {
	local, cleanup, err := localCopy(ctx, path)
	if err != nil {
		return d, nil, err
	}
	defer cleanup()
	d.Shards = 1
	if isParquet(local, ro.Format) {
		sh, err := readLocal(local, kind, ReadOptions{Format: ro.Format, Parquet: ro.Parquet}, d1, d2)
		if err != nil {
			return d, nil, fmt.Errorf("shard %s: %w", path, err)
		}
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
			d.ID.AddRecord(sh.row(i), fl, ints)
		}
		d.N, d.P, d.D1, d.D2 = int64(sh.n), sh.p, d1, d2
		if sh.users != nil {
			users = slices.Compact(slices.Sorted(slices.Values(sh.users)))
		}
		return d, users, nil
	}
	lo, err := ro.loadFor(local, kind, d1, d2)
	if err != nil {
		return d, nil, err
	}
	ds, id, err := dataio.LoadIdentityParts(local, lo)
	if err != nil {
		return d, nil, fmt.Errorf("shard %s: %w", path, err)
	}
	n, p := ds.X.Dims()
	d.N, d.P, d.D1, d.D2, d.ID = int64(n), p, ds.D1, ds.D2, id
	if kind == data.Users {
		// The loader numbers text ids per file: the keys are the ids' text.
		if users, _, err = csvUserKeys(local, lo, ds); err != nil {
			return d, nil, fmt.Errorf("shard %s: %s: %w", path, local, err)
		}
		users = slices.Compact(slices.Sorted(slices.Values(users)))
	}
	return d, users, nil
}

// shardDesc is one shard's (or a merge of shards') description.
type shardDesc struct {
	N         int64
	P, D1, D2 int
	Shards    int
	ID        dataio.IdentityParts
	// Mismatch names a shape disagreement between shards ("" if none).
	Mismatch string
}

// describeShardFn reads one shard and emits its description and, for
// users data, its rows' user ids.
type describeShardFn struct {
	Kind   data.Kind
	D1, D2 int
	Opt    ReadOptions
}

// ProcessElement reads sp: a range of rows counts as a shard if it is the
// file's first.
func (f *describeShardFn) ProcessElement(ctx context.Context, sp split, emit func(shardDesc), emitUser func(string)) error {
	if sp.Ranged {
		d := shardDesc{N: int64(sp.Hi - sp.Lo), P: sp.File.P}
		if sp.Lo == 0 {
			d.Shards = 1
		}
		if err := sp.File.ReadRange(ctx, sp.Lo, sp.Hi, &d.ID, func(int, []float64) error { return nil }); err != nil {
			return fmt.Errorf("shard %s: %w", sp.Path, err)
		}
		emit(d)
		return nil
	}
	d, users, err := shardIdentity(ctx, sp.Path, f.Kind, f.Opt, f.D1, f.D2)
	if err != nil {
		return err
	}
	for _, u := range users {
		emitUser(u)
	}
	emit(d)
	return nil
}

// mergeDescFn merges shard descriptions (associative and commutative).
type mergeDescFn struct{}

// MergeAccumulators adds b to a, noting a shape disagreement.
func (mergeDescFn) MergeAccumulators(a, b shardDesc) shardDesc {
	if a.Shards == 0 && a.N == 0 {
		return b
	}
	if b.Shards == 0 && b.N == 0 {
		return a
	}
	if a.Mismatch == "" && b.Mismatch != "" {
		a.Mismatch = b.Mismatch
	}
	if a.Mismatch == "" && (a.P != b.P || a.D1 != b.D1 || a.D2 != b.D2) {
		lo, hi := a, b
		if hi.P < lo.P || (hi.P == lo.P && hi.D1 < lo.D1) {
			lo, hi = hi, lo
		}
		a.Mismatch = fmt.Sprintf("shards hold rows of %d and of %d values (%d×%d and %d×%d)", lo.P, hi.P, lo.D1, lo.D2, hi.D1, hi.D2)
	}
	a.N += b.N
	a.Shards += b.Shards
	a.ID.Merge(b.ID)
	return a
}

// writeDescFn writes the merged description, with the user count (a
// side input), to Path.
type writeDescFn struct{ Path string }

// ProcessElement writes d.
func (f *writeDescFn) ProcessElement(ctx context.Context, d shardDesc, users int) error {
	b, err := encodeGob(wireDesc{d, int64(users)})
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, b)
}

type wireDesc struct {
	D     shardDesc
	Users int64
}

func encodeShardDesc(v shardDesc) ([]byte, error) { return encodeGob(v) }
func decodeShardDesc(b []byte) (shardDesc, error) { return decodeGob[shardDesc](b) }

func init() {
	beam.RegisterCoder(reflect.TypeOf(shardDesc{}), encodeShardDesc, decodeShardDesc)
	register.DoFn4x1[context.Context, split, func(shardDesc), func(string), error](&describeShardFn{})
	register.Emitter1[shardDesc]()
	register.Emitter1[string]()
	register.Combiner1[shardDesc](&mergeDescFn{})
	register.DoFn3x1[context.Context, shardDesc, int, error](&writeDescFn{})
}

// Describe runs the description pipeline over the shards matching glob,
// read as data of the given kind (d1, d2: the trace sample shape, 0 when
// the files give it): the row and feature counts, the number of distinct
// users, and the source identity of all rows, merged across shards in any
// order into the identity the single-machine reader computes for the one
// file holding them (the key the budget ledger charges). Every shard is
// read as the single-machine reader reads it, so an empty or corrupt shard
// or a non-finite value fails with that reader's message. A failed
// pipeline returns an error and nothing else.
func Describe(ctx context.Context, glob string, kind data.Kind, d1, d2 int, opt Options) (*Description, error) {
	initBeam()
	switch kind {
	case data.Rows, data.Trace, data.Users:
	default:
		return nil, fmt.Errorf("unknown data kind %q (want rows, trace or users)", kind)
	}
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	out, done, err := opt.tempPath("describe.stats")
	if err != nil {
		return nil, err
	}
	defer done()
	opt.progress("beam: describe %s data over %d shard(s), runner %s", kind, len(paths), orDefault(opt.Runner))
	pl, s := beam.NewPipelineWithRoot()
	descs, users := beam.ParDo2(s, &describeShardFn{Kind: kind, D1: d1, D2: d2, Opt: opt.Read}, splitsOf(s, paths, kind, opt.Read))
	count := beam.Create(s, 0)
	if kind == data.Users {
		count = beamstats.CountElms(s, filter.Distinct(s, users))
	}
	merged := beam.Combine(s, &mergeDescFn{}, descs)
	beam.ParDo0(s, &writeDescFn{Path: out}, merged, beam.SideInput{Input: count})
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, fmt.Errorf("beam pipeline failed: %w", err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	w, err := decodeGob[wireDesc](b)
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	d := w.D
	switch {
	case d.Mismatch != "":
		return nil, errors.New(d.Mismatch)
	case d.Shards != len(paths):
		return nil, fmt.Errorf("beam pipeline output: %d shards described, %d match", d.Shards, len(paths))
	case d.N == 0 || d.ID.Rows != d.N:
		return nil, fmt.Errorf("beam pipeline output: %d rows, identity of %d", d.N, d.ID.Rows)
	}
	if kind == data.Trace && (d.D1 < 1 || d.D2 < 1 || d.D1*d.D2 != d.P) {
		return nil, fmt.Errorf("trace data: rows of %d values do not hold %d×%d matrices", d.P, d.D1, d.D2)
	}
	desc := &Description{Kind: kind, N: d.N, P: d.P, D1: d.D1, D2: d.D2, Shards: d.Shards, Identity: d.ID}
	if kind == data.Users {
		desc.Users = w.Users
	}
	if kind != data.Trace {
		desc.D1, desc.D2 = 0, 0
	}
	opt.progress("beam: %d rows of %d values in %d shard(s)", d.N, d.P, d.Shards)
	return desc, nil
}
