package stats

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
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
// each user's rows are put back in data order and the user gets its index
// in increasing id order (from the sorted ids, a side input) (shard in sorted path
// order, then row in the shard as the single-machine reader gives it),
// the user's term is computed and bounded after grouping by the same code
// as pass.Local (pass.UsersConfig.Add), and the terms are summed (the combiner computes each user's term into its accumulator:
// nothing d×d is formed per user). The result equals pass.Local on the data set the shards form
// up to the order of the float sum over users.

// usersPassFunc has the signature of the Beam pass registry's functions
// (RegisterPass in pass.go): glob the shards, shape the public shape.
type usersPassFunc = func(ctx context.Context, glob string, shape *data.Remote, ro ReadOptions, req data.PassRequest, opt Options) (*data.PassResult, error)

// UsersPasses maps each users pass kind to its pipeline. Until the pass
// registry (RegisterPass) is on this branch, the kinds are listed here;
// registering them is one loop: for k, fn := range UsersPasses { RegisterPass(k, fn) }.
var UsersPasses = map[string]usersPassFunc{
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

// userKeyFn emits the id of each grouped user.
type userKeyFn struct{}

// ProcessElement emits id.
func (userKeyFn) ProcessElement(id int64, _ func(*PosRow) bool, emit func(int64)) { emit(id) }

// idsCombineFn collects the users' ids, sorted: a user's index among them
// is its index in the single-machine data set (users in increasing id
// order), which the kinds taking a group of users need.
type idsCombineFn struct{}

// CreateAccumulator returns no ids.
func (idsCombineFn) CreateAccumulator() []int64 { return nil }

// AddInput adds one id.
func (idsCombineFn) AddInput(a []int64, id int64) []int64 { return append(a, id) }

// MergeAccumulators concatenates.
func (idsCombineFn) MergeAccumulators(a, b []int64) []int64 { return append(a, b...) }

// ExtractOutput sorts.
func (idsCombineFn) ExtractOutput(a []int64) []int64 {
	slices.Sort(a)
	return a
}

// userRowsFn puts one user's grouped rows back in data order and sets its
// index from the sorted ids (a side input).
type userRowsFn struct{}

// ProcessElement sorts the user's rows by (shard, row) and emits them.
func (userRowsFn) ProcessElement(id int64, rows func(*PosRow) bool, ids func(*[]int64) bool, emit func(pass.User)) error {
	var sorted []int64
	if !ids(&sorted) {
		return fmt.Errorf("users pass: no user ids")
	}
	idx, ok := slices.BinarySearch(sorted, id)
	if !ok {
		return fmt.Errorf("users pass: a user id is missing from the id list")
	}
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
	u := pass.User{X: make([][]float64, len(all)), Y: make([]float64, len(all)), Index: idx}
	for j, r := range all {
		u.X[j], u.Y[j] = r.X, r.Y
	}
	emit(u)
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
	register.DoFn3x0[int64, func(*PosRow) bool, func(int64)](&userKeyFn{})
	register.Emitter1[int64]()
	register.Combiner3[[]int64, int64, []int64](&idsCombineFn{})
	register.Iter1[[]int64]()
	register.DoFn4x1[int64, func(*PosRow) bool, func(*[]int64) bool, func(pass.User), error](&userRowsFn{})
	register.Iter1[PosRow]()
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
	grouped := beam.GroupByKey(s, rows)
	ids := beam.Combine(s, &idsCombineFn{}, beam.ParDo(s, &userKeyFn{}, grouped))
	users := beam.ParDo(s, &userRowsFn{}, grouped, beam.SideInput{Input: ids})
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
func encodePosRow(v PosRow) ([]byte, error)         { return encodeGob(v) }
func decodePosRow(b []byte) (PosRow, error)         { return decodeGob[PosRow](b) }
func encodeUser(v pass.User) ([]byte, error)        { return encodeGob(v) }
func decodeUser(b []byte) (pass.User, error)        { return decodeGob[pass.User](b) }
func encodeUsersPartial(v usersAcc) ([]byte, error) { return encodeGob(*v) }
func decodeUsersPartial(b []byte) (usersAcc, error) {
	v, err := decodeGob[pass.UsersPartial](b)
	return &v, err
}
