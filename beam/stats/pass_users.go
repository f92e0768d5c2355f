package stats

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
)

// The users pass kinds of engine/pass (users.ustat, users.ustat_hist,
// users.gradient, users.gradient_hist, users.holdout, users.altmin) as
// Beam pipelines:
// shards are read, rows are keyed by user id and grouped across shards,
// each user's rows are put back in data order (users.altmin also gives
// each user its index in increasing id order, by co-grouping its rows with
// the sorted ids) (shard in sorted path
// order, then row in the shard as the single-machine reader gives it),
// the user's term is computed and bounded after grouping by the same code
// as pass.Local (pass.UsersConfig.Add), and the terms are summed (the combiner computes each user's term into its accumulator:
// nothing d×d is formed per user). The result equals pass.Local on the data set the shards form
// up to the order of the float sum over users.

// UsersPasses maps each users pass kind to its pipeline; pass.go's init
// registers them (RegisterPass), and RunPass runs them.
var UsersPasses = map[string]PassFunc{
	pass.UsersUstat:        RunUsersPass,
	pass.UsersUstatHist:    RunUsersPass,
	pass.UsersGradient:     RunUsersPass,
	pass.UsersGradientHist: RunUsersPass,
	pass.UsersHoldout:      RunUsersPass,
	pass.UsersAltMin:       RunUsersPass,
}

// PosRow is one users row with its position in the data: the index of its
// shard among the sorted paths and its index in the shard.
type PosRow struct {
	Shard, Row int
	X          []float64
	Y          float64
}

// readPosRowsFn reads one users shard and emits (user id, row with its
// position).
type readPosRowsFn struct {
	D     int
	Paths []string
	Opt   ReadOptions
}

// ProcessElement reads the shard at path.
func (f *readPosRowsFn) ProcessElement(ctx context.Context, path string, emit func(int64, PosRow)) error {
	idx := slices.Index(f.Paths, path)
	if idx < 0 {
		return fmt.Errorf("shard %s is not among the expanded paths", path)
	}
	sh, err := readShard(ctx, path, data.Users, f.Opt, 0, 0)
	if err != nil {
		return err
	}
	if sh.p != f.D {
		return fmt.Errorf("shard %s: %d features, the first shard has %d", path, sh.p, f.D)
	}
	for i := range sh.n {
		emit(sh.users[i], PosRow{Shard: idx, Row: i, X: slices.Clone(sh.row(i)), Y: sh.y[i]})
	}
	return nil
}

// rowKeyFn emits the user id of each row.
type rowKeyFn struct{}

// ProcessElement emits id.
func (rowKeyFn) ProcessElement(id int64, _ PosRow, emit func(int64)) { emit(id) }

// idsCombineFn collects the distinct user ids, sorted.
type idsCombineFn struct{}

// CreateAccumulator returns no ids.
func (idsCombineFn) CreateAccumulator() []int64 { return nil }

// AddInput adds one id.
func (idsCombineFn) AddInput(a []int64, id int64) []int64 {
	a = append(a, id)
	if len(a) >= 1<<16 { // keep a combiner's buffer of repeated ids small
		a = distinct(a)
	}
	return a
}

// MergeAccumulators concatenates.
func (idsCombineFn) MergeAccumulators(a, b []int64) []int64 { return distinct(append(a, b...)) }

// ExtractOutput sorts.
func (idsCombineFn) ExtractOutput(a []int64) []int64 { return distinct(a) }

// distinct sorts a and drops repeats.
func distinct(a []int64) []int64 {
	slices.Sort(a)
	return slices.Compact(a)
}

// indexIDsFn emits each id with its index in increasing id order: the
// user's index in the single-machine data set (users in increasing id
// order), which the kinds taking a group of users need.
type indexIDsFn struct{}

// ProcessElement emits (id, index) for the sorted ids.
func (indexIDsFn) ProcessElement(ids []int64, emit func(int64, int)) {
	for i, id := range ids {
		emit(id, i)
	}
}

// sortedUser puts one user's rows back in data order (shard in sorted
// path order, then row in the shard).
func sortedUser(rows func(*PosRow) bool, index int) pass.User {
	var all []PosRow
	var r PosRow
	for rows(&r) {
		all = append(all, r)
		r = PosRow{}
	}
	slices.SortFunc(all, func(a, b PosRow) int {
		if c := cmp.Compare(a.Shard, b.Shard); c != 0 {
			return c
		}
		return cmp.Compare(a.Row, b.Row)
	})
	u := pass.User{X: make([][]float64, len(all)), Y: make([]float64, len(all)), Index: index}
	for j, r := range all {
		u.X[j], u.Y[j] = r.X, r.Y
	}
	return u
}

