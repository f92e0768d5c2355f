//go:build !unix

package ledger

func bootID() string                       { return "" }
func startToken(int) string                { return "" }
func processLiveness(int, string) liveness { return ownerUnknown }
