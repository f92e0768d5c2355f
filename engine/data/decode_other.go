//go:build !amd64

package data

// hasDecodeAsm is false: no assembly decoding loop on this architecture.
var hasDecodeAsm = false

// decodeFast decodes nothing here; the portable loops do it all (see the amd64
// version).
func decodeFast(dst []float64, src []byte, mu []float64, scale float64) int { return 0 }
