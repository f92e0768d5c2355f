package ledger

import (
	"context"
	"os"
	"path/filepath"
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

// A crash while a settle commits (before its sync returns) may lose it. A
// ledger that lost its last settle opens without damage and counts the
// run at its whole grant: the loss never under-counts.
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
	_, err = db.Exec(`DELETE FROM chain WHERE seq = ?`, lastSeq(t, db)) // the settle is lost
	require.NoError(t, err)
	require.NoError(t, db.Close())

	l2 := openT(t, dir)
	st, err = l2.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 2, st.Spent.Epsilon, 1e-12, "charged the whole grant")
	assert.Equal(t, 1, st.Runs.Reserved+st.Runs.Interrupted)
}

// Every commit, a settle's included, runs with synchronous=FULL on every
// connection of the pool: a settle is on disk when Settle returns, before
// the caller releases anything.
func TestEveryCommitIsSynced(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("synced")
	id := reserve(t, l, h, pureG(1))
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.5)}}))
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

// A crash at each point of a fit's end: after the settle committed and
// before the marker (the marker lags), and after the marker before the
// database closed (the WAL is not yet copied into the database file). The
// files as they are at that point open without damage and give the
// settled charge; the marker never names more than the files hold.
func TestCrashAtEachPointOfClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marked bool
	}{{"settled, marker not written", false}, {"marker written, database open", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			l := openT(t, dir)
			h := hashOf("crash at close")
			require.NoError(t, l.SetBudget(ctx, h, "", pureG(3)))
			id := reserve(t, l, h, pureG(2))
			require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.5)}}))
			if tc.marked {
				l.mu.Lock()
				require.NoError(t, l.writeMarker(""))
				l.mu.Unlock()
			}
			crashed := t.TempDir()
			for _, f := range []string{FileName, FileName + "-wal", MarkerName} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(crashed, f), b, 0o600))
			}
			require.NoError(t, l.Close())

			l2 := openT(t, crashed)
			st, err := l2.Show(ctx, h)
			require.NoError(t, err)
			assert.InDelta(t, 0.5, st.Spent.Epsilon, 1e-12, "the settled charge")
			assert.Equal(t, 1, st.Runs.Succeeded)
			m, err := l2.readMarker()
			require.NoError(t, err)
			assert.LessOrEqual(t, m.Seq, l2.view.head.Seq)
			if tc.marked {
				assert.Equal(t, l2.view.head.Seq, m.Seq, "the marker names the settle")
			}
		})
	}
}
