package ledger

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

// linkRun reserves grant on data fold, linked to the budgeted data set to
// in the reservation's transaction.
func linkRun(l *Ledger, fold, to string, eps float64) (RunID, error) {
	return l.Reserve(context.Background(), fold, ReserveRequest{Estimator: "e", Grant: pureG(eps), LinkTo: to})
}

// A run on a fold of a budgeted data set is linked there and charged there
// in one transaction: the history of the data set shows the run and the
// rows it read; a refused run links nothing; a fold that ran before the
// total was set is merged (its runs charged too); an unlinked fold is
// neither, so unlinking cannot be used to spend on the fold outside the
// budget, nor to count its charges twice.
func TestReserveLinksAFoldToItsDataSet(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openT(t, dir)
	d, f1, f2, g := hashOf("d"), hashOf("fold 1"), hashOf("fold 2"), hashOf("ran before")
	require.NoError(t, l.SetBudget(ctx, d, "d", pureG(3)))
	require.NoError(t, l.SetSketch(ctx, d, []uint64{1, 2, 3, 4}))

	id, err := l.Reserve(ctx, f1, ReserveRequest{Estimator: "e", Grant: pureG(1), LinkTo: d, Sketch: []uint64{1, 2}})
	require.NoError(t, err)
	sets, err := l.Datasets(ctx)
	require.NoError(t, err)
	require.Len(t, sets, 1)
	assert.Equal(t, []uint64{1, 2, 3, 4}, sets[0].Sketch, "a fold's rows never become the data set's sketch")
	settleOK(t, l, id, []privacy.Step{pureStep(1)}, "one row replaced")
	_, err = linkRun(l, f1, d, 1)
	require.NoError(t, err, "a fold already linked is charged there again")
	st, err := l.Show(ctx, f1)
	require.NoError(t, err)
	assert.Equal(t, d, st.DataHash, "the fold has no budget of its own")
	assert.Equal(t, []string{f1}, st.Aliases)
	assert.InDelta(t, 2, st.Spent.Epsilon, 1e-12)
	assert.Equal(t, 2, st.Runs.Linked)
	assert.Contains(t, st.String(), "via links: 2 of the runs")
	runs, err := l.History(ctx, d)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, f1, runs[0].Data, "the history names the rows the run read")
	ch, err := l.Changes(ctx, d)
	require.NoError(t, err)
	assert.Equal(t, "link", ch[len(ch)-1].Kind)
	assert.Equal(t, f1, ch[len(ch)-1].Alias)

	_, err = linkRun(l, f2, d, 1.5)
	require.ErrorIs(t, err, ErrBudgetExceeded)
	got, err := l.Resolve(ctx, f2)
	require.NoError(t, err)
	assert.Equal(t, f2, got, "a refused run links nothing")

	// A fold that ran before d had a total is merged in: d is charged
	// those runs too, in the same transaction as the new one.
	open := reserve(t, l, g, pureG(0.1))
	_, err = linkRun(l, g, d, 0.5)
	require.ErrorIs(t, err, ErrOverlap, "a run still open on it: not merged")
	settleOK(t, l, open, []privacy.Step{pureStep(0.1)}, "one row replaced")
	_, err = linkRun(l, g, d, 0.95)
	require.ErrorIs(t, err, ErrBudgetExceeded, "2 + 0.1 + 0.95 does not fit 3")
	assert.InDelta(t, 2, spentEps(t, l, d), 1e-12, "a refused run merges nothing")
	_, err = linkRun(l, g, d, 0.5)
	require.NoError(t, err)
	assert.InDelta(t, 2.6, spentEps(t, l, d), 1e-12)
	assert.InDelta(t, 2.6, spentEps(t, l, g), 1e-12, "g resolves to d")
	_, err = linkRun(l, hashOf("x"), hashOf("no total"), 0.5)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, err, ErrOverlap, "no data set to count against")
	budgeted := hashOf("own total")
	require.NoError(t, l.SetBudget(ctx, budgeted, "", pureG(1)))
	_, err = linkRun(l, budgeted, d, 0.1)
	require.ErrorIs(t, err, ErrOverlap, "a total of its own: an explicit merge only")

	require.NoError(t, l.Unlink(ctx, f1, "other people"))
	assert.InDelta(t, 2.6, spentEps(t, l, f1), 1e-12, "unlinked: charged all d was charged")
	_, err = linkRun(l, f1, d, 0.1)
	require.ErrorIs(t, err, ErrOverlap, "an unlinked fold is neither linked again nor merged (its charges are d's)")
	assert.InDelta(t, 2.6, spentEps(t, l, d), 1e-12, "nothing written by the refusals")

	_, err = l.Verify(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l = openT(t, dir)
	assert.InDelta(t, 2.6, spentEps(t, l, d), 1e-12)
}

// Folds racing to link themselves, from two ledger handles (as two
// processes), never overspend: the reservations are serialised with their
// links, and a fold is linked only by a run that was admitted.
func TestFoldsLinkingConcurrently(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ls := []*Ledger{openT(t, dir), openT(t, dir)}
	d := hashOf("d")
	require.NoError(t, ls[0].SetBudget(ctx, d, "d", pureG(1)))
	folds := []string{hashOf("f0"), hashOf("f1"), hashOf("f2"), hashOf("f3")}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ok      int
		charged = map[string]bool{}
	)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := folds[i%4]
			_, err := linkRun(ls[i%2], f, d, 0.125)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				charged[f] = true
			} else {
				assert.ErrorIs(t, err, ErrBudgetExceeded, fmt.Sprint(i))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 8, ok)
	st, err := ls[1].Show(ctx, d)
	require.NoError(t, err)
	assert.InDelta(t, 1, st.Spent.Epsilon, 1e-12)
	assert.Len(t, st.Aliases, len(charged), "exactly the folds with an admitted run are linked")
	for _, a := range st.Aliases {
		assert.True(t, charged[a])
	}
	_, err = ls[0].Verify(ctx)
	require.NoError(t, err)
}
