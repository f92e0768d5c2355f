package data

import "golang.org/x/sys/cpu"

// hasDecodeAsm reports whether the AVX2 decoding loop can run here.
var hasDecodeAsm = cpu.X86.HasAVX2

// decodeFast writes float64(src[j])·scale (less mu[j] when mu is not nil)
// into dst[j] for the longest prefix of src whose length is a multiple of
// eight, with the AVX2 loop, and returns that length (0 without AVX2).
// Each value is one conversion and one multiplication (then one
// subtraction), rounded as Go rounds each: the bits equal the portable
// loops'.
func decodeFast(dst []float64, src []byte, mu []float64, scale float64) int {
	n := len(src) &^ 7
	if !hasDecodeAsm || n == 0 {
		return 0
	}
	_, _ = dst[n-1], src[n-1]
	if mu == nil {
		// x − 0 is x, bit for bit (−0 included).
		scaleBytesLess(&dst[0], &src[0], &zeros[0], 0, n, scale)
	} else {
		_ = mu[n-1]
		scaleBytesLess(&dst[0], &src[0], &mu[0], 64, n, scale)
	}
	return n
}

// zeros is the centre of a decoding without one: eight zeros, read again
// at every step.
var zeros [8]float64

// scaleBytesLess sets dst[j] = float64(src[j])·scale − m_j for j < n (n a
// positive multiple of 8), where m is mu read eight values a step, mu
// advancing muStep bytes a step (64 for a vector, 0 to reread eight
// values).
//
//go:noescape
func scaleBytesLess(dst *float64, src *byte, mu *float64, muStep, n int, scale float64)
