package ledger

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dplr/dplr/engine/privacy"
)

// NormalizeHash checks that hash is a hex SHA-256 (64 hex digits, any case,
// surrounding spaces ignored) and returns it in lower case.
func NormalizeHash(hash string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(hash))
	if len(h) != 64 {
		return "", fmt.Errorf("data set hash %q: want 64 hex digits (SHA-256), got %d characters: %w", hash, len(h), ErrInvalid)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("data set hash %q: not hexadecimal: %w", hash, ErrInvalid)
	}
	return h, nil
}

func validGrant(what string, g privacy.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)
	}
	return nil
}

// compatible checks that a run granted g can be charged to a total of its
// form (see the package doc).
func compatible(total, g privacy.Grant) error {
	switch total.Kind {
	case privacy.GrantPure:
		if g.Kind != privacy.GrantPure {
			return fmt.Errorf("the data set's budget is %s: runs must be granted a pure ε budget, not %s: %w", GrantString(total), GrantString(g), ErrIncompatible)
		}
	case privacy.GrantZCDP:
		if g.Kind == privacy.GrantApprox {
			return fmt.Errorf("the data set's budget is %s: runs must be granted a ρ or pure ε budget, not %s: %w", GrantString(total), GrantString(g), ErrIncompatible)
		}
	}
	return nil
}

// SetBudget sets (or changes) the total budget of the data set with the
// given hash, registering the data set if new; a non-empty name (re)names
// it. It
// is refused, with nothing written, if the runs already recorded do not
// compose within total (ErrBudgetExceeded, ErrIncompatible).
func (l *Ledger) SetBudget(ctx context.Context, hash, name string, total privacy.Grant) error {
	h, err := NormalizeHash(hash)
	if err != nil {
		return err
	}
	if err := validGrant("budget", total); err != nil {
		return err
	}
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return l.wrap("set budget", err)
	}
	defer tx.Rollback()
	if err := ensureDataset(ctx, tx, h, name); err != nil {
		return l.wrap("set budget", err)
	}
	if name = strings.TrimSpace(name); name != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE datasets SET name = ? WHERE hash = ?`, name, h); err != nil {
			return l.wrap("set budget", err)
		}
	}
	s, err := chargeSums(ctx, tx, h, 0)
	if err != nil {
		return l.wrap("set budget", err)
	}
	if _, err := compose(total, s); err != nil {
		return fmt.Errorf("data set %s: cannot set the budget to %s: the %d run(s) already charged do not fit: %w", short(h), GrantString(total), s.N, err)
	}
	t := now()
	if _, err := tx.ExecContext(ctx, `UPDATE datasets SET budget_kind = ?, budget_epsilon = ?, budget_delta = ?, budget_rho = ?, budget_set_at = ? WHERE hash = ?`,
		string(total.Kind), total.Epsilon, total.Delta, total.Rho, t, h); err != nil {
		return l.wrap("set budget", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO budget_events(hash, kind, epsilon, delta, rho, set_at) VALUES (?, ?, ?, ?, ?, ?)`,
		h, string(total.Kind), total.Epsilon, total.Delta, total.Rho, t); err != nil {
		return l.wrap("set budget", err)
	}
	return l.wrap("set budget: commit", tx.Commit())
}

