package host

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// Overlap thresholds: a data set shares most of its rows with a budgeted
// one when an estimated OverlapRefuse of its rows (or of the budgeted data
// set's rows) are rows of the other, estimated from at least
// overlapMinSample sketch entries (the estimate is then within ±0.3 with
// probability ≥ 0.97, Hoeffding).
const (
	OverlapRefuse    = 0.5
	overlapMinSample = 20
)

// SketchLedger is the part of *ledger.Ledger the overlap check uses.
type SketchLedger interface {
	Datasets(ctx context.Context) ([]ledger.Dataset, error)
}

// Overlap is a budgeted data set some rows of a new data set are rows of.
type Overlap struct {
	Dataset ledger.Dataset
	// In and Out are the estimated shares of the new data set's rows that
	// are rows of Dataset, and of Dataset's rows that are in the new one.
	In, Out float64
	major   bool // In or Out at least OverlapRefuse, on enough sketch entries
}

// Overlaps finds the budgeted data sets (other than key's own, or the one
// key is linked to) that a data set with row sketch src shares rows with.
// A data set whose rows are mostly rows of exactly one budgeted data set
// D, and share no row with another (a subset of D, a cross-validation
// fold, a near copy), is returned as D: a fit on it is charged to D
// (ledger.ReserveRequest.LinkTo). Every other overlap of a majority is
// refused, naming the data sets: a superset with most of its rows
// outside D, or data sharing rows with two budgeted data sets, would be
// charged where it cannot be counted whole (docs/ledger.md).
func Overlaps(ctx context.Context, l SketchLedger, key string, src *dataio.Identity) (*Overlap, error) {
	if src == nil || len(src.Sketch) == 0 {
		return nil, nil
	}
	sets, err := l.Datasets(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger's data sets: %w: %w", err, ErrLedger)
	}
	var hits []Overlap
	major := false
	for _, d := range sets {
		if !d.HasBudget || len(d.Sketch) == 0 || d.Hash == key || slices.Contains(d.Aliases, key) {
			continue
		}
		in, m1 := dataio.SketchContainmentSample(src.Sketch, d.Sketch)
		out, m2 := dataio.SketchContainmentSample(d.Sketch, src.Sketch)
		if in == 0 && out == 0 {
			continue
		}
		o := Overlap{Dataset: d, In: in, Out: out}
		o.major = (in >= OverlapRefuse && m1 >= overlapMinSample) || (out >= OverlapRefuse && m2 >= overlapMinSample)
		major = major || o.major
		hits = append(hits, o)
	}
	switch {
	case !major:
		return nil, nil
	case len(hits) == 1 && hits[0].In >= OverlapRefuse:
		return &hits[0], nil
	}
	var names []string
	for _, o := range hits {
		names = append(names, fmt.Sprintf("%s (about %.0f%% of this data set's rows are its rows, and %.0f%% of its rows are in this one)", datasetName(o.Dataset), 100*o.In, 100*o.Out))
	}
	if len(hits) > 1 {
		return nil, &FitError{Err: fmt.Errorf("this data set shares rows with %d budgeted data sets: %s; a run on it cannot be counted whole against one budget, "+
			"so it is refused: run it on the rows of one of them (or, if they hold the same people, `budget merge` them first): %w", len(hits), strings.Join(names, ", "), ErrBudget)}
	}
	return nil, &FitError{Err: fmt.Errorf("this data set holds most of the rows of the budgeted data set %s, but most of its own rows are not that data set's: "+
		"it is not counted against that budget without being asked; `budget link --to %s` on this data charges its runs to it: %w", names[0], datasetName(hits[0].Dataset), ErrBudget)}
}

// CheckOverlap refuses a data set that shares most of its rows with a
// budgeted data set under another identity (a subset, a near copy, a few
// rows edited, a superset): a second budget on it, or an uncharged use of
// it, would count the same people's data afresh. The fix is explicit:
// `budget link` makes it an alias of that budget.
func CheckOverlap(ctx context.Context, l SketchLedger, key string, src *dataio.Identity) error {
	o, err := Overlaps(ctx, l, key, src)
	if err != nil || o == nil {
		return err
	}
	name := datasetName(o.Dataset)
	return &FitError{Err: fmt.Errorf("this data set shares about %.0f%% of its rows with the budgeted data set %s (and %.0f%% of that one's rows are in it): "+
		"the same records under another identity cannot start a fresh budget; `budget link --to %s` on this data charges its runs to that budget: %w",
		100*o.In, name, 100*o.Out, name, ErrBudget)}
}

// datasetName is a data set's name, or its short hash.
func datasetName(d ledger.Dataset) string {
	if d.Name != "" {
		return d.Name
	}
	return short(d.Hash)
}
