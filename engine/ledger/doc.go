// Package ledger is dplr's persistent, per-data-set record of privacy
// spending. It lets a data owner set a total budget for a data set and makes
// sure that repeated runs on that data set cannot silently exceed it, even
// when several runs (from several processes) race for the last of it, when
// a process is killed half-way, and when the ledger file is damaged or
// edited behind dplr's back.
//
// # Storage
//
// The ledger is one SQLite database, <dir>/ledger.db, opened through the
// pure-Go driver modernc.org/sqlite (so the default build needs no cgo) in
// WAL mode with synchronous=FULL and a busy timeout, next to a marker file,
// <dir>/ledger.marker. [HomeDir] gives the default directory: $DPLR_HOME if
// set, else $XDG_DATA_HOME/dplr, else ~/.local/share/dplr
// (%LOCALAPPDATA%\dplr on Windows). The schema is versioned through a
// schema_migrations table; a database written by a newer dplr is refused
// rather than guessed at, and one written by schema version 1 (before the
// chain) has its data sets, budgets and runs imported into the chain on
// first open.
//
// # The chain of records
//
// Every change is one record appended to the table chain: a data set
// registered, named, given a neighbour relation or a total (with the old
// and new values), a file linked to it, a run reserved or settled, a spend
// recorded from outside dplr. A record's canonical encoding is its JSON
// encoding (fields in a fixed order, map keys sorted, floats in Go's
// shortest round-trip form); it holds its sequence number, the ledger's id
// and the previous record's hash, and its hash is the SHA-256 of those
// bytes. Each record also states its data set's position after it: the
// total, the sums of the settled charges, the open reservations and the
// run counts. Verifying a record means: its bytes hash to its stored hash,
// it names its own place and the previous record's hash, and the position
// it states is what the previous verified position and the record give
// (apply, the one definition of what each record does). Admission and
// every figure the ledger reports read positions from verified records
// only; the tables that schema version 1 summed charges from are no longer
// read, and the chain's one index (by data set) only serves lookups whose
// results are checked against hashes and positions, so its damage can make
// the ledger refuse but cannot change a sum.
//
// The marker file is written when the ledger is created and rewritten after
// each change (except a reservation, whose settle follows) with a
// checkpoint: the ledger's id, the head record's number and hash, and the
// latest record of each data set and alias. [Open] then verifies only the
// records after the checkpoint, and each write transaction verifies the
// records other processes appended since before it admits anything. A
// checkpoint never runs ahead of the chain (it is written after the commit)
// but may lag behind it, which only means more records to verify. When a
// data set's position is first read from its checkpointed record, that
// record must hash to the checkpoint's hash and be the data set's latest up
// to the head by the chain's index on data sets as well: a marker edited to
// name an older (smaller) position, or a damaged index, makes the two
// disagree.
//
// # What is detected, and what is not
//
// A damaged ledger is an error wrapping [ErrDamaged] (and [ErrCorrupt] for
// damage SQLite itself reports), never a fresh start:
//
//   - the ledger file deleted, emptied (0 bytes), replaced by an empty
//     SQLite database or by another dplr ledger, while the marker says a
//     ledger existed: the marker tells a fresh home (no marker) from one
//     whose ledger vanished;
//   - the marker deleted while the ledger has records, or unreadable;
//   - the tail of the chain cut off, a record edited (a charge set to 0, a
//     total raised, a position's sums changed), removed, inserted or
//     reordered after the checkpoint, or the checkpoint's head record
//     rewritten: found on Open or before the next admission;
//   - a record edited before the checkpoint: it no longer changes what
//     admission sees (admission reads the latest record of the data set,
//     whose hash the checkpoint holds, and that record carries the whole
//     position); [Ledger.History] finds an edit that changes a run's charge
//     or state or removes a record (it replays the data set's records up
//     to its verified position), and the full check ([Ledger.Verify],
//     `dplr budget verify`) finds any edit. This is the trade of
//     incremental verification: the full check costs seconds at 50,000
//     runs, the incremental one about a millisecond.
//
// Random single-bit flips anywhere in the file either make the ledger
// refuse or leave every figure unchanged (a test flips 150 bits).
//
// The chain has no secret: anyone who can write the files can rewrite the
// whole chain consistently, recompute every hash and write a matching
// marker (or delete both files and the directory, which is a fresh home).
// That is not detected. The hashes make damage and naive edits — a plugin
// or a user setting a charge to 0 with an SQLite shell — visible; they do
// not make the ledger safe from a determined person with write access to
// DPLR_HOME, and nothing in the ledger stops someone who holds the raw data
// from hashing a modified copy outside dplr. Keep DPLR_HOME writable only
// by the data owner, and out of reach of the code that reads the data.
//
// # Data sets, names, links
//
// Data sets are identified by the hex SHA-256 of their content (the hash
// the data loader computes), optionally with a human name, unique in the
// ledger ([Ledger.Rename]; [Ledger.Resolve] maps a name or linked hash to
// the data set). [Ledger.Link] records that another content hash holds the
// same people; every operation given that hash then acts on the data set it
// is linked to. A hash with records of its own is not linked; two data
// sets whose budgets turn out to cover the same people are joined by
// [Ledger.Merge], which charges the one kept every charge of the other
// (open reservations at their whole grant) and links the other's hash to
// it. [Ledger.Unlink] undoes a link: the file becomes a data set of its
// own, with no total, charged everything its former data set was charged.
// Both records carry the charges they move, and the verifier checks them
// against the source data set's verified position. Neither can
// under-count: a data set's charges only ever grow, a merge adds to the
// data set kept every charge made on the one merged (which then resolves
// to it), and an unlinked file keeps every charge made through the link
// or on the data set it left, which are all the runs that may have used
// its rows (docs/ledger.md derives it). [Ledger.SetSketch] stores a row
// sketch per data set for overlap detection, as a plain column outside
// the chain.
//
// # Life of a run
//
// The host charges before release:
//
//	l, err := ledger.Open(ctx, dir)           // dir from ledger.HomeDir() or --home
//	id, err := l.Reserve(ctx, hash, ledger.ReserveRequest{Estimator: "pca", Grant: grant})
//	// errors.Is(err, ledger.ErrBudgetExceeded): refuse the run, nothing spent
//	res, acct, err := ... run the estimator with grant ...
//	out := ledger.OutcomeOf(err, acct.Steps()).WithGuarantee(res.Guarantee)
//	err = l.Settle(ctx, id, out)             // an error: do not release
//
// [Ledger.Reserve] checks, inside one write transaction (BEGIN IMMEDIATE, so
// concurrent reservations from any number of processes are serialised by
// SQLite's write lock), that every existing charge plus the run's whole grant
// composes within the data set's total, and records the run as reserved,
// charged its full grant. Nothing is written when validation fails or the
// budget is exceeded. [Ledger.Settle] then records the outcome:
//
//   - succeeded: the run is charged what it achieved (its steps composed by
//     [privacy.Compose], which never exceeds its grant), converted to the
//     budget's neighbour relation. A run whose steps are all pure but whose
//     composed statement is (ε, δ) (the privacy loss distribution of
//     exactly calibrated exponential steps, say) also has its pure
//     statement (Σ ε_i, with ρ = Σ ρ_i); under a total it is charged
//     whichever of the two leaves the larger further run admissible
//     ([privacy.ChargeStatements], [privacy.Roomiest]), a choice made from the
//     history and the run's plan, not its output;
//   - failed before any noise was drawn (Outcome.NoiseDrawn false): refunded,
//     charged nothing, shown as failed;
//   - failed after noise was drawn: stays charged its full grant, shown as
//     failed.
//
// A run that is never settled (the process was killed, the machine lost
// power) stays "reserved" and keeps its full grant charged: it may have
// released output. [Ledger.History] and [Ledger.Show] report such a run as
// [Interrupted] once the process that reserved it is gone (same host: the
// process id, its start time and the boot id no longer match a live process),
// and [Ledger.Settle] refuses it ([ErrInterrupted]).
//
// A data set with no budget is not refused: its runs are recorded the same
// way. [Ledger.SetBudget] sets a total once (refused if the runs already
// recorded do not fit); [Ledger.ChangeBudget] changes it explicitly,
// never below what has been spent, recording the old and new values.
// A total at least as large as the old one is accepted even over budget
// (it never lowers what is recorded as spent). [Ledger.RecordCharge]
// records a spend made outside dplr (pure ε, (ε, δ), ρ, or μ-GDP), and
// refuses, with nothing written, one the budget's rule cannot admit,
// stating its cost under the rule; with ChargeRequest.Force it records it
// all the same (it happened; the data set then admits nothing more until
// its total is changed).
//
// # Neighbour relations
//
// Each budget is stated for a [Relation]: one row replaced by default, one
// user's data replaced for users data (ReserveRequest.Relation for a new
// data set, [Ledger.SetRelation] before anything is charged). A run's
// relation is read from its guarantee's Neighbours text ([ParseNeighbours]).
// A run private for another relation is charged by group privacy over the
// number k of its neighbour steps that make one step of the budget's: an
// add/remove run costs 2ε (δ·(1 + e^ε), 4ρ) under replace-one, a user-level
// run costs the same under row level. A row-level run says nothing about
// users, nor a replace-one run about add/remove: Settle records such a run
// as failed, charged its grant, and returns [ErrRelation] so that the host
// withholds the result; likewise when the converted cost does not fit
// ([ErrBudgetExceeded]). The history shows each run's relation, the factor
// applied and its guarantee class (worst-case, model-based, nominal).
//
// # Composition across runs
//
// The rules below are the privacy package's budget filters
// ([privacy.ComposeTally], [privacy.Fits], [privacy.RemainingOf]); the
// ledger stores each data set's tally of charges ([privacy.Tally]) in its
// chain and asks the privacy package whether a charge is admitted.
//
// Runs on one data set are chosen adaptively, one after another, each run's
// grant (and the decision to run at all) depending on earlier outputs, so
// admission is a privacy filter: a rule, fixed with the total, that admits a
// run only if the history with it stays within the total, valid for every
// adaptive choice of the runs. Two filters are used, and which one applies
// is itself fixed before any output could influence it.
//
// Each charge holds the statements known of its run ([Charge]): (ε, δ)
// and/or ρ, and μ² (μ-GDP) when every step of the run is Gaussian or the
// run was granted a pure ε. A pure ε grant gives (ε, 0), ε²/2 and μ_ε² (see
// below), an (ε, δ) grant (ε, δ) only, a ρ grant ρ only; a settled run
// composed in zCDP keeps both, a Gaussian-only run adds μ² = Σ (Δ_i/σ_i)²
// and ρ = μ²/2. A reservation of an (ε, δ) grant also holds μ_g² with
// μ_g = privacy.GDPMu(ε, δ), a ρ grant μ_g² = 2ρ: the most a Gaussian-only
// run within its grant can spend (its exact curve must meet the grant, and
// δ_μ(ε) increases in μ).
//
// The classic rule is the privacy package's composition: a run's charge is
// privacy.Compose of its steps under its grant (a step that declares no
// cost, or steps beyond the grant, give the full grant), and admission asks
// privacy.Compose whether every charge of the data set, plus the new
// grant, composes as a sequence of steps under the total taken as a grant.
// The charges are summed into four shapes (pure; (ε, δ) with ρ; (ε, δ)
// only; ρ only), which compose exactly as the individual charges would, so
// admission costs the same at 50,000 runs as at one. Under a pure or an
// (ε, δ) total met by basic composition it is the sum filter, valid with
// adaptively chosen parameters (Rogers, Roth, Ullman & Vadhan 2016); under
// a ρ total, or an (ε, δ) total met in zCDP (or "mixed": pure runs' ε added
// to the others' ρ through Rényi divergence), the Rényi/zCDP sum filter
// (Feldman & Zrnic 2021, Thm 3.1), converted to (ε, δ) with the tight
// conversion (Canonne, Kamath & Steinke 2020). There is no
// advanced-composition filter.
//
// The Gaussian-DP filter applies to an (ε, δ) total whose first charged run
// is Gaussian-only: every run must then carry a GDP statement (μ_i-GDP) and
// Σ μ_i² ≤ μ_T² with μ_T = privacy.GDPMu(ε_T, δ_T). Smith & Thakurta (2022,
// "Fully adaptive composition for Gaussian differential privacy", Thm 1)
// show that mechanisms that are μ_i-GDP with μ_i chosen adaptively, stopped
// before Σ μ_i² would exceed μ_T², are together μ_T-GDP, which is
// (ε_T, δ_T)-DP by the GDP curve (Dong, Roth & Su 2022, Cor. 2.13). For a
// Gaussian-only history this rule admits everything the classic rule does
// (any valid accounting of Gaussian runs lies above their exact curve) and
// more: at (3, 1e-6), ten zCDP-calibrated (1, 1e-7) runs where zCDP admits
// nine, or nine exact runs (each with 7 % less noise) where basic
// composition of their (ε, δ) statements admits three.
//
// Two kinds of run carry a GDP statement. A Gaussian-only run: μ² = Σ
// (Δ_i/σ_i)², at most μ_g² of its grant (held by its reservation). And,
// as a fallback for Laplace and exponential-mechanism runs, a run granted
// a pure ε: it is ε-DP whatever its mechanisms, and every ε-DP mechanism
// is μ_ε-GDP with μ_ε = 2Φ⁻¹(e^ε/(1+e^ε)) (its trade-off curve lies above
// the ε-DP one, two lines meeting at α* = 1/(1+e^ε); the convex Gaussian
// curve lies below both lines iff it does at α*; see privacy.PureMu), about
// √(π/2)·ε for small ε. Its reservation holds μ_ε² of the grant; it settles
// at the smaller of μ² of its achieved ε and Σ μ_{ε_j}² over its steps
// (GDP composition inside the run), and a failure after noise keeps the
// reservation's. A run granted (ε, δ) or ρ that is not Gaussian-only has no
// GDP statement bounded by its grant before it runs (an (ε, δ)-DP
// mechanism with δ > 0 is μ-GDP for no μ), so the filter cannot admit it.
// A pure run counts more under this filter than under zCDP (μ_ε² ≈
// 1.57 ε² against the 2ρ = ε² the classic rule charges), so a pure first
// run does not fix the Gaussian-DP filter: the rule is fixed for it only by
// a Gaussian-only history.
//
// Which rule applies ("the filter", recorded in the data set's position):
//
//   - pure and ρ totals: the classic rule (under a ρ total zCDP already sums
//     μ²/2 exactly for Gaussian runs);
//   - an (ε, δ) total set on an existing history fixes the rule at once:
//     the Gaussian-DP filter when every charge so far is Gaussian-only and
//     no run is open, the classic rule otherwise (the data owner's act
//     decides, not a later run chosen from that history's outputs);
//   - an (ε, δ) total set before any charge is undecided until its first
//     charged run settles. A reservation must then fit both rules, so it is
//     valid whichever is fixed later;
//   - the first run to settle with a charge fixes the rule: the Gaussian-DP
//     filter when it, and every charge before it, is Gaussian-only and no
//     other run is open; the classic rule otherwise. A second run
//     reserved while the rule is undecided and another run is open fixes
//     the classic rule at once: the first run's kind must be chosen before
//     any output of the data set exists, and a run reserved beside it could
//     not be held to a rule decided by the first run's settle time;
//   - the rule then stays: under the Gaussian-DP filter a run granted
//     (ε, δ) or ρ whose estimator declared before it ran that it will use
//     another mechanism than the Gaussian (ReserveRequest.MechanismsDeclared,
//     from the host's pre-flight check) is refused by [Ledger.Reserve] with
//     nothing written ([ErrMechanism] and [ErrIncompatible];
//     [Status.AdmitsMechanisms] previews it); granted a pure ε it is
//     admitted by the fallback above. An undeclared run granted (ε, δ) or
//     ρ that is not Gaussian-only is withheld at
//     [Ledger.Settle] ([ErrIncompatible]; it is recorded as failed, and the
//     host does not release its result), and one that failed after drawing
//     noise is charged the same way: both carry the GDP statement of the
//     steps whose noise was drawn (a Gaussian step (Δ/σ)-GDP, a pure
//     Laplace or exponential step μ_{ε_j}-GDP, μ² adding up), never less
//     than the reservation's, so the budget keeps admitting runs. Only a
//     charge with no GDP statement at all (a failed run whose steps are
//     unknown, an outside spend recorded with Force) leaves the filter
//     admitting nothing; [Ledger.ChangeBudget] (to the same or a larger
//     total) is then the way back: the change fixes the classic rule,
//     which counts every charge (it admits the whole history, so each run
//     so far is one the classic filter would have admitted too, and the
//     data owner's change, not an output, decides). Otherwise a total
//     changed later keeps the rule.
//     [Status.Rule] names the rule in force ([RuleGDP], [RuleClassic],
//     [RuleUndecided]); Spent and Remaining are stated under it.
//
// Why a rule fixed this way is valid: the kind of a run (which mechanisms
// its plan uses) is a function of its public inputs (estimator, parameters,
// public shape), and the run that fixes the rule was requested before any
// output of the data set was released (earlier runs were refunded, i.e.
// failed before drawing noise, which like every refund is assumed to
// depend on public inputs only). So the rule is a data-independent choice
// of the analyst; conditioned on it the history is run under one fixed,
// valid filter, and a mixture over data-independent choices of (ε, δ)-DP
// interactions is (ε, δ)-DP. Switching rules on the strength of outputs
// (admitting a run when either rule would) is not valid in general: the
// analyst could pick the kind of later runs from the outputs and get the
// worse of both trade-off curves, which is why the ledger never does it.
//
// A total changed later is a new filter for the history it is recorded
// with: the change is a decision of the data owner, recorded, not something
// a run can trigger. Group privacy for a run stated for another neighbour
// relation multiplies ε by k (with δ·Σe^{iε}), ρ by k² and μ by k (Dong,
// Roth & Su 2022, Thm 2.14).
//
// Consequences of using one composition: under an (ε, δ) total a run with
// only an (ε, δ) statement cannot join a history holding a run with only a
// ρ statement ([ErrIncompatible]; grant them alike), and [Status.Remaining]
// is found by asking admission itself (bisection over the further grant),
// so what Show reports is what Reserve admits, with float leftovers below
// 1e-9 of the total shown as none. Under the Gaussian-DP filter Show
// reports the spent μ (and the ε it gives at the total's δ) and the μ still
// available, as the (ε, δ_T) of the largest further Gaussian-only run.
//
// Records of version 2 carry the μ² statements and the filter; records of
// version 1 (written before the Gaussian-DP filter) are replayed without
// them, so an older ledger keeps its hashes and its data sets keep the
// classic rule.
package ledger
