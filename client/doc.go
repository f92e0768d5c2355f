// Package client runs dplr from Go code: it discovers the estimator
// plugins (in the same search order as the dplr command), describes their
// estimators, runs fits through the host with the budget ledger, and
// manages data sets' budgets, so that a service embeds dplr without
// shelling out to the command line. The dplr command is a flag layer over
// this package.
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
