package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

func settleOK(t *testing.T, l *Ledger, id RunID, steps []privacy.Step, neighbours string) {
	t.Helper()
	require.NoError(t, l.Settle(context.Background(), id, Outcome{Status: Succeeded, Steps: steps,
		Guarantee: privacy.Pure, Neighbours: neighbours}))
}

// A linked file counts against the data set it is linked to, under every
// operation; a file with a history of its own is not merged.
func TestLinkSharesOneBudget(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h, alias, other := hashOf("csv"), hashOf("npy copy"), hashOf("other")
	require.NoError(t, l.SetBudget(ctx, h, "faces", pureG(2)))
	require.NoError(t, l.Link(ctx, alias, "faces", "the same images as .npy"))
	require.NoError(t, l.Link(ctx, alias, h, ""), "linking again is a no-op")

	settleOK(t, l, reserve(t, l, alias, pureG(1.5)), []privacy.Step{pureStep(1.5)}, "one row replaced")
	_, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(1)})
	require.ErrorIs(t, err, ErrBudgetExceeded, "the run on the alias is charged to the data set")
	st, err := l.Show(ctx, alias)
	require.NoError(t, err)
	assert.Equal(t, h, st.DataHash)
	assert.Equal(t, []string{alias}, st.Aliases)
	assert.InDelta(t, 1.5, st.Spent.Epsilon, 1e-12)
	got, err := l.Resolve(ctx, alias)
	require.NoError(t, err)
	assert.Equal(t, h, got)
	got, err = l.Resolve(ctx, "faces")
	require.NoError(t, err)
	assert.Equal(t, h, got)
	runs, err := l.History(ctx, alias)
	require.NoError(t, err)
	assert.Len(t, runs, 1)
	ch, err := l.Changes(ctx, h)
	require.NoError(t, err)
	require.Len(t, ch, 3)
	assert.Equal(t, "link", ch[2].Kind)
	assert.Equal(t, "the same images as .npy", ch[2].Note)

	reserve(t, l, other, pureG(0.1))
	require.ErrorIs(t, l.Link(ctx, other, h, ""), ErrInvalid, "a file with records of its own is not merged")
	require.ErrorIs(t, l.Link(ctx, hashOf("x"), "nobody", ""), ErrNotFound)
}

// A spend made outside dplr is recorded with its note; one beyond the
// total is refused with nothing written, unless forced, after which the
// data set admits nothing more.
func TestRecordCharge(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("survey")
	require.NoError(t, l.SetBudget(ctx, h, "survey", approxG(2, 1e-5)))
	_, err := l.RecordCharge(ctx, "survey", ChargeRequest{Cost: approxG(1, 1e-6)})
	require.ErrorIs(t, err, ErrInvalid, "a note is required")
	id, err := l.RecordCharge(ctx, "survey", ChargeRequest{Cost: approxG(1, 1e-6), Note: "2025 release, by hand"})
	require.NoError(t, err)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 1, st.Spent.Epsilon, 1e-12)
	assert.Equal(t, 1, st.Runs.External)
	id2, err := l.RecordCharge(ctx, h, ChargeRequest{Cost: approxG(1.5, 1e-6), Note: "a second release"})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	assert.Zero(t, id2, "refused")
	id2, err = l.RecordCharge(ctx, h, ChargeRequest{Cost: approxG(1.5, 1e-6), Note: "a second release", Force: true})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	assert.Positive(t, int64(id2), "recorded when forced")
	_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: approxG(0.01, 1e-9)})
	require.ErrorIs(t, err, ErrBudgetExceeded)
	runs, err := l.History(ctx, h)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, id, runs[0].ID)
	assert.Equal(t, "(outside dplr)", runs[0].Estimator)
	assert.Equal(t, "external", runs[0].Basis)
	assert.Contains(t, runs[0].Note, "2025 release")
}

