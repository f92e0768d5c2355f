package ledger

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

// spentEps is the ε spent on ref under a pure total.
func spentEps(t *testing.T, l *Ledger, ref string) float64 {
	t.Helper()
	st, err := l.Show(context.Background(), ref)
	require.NoError(t, err)
	return st.Spent.Epsilon
}

// charge records an outside pure ε spend on ref.
func charge(t *testing.T, l *Ledger, ref string, eps float64) {
	t.Helper()
	_, err := l.RecordCharge(context.Background(), ref, ChargeRequest{Cost: pureG(eps), Note: "test"})
	require.NoError(t, err)
}

// Merging two budgets that cover the same people charges the one kept
// with every charge of the other, so that neither data set's spending is
// under-counted; the merged hash then resolves to the data set kept, and
// the ledger verifies and reopens from its checkpoint (issue 26 §2: a
// total set on a subset copy of a budgeted data set).
func TestMergeNeverUnderCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openT(t, dir)
	a, sub := hashOf("a.npy"), hashOf("first 200 rows")
	require.NoError(t, l.SetBudget(ctx, a, "a", pureG(10)))
	charge(t, l, a, 1)
	require.NoError(t, l.SetBudget(ctx, sub, "sub", pureG(5)))
	charge(t, l, sub, 2)
	settleOK(t, l, reserve(t, l, sub, pureG(0.5)), []privacy.Step{pureStep(0.5)}, "one row replaced")
	open := reserve(t, l, sub, pureG(0.25))
	require.ErrorIs(t, l.Merge(ctx, "sub", "a", "same people", false), ErrInvalid, "a run still running is not merged")
	settleOK(t, l, open, []privacy.Step{pureStep(0.25)}, "one row replaced")

	require.NoError(t, l.Merge(ctx, "sub", "a", "same people", false))
	assert.InDelta(t, 1+2+0.5+0.25, spentEps(t, l, a), 1e-12, "a is charged every charge of sub")
	assert.InDelta(t, 1+2+0.5+0.25, spentEps(t, l, sub), 1e-12, "sub resolves to a")
	got, err := l.Resolve(ctx, sub)
	require.NoError(t, err)
	assert.Equal(t, a, got)
	charge(t, l, sub, 1)
	assert.InDelta(t, 4.75, spentEps(t, l, a), 1e-12, "a charge on the merged hash goes to a")
	_, err = l.Reserve(ctx, a, ReserveRequest{Estimator: "e", Grant: pureG(5.5)})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	reserve(t, l, a, pureG(5.25))
	ch, err := l.Changes(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, "merge", ch[len(ch)-1].Kind)
	assert.Equal(t, sub, ch[len(ch)-1].Alias)

	_, err = l.Verify(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l = openT(t, dir)
	assert.InDelta(t, 10, spentEps(t, l, sub), 1e-12, "reopened from the checkpoint")
	require.ErrorIs(t, l.Unlink(ctx, sub, ""), ErrInvalid, "a merged data set's charges belong to the one kept")
}

// A merge whose charges do not fit the budget kept is refused with
// nothing written, or recorded with force; either way nothing is lost.
func TestMergeBeyondTheBudget(t *testing.T) {
	ctx := context.Background()
	for _, force := range []bool{false, true} {
		l := openT(t, t.TempDir())
		a, b := hashOf("a"), hashOf("b")
		require.NoError(t, l.SetBudget(ctx, a, "a", pureG(3)))
		charge(t, l, a, 2)
		charge(t, l, b, 2)
		head := l.view.head
		err := l.Merge(ctx, b, a, "", force)
		require.ErrorIs(t, err, ErrBudgetExceeded)
		assert.Contains(t, err.Error(), "ε = 2")
		if !force {
			assert.Equal(t, head, l.view.head, "nothing written")
			assert.InDelta(t, 2, spentEps(t, l, b), 1e-12)
			continue
		}
		assert.InDelta(t, 4, spentEps(t, l, b), 1e-12)
		require.NoError(t, l.ChangeBudget(ctx, a, pureG(5), "merged"))
		reserve(t, l, a, pureG(1))
	}
}

