package fedrep

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/sdk"
)

// The personalization estimators' transform (sdk.Transformer): predictions
// for new rows of one user from the released U and that user's own head.

// personal gives every personalization estimator its transform.
type personal struct{}

// Transform implements sdk.Transformer (see transformUser).
func (personal) Transform(_ context.Context, m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	return transformUser(m, opts, x)
}

// transformUser applies a fitted personalization model to new rows x of
// one user (option user: its id as in the data set): ⟨x, U v_user⟩ for
// every row, or its sign (+1/−1) for a classifier (option labels: yes, no,
// or auto, signs for the fedrep-classify estimators). Only the user's row
// of V is read from V's file; the other users' heads are not touched. It
// is post-processing of the released U and the user's own head.
func transformUser(m *sdk.Model, opts map[string]string, x *mat.Dense) (sdk.Matrix, error) {
	for k := range opts {
		if k != "user" && k != "labels" {
			return sdk.Matrix{}, sdk.BadRequest("option %q: a personalization model takes user and labels", k)
		}
	}
	user, ok := opts["user"]
	if !ok {
		return sdk.Matrix{}, sdk.BadRequest("a personalization model predicts for one user: give its id (user)")
	}
	id, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return sdk.Matrix{}, sdk.BadRequest("user %q: want an integer id", user)
	}
	classify := strings.HasPrefix(m.Estimator, "fedrep-classify")
	switch opts["labels"] {
	case "yes":
		classify = true
	case "no":
		classify = false
	case "", "auto":
	default:
		return sdk.Matrix{}, sdk.BadRequest("labels %q: want yes, no or auto", opts["labels"])
	}
	u, err := m.Matrix("U")
	if err != nil {
		return sdk.Matrix{}, err
	}
	v, ok := m.Output("V")
	if u == nil || !ok || v.File == "" {
		return sdk.Matrix{}, sdk.BadRequest("the model has no U or no per-user heads V (was the fit run with output_v=false?)")
	}
	ids, err := m.Matrix("V_user_ids")
	if err != nil {
		return sdk.Matrix{}, err
	}
	row, ok := headRow(ids, id, math.MaxInt)
	if !ok {
		return sdk.Matrix{}, sdk.BadRequest("user %d has no head in the model", id)
	}
	f, err := os.Open(v.File)
	if err != nil {
		return sdk.Matrix{}, fmt.Errorf("opening V: %w", err)
	}
	defer f.Close()
	head, _, err := ReadNPYRow(f, row)
	if err != nil {
		return sdk.Matrix{}, sdk.BadRequest("user %d: %v", id, err)
	}
	pred, err := Predict(u, head, x, classify)
	if err != nil {
		return sdk.Matrix{}, err
	}
	return sdk.Matrix{Name: "predictions", M: mat.NewDense(len(pred), 1, pred), Doc: fmt.Sprintf("predictions for user %d", id)}, nil
}

// headRow is the row of V that holds user's head: the user's position in
// ids (V_user_ids) when the fit released them, the id itself among V's n
// rows otherwise; false when no row holds it.
func headRow(ids *mat.Dense, user int64, n int) (int, bool) {
	if ids == nil {
		return int(user), user >= 0 && user < int64(n)
	}
	for i := 0; i < ids.RawMatrix().Rows; i++ {
		if ids.At(i, 0) == float64(user) {
			return i, true
		}
	}
	return 0, false
}

// ErrUnknownUser is returned by HeadOf when the requested user has no head.
var ErrUnknownUser = errors.New("no head for this user")

// HeadOf returns the head v of one user from the per-user outputs of a
// FedRep-type fit: V (n×k, row i is the head of the i-th user) and ids
// (n×1, row i the id of that user; nil when the heads are in user order
// 0, 1, …). It reads the single row that belongs to the user and nothing
// else, so a user (or the data holder acting for it) never touches another
// user's head.
func HeadOf(v, ids *mat.Dense, user int64) ([]float64, error) {
	if v == nil {
		return nil, errors.New("head lookup: no V matrix")
	}
	n, k := v.Dims()
	if ids != nil {
		if r, c := ids.Dims(); r != n || c != 1 {
			return nil, fmt.Errorf("head lookup: ids are %d×%d, want %d×1", r, c, n)
		}
	}
	row, ok := headRow(ids, user, n)
	if !ok {
		return nil, fmt.Errorf("head lookup: user %d: %w", user, ErrUnknownUser)
	}
	out := make([]float64, k)
	copy(out, v.RawRowView(row))
	return out, nil
}

