package fedrep

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
)

// userRows is one user's row ranges in the data set: the training half S⁰
// [t0, t1) used by the private rounds (and the initialization), the local
// half S¹ [t1, f1) used only for the user's own final head, and an optional
// evaluation hold-out [f1, h1).
type userRows struct{ t0, t1, f1, h1 int }

// layout is the per-user split of a Users data set.
type layout struct {
	users []userRows
	d     int
	maxM0 int // largest training half
}

// newLayout validates a Users data set and splits every user's rows. It
// never refuses because of a user's row count (private under user-level
// neighbours): a user whose training half is empty contributes zero to
// every private statistic.
func newLayout(ds *data.Dataset, localFrac, holdout float64) (*layout, error) {
	if ds == nil || ds.Kind != data.Users {
		return nil, fmt.Errorf("need a users data set")
	}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("invalid data: %w", err)
	}
	n := ds.NumUsers()
	if n < 1 {
		return nil, fmt.Errorf("data set has no users")
	}
	if len(ds.Y) != ds.N() {
		return nil, fmt.Errorf("%d rows but %d responses", ds.N(), len(ds.Y))
	}
	lay := &layout{users: make([]userRows, n), d: ds.P()}
	for u := 0; u < n; u++ {
		s, e := ds.UserStart[u], ds.UserStart[u+1]
		m := e - s
		m0, rest := pass.UserSplit(m, localFrac, holdout) // the passes split the same way
		lay.users[u] = userRows{t0: s, t1: s + m0, f1: s + rest, h1: e}
		lay.maxM0 = max(lay.maxM0, m0)
	}
	return lay, nil
}

// n is the number of users.
func (l *layout) n() int { return len(l.users) }

// perUserAssumption is the guarantee assumption stating how the per-user
// heads V are covered: the guarantee is about the public outputs, and row i
// of V (a function of the private U and user i's own rows only) must go to
// user i alone, which keeps every other user's row private with respect to
// user i (the billboard lemma).
const perUserAssumption = "V is released per user: row i (computed from the private U and user i's own rows only) goes to user i alone; the guarantee covers the public outputs, and by the billboard lemma the rows of all other users stay private with respect to user i"

// addUserIDs releases, beside the per-user heads V, the original id of the
// user each row of V belongs to (the ids as the data set gave them, in
// increasing order; users whose CSV ids were not integers are numbered by
// first appearance), so that the data holder can route row i to its user.
// Like V it is per-user material, not part of the public release.
func addUserIDs(res *sdk.Result, ds *data.Dataset) {
	if len(ds.UserIDs) != ds.NumUsers() || len(ds.UserIDs) == 0 {
		return
	}
	ids := make([]float64, len(ds.UserIDs))
	for i, id := range ds.UserIDs {
		ids[i] = float64(id)
	}
	res.AddMatrix("V_user_ids", mat.NewDense(len(ids), 1, ids), sdk.PerUser,
		"row i is the id of the user whose head is row i of V (exact for ids below 2^53); for routing each head to its user, not for publication")
}