// A total changes only explicitly, never below what is spent, and the
// history keeps the old and new values.
func TestChangeBudgetIsRecorded(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("census")
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))
	settleOK(t, l, reserve(t, l, h, pureG(0.75)), []privacy.Step{pureStep(0.75)}, "one row replaced")
	require.ErrorIs(t, l.SetBudget(ctx, h, "", pureG(2)), ErrBudgetSet)
	require.ErrorIs(t, l.ChangeBudget(ctx, h, pureG(0.5), "too low"), ErrBudgetExceeded)
	require.NoError(t, l.ChangeBudget(ctx, h, pureG(2), "approved by the board"))
	ch, err := l.Changes(ctx, h)
	require.NoError(t, err)
	require.Len(t, ch, 3)
	assert.Nil(t, ch[1].Old)
	require.NotNil(t, ch[2].Old)
	assert.InDelta(t, 1, ch[2].Old.Epsilon, 0)
	assert.InDelta(t, 2, ch[2].New.Epsilon, 0)
	assert.Contains(t, ch[2].String(), "changed from pure ε-DP, ε = 1 to pure ε-DP, ε = 2 (approved by the board)")
	require.ErrorIs(t, l.ChangeBudget(ctx, hashOf("none"), pureG(1), ""), ErrNotFound)
}

// Runs made under another neighbour relation are converted to the
// budget's by group privacy, or refused.
func TestRelationConversion(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		budgetRel  Relation
		neighbours string
		wantEps    float64
		wantErr    error
	}{
		{"same relation", ReplaceRow, "one row replaced by an arbitrary row", 1, nil},
		{"model-based, same relation", ReplaceRow, "one row replaced by an independent draw from the same model", 1, nil},
		{"add/remove costs twice under replace-one", ReplaceRow, "one user's row added or removed (rows clipped to norm ≤ clip)", 2, nil},
		{"user level holds for rows", ReplaceRow, "one user's whole data replaced (user level, n public)", 1, nil},
		{"row level says nothing of users", ReplaceUser, "one row replaced by an arbitrary row", 0, ErrRelation},
		{"replace-one says nothing of add/remove", AddRemoveRow, "one row replaced", 0, ErrRelation},
		{"unreadable relation", ReplaceRow, "something else", 0, ErrRelation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := openT(t, t.TempDir())
			h := hashOf(tc.name)
			require.NoError(t, l.SetRelation(ctx, h, tc.budgetRel))
			require.NoError(t, l.SetBudget(ctx, h, "", pureG(3)))
			id := reserve(t, l, h, pureG(1))
			err := l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(1)}, Guarantee: privacy.Model, Neighbours: tc.neighbours})
			runs, herr := l.History(ctx, h)
			require.NoError(t, herr)
			require.Len(t, runs, 1)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Equal(t, Failed, runs[0].State, "the result must be withheld")
				assert.InDelta(t, 1, runs[0].Charge.Epsilon, 1e-12, "charged its grant")
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tc.wantEps, runs[0].Charge.Epsilon, 1e-12)
			assert.Equal(t, "model-based", runs[0].Class)
			assert.Equal(t, tc.neighbours, runs[0].Neighbours)
		})
	}

	t.Run("converted cost beyond the budget is withheld", func(t *testing.T) {
		l := openT(t, t.TempDir())
		h := hashOf("tight")
		require.NoError(t, l.SetBudget(ctx, h, "", pureG(1.5)))
		id := reserve(t, l, h, pureG(1))
		err := l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(1)}, Neighbours: "one row added or removed"})
		require.ErrorIs(t, err, ErrBudgetExceeded)
		st, err := l.Show(ctx, h)
		require.NoError(t, err)
		assert.Equal(t, 1, st.Runs.Failed)
		assert.InDelta(t, 1, st.Spent.Epsilon, 1e-12)
	})

	t.Run("relation known before the run", func(t *testing.T) {
		l := openT(t, t.TempDir())
		h := hashOf("known")
		require.NoError(t, l.SetBudget(ctx, h, "", pureG(3)))
		req := ReserveRequest{Estimator: "orbit-em", Grant: pureG(1), Neighbours: "one user's row added or removed"}
		id, err := l.Reserve(ctx, h, req)
		require.NoError(t, err)
		st, err := l.Show(ctx, h)
		require.NoError(t, err)
		assert.InDelta(t, 2, st.Spent.Epsilon, 1e-12, "an add/remove ε = 1 run reserves 2")
		_, err = l.Reserve(ctx, h, req)
		require.ErrorIs(t, err, ErrBudgetExceeded, "refused before it runs")
		require.NoError(t, l.Settle(ctx, id, Outcome{Status: Failed, NoiseDrawn: true, Error: "boom"}))
		st, err = l.Show(ctx, h)
		require.NoError(t, err)
		assert.InDelta(t, 2, st.Spent.Epsilon, 1e-12, "a failure stays charged its converted grant")
		_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(1), Neighbours: "gibberish"})
		require.ErrorIs(t, err, ErrRelation)
	})

	t.Run("relation fixed once charged", func(t *testing.T) {
		l := openT(t, t.TempDir())
		h := hashOf("fixed")
		reserve(t, l, h, pureG(1))
		require.ErrorIs(t, l.SetRelation(ctx, h, ReplaceUser), ErrInvalid)
		st, err := l.Show(ctx, h)
		require.NoError(t, err)
		assert.Equal(t, ReplaceRow, st.Relation)
	})

	t.Run("users data defaults to user level", func(t *testing.T) {
		l := openT(t, t.TempDir())
		h := hashOf("users")
		_, err := l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(1), Relation: ReplaceUser})
		require.NoError(t, err)
		st, err := l.Show(ctx, h)
		require.NoError(t, err)
		assert.Equal(t, ReplaceUser, st.Relation)
	})
}

