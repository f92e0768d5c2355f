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
	// Files, when set, is the state of each shard (sorted by path) in
	// which it was read and hashed into Identity: a pass that finds every
	// shard in that state reads the same records (StatePass). It is nil
	// where a state does not tie a read to its content (state.go).
	Files []dataio.FileState
}

// Remote returns the description as the public shape an estimator sees
// (without a Passer).
func (d *Description) Remote() *data.Remote {
	return &data.Remote{N: int(d.N), P: d.P, D1: d.D1, D2: d.D2, Users: int(d.Users)}
}

// describeSplit reads sp as data of the given kind and returns its
// description, with the parts of its source identity (readSplit), and for
// users data its distinct user ids. A range of rows counts as a shard if
// it is its file's first.
func describeSplit(ctx context.Context, sp split, kind data.Kind, ro ReadOptions, d1, d2 int) (d shardDesc, sh *shard, users []string, err error) {
	if sh, err = readSplit(ctx, sp, kind, ro, d1, d2, &d.ID); err != nil {
		return d, nil, nil, err
	}
	d.N, d.P, d.D1, d.D2 = int64(sh.n), sh.p, sh.d1, sh.d2
	if !sp.Ranged || sp.Lo == 0 {
		d.Shards = 1
	}
	if sh.users != nil {
		users = slices.Compact(slices.Sorted(slices.Values(sh.users)))
	}
	return d, sh, users, nil
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

// ProcessElement reads sp.
func (f *describeShardFn) ProcessElement(ctx context.Context, sp split, emit func(shardDesc), emitUser func(string)) error {
	d, sh, users, err := describeSplit(ctx, sp, f.Kind, f.Opt, f.D1, f.D2)
	if err != nil {
		return err
	}
	sh.release()
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
	splits := splitShards(paths, kind, opt.Read)
	files, err := settle(ctx, splitStates(splits))
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
	descs, users := beam.ParDo2(s, &describeShardFn{Kind: kind, D1: d1, D2: d2, Opt: opt.Read}, splitsOf(s, splits))
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
	desc, err := w.D.description(kind, w.Users, len(paths))
	if err != nil {
		return nil, err
	}
	desc.Files = files
	opt.progress("beam: %d rows of %d values in %d shard(s)", desc.N, desc.P, desc.Shards)
	return desc, nil
}

// description checks the merged description d of the splits of shards
// files read as data of the given kind (users distinct users) and returns
// it as a Description.
func (d shardDesc) description(kind data.Kind, users int64, shards int) (*Description, error) {
	switch {
	case d.Mismatch != "":
		return nil, errors.New(d.Mismatch)
	case d.Shards != shards:
		return nil, fmt.Errorf("beam pipeline output: %d shards described, %d match", d.Shards, shards)
	case d.N == 0 || d.ID.Rows != d.N:
		return nil, fmt.Errorf("beam pipeline output: %d rows, identity of %d", d.N, d.ID.Rows)
	}
	if kind == data.Trace && (d.D1 < 1 || d.D2 < 1 || d.D1*d.D2 != d.P) {
		return nil, fmt.Errorf("trace data: rows of %d values do not hold %d×%d matrices", d.P, d.D1, d.D2)
	}
	desc := &Description{Kind: kind, N: d.N, P: d.P, D1: d.D1, D2: d.D2, Shards: d.Shards, Identity: d.ID}
	if kind == data.Users {
		desc.Users = users
	}
	if kind != data.Trace {
		desc.D1, desc.D2 = 0, 0
	}
	return desc, nil
}
