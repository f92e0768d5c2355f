// Package predict applies a fitted personalization model (a shared
// representation U and per-user heads, from fedrep-private,
// fedrep-nonprivate, fedrep-privaltmin or fedrep-classify) to new rows of
// one user. It is pure post-processing of the released U and that user's
// own head, depends on nothing but gonum, and is what `dplr` uses to
// predict without starting the plugin.
package predict

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

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
	row := -1
	if ids == nil {
		if user >= 0 && user < int64(n) {
			row = int(user)
		}
	} else {
		r, c := ids.Dims()
		if r != n || c != 1 {
			return nil, fmt.Errorf("head lookup: ids are %d×%d, want %d×1", r, c, n)
		}
		for i := 0; i < n; i++ {
			if ids.At(i, 0) == float64(user) {
				row = i
				break
			}
		}
	}
	if row < 0 {
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

// signLabel is the ±1 label of a score: +1 where s > 0, −1 elsewhere.
func signLabel(s float64) float64 {
	if s > 0 {
		return 1
	}
	return -1
}
