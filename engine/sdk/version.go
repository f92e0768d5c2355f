package sdk

// Version is the version of the SDK (and of first-party plugins).
const Version = "0.1.0"

// TimingRelease is the release class of every timing and memory figure of
// a fit (the plugin's fit and load times, its peak memory, an estimator's
// own timings): Diagnostic, because they depend on the data.
const TimingRelease = Diagnostic
