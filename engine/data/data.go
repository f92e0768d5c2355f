// Package data defines the in-memory data sets dplr's estimators read: a
// kind, a dense design matrix (possibly backed by a read-only memory map,
// or kept as the bytes of its source with a scale: Bytes),
// responses and, for user-grouped data, the user boundaries; or, for rows
// data aggregated elsewhere (a Beam pipeline), only the rows' statistics.
package data

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Kind names the shape of a data set.
type Kind string

// Data kinds.
const (
	// Rows is an n×p matrix with one observation per row.
	Rows Kind = "rows"
	// Trace is trace-regression data: n samples X_i ∈ ℝ^{d1×d2} stored as
	// the rows of an n×(d1·d2) matrix (each X_i flattened row-major, as a
	// C-order n×d1×d2 array is), and n responses y_i.
	Trace Kind = "trace"
	// Users is user-grouped regression data: rows of features with a
	// response, grouped by user so that user u owns rows
	// UserStart[u] ≤ i < UserStart[u+1].
	Users Kind = "users"
)

// Kinds lists every kind, for validation and help texts.
var Kinds = []Kind{Rows, Trace, Users}

// Dataset is a validated data set. X may be backed by a read-only memory
// map: estimators must treat it (and Y) as read-only.
type Dataset struct {
	Kind Kind
	X    *mat.Dense
	// XBytes, when set on a rows data set, holds X compactly in its place
	// (X nil): the rows of a source of bytes, served to aggregation passes
	// decoded block by block. A fit that needs X itself gets
	// WithDenseX's copy.
	XBytes    *Bytes
	Y         []float64 // Trace, Users: one response per row
	D1, D2    int       // Trace: the shape of each sample matrix
	UserStart []int     // Users: len = number of users + 1
	UserIDs   []int64   // Users: the original id of each user
	Labels    []int     // optional integer class label per row
	Hash      string    // content hash identifying the data (hex SHA-256)
	Name      string    // optional human name
	// Remote, when set, replaces X, Y and the side columns: the data set
	// is held elsewhere and reachable only through aggregation passes
	// (Remote.Passer). Only estimators that declare the pass kinds they
	// use (sdk.Info.Passes) accept it.
	Remote *Remote
	// ColumnScaled records that every column was divided by a public
	// per-column scale when the data set was read (the user's column
	// scales): a table in its own units, whose columns sit at their own
	// offsets from zero. Public, like the shape.
	ColumnScaled bool
}

// Statistics are the aggregates of a rows data set that estimators built on
// the clipped second moment need: the row count, the clipped sum and the
// clipped second moment, each row x_i weighted by w_i = min(1, Clip/‖x_i‖)
// before aggregation (w_i = 1 when Clip is 0: no clipping). Contribution
// bounding happens before the sums, so replacing one row changes Sum by at
// most 2·Clip in ℓ2 and Moment by at most √2·Clip² in Frobenius norm.
type Statistics struct {
	// N is the number of rows aggregated; P the number of columns.
	N, P int
	// Clip is the public row-norm bound applied before aggregation (0: the
	// rows were aggregated unclipped).
	Clip float64
	// Sum is Σ w_i x_i (length P).
	Sum []float64
	// Moment is Σ w_i² x_i x_iᵀ (P×P), not divided by N.
	Moment *mat.SymDense
}

// Check validates the statistics' shapes and values: N ≥ 1, shapes P and
// P×P, every value finite, the diagonal of Moment non-negative, and, when
// Clip is set, the bounds clipping implies (‖Sum‖ ≤ N·Clip,
// trace(Moment) ≤ N·Clip², up to rounding).
func (s *Statistics) Check() error {
	if s.N < 1 || s.P < 1 {
		return fmt.Errorf("statistics: shape n = %d, p = %d", s.N, s.P)
	}
	if !(s.Clip >= 0) || math.IsInf(s.Clip, 0) {
		return fmt.Errorf("statistics: clip %v is not a non-negative number", s.Clip)
	}
	if len(s.Sum) != s.P {
		return fmt.Errorf("statistics: sum of %d values, want p = %d", len(s.Sum), s.P)
	}
	if s.Moment == nil || s.Moment.SymmetricDim() != s.P {
		return fmt.Errorf("statistics: second moment is not %d×%d", s.P, s.P)
	}
	var norm2, trace float64
	for j, v := range s.Sum {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("statistics: sum entry %d = %v is not finite", j, v)
		}
		norm2 += v * v
	}
	for i := 0; i < s.P; i++ {
		for j := i; j < s.P; j++ {
			if v := s.Moment.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("statistics: second-moment entry (%d, %d) = %v is not finite", i, j, v)
			}
		}
		d := s.Moment.At(i, i)
		if d < 0 {
			return fmt.Errorf("statistics: second-moment diagonal entry %d is negative (a sum of squares cannot be)", i)
		}
		trace += d
	}
	if s.Clip > 0 {
		const slack = 1 + 1e-9
		n := float64(s.N)
		if math.Sqrt(norm2) > n*s.Clip*slack {
			return fmt.Errorf("statistics: the sum's norm exceeds n·clip: the rows were not clipped to %g", s.Clip)
		}
		if trace > n*s.Clip*s.Clip*slack {
			return fmt.Errorf("statistics: the second moment's trace exceeds n·clip²: the rows were not clipped to %g", s.Clip)
		}
	}
	return nil
}

