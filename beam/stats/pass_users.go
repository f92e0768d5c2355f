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
// each user's rows are put back in data order (shard in sorted path order,
// then row in the shard's file), the user's term is computed and bounded
// after grouping by the same code as pass.Local (pass.UsersConfig.Add),
// and the terms are summed (the combiner computes each user's term into
// its accumulator: nothing d×d is formed per user). A request with a
// group (a mask over user indices) or theory-mode batches (row orders
// drawn per user index) also co-groups each user's rows with its index in
// the single-machine data set's order (UserOrder); no kind
// reads a side input per user (the runner served one through its state
// channel, about 4 ms per user). The result equals pass.Local on the data
// set the shards form up to the order of the float sum over users.

// UsersPasses maps each users pass kind to its pipeline; pass.go's init
// registers them (RegisterPass), and RunPass runs them.
var UsersPasses = map[string]PassFunc{
	pass.UsersUstat:        RunUsersPass,
	pass.UsersUstatHist:    RunUsersPass,
	pass.UsersGradient:     RunUsersPass,
	pass.UsersGradientHist: RunUsersPass,
	pass.UsersHoldout:      RunUsersPass,
	pass.UsersValidation:   RunUsersPass,
	pass.UsersAltMin:       RunUsersPass,
}

// PosRow is one users row with its position in the data: the index of its
// shard among the sorted paths and its index in the shard's file.
type PosRow struct {
	Shard, Row int
	X          []float64
	Y          float64
}

// readPosRowsFn reads one users shard and emits (user key, row with its
// position).
type readPosRowsFn struct {
	D     int
	Paths []string
	Opt   ReadOptions
}

// ProcessElement reads the shard at path.
func (f *readPosRowsFn) ProcessElement(ctx context.Context, path string, emit func(string, PosRow)) error {
	idx := slices.Index(f.Paths, path)
	if idx < 0 {
		return fmt.Errorf("shard %s is not among the expanded paths", path)
	}
	sh, err := readShard(ctx, path, data.Users, f.Opt, 0, 0, nil)
	if err != nil {
		return err
	}
	if sh.p != f.D {
		return fmt.Errorf("shard %s: %d features, the first shard has %d", path, sh.p, f.D)
	}
	for i := range sh.n {
		emit(sh.users[i], PosRow{Shard: idx, Row: sh.pos[i], X: slices.Clone(sh.row(i)), Y: sh.y[i]})
	}
	return nil
}

// userKeyFn emits the key and first position of each grouped user.
type userKeyFn struct{}

// ProcessElement emits the user's position.
func (userKeyFn) ProcessElement(key string, rows func(*PosRow) bool, emit func(UserPos)) {
	first := PosRow{Shard: -1}
	var r PosRow
	for rows(&r) {
		if first.Shard < 0 || r.Shard < first.Shard || (r.Shard == first.Shard && r.Row < first.Row) {
			first = PosRow{Shard: r.Shard, Row: r.Row}
		}
	}
	emit(NewUserPos(key, first.Shard, first.Row))
}

// idsCombineFn collects the users in order: a user's index among them
// is its index in the single-machine data set (UserOrder), which the
// kinds taking a group of users need.
type idsCombineFn struct{}

// CreateAccumulator returns no users.
func (idsCombineFn) CreateAccumulator() []UserPos { return nil }

// AddInput adds one user.
func (idsCombineFn) AddInput(a []UserPos, u UserPos) []UserPos { return append(a, u) }

// MergeAccumulators concatenates.
func (idsCombineFn) MergeAccumulators(a, b []UserPos) []UserPos { return append(a, b...) }

// ExtractOutput orders the users.
func (idsCombineFn) ExtractOutput(a []UserPos) UserOrder { return NewUserOrder(a) }

// indexUsersFn emits each user's key with its index (UserOrder lists the
// users in index order).
type indexUsersFn struct{}

// ProcessElement emits (key, index) for every user.
func (indexUsersFn) ProcessElement(order UserOrder, emit func(string, int)) {
	for i, u := range order.Users {
		emit(u.Key, i)
	}
}

// sortedUser puts one user's rows back in data order (shard in sorted
// path order, then row in the shard's file).
func sortedUser(rows func(*PosRow) bool, index int) (pass.User, error) {
	var all []PosRow
	var r PosRow
	for rows(&r) {
		all = append(all, r)
		r = PosRow{}
	}
	if len(all) == 0 {
		return pass.User{}, fmt.Errorf("users pass: a user without rows")
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
	return u, nil
}

// userRowsFn turns one grouped user into its rows in data order (no
// index: the kinds without a group of users).
type userRowsFn struct{}

// ProcessElement emits the user.
func (userRowsFn) ProcessElement(_ string, rows func(*PosRow) bool, emit func(pass.User)) error {
	u, err := sortedUser(rows, -1)
	if err != nil {
		return err
	}
	emit(u)
	return nil
}

// indexedUserFn turns one user co-grouped with its index into its rows in
// data order with the index.
type indexedUserFn struct{}

// ProcessElement emits the user.
func (indexedUserFn) ProcessElement(_ string, rows func(*PosRow) bool, index func(*int) bool, emit func(pass.User)) error {
	var i int
	if !index(&i) {
		return fmt.Errorf("users pass: a user is missing from the user list")
	}
	u, err := sortedUser(rows, i)
	if err != nil {
		return err
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
	N, P, Users int // the data's public shape
	Req         data.PassRequest
	cfg         *pass.UsersConfig
}

// config reads the request once per combiner instance (validated by the
// driver before the pipeline runs).
func (f *usersCombineFn) config() *pass.UsersConfig {
	if f.cfg == nil {
		c, err := pass.UsersConfigOf(&data.Remote{N: f.N, P: f.P, Users: f.Users}, f.Req)
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
	f.config().Add(a, u, nil)
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
	register.DoFn3x1[context.Context, string, func(string, PosRow), error](&readPosRowsFn{})
	register.Emitter2[string, PosRow]()
	register.DoFn3x0[string, func(*PosRow) bool, func(UserPos)](&userKeyFn{})
	register.Emitter1[UserPos]()
	register.Combiner3[[]UserPos, UserPos, UserOrder](&idsCombineFn{})
	register.DoFn2x0[UserOrder, func(string, int)](&indexUsersFn{})
	register.Emitter2[string, int]()
	register.DoFn3x1[string, func(*PosRow) bool, func(pass.User), error](&userRowsFn{})
	register.DoFn4x1[string, func(*PosRow) bool, func(*int) bool, func(pass.User), error](&indexedUserFn{})
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
	cfg, err := pass.UsersConfigOf(shape, req)
	if err != nil {
		return nil, err
	}
	if cfg.Heads {
		return nil, fmt.Errorf("users pass: the per-user heads are not gathered from shards")
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
	var users beam.PCollection
	if cfg.Group != nil || cfg.Batch > 0 { // the users' indices are needed
		order := beam.Combine(s, &idsCombineFn{}, beam.ParDo(s, &userKeyFn{}, grouped))
		index := beam.ParDo(s, &indexUsersFn{}, order)
		users = beam.ParDo(s, &indexedUserFn{}, beam.CoGroupByKey(s, rows, index))
	} else {
		users = beam.ParDo(s, &userRowsFn{}, grouped)
	}
	beam.ParDo0(s, &writePartialFn{Path: out}, beam.Combine(s, &usersCombineFn{N: shape.N, P: shape.P, Users: shape.Users, Req: req}, users))
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

// Coders: named functions (the SDK resolves coders by symbol name); rows
// and users in a plain binary form (a gob encoder per element cost more
// than the per-user work).
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