// Unlinking a file gives it a data set of its own charged everything the
// data set it was linked to was charged; that data set keeps its charges.
func TestUnlinkNeverUnderCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openT(t, dir)
	a, x := hashOf("a"), hashOf("x")
	require.NoError(t, l.SetBudget(ctx, a, "a", pureG(10)))
	require.NoError(t, l.Link(ctx, x, a, ""))
	charge(t, l, x, 1)
	charge(t, l, a, 2)
	reserve(t, l, a, pureG(0.5))
	require.ErrorIs(t, l.Unlink(ctx, a, ""), ErrInvalid, "a data set is no link")

	require.NoError(t, l.Unlink(ctx, x, "other people after all"))
	assert.InDelta(t, 3.5, spentEps(t, l, a), 1e-12, "a keeps its charges and its open run")
	st, err := l.Show(ctx, x)
	require.NoError(t, err)
	assert.Equal(t, x, st.DataHash)
	assert.False(t, st.HasBudget)
	assert.InDelta(t, 3.5, st.Spent.Epsilon, 1e-12, "x is charged all a was charged")
	st, err = l.Show(ctx, a)
	require.NoError(t, err)
	assert.Empty(t, st.Aliases)
	ch, err := l.Changes(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, "unlink", ch[len(ch)-1].Kind)
	_, err = l.History(ctx, x)
	require.NoError(t, err)
	require.ErrorIs(t, l.Unlink(ctx, x, ""), ErrInvalid, "no longer linked")

	require.NoError(t, l.SetBudget(ctx, x, "x", pureG(4)))
	_, err = l.Reserve(ctx, x, ReserveRequest{Estimator: "e", Grant: pureG(1)})
	require.ErrorIs(t, err, ErrBudgetExceeded, "x's inherited 3.5 counts against its own total")
	require.NoError(t, l.Link(ctx, hashOf("y"), x, ""), "x links files of its own")

	_, err = l.Verify(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l = openT(t, dir)
	assert.InDelta(t, 3.5, spentEps(t, l, x), 1e-12)
}

// A run whose steps are all pure is charged the true statement that
// leaves the most room: under a (3, 1e-6) total, ten exponential steps of
// ε = 0.1371 (pure 1.371, and (0.958, 1e-6) by their privacy loss
// distribution) granted (1, 1e-6) leave room for more runs instead of
// spending all of δ (issue 26 §5).
func TestPureRunChargedItsRoomiestStatement(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("d")
	total := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 3, Delta: 1e-6}
	require.NoError(t, l.SetBudget(ctx, h, "d", total))
	var steps []privacy.Step
	for range 10 {
		steps = append(steps, privacy.Step{Name: "q", Mechanism: privacy.MechExponential, Calibration: "pure", Epsilon: 0.1371})
	}
	grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	id := reserve(t, l, h, grant)
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps, Guarantee: privacy.Pure, Neighbours: "one row replaced"}))
	run, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.InDelta(t, 1.371, run.Charge.Epsilon, 1e-12, "charged its pure statement")
	assert.Zero(t, run.Charge.Delta)
	assert.InDelta(t, 10*0.1371*0.1371/2, run.Charge.Rho, 1e-12, "with its steps' zCDP total")
	reserve(t, l, h, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-7})

	// Under a total its pure statement does not fit, the (ε, δ) one is
	// charged.
	h2 := hashOf("d2")
	require.NoError(t, l.SetBudget(ctx, h2, "d2", privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1.2, Delta: 1e-6}))
	id = reserve(t, l, h2, grant)
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps, Guarantee: privacy.Pure, Neighbours: "one row replaced"}))
	run, err = l.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 1e-6, run.Charge.Delta)
	assert.Less(t, run.Charge.Epsilon, 1.0)
}
