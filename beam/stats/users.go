package stats

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
)

// UserRow is one record of users data: its features and response.
type UserRow struct {
	X []float64
	Y float64
}

// UserAgg is a sum of per-user terms, each bounded after grouping.
type UserAgg struct {
	// Users is the number of users that contributed.
	Users int64
	// Clipped is the number of users whose term the bound shrank.
	Clipped int64
	// Sum is the sum of the bounded per-user terms (row-major).
	Sum []float64
}

// UsersOptions bound each user's contribution.
type UsersOptions struct {
	// MaxRows keeps at most this many of a user's rows (in a canonical
	// order, so that the choice does not depend on sharding); 0: all.
	MaxRows int
	// Bound is the Frobenius norm every per-user term is clipped to
	// (≤ 0 or +Inf: none).
	Bound float64
}

// canonical sorts a user's rows by their values (the order GroupByKey
// delivers them in is arbitrary) and keeps at most max of them.
func canonical(rows []UserRow, max int) []UserRow {
	slices.SortFunc(rows, func(a, b UserRow) int {
		if c := slices.Compare(a.X, b.X); c != 0 {
			return c
		}
		switch {
		case a.Y < b.Y:
			return -1
		case a.Y > b.Y:
			return 1
		}
		return 0
	})
	if max > 0 && len(rows) > max {
		rows = rows[:max]
	}
	return rows
}

// clipFrob scales v to Frobenius norm at most c; it reports a shrink.
func clipFrob(v []float64, c float64) bool {
	if c <= 0 || math.IsInf(c, 1) {
		return false
	}
	var s float64
	for _, x := range v {
		s += x * x
	}
	if s <= c*c {
		return false
	}
	w := c / math.Sqrt(s)
	for i := range v {
		v[i] *= w
	}
	return true
}

// InitTerm is the private initialisation's per-user term: the unbiased
// U-statistic of w wᵀ from a user's m ≥ 2 rows,
//
//	Z = (s sᵀ − Σ_j y_j² x_j x_jᵀ) / (m(m−1)),  s = Σ_j y_j x_j,
//
// d×d row-major (nil for a user with fewer than two rows).
func InitTerm(rows []UserRow, d int) []float64 {
	m := len(rows)
	if m < 2 {
		return nil
	}
	s := make([]float64, d)
	z := make([]float64, d*d)
	for _, r := range rows {
		for a, v := range r.X {
			s[a] += r.Y * v
		}
		y2 := r.Y * r.Y
		for a, va := range r.X {
			for b, vb := range r.X {
				z[a*d+b] -= y2 * va * vb
			}
		}
	}
	inv := 1 / float64(m*(m-1))
	for a := range d {
		for b := range d {
			z[a*d+b] = (z[a*d+b] + s[a]*s[b]) * inv
		}
	}
	return z
}

// RoundTerm is a user's term in one round with representation U (d×k,
// row-major): the gradient in U of the squared loss at the user's
// least-squares head v = argmin Σ (y_j − x_jᵀUv)²,
//
//	G = Σ_j x_j (x_jᵀ U v − y_j) vᵀ   (d×k, row-major),
//
// nil when the head is not determined (singular normal equations).
func RoundTerm(rows []UserRow, u []float64, d, k int) []float64 {
	um := mat.NewDense(d, k, u)
	a := mat.NewDense(len(rows), k, nil)
	y := mat.NewVecDense(len(rows), nil)
	for j, r := range rows {
		xv := mat.NewVecDense(d, r.X)
		var row mat.VecDense
		row.MulVec(um.T(), xv)
		a.SetRow(j, row.RawVector().Data)
		y.SetVec(j, r.Y)
	}
	var v mat.VecDense
	if err := v.SolveVec(a, y); err != nil || len(rows) < k {
		return nil
	}
	g := make([]float64, d*k)
	for j, r := range rows {
		var res float64
		for c := 0; c < k; c++ {
			res += a.At(j, c) * v.AtVec(c)
		}
		res -= r.Y
		for p, xp := range r.X {
			for c := 0; c < k; c++ {
				g[p*k+c] += xp * res * v.AtVec(c)
			}
		}
	}
	return g
}

// readUsersFn reads one users shard and emits (user id, row).
type readUsersFn struct {
	D   int
	Opt ReadOptions
}

// ProcessElement reads the shard at path.
func (f *readUsersFn) ProcessElement(ctx context.Context, path string, emit func(int64, UserRow)) error {
	sh, err := readShard(ctx, path, data.Users, f.Opt, 0, 0)
	if err != nil {
		return err
	}
	if sh.p != f.D {
		return fmt.Errorf("shard %s: %d features, the first shard has %d", path, sh.p, f.D)
	}
	for i := range sh.n {
		emit(sh.users[i], UserRow{X: slices.Clone(sh.row(i)), Y: sh.y[i]})
	}
	return nil
}

// userTermFn computes each user's bounded term after grouping: the
// initialisation term (Round < 0) or the round term at U (a side input
// holding one []float64).
type userTermFn struct {
	D, K  int
	Init  bool
	Bound UsersOptions
}

