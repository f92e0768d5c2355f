package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dplr/dplr/client"
	"github.com/dplr/dplr/engine/data"
)

// budgetSubcommands are the subcommands of `dplr budget`.
var budgetSubcommands = []string{"set", "show", "history", "link", "unlink", "merge", "charge", "list", "verify"}

const budgetUsage = `Usage:
  dplr budget set     DATA (--epsilon E [--delta D] | --rho R) [--name NAME] [--neighbours REL]
  dplr budget set     DATA --change (--epsilon E [--delta D] | --rho R) --note TEXT
  dplr budget show    DATA [--json]
  dplr budget history DATA [--json [--changes]]
  dplr budget link    (--data PATH | --hash HEX) --to NAME|HEX [--note TEXT]
  dplr budget unlink  (--data PATH | --hash HEX) [--note TEXT]
  dplr budget merge   DATA --into NAME|HEX [--note TEXT] [--force]
  dplr budget charge  DATA (--epsilon E [--delta D] | --rho R | --mu M) --note TEXT [--neighbours REL] [--force]
  dplr budget list    [--json]
  dplr budget verify  [--adopt]

DATA is --data PATH (the file is read and hashed), --hash HEX, or
--dataset NAME (a name given with --name). A data set is identified by the
SHA-256 of its content; "link" makes another file holding the same people
(another format, a scaled or subset copy) count against the same budget,
and every subcommand given that file acts on the data set it is linked to.
"budget set" on a file that shares most of its rows with a budgeted data
set (a subset or near copy) is refused (exit 3, nothing written), naming
that data set: link the file to it instead. "unlink" makes a linked file a
data set of its own, charged all the data set it leaves was charged (runs
through the link may have used its rows); "merge" joins two data sets
whose budgets turn out to cover the same people: the one named by --into
is charged every charge of DATA, whose hash then counts against it (a
merge that does not fit is refused, exit 3, or recorded with --force).
Neither can lower what any data set is recorded as having spent.
Once a total is set, every dplr fit on the data set reserves its grant
inside one database transaction before any noise is drawn, and is refused
(exit 3, nothing spent) if the total would be exceeded. Runs on a data set
without a total are recorded but not limited.

A total changes only with --change (and a --note), never below what has
been spent (a larger total is accepted even over budget); the history
keeps the old and new values. "charge" records a spend made outside dplr,
in the form the budget's rule counts: a spend the rule cannot admit is
refused (exit 3, nothing recorded) with its cost under the rule, and is
recorded as stated only with --force. A budget is stated for a neighbour relation
(--neighbours: replace-one-row, the default for rows and trace data;
replace-one-user, the default for users data; add-remove-row;
add-remove-user); a run private for another relation is charged its cost
converted by group privacy (an add/remove ε run costs 2ε under
replace-one), or refused when no conversion holds.

Runs on one data set are chosen adaptively, so admission is a privacy
filter, and "show" reports the rule in force and the remaining budget
under it: gaussian-dp (an (ε, δ) total whose first charged run was
Gaussian-only: Σ μ_i² ≤ μ_T², pure-ε runs admitted as μ ≈ 1.25ε, and a
fit declaring a Laplace or exponential step refused before anything is
reserved), classic (any other history, and pure or ρ totals: zCDP where
each run's ρ is known, pure or basic composition otherwise) or undecided
(an (ε, δ) total before its first charged run, which fixes the rule).
Under gaussian-dp an outside spend is charged as --mu or a pure
--epsilon; after a forced charge the rule admits nothing more until
"budget set --change". docs/ledger.md states each rule and its proof.

The ledger's records are chained by SHA-256 hashes and checked whenever
it is opened and before each admission; "verify" checks everything (exit
5 if the ledger is damaged or was tampered with; it is never reset).

Examples:
  dplr budget set --data data/spiked --epsilon 3 --delta 1e-5 --name spiked
  dplr budget link --data spiked-copy.npy --to spiked --note "same rows as .npy"
  dplr budget charge --dataset spiked --epsilon 0.5 --delta 1e-6 --note "2025 report"
  dplr budget charge --dataset spiked --mu 0.1 --note "Gaussian release, σ = 10Δ"
  dplr budget set --dataset spiked --change --epsilon 4 --delta 1e-5 --note "approved"
  dplr budget history --dataset spiked
`

func cmdBudget(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || !slices.Contains(budgetSubcommands, args[0]) {
		return subcommandHelp(env, "budget", budgetUsage, "set, show or history (or link, charge, list, verify)", budgetSubcommands, args)
	}
	b := &budgetCmd{env: env, sub: args[0]}
	if err := b.parse(args[1:]); err != nil {
		return err
	}
	return b.run(ctx)
}

