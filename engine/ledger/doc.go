// Package ledger is dplr's persistent, per-data-set record of privacy
// spending. It lets a data owner set a total budget for a data set and makes
// sure that repeated runs on that data set cannot silently exceed it, even
// when several runs (from several processes) race for the last of it, and
// even when a process is killed half-way.
//
// # Storage
//
// The ledger is one SQLite database, <dir>/ledger.db, opened through the
// pure-Go driver modernc.org/sqlite (so the default build needs no cgo) in
// WAL mode with synchronous=FULL and a busy timeout. [HomeDir] gives the
// default directory: $DPLR_HOME if set, else $XDG_DATA_HOME/dplr, else
// ~/.local/share/dplr (%LOCALAPPDATA%\dplr on Windows). The schema is
// versioned through a schema_migrations table; a database written by a newer
// dplr is refused rather than guessed at. A file that is not a dplr ledger or
// is damaged gives an error naming the file and wrapping [ErrCorrupt]; the
// ledger never deletes or re-creates an existing file.
//
// Data sets are identified by the hex SHA-256 of their content (the hash the
// data loader computes), optionally with a human name.
//
// # Life of a run
//
// The host charges before release:
//
//	l, err := ledger.Open(ctx, dir)           // dir from ledger.HomeDir() or --home
//	id, err := l.Reserve(ctx, hash, ledger.ReserveRequest{Estimator: "pca", Grant: grant})
//	// errors.Is(err, ledger.ErrBudgetExceeded): refuse the run, nothing spent
//	res, acct, err := ... run the estimator with grant ...
//	err = l.Settle(ctx, id, ledger.OutcomeOf(err, acct.Steps()))
//
// [Ledger.Reserve] checks, inside one write transaction (BEGIN IMMEDIATE, so
// concurrent reservations from any number of processes are serialised by
// SQLite's write lock), that every existing charge plus the run's whole grant
// composes within the data set's total, and records the run as "reserved",
// charged its full grant. Nothing is written when validation fails or the
// budget is exceeded. [Ledger.Settle] then records the outcome:
//
//   - succeeded: the run is charged what it achieved (its composed steps),
//     which never exceeds its grant;
//   - failed before any noise was drawn (Outcome.NoiseDrawn false): refunded,
//     charged nothing, shown as failed;
//   - failed after noise was drawn: stays charged its full grant, shown as
//     failed. (The grant is what the run was allowed to spend; a run that
//     failed half-way cannot be relied on to have reported every step.)
//
// A run that is never settled (the process was killed, the machine lost
// power) stays "reserved" and keeps its full grant charged: it may have
// released output. [Ledger.History] and [Ledger.Show] report such a run as
// [Interrupted] once the process that reserved it is gone (same host: the
// process id, its start time and the boot id no longer match a live process),
// and [Ledger.Settle] refuses it ([ErrInterrupted]): nobody is left to
// vouch for what it released. A reserved run whose process is alive, or that was
// reserved on another host, is shown as [Reserved].
//
// A data set with no budget set is not refused: its runs are reserved,
// settled and recorded the same way, and [Status] says that no budget is set.
// Setting a budget later ([Ledger.SetBudget]) is refused if the runs already
// recorded do not compose within it; so is lowering a budget below what has
// been spent.
//
// # Composition across runs
//
// Each run's charge ([Charge]) holds the privacy statements known to be true
// of it: an (ε, δ) statement (δ = 0 for pure ε-DP) and/or a ρ-zCDP
// statement. A reserved (or interrupted, or failed-after-noise) run carries
// the statements of its grant: a pure ε grant gives (ε, 0) and ρ = ε²/2 (Bun
// & Steinke 2016, Prop. 1.4); an (ε, δ) grant gives (ε, δ) only (the run's
// accountant may compose its steps by basic composition, which bounds no ρ);
// a ρ grant gives ρ only. A settled success given its steps is composed by
// the ledger itself: its (ε, δ) statement is the tightest of basic
// composition, zCDP composition converted at the grant's δ, and the pure
// steps' ε plus the converted ρ of the others, that fits the grant; its ρ
// statement is the sum of the steps' ρ when every step has one (ε²/2 for a
// pure step). Given only the accountant's composed Achieved, the ledger
// records its (ε, δ) and, when it covers the whole run, its ρ. A success
// whose reported cost does not fit its grant is charged the full grant. The
// budget's form decides how the charges compose ([Compose]):
//
//   - pure ε total: every charge must be pure; the ε add (basic composition).
//     Runs must therefore be granted a pure ε budget.
//   - ρ total: every charge must carry a ρ; the ρ add (zCDP composition).
//     Runs must be granted a ρ or a pure ε budget.
//   - (ε, δ) total: any run. The ledger accepts if either
//     (A) basic composition, Σε ≤ ε and Σδ ≤ δ, over charges that all have an
//     (ε, δ) statement, or
//     (B) zCDP composition of a group Z of charges that carry a ρ followed by
//     basic composition with the rest R: the ρ-group is converted to
//     (ε_Z, δ − Σ_R δ)-DP with [privacy.EpsilonFromRho] (the tight
//     conversion of Canonne, Kamath & Steinke 2020), and ε_Z + Σ_R ε ≤ ε.
//     Two groupings are tried: Z = every charge with a ρ, and Z = only the
//     charges that have no (ε, δ) statement.
//     Every step of this is a valid composition theorem, so any option that
//     fits certifies the whole history; the reported spent amount is the
//     fitting option with the smallest ε.
//
// A relative tolerance of 1e-9 (the accountant's own) absorbs rounding in
// sums such as ten charges of 0.1 against a total of 1.
//
// The ledger's writes keep the invariant that the history fits the total:
// Reserve refuses what does not fit, and Settle only ever replaces a run's
// grant charge by one that still fits (falling back to dropping the new ρ
// statement, then to the full grant, should a regrouping make it worse).
package ledger