// N returns the number of rows.
func (d *Dataset) N() int { n, _ := d.dims(); return n }

// P returns the number of columns of X.
func (d *Dataset) P() int { _, p := d.dims(); return p }

// dims returns the shape of X, wherever it is held.
func (d *Dataset) dims() (n, p int) {
	switch {
	case d.X == nil && d.XBytes != nil:
		return d.XBytes.Dims()
	case d.X == nil && d.Remote != nil:
		return d.Remote.N, d.Remote.P
	}
	return d.X.Dims()
}

// WithDenseX returns d itself when X is held as float64, else a copy
// whose X is XBytes decoded.
func (d *Dataset) WithDenseX() *Dataset {
	if d == nil || d.X != nil || d.XBytes == nil {
		return d
	}
	cp := *d
	cp.X, cp.XBytes = d.XBytes.Dense(), nil
	return &cp
}

// NumUsers returns the number of users of a Users data set.
func (d *Dataset) NumUsers() int {
	if d.X == nil && d.Remote != nil {
		return d.Remote.Users
	}
	return max(len(d.UserStart)-1, 0)
}

// Sample returns sample i of a Trace data set as a d1×d2 view (no copy).
func (d *Dataset) Sample(i int) *mat.Dense {
	row := d.X.RawRowView(i)
	return mat.NewDense(d.D1, d.D2, row)
}

// Validate checks shapes, finiteness and kind-specific structure.
func (d *Dataset) Validate() error {
	if err := d.CheckShape(); err != nil {
		return err
	}
	if d.Remote != nil || d.X == nil && d.XBytes != nil {
		return nil // remote values are checked per pass; bytes are finite
	}
	n, p := d.X.Dims()
	raw := d.X.RawMatrix()
	for i := 0; i < n; i++ {
		for j, v := range raw.Data[i*raw.Stride : i*raw.Stride+p] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("row %d, column %d: value %v is not finite", i, j, v)
			}
		}
	}
	for i, v := range d.Y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("response %d: value %v is not finite", i, v)
		}
	}
	return nil
}

// CheckShape checks the shapes and the kind-specific structure (trace
// dimensions, responses, user boundaries, labels) but not the values.
func (d *Dataset) CheckShape() error {
	if d.Remote != nil {
		if d.X != nil || d.Y != nil || d.UserStart != nil || d.Labels != nil {
			return fmt.Errorf("a remote data set carries no rows or side columns")
		}
		if d.Kind == Trace && (d.D1 != d.Remote.D1 || d.D2 != d.Remote.D2) {
			return fmt.Errorf("remote trace data: shape %d×%d but the remote holds %d×%d", d.D1, d.D2, d.Remote.D1, d.Remote.D2)
		}
		return d.Remote.check(d.Kind)
	}
	var n, p int
	switch {
	case d.X != nil && !d.X.IsEmpty():
		n, p = d.X.Dims()
	case d.X == nil && d.XBytes != nil:
		if err := d.XBytes.check(); err != nil {
			return err
		}
		n, p = d.XBytes.Dims()
		if d.Kind != Rows {
			return fmt.Errorf("%s data held as bytes (only rows data is)", d.Kind)
		}
	default:
		return fmt.Errorf("data set has no rows")
	}
	switch d.Kind {
	case Rows:
	case Trace:
		if d.D1 < 1 || d.D2 < 1 || d.D1*d.D2 != p {
			return fmt.Errorf("trace data: rows of length %d do not hold %d×%d matrices", p, d.D1, d.D2)
		}
		if len(d.Y) != n {
			return fmt.Errorf("trace data: %d samples but %d responses", n, len(d.Y))
		}
	case Users:
		if len(d.Y) != n {
			return fmt.Errorf("user data: %d rows but %d responses", n, len(d.Y))
		}
		if len(d.UserStart) < 2 || d.UserStart[0] != 0 || d.UserStart[len(d.UserStart)-1] != n {
			return fmt.Errorf("user data: user boundaries do not cover the %d rows", n)
		}
		for u := 1; u < len(d.UserStart); u++ {
			if d.UserStart[u] <= d.UserStart[u-1] {
				return fmt.Errorf("user data: user %d has no rows", u-1)
			}
		}
	default:
		return fmt.Errorf("unknown data kind %q", d.Kind)
	}
	if d.Labels != nil && len(d.Labels) != n {
		return fmt.Errorf("%d rows but %d labels", n, len(d.Labels))
	}
	return nil
}
