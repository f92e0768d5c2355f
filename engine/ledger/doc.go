// Package ledger is dplr's persistent, per-data-set record of privacy
// spending: one SQLite database holding a hash chain of records (data sets,
// totals, links, runs reserved and settled, outside spends), so that
// repeated runs on a data set cannot silently exceed its total, even when
// processes race, are killed half-way, or the file is damaged. Admission
// asks the privacy package's filters. Storage, the chain, what is detected
// and the admission rules are described in docs/ledger.md ("Inside
// engine/ledger").
package ledger
