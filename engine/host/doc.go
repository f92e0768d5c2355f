// Package host finds, starts and talks to dplr estimator plugins. It never
// trusts a plugin: a plugin that fails the handshake, crashes, hangs past
// a timeout or returns malformed or over-budget results is reported as an
// error naming the plugin, and the host carries on.
package host