func TestParseNeighbours(t *testing.T) {
	tests := []struct {
		text string
		want Relation
	}{
		{"one row replaced", ReplaceRow},
		{"one row replaced (n public)", ReplaceRow},
		{"one observation (X_i, y_i) replaced by any other", ReplaceRow},
		{"one response y_i replaced by an independent model draw (weak DP: the design X_i is public and shared by neighbours)", ReplaceRow},
		{"one user's row replaced (rows clipped to norm ≤ clip)", ReplaceRow},
		{"one user's row added or removed (rows clipped to norm ≤ clip)", AddRemoveRow},
		{"one user's whole data replaced (user level, n public)", ReplaceUser},
		{"one user's data added or removed", AddRemoveUser},
	}
	for _, tc := range tests {
		got, err := ParseNeighbours(tc.text)
		require.NoError(t, err, tc.text)
		assert.Equal(t, tc.want, got, tc.text)
	}
	_, err := ParseNeighbours("")
	require.ErrorIs(t, err, ErrRelation)
}

// What Show reports as remaining is what admission allows: float dust is
// none, and a reported figure is admitted.
func TestShowReportsWhatAdmissionAllows(t *testing.T) {
	ctx := context.Background()

	t.Run("float dust is none", func(t *testing.T) {
		l := openT(t, t.TempDir())
		h := hashOf("dust")
		require.NoError(t, l.SetBudget(ctx, h, "", approxG(0.3, 3e-6)))
		for i := 0; i < 3; i++ {
			id := reserve(t, l, h, approxG(0.1, 1e-6))
			require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{{Name: "c", Epsilon: 0.1, Delta: 1e-6}}}))
		}
		st, err := l.Show(ctx, h)
		require.NoError(t, err)
		assert.Equal(t, Remaining{}, st.Remaining)
		assert.Contains(t, st.String(), "remaining: none")
		_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: approxG(1e-6, 1e-12)})
		require.ErrorIs(t, err, ErrBudgetExceeded)
	})

	// Three (1, 1e-6) runs settled by zCDP under (3, 1e-5): no (ε, δ) run
	// fits any more (basic composition), but ρ runs do (zCDP composition):
	// Show says both, and the figures are admitted.
	t.Run("the forms admission allows", func(t *testing.T) {
		l := openT(t, t.TempDir())
		h := hashOf("forms")
		require.NoError(t, l.SetBudget(ctx, h, "", approxG(3, 1e-5)))
		g := approxG(1, 1e-6)
		rhoCap, err := privacy.RhoForEpsDelta(1, 1e-6)
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			id := reserve(t, l, h, g)
			require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{{Name: "g", Mechanism: privacy.MechGaussian, Rho: rhoCap}}}))
		}
		st, err := l.Show(ctx, h)
		require.NoError(t, err)
		assert.Zero(t, st.Remaining.Epsilon)
		require.Positive(t, st.Remaining.Rho)
		text := st.RemainingText()
		assert.False(t, strings.Contains(text, "ε ="), text)
		assert.Contains(t, text, "a ρ = ")
		_, err = l.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: approxG(0.01, 1e-9)})
		require.ErrorIs(t, err, ErrBudgetExceeded)
		reserve(t, l, h, zcdpG(st.Remaining.Rho))
		st, err = l.Show(ctx, h)
		require.NoError(t, err)
		assert.Equal(t, Remaining{}, st.Remaining)
	})
}