// budgetCmd is one `dplr budget` invocation: its flags (those its
// subcommand does not register stay zero).
type budgetCmd struct {
	env                                      *Env
	sub                                      string
	fs                                       *flag.FlagSet
	df                                       dataFlags
	gf                                       grantFlags
	kind, hash, dataset, home, note, rel, to string
	asJSON, change, adopt, changes, force    bool
	mu                                       float64
	dir                                      string
}

func (b *budgetCmd) parse(args []string) error {
	fs := newFlags("budget "+b.sub, "(--data PATH | --hash HEX | --dataset NAME) ...", b.env)
	b.fs = fs
	fs.StringVar(&b.home, "home", "", "dplr home directory (default $DPLR_HOME, else the user data directory)")
	fs.BoolVar(&b.asJSON, "json", false, "print as JSON")
	switch b.sub {
	case "list":
	case "verify":
		fs.BoolVar(&b.adopt, "adopt", false, "accept a ledger whose marker file is missing, after a full check, and write a new marker (only if you know why it went)")
	default:
		b.df.register(fs)
		fs.StringVar(&b.kind, "kind", "rows", "data kind for reading a --data file: rows, trace or users (a `dplr gen` directory says its own)")
		fs.StringVar(&b.hash, "hash", "", "identify the data set by its content hash instead of reading --data")
		if b.sub != "link" && b.sub != "unlink" {
			fs.StringVar(&b.dataset, "dataset", "", "identify the data set by its name (or a hash)")
		}
	}
	switch b.sub {
	case "set":
		b.gf.register(fs, "total budget of the data set")
		fs.BoolVar(&b.change, "change", false, "change an existing total (recorded with its old and new values)")
		fs.StringVar(&b.note, "note", "", "why the total changes (with --change)")
		fs.StringVar(&b.rel, "neighbours", "", "neighbour relation the budget counts in: "+relationList()+" (default: replace-one-user for users data, else replace-one-row)")
	case "charge":
		b.gf.register(fs, "the spend made outside dplr")
		fs.Float64Var(&b.mu, "mu", 0, "the spend made outside dplr as μ-GDP, μ = `M` (a Gaussian mechanism of sensitivity Δ and noise σ is Δ/σ-GDP): the form the gaussian-dp rule counts (instead of --epsilon/--delta/--rho)")
		fs.BoolVar(&b.force, "force", false, "record a spend the budget's rule cannot admit (its cost under the rule is stated when it is refused); the data set then admits nothing more until its total is changed with budget set --change")
		fs.StringVar(&b.note, "note", "", "what the spend was (required)")
		fs.StringVar(&b.rel, "neighbours", "", "neighbour relation the spend's guarantee holds for (default: the budget's)")
	case "history":
		fs.BoolVar(&b.changes, "changes", false, "with --json: print the budget's changes (totals with old and new values, names, relations, links) instead of its runs")
	case "link":
		fs.StringVar(&b.to, "to", "", "the data set the file is linked to: its name or hash")
		fs.StringVar(&b.note, "note", "", "why the file holds the same people")
	case "unlink":
		fs.StringVar(&b.note, "note", "", "why the file does not hold the same people")
	case "merge":
		fs.StringVar(&b.to, "into", "", "the data set to merge into (it keeps its total and is charged every charge of DATA): its name or hash")
		fs.StringVar(&b.note, "note", "", "why the two data sets hold the same people")
		fs.BoolVar(&b.force, "force", false, "merge even if the charges do not fit the total kept; the data set then admits nothing more until its total is changed with budget set --change")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, err := (&pluginFlags{home: b.home}).checkedHome(b.env)
	b.dir = dir
	return err
}

func relationList() string {
	s := make([]string, len(client.Relations))
	for i, r := range client.Relations {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// target is the data set the command names: read from --data (as the
// kind --kind or the inference says), given with --hash, or named with
// --dataset.
func (b *budgetCmd) target() (client.DatasetRef, error) {
	given := 0
	for _, s := range []string{b.df.path, b.hash, b.dataset} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return client.DatasetRef{}, usagef("budget %s needs exactly one of --data PATH, --hash HEX or --dataset NAME", b.sub)
	}
	switch {
	case b.hash != "":
		return client.ByHash(b.hash), nil
	case b.dataset != "":
		return client.ByName(b.dataset), nil
	}
	k := data.Kind(b.kind)
	if !flagGiven(b.fs, "kind") {
		var why string
		k, why = b.df.inferKind()
		if why != "" {
			fmt.Fprintf(b.env.Stderr, "dplr: reading %s as %s data (%s; --kind rows|trace|users overrides): the budget applies to fits that read it the same way\n", b.df.path, k, why)
		}
	}
	opt, err := b.df.loadOptions()
	if err != nil {
		return client.DatasetRef{}, err
	}
	opt.Kind = k
	return client.ByData(client.File(b.df.path, opt)), nil
}

// ledgerErr maps an error of the client's budget operations to its exit
// code (its class: a damaged ledger exit 5, a refused budget exit 3, a bad
// argument exit 2), saying what to do about a damaged ledger.
func ledgerErr(err error) error {
	if errors.Is(err, client.ErrLedgerDamaged) {
		return fail(ExitData, fmt.Errorf("%w\nthe budget ledger cannot be trusted; it was left untouched: restore it from a backup or ask its owner (see \"dplr budget verify\")", err))
	}
	return err
}

func (b *budgetCmd) run(ctx context.Context) error {
	var ref client.DatasetRef
	if b.sub != "list" && b.sub != "verify" {
		var err error
		if ref, err = b.target(); err != nil {
			return err
		}
	}
	c, err := client.New(client.Options{Home: b.dir})
	if err != nil {
		return err
	}
	defer c.Close()
	switch b.sub {
	case "verify":
		return b.verify(ctx, c)
	case "list":
		return b.list(ctx, c)
	case "link":
		return b.link(ctx, c, ref)
	case "unlink":
		key, err := c.Unlink(ctx, ref, b.note)
		if err != nil {
			return ledgerErr(err)
		}
		fmt.Fprintf(b.env.Stderr, "dplr: %s is now a data set of its own, charged all it counted against before\n", key)
	case "merge":
		if b.to == "" {
			return usagef("budget merge needs --into NAME|HEX: the data set to merge into")
		}
		h, err := c.Merge(ctx, ref, b.to, b.note, b.force)
		if err != nil && (h == "" || !b.force || !errors.Is(err, client.ErrBudget)) {
			return ledgerErr(err)
		}
		if err != nil {
			fmt.Fprintf(b.env.Stderr, "dplr: warning: %v\n", err)
		}
		ref = client.ByHash(h)
	case "history":
		return b.history(ctx, c, ref)
	case "set":
		if err := b.set(ctx, c, ref); err != nil {
			return err
		}
	case "charge":
		if err := b.charge(ctx, c, ref); err != nil {
			return err
		}
	}
	st, err := c.ShowBudget(ctx, ref)
	if err != nil {
		return ledgerErr(err)
	}
	return b.printStatus(st)
}

func (b *budgetCmd) printStatus(st client.BudgetStatus) error {
	if b.asJSON {
		return writeReportJSON(b.env.Stdout, st)
	}
	fmt.Fprintln(b.env.Stdout, st.String())
	return nil
}

func (b *budgetCmd) verify(ctx context.Context, c *client.Client) error {
	t0 := time.Now()
	rep, path, err := c.VerifyLedger(ctx, b.adopt)
	if err != nil {
		return ledgerErr(err)
	}
	fmt.Fprintf(b.env.Stdout, "ledger %s: ok: %d records, %d data sets, %d linked files verified in %.2f s (integrity check, hash chain, budget positions)\n",
		path, rep.Records, rep.Datasets, rep.Aliases, time.Since(t0).Seconds())
	return nil
}

func (b *budgetCmd) charge(ctx context.Context, c *client.Client, ref client.DatasetRef) error {
	var g client.Grant
	if b.mu == 0 {
		var err error
		if g, err = b.gf.grant(); err != nil {
			return err
		}
	} else if _, err := b.gf.grant(); err == nil || !(b.mu > 0) || math.IsInf(b.mu, 0) {
		return usagef("--mu M > 0 states the spend alone, without --epsilon, --delta or --rho")
	}
	rel, err := b.relation()
	if err != nil {
		return err
	}
	id, err := c.Charge(ctx, ref, g, client.ChargeOptions{Relation: rel, Note: b.note, Mu: b.mu, Force: b.force})
	refused := errors.Is(err, client.ErrBudgetExceeded) || errors.Is(err, client.ErrIncompatible)
	switch {
	case err != nil && id == 0 && refused:
		return ledgerErr(fmt.Errorf("%w\n(a Gaussian spend of sensitivity Δ and noise σ is recorded as --mu Δ/σ; to record the spend as stated anyway, add --force, after which dplr budget set --change counts it and lets runs in again)", err))
	case err != nil && id == 0:
		return ledgerErr(err)
	case err != nil && refused:
		fmt.Fprintf(b.env.Stderr, "dplr: warning: recorded as %s, but %v\n(dplr budget set --change with the same or a larger total counts it and lets runs in again)\n", id, err)
	case err != nil:
		fmt.Fprintf(b.env.Stderr, "dplr: warning: recorded as %s, but %v\n", id, err)
	default:
		fmt.Fprintf(b.env.Stderr, "dplr: recorded as %s\n", id)
	}
	return nil
}

func (b *budgetCmd) relation() (client.Relation, error) {
	if b.rel == "" {
		return "", nil
	}
	r, err := client.ParseRelation(b.rel)
	if err != nil {
		return "", fail(ExitUsage, err)
	}
	return r, nil
}

func (b *budgetCmd) set(ctx context.Context, c *client.Client, ref client.DatasetRef) error {
	g, err := b.gf.grant()
	if err != nil {
		return err
	}
	if b.change && strings.TrimSpace(b.note) == "" {
		return usagef("budget set --change needs --note saying why the total changes")
	}
	rel, err := b.relation()
	if err != nil {
		return err
	}
	opt := client.BudgetOptions{Name: b.df.name, Relation: rel, Change: b.change, Note: b.note}
	if b.change {
		opt.Relation = ""
	}
	_, err = c.SetBudget(ctx, ref, g, opt)
	if client.IsBudgetSet(err) {
		return fail(ExitBudget, fmt.Errorf("%w (to change it: dplr budget set --change ... --note WHY)", err))
	}
	return ledgerErr(err)
}

func (b *budgetCmd) link(ctx context.Context, c *client.Client, ref client.DatasetRef) error {
	if b.to == "" {
		return usagef("budget link needs --to NAME|HEX: the data set the file holds the same people as")
	}
	alias, h, err := c.Link(ctx, ref, b.to, b.note)
	if err != nil {
		return ledgerErr(err)
	}
	fmt.Fprintf(b.env.Stderr, "dplr: %s now counts against data set %s\n", alias, h)
	st, err := c.ShowBudget(ctx, client.ByHash(h))
	if err != nil {
		return ledgerErr(err)
	}
	return b.printStatus(st)
}

func (b *budgetCmd) list(ctx context.Context, c *client.Client) error {
	ds, err := c.Datasets(ctx)
	if err != nil {
		return ledgerErr(err)
	}
	if b.asJSON {
		return writeListJSON(b.env.Stdout, ds)
	}
	tw := tabwriter.NewWriter(b.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "data set\tname\tbudget\tneighbours\tlinked files\n")
	for _, d := range ds {
		total := "none"
		if d.HasBudget {
			total = client.GrantString(d.Total)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", d.Hash, d.Name, total, d.Relation, len(d.Aliases))
	}
	return tw.Flush()
}

func (b *budgetCmd) history(ctx context.Context, c *client.Client, ref client.DatasetRef) error {
	hist, err := c.History(ctx, ref)
	if err != nil {
		return ledgerErr(err)
	}
	runs, changes := hist.Runs, hist.Changes
	if b.asJSON && b.changes {
		return writeListJSON(b.env.Stdout, changes)
	}
	if b.asJSON {
		return writeListJSON(b.env.Stdout, runs)
	}
	tw := tabwriter.NewWriter(b.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\twhen (UTC)\testimator\tstate\tguarantee\tneighbours\tgrant\tcharged\n")
	for _, r := range runs {
		rel := string(r.Relation)
		if r.Factor > 1 {
			rel += fmt.Sprintf(" (×%d)", r.Factor)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.ID, r.ReservedAt.UTC().Format("2006-01-02 15:04:05"), r.Estimator, r.State, dash(r.Class), dash(rel), client.GrantString(r.Grant), r.Charge)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(changes) > 0 {
		fmt.Fprintln(b.env.Stdout, "\nbudget changes:")
		for _, c := range changes {
			fmt.Fprintf(b.env.Stdout, "  %s  %s\n", c.Time.UTC().Format("2006-01-02 15:04:05"), c)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// inferKind is the data kind `dplr budget` reads --data as when --kind is
// not given, so that it hashes the data the way the fits that use it do: a
// `dplr gen` directory says its own kind; for a file, user ids (--users,
// --user-column) mean users data, a matrix shape or a response (--d1,
// --d2, --response) trace data, and anything else rows. why explains an
// inference from a file's flags ("" for a directory, whose kind is known).
func (df *dataFlags) inferKind() (k data.Kind, why string) {
	var delim rune
	if r := []rune(df.delimiter); len(r) == 1 {
		delim = r[0]
	}
	return client.InferKind(df.path, client.LoadOptions{UsersPath: df.users, UserColumn: df.userCol,
		D1: df.d1, D2: df.d2, ResponsePath: df.response, Delimiter: delim})
}

// flagGiven reports whether the named flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
