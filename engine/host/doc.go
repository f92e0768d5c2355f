// Package host finds, starts and talks to dplr estimator plugins, and runs
// fits through them. It never trusts a plugin: a plugin that fails the
// handshake, crashes, hangs past a timeout or returns malformed or
// over-budget results is reported as an error naming the plugin, and the
// host carries on. Runner is the fit pipeline `dplr fit` uses (validate,
// pre-flight check, reserve, fit, verify, settle, report), with fits on
// remote data through aggregation passes and transforms through the
// plugin that made the model; the steps and what each refuses are in
// docs/plugins.md ("Inside engine/host").
package host