// Reserve charges a run's full grant against the data set's budget before
// the run draws any noise. In one write transaction it checks that all
// existing charges plus req.Grant compose within the total and records the
// run as reserved. It errors, with nothing written, on a malformed request
// (ErrInvalid), a grant of the wrong form (ErrIncompatible) or one that does
// not fit (ErrBudgetExceeded). A data set with no budget is registered if new
// and the run is recorded.
func (l *Ledger) Reserve(ctx context.Context, hash string, req ReserveRequest) (RunID, error) {
	h, err := NormalizeHash(hash)
	if err != nil {
		return 0, err
	}
	if strings.TrimSpace(req.Estimator) == "" {
		return 0, fmt.Errorf("reserve: empty estimator name: %w", ErrInvalid)
	}
	if err := validGrant("run grant", req.Grant); err != nil {
		return 0, err
	}
	params := []byte("{}")
	if len(req.Params) > 0 {
		if params, err = json.Marshal(req.Params); err != nil {
			return 0, fmt.Errorf("reserve: params: %w: %w", ErrInvalid, err)
		}
	}
	charge := GrantCharge(req.Grant)

	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, l.wrap("reserve", err)
	}
	defer tx.Rollback()
	if err := ensureDataset(ctx, tx, h, req.Name); err != nil {
		return 0, l.wrap("reserve", err)
	}
	total, has, err := budgetOf(ctx, tx, h)
	if err != nil {
		return 0, l.wrap("reserve", err)
	}
	if has {
		if err := compatible(total, req.Grant); err != nil {
			return 0, fmt.Errorf("data set %s: %w", short(h), err)
		}
		s, err := chargeSums(ctx, tx, h, 0)
		if err != nil {
			return 0, l.wrap("reserve", err)
		}
		before := s
		s.add(charge)
		if _, err := compose(total, s); err != nil {
			sp, _ := compose(total, before)
			return 0, fmt.Errorf("data set %s: a run granted %s does not fit the budget (%s; spent %s; remaining %s): %w",
				short(h), GrantString(req.Grant), GrantString(total), spentString(sp), remainingString(total, remaining(total, before)), err)
		}
	}
	o := l.self
	res, err := tx.ExecContext(ctx, `INSERT INTO runs(hash, estimator, plugin, params, grant_kind, grant_epsilon, grant_delta, grant_rho,
	status, charge_epsilon, charge_delta, charge_rho, composition, owner_host, owner_boot, owner_pid, owner_start, reserved_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, 'grant', ?, ?, ?, ?, ?)`,
		h, req.Estimator, req.Plugin, string(params), string(req.Grant.Kind), req.Grant.Epsilon, req.Grant.Delta, req.Grant.Rho,
		charge.Epsilon, charge.Delta, charge.Rho, o.Host, o.Boot, o.PID, o.Start, now())
	if err != nil {
		return 0, l.wrap("reserve", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, l.wrap("reserve", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, l.wrap("reserve: commit", err)
	}
	return RunID(id), nil
}

// Settle records how a reserved run ended (see Outcome and the package
// doc). Settling a run that is not reserved gives ErrAlreadySettled, one
// whose reserving process is gone ErrInterrupted (nobody can vouch for what
// it released), an unknown id ErrNotFound, and a malformed outcome
// ErrInvalid; none of them changes anything.
func (l *Ledger) Settle(ctx context.Context, id RunID, out Outcome) error {
	if out.Status != Succeeded && out.Status != Failed {
		return fmt.Errorf("settle %v: outcome status %q: want %q or %q: %w", id, out.Status, Succeeded, Failed, ErrInvalid)
	}
	if out.Status == Succeeded && out.Steps == nil && out.Achieved == nil {
		return fmt.Errorf("settle %v: a successful outcome needs Steps or Achieved: %w", id, ErrInvalid)
	}
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return l.wrap("settle", err)
	}
	defer tx.Rollback()
	var (
		h, status string
		g         privacy.Grant
		o         owner
	)
	err = tx.QueryRowContext(ctx, `SELECT hash, status, grant_kind, grant_epsilon, grant_delta, grant_rho,
	owner_host, owner_boot, owner_pid, owner_start FROM runs WHERE id = ?`, int64(id)).
		Scan(&h, &status, &g.Kind, &g.Epsilon, &g.Delta, &g.Rho, &o.Host, &o.Boot, &o.PID, &o.Start)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("settle %v: %w", id, ErrNotFound)
	}
	if err != nil {
		return l.wrap("settle", err)
	}
	if State(status) != Reserved {
		return fmt.Errorf("settle %v: the run is already %s: %w", id, status, ErrAlreadySettled)
	}
	if l.state(Reserved, o) == Interrupted {
		return fmt.Errorf("settle %v: the process that reserved it (pid %d) is gone; the run stays charged its full grant: %w", id, o.PID, ErrInterrupted)
	}

	var (
		charge Charge
		basis  string
		note   string
	)
	switch {
	case out.Status == Failed && !out.NoiseDrawn:
		basis = "refund"
	case out.Status == Failed:
		charge, basis = GrantCharge(g), "grant"
	default:
		charge, basis, note = successCharge(g, out)
	}

	total, has, err := budgetOf(ctx, tx, h)
	if err != nil {
		return l.wrap("settle", err)
	}
	if has && !charge.IsZero() {
		// Keep the invariant that the history fits: fall back to dropping
		// a new ρ statement, then to the full grant (which fits).
		others, err := chargeSums(ctx, tx, h, id)
		if err != nil {
			return l.wrap("settle", err)
		}
		gc := GrantCharge(g)
		cands := []Charge{charge}
		if !gc.HasRho() && charge.HasRho() {
			c := charge
			c.Rho = 0
			cands = append(cands, c)
		}
		chosen := false
		for _, c := range cands {
			s := others
			s.add(c)
			if _, err := compose(total, s); err == nil {
				charge, chosen = c, true
				break
			}
		}
		if !chosen {
			charge, basis = gc, "grant"
			note = strings.TrimSpace(note + " the achieved charge did not fit the budget's composition; charged the full grant")
		}
	}
	if !charge.HasEpsDelta() {
		charge.Delta = 0 // δ without ε is no statement
	}
	_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, charge_epsilon = ?, charge_delta = ?, charge_rho = ?, composition = ?,
	noise_drawn = ?, error = ?, note = ?, settled_at = ? WHERE id = ? AND status = 'reserved'`,
		string(out.Status), charge.Epsilon, charge.Delta, charge.Rho, basis, out.NoiseDrawn, out.Error, note, now(), int64(id))
	if err != nil {
		return l.wrap("settle", err)
	}
	return l.wrap("settle: commit", tx.Commit())
}

// successCharge is what a successful run granted g is charged: what it
// achieved, never more than g. From Steps the ledger composes the run itself
// (see stepsCharge); from Achieved it takes the accountant's figures.
func successCharge(g privacy.Grant, out Outcome) (Charge, string, string) {
	if out.Steps != nil {
		return stepsCharge(g, out.Steps)
	}
	ach := *out.Achieved
	full := func(why string) (Charge, string, string) {
		return GrantCharge(g), "grant", why + "; charged the full grant"
	}
	for _, v := range []float64{ach.Epsilon, ach.Delta, ach.Rho} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return full(fmt.Sprintf("the reported cost (ε=%v, δ=%v, ρ=%v) is not valid", ach.Epsilon, ach.Delta, ach.Rho))
		}
	}
	var c Charge
	switch g.Kind {
	case privacy.GrantPure:
		if ach.Delta > 0 || ach.Rho > 0 && ach.Epsilon == 0 {
			return full("a pure grant reported a non-pure cost")
		}
		if !within(ach.Epsilon, g.Epsilon) {
			return full(fmt.Sprintf("reported ε = %.6g exceeds the grant", ach.Epsilon))
		}
		c = Charge{Epsilon: ach.Epsilon, Rho: ach.Epsilon * ach.Epsilon / 2}
	case privacy.GrantZCDP:
		if ach.Rho == 0 && ach.Epsilon > 0 {
			return full("a ρ grant reported no ρ")
		}
		if !within(ach.Rho, g.Rho) {
			return full(fmt.Sprintf("reported ρ = %.6g exceeds the grant", ach.Rho))
		}
		c = Charge{Rho: ach.Rho}
	case privacy.GrantApprox:
		if ach.Epsilon == 0 && ach.Rho > 0 {
			return full("an (ε, δ) grant reported no ε")
		}
		if !within(ach.Epsilon, g.Epsilon) || !within(ach.Delta, g.Delta) {
			return full(fmt.Sprintf("reported (ε = %.6g, δ = %.3g) exceeds the grant", ach.Epsilon, ach.Delta))
		}
		c = Charge{Epsilon: ach.Epsilon, Delta: ach.Delta}
		switch {
		case ach.Composition == "zcdp":
			c.Rho = ach.Rho // the whole run's ρ
		case c.IsPure():
			c.Rho = c.Epsilon * c.Epsilon / 2
		}
		// Otherwise ("basic", "mixed") Achieved.Rho, if any, covers only
		// part of the steps: no ρ statement for the run.
	}
	basis := ach.Composition
	if basis == "" {
		basis = string(g.Kind)
	}
	if c.IsZero() {
		return Charge{}, basis, "nothing spent"
	}
	return c, basis, ""
}

// stepsCharge composes a successful run's steps itself rather than trusting
// a composed figure: the (ε, δ) statement is, of those that fit the grant,
// the one with the smallest ε among the basic composition of the steps
// (when every step has an ε; pure steps have δ = 0), the conversion of
// their summed ρ at the grant's δ, and the pure steps' ε plus the converted
// ρ of the others (the accountant's "mixed"); the ρ statement is the sum of the steps' ρ (ε²/2 for a pure step
// without one) when every step has one. A run whose steps do not fit its
// grant in any of these ways is charged the full grant.
func stepsCharge(g privacy.Grant, steps []privacy.Step) (Charge, string, string) {
	full := func(why string) (Charge, string, string) {
		return GrantCharge(g), "grant", why + "; charged the full grant"
	}
	var sumEps, sumDelta, sumRho, pureEps, otherRho float64
	edOK, rhoOK, otherRhoOK, n, nPure := true, true, true, 0, 0
	for _, s := range steps {
		for _, v := range []float64{s.Epsilon, s.Delta, s.Rho} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return full(fmt.Sprintf("step %q reports an invalid cost (ε=%v, δ=%v, ρ=%v)", s.Name, s.Epsilon, s.Delta, s.Rho))
			}
		}
		if s.Epsilon == 0 && s.Delta == 0 && s.Rho == 0 {
			continue // a step that costs nothing
		}
		n++
		if s.Epsilon > 0 {
			sumEps += s.Epsilon
			sumDelta += s.Delta
		} else {
			edOK = false
		}
		r := s.Rho
		if r == 0 && s.Delta == 0 && s.Epsilon > 0 {
			r = s.Epsilon * s.Epsilon / 2 // pure ε-DP is ε²/2-zCDP
		}
		if r > 0 {
			sumRho += r
		} else {
			rhoOK = false
		}
		if s.Epsilon > 0 && s.Delta == 0 {
			pureEps += s.Epsilon
			nPure++
		} else if r > 0 {
			otherRho += r
		} else {
			otherRhoOK = false
		}
	}
	if n == 0 {
		return Charge{}, "none", "nothing spent"
	}
	pure := edOK && sumDelta == 0
	switch g.Kind {
	case privacy.GrantPure:
		if !pure {
			return full("a pure grant reported non-pure steps")
		}
		if !within(sumEps, g.Epsilon) {
			return full(fmt.Sprintf("the steps' ε = %.6g exceeds the grant", sumEps))
		}
		c := Charge{Epsilon: sumEps, Rho: sumEps * sumEps / 2}
		if rhoOK && sumRho < c.Rho {
			c.Rho = sumRho
		}
		return c, "pure", ""
	case privacy.GrantZCDP:
		if !rhoOK {
			return full("a ρ grant reported steps without a ρ")
		}
		if !within(sumRho, g.Rho) {
			return full(fmt.Sprintf("the steps' ρ = %.6g exceeds the grant", sumRho))
		}
		return Charge{Rho: sumRho}, "zcdp", ""
	}
	// (ε, δ) grant.
	var c Charge
	basis := ""
	if edOK && within(sumEps, g.Epsilon) && within(sumDelta, g.Delta) {
		c, basis = Charge{Epsilon: sumEps, Delta: sumDelta}, "basic"
		if pure {
			basis = "pure"
		}
	}
	// ρ conversions at the grant's δ; a result of 0 ((0, δ)-DP) is not an
	// (ε, δ) statement the ledger records, so it is skipped.
	if rhoOK {
		if e := privacy.EpsilonFromRho(sumRho, g.Delta); e > 0 && within(e, g.Epsilon) && (basis == "" || e < c.Epsilon) {
			c, basis = Charge{Epsilon: e, Delta: g.Delta}, "zcdp"
		}
	}
	// "mixed": the pure steps' ε plus the converted ρ of the others.
	if otherRhoOK && nPure > 0 && nPure < n {
		if e := pureEps + privacy.EpsilonFromRho(otherRho, g.Delta); e > 0 && within(e, g.Epsilon) && (basis == "" || e < c.Epsilon) {
			c, basis = Charge{Epsilon: e, Delta: g.Delta}, "mixed"
		}
	}
	if basis == "" {
		return full(fmt.Sprintf("the steps (Σε = %.6g, Σδ = %.3g, Σρ = %.6g) do not compose within the grant", sumEps, sumDelta, sumRho))
	}
	if rhoOK {
		c.Rho = sumRho
	}
	return c, basis, ""
}

// ensureDataset registers hash if new, and records name if it has none.
func ensureDataset(ctx context.Context, tx *sql.Tx, h, name string) error {
	name = strings.TrimSpace(name)
	if _, err := tx.ExecContext(ctx, `INSERT INTO datasets(hash, name, created_at) VALUES (?, ?, ?) ON CONFLICT(hash) DO NOTHING`, h, name, now()); err != nil {
		return err
	}
	if name != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE datasets SET name = ? WHERE hash = ? AND name = ''`, name, h); err != nil {
			return err
		}
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// budgetOf returns the data set's total, and whether one is set.
func budgetOf(ctx context.Context, q querier, h string) (privacy.Grant, bool, error) {
	var (
		kind sql.NullString
		g    privacy.Grant
	)
	err := q.QueryRowContext(ctx, `SELECT budget_kind, budget_epsilon, budget_delta, budget_rho FROM datasets WHERE hash = ?`, h).
		Scan(&kind, &g.Epsilon, &g.Delta, &g.Rho)
	if errors.Is(err, sql.ErrNoRows) {
		return privacy.Grant{}, false, nil
	}
	if err != nil || !kind.Valid {
		return privacy.Grant{}, false, err
	}
	g.Kind = privacy.GrantKind(kind.String)
	return g, true, nil
}

