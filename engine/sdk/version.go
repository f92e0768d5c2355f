package sdk

// Version is the version of the SDK (and of first-party plugins).
const Version = "0.1.0"
