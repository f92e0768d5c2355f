package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/ledger"
)

// BudgetKey is the identity a data set's budget is kept under: the source
// identity of the records it was read from (before any view: scaling,
// column choice, header, kind or format), so that every view of the same
// records draws on one budget. A handle prepared without a source falls
// back to the content hash of the view.
func BudgetKey(h dataio.Handle) string {
	if h.Source != nil && h.Source.Hash != "" {
		return h.Source.Hash
	}
	return h.Hash
}

// Overlap thresholds: a new data set is refused when an estimated
// OverlapRefuse of its rows (or of a budgeted data set's rows) are shared
// with a budgeted data set it is not linked to, estimated from at least
// overlapMinSample sketch entries (the estimate is then within ±0.3 with
// probability ≥ 0.97, Hoeffding).
const (
	OverlapRefuse    = 0.5
	overlapMinSample = 20
)

// SketchLedger is the part of *ledger.Ledger the overlap check uses.
type SketchLedger interface {
	Datasets(ctx context.Context) ([]ledger.Dataset, error)
	SetSketch(ctx context.Context, hash string, sketch []uint64) error
}

// CheckOverlap refuses a data set that shares most of its rows with a
// budgeted data set under another identity (a subset, a near copy, a few
// rows edited): its runs would otherwise draw on a fresh budget. The fix
// is explicit: `dplr budget link` makes it an alias of that budget.
func CheckOverlap(ctx context.Context, l SketchLedger, key string, src *dataio.Identity) error {
	if src == nil || len(src.Sketch) == 0 {
		return nil
	}
	sets, err := l.Datasets(ctx)
	if err != nil {
		return fmt.Errorf("reading the ledger's data sets: %w: %w", err, ErrLedger)
	}
	for _, d := range sets {
		if !d.HasBudget || len(d.Sketch) == 0 || d.Hash == key || slices.Contains(d.Aliases, key) {
			continue
		}
		in, m1 := dataio.SketchContainmentSample(src.Sketch, d.Sketch)
		out, m2 := dataio.SketchContainmentSample(d.Sketch, src.Sketch)
		if (in >= OverlapRefuse && m1 >= overlapMinSample) || (out >= OverlapRefuse && m2 >= overlapMinSample) {
			name := d.Name
			if name == "" {
				name = short(d.Hash)
			}
			return &FitError{Err: fmt.Errorf("this data set shares about %.0f%% of its rows with the budgeted data set %s (and %.0f%% of that one's rows are in it): "+
				"the same records under another identity cannot start a fresh budget; `dplr budget link --data FILE --to %s` charges its runs to that budget: %w",
				100*in, name, 100*out, name, ErrBudget)}
		}
	}
	return nil
}
