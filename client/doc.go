// Package client runs dplr from Go code: it discovers the estimator
// plugins, describes their estimators, runs fits through the host with the
// budget ledger, manages data sets' budgets, audits estimators' privacy
// claims, generates synthetic data sets and reaches sharded data through
// dplr-beam. The dplr command is a flag layer over it; the client hands out
// and accepts no host type. A Client owns the plugins it starts (Close
// stops them), and every error is classed like the command's exit codes
// (ErrUsage, ErrBudget, …; (*Error).Charged). Usage and an example are in
// docs/go.md.
package client
