// Package client runs dplr from Go code: it discovers the estimator
// plugins (in the same search order as the dplr command), describes their
// estimators, runs fits through the host with the budget ledger, manages
// data sets' budgets, audits estimators' privacy claims, generates
// synthetic data sets and reaches sharded data through dplr-beam, so that
// a service embeds dplr without shelling out to the command line. The dplr
// command is a flag layer over this package: it imports no engine package
// but engine/data's plain types, and the client hands out and accepts no
// host type (the engine's plain value types appear under client names).
//
// A Client owns the plugins it starts; Close stops them:
//
//	c, err := client.New(client.Options{Home: home})
//	if err != nil { ... }
//	defer c.Close()
//	res, err := c.Fit(ctx, client.FitRequest{
//		Estimator: "pca-analyze-gauss",
//		Params:    client.Params{}.Int("rank", 2).Float("clip", 12),
//		Grant:     client.ApproxDP(1, 1e-6),
//		Data:      client.File("data/spiked", client.LoadOptions{}),
//	})
//
// Every error is classed like the command's exit codes: errors.Is(err,
// ErrUsage), ErrBudget, ErrData, ErrPlugin, ErrEstimator, ErrInterrupted
// or ErrRuntime tells what happened, and (*Error).Charged whether the run
// stays charged.
package client