// chargeSums aggregates the non-zero charges of data set h, leaving out run
// except (0: none).
func chargeSums(ctx context.Context, q querier, h string, except RunID) (sums, error) {
	var s sums
	err := q.QueryRowContext(ctx, `SELECT count(*),
	coalesce(sum(charge_epsilon <= 0), 0),
	coalesce(sum(NOT (charge_epsilon > 0 AND charge_delta = 0)), 0),
	coalesce(sum(charge_rho <= 0), 0),
	coalesce(sum(charge_epsilon), 0), coalesce(sum(charge_delta), 0), coalesce(sum(charge_rho), 0),
	coalesce(sum(CASE WHEN charge_rho <= 0 THEN charge_epsilon ELSE 0 END), 0),
	coalesce(sum(CASE WHEN charge_rho <= 0 THEN charge_delta ELSE 0 END), 0),
	coalesce(sum(CASE WHEN charge_epsilon <= 0 THEN charge_rho ELSE 0 END), 0)
	FROM runs WHERE hash = ? AND id != ? AND (charge_epsilon > 0 OR charge_rho > 0)`, h, int64(except)).
		Scan(&s.N, &s.NoED, &s.NotPure, &s.NoRho, &s.Eps, &s.Delta, &s.Rho, &s.EpsNoRho, &s.DelNoRho, &s.RhoNoED)
	return s, err
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