// ProcessElement bounds one user's contribution.
func (f *userTermFn) ProcessElement(id int64, rows func(*UserRow) bool, us func(*[]float64) bool, emit func(UserAgg)) {
	var all []UserRow
	var r UserRow
	for rows(&r) {
		all = append(all, r)
	}
	all = canonical(all, f.Bound.MaxRows)
	var t []float64
	if f.Init {
		t = InitTerm(all, f.D)
	} else {
		var u []float64
		us(&u)
		t = RoundTerm(all, u, f.D, f.K)
	}
	if t == nil {
		return
	}
	agg := UserAgg{Users: 1, Sum: t}
	if clipFrob(agg.Sum, f.Bound.Bound) {
		agg.Clipped = 1
	}
	emit(agg)
}

// sumUsersFn adds bounded per-user terms.
type sumUsersFn struct{}

// MergeAccumulators adds b to a.
func (sumUsersFn) MergeAccumulators(a, b UserAgg) UserAgg {
	if a.Sum == nil {
		return b
	}
	addInto(a.Sum, b.Sum)
	a.Users += b.Users
	a.Clipped += b.Clipped
	return a
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(UserRow{}), encodeUserRow, decodeUserRow)
	beam.RegisterCoder(reflect.TypeOf(UserAgg{}), encodeUserAgg, decodeUserAgg)
	register.DoFn3x1[context.Context, string, func(int64, UserRow), error](&readUsersFn{})
	register.Emitter2[int64, UserRow]()
	register.DoFn4x0[int64, func(*UserRow) bool, func(*[]float64) bool, func(UserAgg)](&userTermFn{})
	register.Iter1[UserRow]()
	register.Iter1[[]float64]()
	register.Emitter1[UserAgg]()
	register.Combiner1[UserAgg](&sumUsersFn{})
	register.DoFn2x1[context.Context, UserAgg, error](&writeAggFn{})
}

// writeAggFn writes the one aggregate to Path.
type writeAggFn struct{ Path string }

// ProcessElement writes a.
func (f *writeAggFn) ProcessElement(ctx context.Context, a UserAgg) error {
	b, err := encodeGob(a)
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, b)
}

// ComputeUsers runs the users pipeline over the shards matching glob:
// rows are grouped by user id across shards, each user's contribution is
// bounded after grouping (opt.MaxRows rows, term clipped to opt.Bound),
// and the bounded terms are summed. With u nil it computes the private
// initialisation's terms (d×d); else the round terms at U (d×k, a side
// input). A FedRep-style driver calls it once per round.
func ComputeUsers(ctx context.Context, glob string, u *mat.Dense, bound UsersOptions, opt Options) (*UserAgg, error) {
	initBeam()
	paths, err := Expand(ctx, glob)
	if err != nil {
		return nil, err
	}
	first, err := readShard(ctx, paths[0], data.Users, opt.Read, 0, 0)
	if err != nil {
		return nil, err
	}
	d, k := first.p, 0
	uFlat := []float64{}
	if u != nil {
		var ud int
		ud, k = u.Dims()
		if ud != d {
			return nil, fmt.Errorf("representation U has %d rows, the data %d features", ud, d)
		}
		uFlat = mat.DenseCopyOf(u).RawMatrix().Data
	}
	out, done, err := opt.tempPath("users.stats")
	if err != nil {
		return nil, err
	}
	defer done()
	what := "initialisation"
	if u != nil {
		what = "round"
	}
	opt.progress("beam: users %s pipeline over %d shard(s), d = %d, runner %s", what, len(paths), d, orDefault(opt.Runner))
	pl, s := beam.NewPipelineWithRoot()
	shards := beam.CreateList(s, paths)
	rows := beam.ParDo(s, &readUsersFn{D: d, Opt: opt.Read}, shards)
	grouped := beam.GroupByKey(s, rows)
	side := beam.Create(s, uFlat)
	terms := beam.ParDo(s, &userTermFn{D: d, K: k, Init: u == nil, Bound: bound}, grouped, beam.SideInput{Input: side})
	agg := beam.Combine(s, &sumUsersFn{}, terms)
	beam.ParDo0(s, &writeAggFn{Path: out}, agg)
	if err := execute(ctx, opt.Runner, pl); err != nil {
		return nil, fmt.Errorf("beam pipeline failed: %w", err)
	}
	b, err := readFile(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	a, err := decodeGob[UserAgg](bytes.Clone(b))
	if err != nil {
		return nil, fmt.Errorf("beam pipeline output: %w", err)
	}
	if a.Users == 0 {
		return nil, errors.New("beam pipeline: no user contributed")
	}
	opt.progress("beam: %d users aggregated", a.Users)
	return &a, nil
}

// Coders: named functions (the SDK resolves coders by symbol name, which
// instantiations of one generic function share).
func encodeUserRow(v UserRow) ([]byte, error) { return encodeGob(v) }
func decodeUserRow(b []byte) (UserRow, error) { return decodeGob[UserRow](b) }
func encodeUserAgg(v UserAgg) ([]byte, error) { return encodeGob(v) }
func decodeUserAgg(b []byte) (UserAgg, error) { return decodeGob[UserAgg](b) }