// userRowsFn turns one grouped user into its rows in data order (no
// index: the kinds without a group of users).
type userRowsFn struct{}

// ProcessElement emits the user.
func (userRowsFn) ProcessElement(_ int64, rows func(*PosRow) bool, emit func(pass.User)) {
	emit(sortedUser(rows, -1))
}

// indexedUserFn turns one user co-grouped with its index into its rows in
// data order with the index.
type indexedUserFn struct{}

// ProcessElement emits the user.
func (indexedUserFn) ProcessElement(_ int64, rows func(*PosRow) bool, index func(*int) bool, emit func(pass.User)) error {
	var i int
	if !index(&i) {
		return fmt.Errorf("users pass: a user without an index")
	}
	emit(sortedUser(rows, i))
	return nil
}

// usersAcc is the combiner's accumulator.
type usersAcc = *pass.UsersPartial

// usersCombineFn adds each user's bounded term into its accumulator (the
// term is computed there, by pass.UsersConfig.Add, so that nothing d×d is
// formed per user) and merges accumulators.
type usersCombineFn struct {
	P   int
	Req data.PassRequest
	cfg *pass.UsersConfig
}

// config reads the request once per combiner instance (validated by the
// driver before the pipeline runs).
func (f *usersCombineFn) config() *pass.UsersConfig {
	if f.cfg == nil {
		c, err := pass.UsersConfigOf(f.P, f.Req)
		if err != nil {
			panic(fmt.Sprintf("dplr: users pass: %v", err)) // checked by RunUsersPass
		}
		f.cfg = c
	}
	return f.cfg
}

// CreateAccumulator returns an empty partial sum.
func (f *usersCombineFn) CreateAccumulator() usersAcc { return f.config().NewPartial() }

// AddInput adds one user's bounded term.
func (f *usersCombineFn) AddInput(a usersAcc, u pass.User) usersAcc {
	f.config().Add(a, u)
	return a
}

// MergeAccumulators adds b into a.
func (f *usersCombineFn) MergeAccumulators(a, b usersAcc) usersAcc {
	a.Merge(b)
	return a
}

// ExtractOutput returns the total.
func (f *usersCombineFn) ExtractOutput(a usersAcc) usersAcc { return a }

// writePartialFn writes the one combined partial sum to Path.
type writePartialFn struct{ Path string }

// ProcessElement writes a.
func (f *writePartialFn) ProcessElement(ctx context.Context, a usersAcc) error {
	b, err := encodeGob(*a)
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, b)
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(PosRow{}), encodePosRow, decodePosRow)
	beam.RegisterCoder(reflect.TypeOf(pass.User{}), encodeUser, decodeUser)
	beam.RegisterCoder(reflect.TypeOf((*pass.UsersPartial)(nil)), encodeUsersPartial, decodeUsersPartial)
	register.DoFn3x1[context.Context, string, func(int64, PosRow), error](&readPosRowsFn{})
	register.Emitter2[int64, PosRow]()
	register.DoFn3x0[int64, PosRow, func(int64)](&rowKeyFn{})
	register.Emitter1[int64]()
	register.Combiner3[[]int64, int64, []int64](&idsCombineFn{})
	register.DoFn2x0[[]int64, func(int64, int)](&indexIDsFn{})
	register.Emitter2[int64, int]()
	register.DoFn3x0[int64, func(*PosRow) bool, func(pass.User)](&userRowsFn{})
	register.DoFn4x1[int64, func(*PosRow) bool, func(*int) bool, func(pass.User), error](&indexedUserFn{})
	register.Iter1[PosRow]()
	register.Iter1[int]()
	register.Emitter1[pass.User]()
	register.Combiner3[usersAcc, pass.User, usersAcc](&usersCombineFn{})
	register.DoFn2x1[context.Context, usersAcc, error](&writePartialFn{})
}

