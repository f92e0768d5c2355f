package ledger

import (
	"context"
	"testing"

	"github.com/dplr/dplr/engine/privacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fit is two write transactions: the reservation stores the data set's
// row sketch with the run, and the settle; the marker checkpoints both when
// the ledger is closed.
func TestFitIsTwoTransactionsCheckpointedAtClose(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openT(t, dir)
	h := hashOf("fit")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(3)))
	m, err := l.readMarker()
	require.NoError(t, err)
	before := m.Seq
	id, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(1), Sketch: []uint64{7, 9}})
	require.NoError(t, err)
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.5)}}))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, []uint64{7, 9}, st.Sketch, "the sketch is stored by the reservation")
	assert.Equal(t, before+2, l.view.head.Seq, "one record each for reserve and settle")
	m, err = l.readMarker()
	require.NoError(t, err)
	assert.Equal(t, before, m.Seq, "the marker is not rewritten on the fit's path")
	require.NoError(t, l.Close())
	l2 := openT(t, dir)
	m, err = l2.readMarker()
	require.NoError(t, err)
	assert.Equal(t, l2.view.head.Seq, m.Seq, "Close checkpointed the fit's records")
}

// A settle commits without a sync, so a power failure may lose it (and the
// marker does not name it before Close has made it durable). A ledger that
// lost its last settle opens without damage and counts the run at its
// whole grant: the loss never under-counts.
func TestLostSettleCountsTheWholeGrant(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openT(t, dir)
	h := hashOf("lost settle")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(3)))
	id := reserve(t, l, h, pureG(2))
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.5)}}))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, st.Spent.Epsilon, 1e-12)
	l.lag = false // the process dies before Close
	require.NoError(t, l.Close())
	db := rawDB(t, dir)
	_, err = db.Exec(`DELETE FROM chain WHERE seq = ?`, lastSeq(t, db)) // the unsynced settle is lost
	require.NoError(t, err)
	require.NoError(t, db.Close())

	l2 := openT(t, dir)
	st, err = l2.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 2, st.Spent.Epsilon, 1e-12, "charged the whole grant")
	assert.Equal(t, 1, st.Runs.Reserved+st.Runs.Interrupted)
}

// A settle's commit is the only lazy one: it runs with synchronous=NORMAL
// (1), every other write with FULL (2), and the connection the settle used
// is FULL again afterwards, so a later reservation on it is durable.
func TestOnlySettlesCommitLazily(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	var lazy, durable int
	require.NoError(t, l.writeLazy(ctx, "test", func(t *txn) error {
		return t.tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&lazy)
	}))
	require.NoError(t, l.write(ctx, "test", func(t *txn) error {
		return t.tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&durable)
	}))
	assert.Equal(t, 1, lazy, "a settle commits with synchronous=NORMAL")
	assert.Equal(t, 2, durable, "other writes commit with synchronous=FULL")
	// Every connection of the pool (at most two) is back to FULL.
	var conns []int
	for range 2 {
		c, err := l.db.Conn(ctx)
		require.NoError(t, err)
		defer c.Close()
		var v int
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&v))
		conns = append(conns, v)
	}
	assert.Equal(t, []int{2, 2}, conns)
}