func TestSketch(t *testing.T) {
	ctx := context.Background()
	l := openT(t, t.TempDir())
	h := hashOf("sk")
	require.NoError(t, l.SetSketch(ctx, h, []uint64{1, 1 << 63, 42}))
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 1 << 63, 42}, st.Sketch)
	require.NoError(t, l.SetSketch(ctx, h, []uint64{7}))
	ds, err := l.Datasets(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, []uint64{7}, ds[0].Sketch)
}

// A ledger written by an earlier dplr (schema 1, no chain, no marker) is
// imported into the chain on first open: its budgets and charges carry over.
func TestImportsSchemaOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := rawDB(t, dir)
	_, err := db.Exec(fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)`)
	require.NoError(t, err)
	for _, stmt := range strings.Split(migrations[0].sql, ";\n") {
		if strings.TrimSpace(stmt) != "" {
			_, err = db.Exec(stmt)
			require.NoError(t, err)
		}
	}
	h := hashOf("old")
	_, err = db.Exec(`INSERT INTO schema_migrations VALUES (1, 'v1', 'then');
INSERT INTO datasets(hash, name, created_at, budget_kind, budget_epsilon, budget_set_at) VALUES ('` + h + `', 'old', '2026-01-01T00:00:00Z', 'pure', 3, '2026-01-01T00:00:00Z');
INSERT INTO runs(hash, estimator, grant_kind, grant_epsilon, grant_delta, grant_rho, status, charge_epsilon, charge_delta, charge_rho, composition, noise_drawn, owner_host, owner_boot, owner_pid, owner_start, reserved_at)
VALUES ('` + h + `', 'pca', 'pure', 1, 0, 0, 'succeeded', 1, 0, 0.5, 'pure', 1, 'h', '', 1, '', '2026-01-02T00:00:00Z'),
       ('` + h + `', 'pca', 'pure', 1, 0, 0, 'failed', 0, 0, 0, 'refund', 0, 'h', '', 1, '', '2026-01-03T00:00:00Z'),
       ('` + h + `', 'pca', 'pure', 0.5, 0, 0, 'reserved', 0.5, 0, 0.125, 'grant', 0, 'h', '', 1, '', '2026-01-04T00:00:00Z')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	l := openT(t, dir)
	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, "old", st.Name)
	assert.True(t, st.HasBudget)
	assert.InDelta(t, 1.5, st.Spent.Epsilon, 1e-12)
	assert.Equal(t, 1, st.Runs.Succeeded)
	assert.Equal(t, 1, st.Runs.Refunded)
	assert.Equal(t, 1, st.Runs.Reserved+st.Runs.Interrupted)
	runs, err := l.History(ctx, h)
	require.NoError(t, err)
	assert.Len(t, runs, 3)
	assert.FileExists(t, filepath.Join(dir, MarkerName))
}

func TestOutcomeWithGuarantee(t *testing.T) {
	o := OutcomeOf(nil, []privacy.Step{pureStep(0.1)}).WithGuarantee(privacy.Guarantee{Kind: privacy.Nominal, Neighbours: "one row replaced"})
	assert.Equal(t, privacy.Nominal, o.Guarantee)
	assert.Equal(t, "one row replaced", o.Neighbours)
	assert.Equal(t, "nominal", GuaranteeClass(o.Guarantee))
}