// RunUsersPass runs one users pass over the shards matching glob: the
// request must be one of the users kinds, valid for the public shape
// (checked here as the host checks it); the result is checked as the
// host checks it before it is returned.
func RunUsersPass(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error) {
	initBeam()
	if shape == nil {
		return nil, fmt.Errorf("users pass without the data's shape")
	}
	spec, err := pass.Validate(data.Users, shape, req)
	if err != nil {
		return nil, err
	}
	cfg, err := pass.UsersConfigOf(shape.P, req)
	if err != nil {
		return nil, err
	}
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	out, done, err := opt.tempPath("users.pass")
	if err != nil {
		return nil, err
	}
	defer done()
	opt.progress("beam: %s pass over %d shard(s), d = %d, runner %s", req.Kind, len(paths), shape.P, orDefault(opt.Runner))
	pl, s := beam.NewPipelineWithRoot()
	rows := beam.ParDo(s, &readPosRowsFn{D: shape.P, Paths: paths, Opt: ro}, beam.CreateList(s, paths))
	var users beam.PCollection
	if req.Kind == pass.UsersAltMin {
		// The group is a mask over user indices: co-group each user's rows
		// with its index in increasing id order (no per-user side input).
		ids := beam.Combine(s, &idsCombineFn{}, beam.ParDo(s, &rowKeyFn{}, rows))
		index := beam.ParDo(s, &indexIDsFn{}, ids)
		users = beam.ParDo(s, &indexedUserFn{}, beam.CoGroupByKey(s, rows, index))
	} else {
		users = beam.ParDo(s, &userRowsFn{}, beam.GroupByKey(s, rows))
	}
	beam.ParDo0(s, &writePartialFn{Path: out}, beam.Combine(s, &usersCombineFn{P: shape.P, Req: req}, users))
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, fmt.Errorf("beam pipeline failed: %w", err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	a, err := decodeGob[pass.UsersPartial](bytes.Clone(b))
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	if want := len(cfg.NewPartial().Sum); len(a.Sum) != want {
		return nil, fmt.Errorf("beam pipeline output: %d values, want %d", len(a.Sum), want)
	}
	res := cfg.Result(&a)
	if err := pass.CheckResult(spec, shape, req, res); err != nil {
		return nil, err
	}
	opt.progress("beam: %s pass aggregated %d users", req.Kind, res.Records)
	return res, nil
}

// Coders: named functions (the SDK resolves coders by symbol name).
func encodePosRow(v PosRow) ([]byte, error) {
	b := make([]byte, 0, 8*(4+len(v.X)))
	b = binary.LittleEndian.AppendUint64(b, uint64(v.Shard))
	b = binary.LittleEndian.AppendUint64(b, uint64(v.Row))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Y))
	return appendFloats(b, v.X), nil
}

func decodePosRow(b []byte) (PosRow, error) {
	if len(b) < 24 {
		return PosRow{}, fmt.Errorf("users row: %d bytes", len(b))
	}
	v := PosRow{Shard: int(binary.LittleEndian.Uint64(b)), Row: int(binary.LittleEndian.Uint64(b[8:])), Y: math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))}
	var err error
	v.X, _, err = readFloats(b[24:])
	return v, err
}

func encodeUser(v pass.User) ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(nil, uint64(int64(v.Index)))
	b = appendFloats(b, v.Y)
	for _, x := range v.X {
		b = appendFloats(b, x)
	}
	return b, nil
}

func decodeUser(b []byte) (pass.User, error) {
	if len(b) < 8 {
		return pass.User{}, fmt.Errorf("user: %d bytes", len(b))
	}
	v := pass.User{Index: int(int64(binary.LittleEndian.Uint64(b)))}
	var err error
	if v.Y, b, err = readFloats(b[8:]); err != nil {
		return v, err
	}
	v.X = make([][]float64, len(v.Y))
	for j := range v.X {
		if v.X[j], b, err = readFloats(b); err != nil {
			return v, err
		}
	}
	return v, nil
}

// appendFloats appends len(x) and x.
func appendFloats(b []byte, x []float64) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(x)))
	for _, f := range x {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

// readFloats reads what appendFloats wrote and returns the rest.
func readFloats(b []byte) ([]float64, []byte, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("float vector: %d bytes", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	if n > uint64(len(b))/8 {
		return nil, nil, fmt.Errorf("float vector of %d values in %d bytes", n, len(b))
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return x, b[8*n:], nil
}

func encodeUsersPartial(v usersAcc) ([]byte, error) { return encodeGob(*v) }
func decodeUsersPartial(b []byte) (usersAcc, error) {
	v, err := decodeGob[pass.UsersPartial](b)
	return &v, err
}