// Predict applies a fitted personalization model to new rows of one user:
// it returns ⟨x, U v⟩ for every row x of x (m×d), with U the released d×k
// representation and v the user's own head (length k). With classify it
// returns the sign instead (+1 where ⟨x, U v⟩ > 0, −1 elsewhere), the rule
// the classifiers' labels follow (plugins/fedrep/DERIVATIONS.md §1). Predict is pure
// post-processing of the release and the user's head: it reads no other
// user's data.
func Predict(u *mat.Dense, head []float64, x *mat.Dense, classify bool) ([]float64, error) {
	if u == nil || x == nil {
		return nil, errors.New("predict: U and the rows are required")
	}
	d, k := u.Dims()
	m, dx := x.Dims()
	if dx != d {
		return nil, fmt.Errorf("predict: rows have %d columns, U has %d rows", dx, d)
	}
	if len(head) != k {
		return nil, fmt.Errorf("predict: head has %d entries, U has %d columns", len(head), k)
	}
	w := make([]float64, d) // U v
	for p := 0; p < d; p++ {
		var s float64
		for a := 0; a < k; a++ {
			s += u.At(p, a) * head[a]
		}
		w[p] = s
	}
	out := make([]float64, m)
	for i := 0; i < m; i++ {
		var s float64
		for p, xp := range x.RawRowView(i) {
			s += xp * w[p]
		}
		if math.IsNaN(s) {
			return nil, fmt.Errorf("predict: row %d gives a value that is not a number", i)
		}
		if classify {
			s = signLabel(s)
		}
		out[i] = s
	}
	return out, nil
}

// npyShape matches the shape of a 2-D .npy header, e.g. "'shape': (5000, 3)".
var npyShape = regexp.MustCompile(`'shape':\s*\((\d+),\s*(\d+),?\s*\)`)

// ReadNPYRow reads row `row` of a 2-D little-endian float64 C-order .npy
// matrix (the format `dplr fit` writes) without reading the other rows: it
// parses the header and reads exactly the row's bytes. It returns the row
// and the matrix's number of rows.
func ReadNPYRow(r io.ReaderAt, row int) ([]float64, int, error) {
	pre := make([]byte, 12)
	if _, err := r.ReadAt(pre, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("npy: reading the preamble: %w", err)
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return nil, 0, errors.New("npy: not a .npy file")
	}
	var hlen, off int64
	switch pre[6] {
	case 1:
		hlen, off = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		hlen, off = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
	default:
		return nil, 0, fmt.Errorf("npy: version %d not supported", pre[6])
	}
	if hlen > 1<<20 {
		return nil, 0, errors.New("npy: header too long")
	}
	h := make([]byte, hlen)
	if _, err := r.ReadAt(h, off); err != nil {
		return nil, 0, fmt.Errorf("npy: reading the header: %w", err)
	}
	hs := string(h)
	if !strings.Contains(hs, "'<f8'") || !strings.Contains(hs, "'fortran_order': False") {
		return nil, 0, errors.New("npy: want a little-endian float64 matrix in C order")
	}
	m := npyShape.FindStringSubmatch(hs)
	if m == nil {
		return nil, 0, errors.New("npy: want a 2-D matrix")
	}
	rows, err1 := strconv.Atoi(m[1])
	cols, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || cols <= 0 || cols > 1<<20 {
		return nil, 0, errors.New("npy: bad shape")
	}
	if row < 0 || row >= rows {
		return nil, rows, fmt.Errorf("npy: row %d of %d", row, rows)
	}
	buf := make([]byte, 8*cols)
	if _, err := r.ReadAt(buf, off+hlen+int64(row)*int64(8*cols)); err != nil {
		return nil, rows, fmt.Errorf("npy: reading row %d: %w", row, err)
	}
	out := make([]float64, cols)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return out, rows, nil
}
