package privacy

import (
	"math/bits"
)

// Exact samplers for the discrete Gaussian and discrete Laplace on the
// integers (docs/privacy.md, "Release noise and the floating-point
// attack"): every random decision compares random bits exactly, in integer
// arithmetic. Deviates are read lazily, one 64-bit word on the fast path and
// bit by bit once a comparison is still tied after 64 bits (about 2^-56).

// lazy is a uniform deviate in [0, 1) of which the leading n bits are known:
// the top n bits of b (n ≤ 64), or, when long is non-nil, the bits in long
// (one bit per byte, most significant first).
type lazy struct {
	b    uint64
	n    uint
	long []byte
}

// bitReader hands out random bits most-significant first. It holds the n
// leading bits of the stream at the top of a, followed by the 64 bits of b.
// The low 64−n bits of a are zero; Go defines shifts by 64 as giving 0, so
// peek64 needs no branch.
type bitReader struct {
	a, b uint64
	n    uint
	used uint64 // bits consumed so far
}

func newBitReader(rng interface{ Uint64() uint64 }) bitReader { return bitReader{b: rng.Uint64()} }

func (s *Source) peek64() uint64 { return s.br.a | s.br.b>>s.br.n }

// consume drops the next d ≤ 64 bits of the stream (after a peek64).
func (s *Source) consume(d uint) {
	r := &s.br
	r.used += uint64(d)
	if d <= r.n {
		r.a <<= d
		r.n -= d
		return
	}
	s.refill(d)
}

// refill is consume's slow half: it uses up a, d−n bits of b, and draws a
// new b.
func (s *Source) refill(d uint) {
	r := &s.br
	d -= r.n
	r.a = r.b << d
	r.n = 64 - d
	r.b = s.rng.Uint64()
}

// takeBits returns the next k ≤ 32 bits of the stream as an integer.
func (s *Source) takeBits(k uint) uint64 {
	v := s.peek64() >> (64 - k)
	s.consume(k)
	return v
}

func topMask(l uint) uint64 { return ^uint64(0) << (64 - l) } // 1 ≤ l ≤ 64

// lessLazy draws a fresh deviate z and reports whether z < *y; if so it
// stores z's known bits in *z (which may alias nothing else).
func (s *Source) lessLazy(y *lazy, z *lazy) bool {
	if y.long != nil {
		return s.lessLazySlow(y, z, 0)
	}
	var pos uint // bits of z known equal to y's leading bits
	for {
		if y.n == pos {
			if y.n+extBits > 64 {
				return s.lessLazySlow(y, z, pos)
			}
			y.b |= s.takeBits(extBits) << (64 - extBits - y.n)
			y.n += extBits
		}
		w := s.peek64() // z's bits from position pos on
		l := y.n - pos
		diff := (w ^ y.b<<pos) & topMask(l)
		if diff == 0 {
			s.consume(l)
			pos = y.n
			continue
		}
		d := uint(bits.LeadingZeros64(diff))
		s.consume(d + 1)
		if w>>(63-d)&1 == 1 {
			return false
		}
		z.b = y.b&^(^uint64(0)>>pos) | (w & topMask(d+1) >> pos)
		z.n = pos + d + 1
		z.long = nil
		return true
	}
}

// lessLazySlow is the exact bit-by-bit continuation of lessLazy once more
// than 64 bits are involved. The first pos bits of z equal y's.
func (s *Source) lessLazySlow(y *lazy, z *lazy, pos uint) bool {
	if y.long == nil {
		yl := make([]byte, y.n)
		for i := uint(0); i < y.n; i++ {
			yl[i] = byte(y.b >> (63 - i) & 1)
		}
		y.long = yl
	}
	zl := append([]byte(nil), y.long[:pos]...)
	for i := int(pos); ; i++ {
		for len(y.long) <= i {
			y.long = append(y.long, byte(s.takeBits(1)))
		}
		zb := byte(s.takeBits(1))
		zl = append(zl, zb)
		if zb != y.long[i] {
			if zb > y.long[i] {
				return false
			}
			z.long, z.n, z.b = zl, 0, 0
			return true
		}
	}
}

// ratio is the binary expansion of p/q, 0 ≤ p < q < 2^63: q64 holds bits
// 1..64 and rem the remainder p·2^64 − q64·q.
type ratio struct {
	q64, rem, q uint64
}

func newRatio(p, q uint64) ratio {
	hi, rem := bits.Div64(p, 0, q)
	return ratio{q64: hi, rem: rem, q: q}
}

// lessRatio draws a fresh deviate z and reports whether z < x; when keep is
// non-nil and z < x, z's known bits are stored there.
func (s *Source) lessRatio(x *ratio, keep *lazy) bool {
	w := s.peek64()
	diff := w ^ x.q64
	if diff != 0 {
		d := uint(bits.LeadingZeros64(diff))
		s.consume(d + 1)
		if w>>(63-d)&1 == 1 {
			return false
		}
		if keep != nil {
			keep.b, keep.n, keep.long = w&topMask(d+1), d+1, nil
		}
		return true
	}
	s.consume(64)
	if x.rem == 0 {
		return false // z ≥ q64/2^64 = x
	}
	// Exact continuation: long division for x's bits, one fresh bit of z
	// at a time.
	var zl []byte
	if keep != nil {
		zl = make([]byte, 64, 128)
		for i := uint(0); i < 64; i++ {
			zl[i] = byte(w >> (63 - i) & 1)
		}
	}
	r := x.rem
	for {
		// r < q < 2^63, so 2r cannot overflow.
		r <<= 1
		var xb byte
		if r >= x.q {
			xb, r = 1, r-x.q
		}
		zb := byte(s.takeBits(1))
		if keep != nil {
			zl = append(zl, zb)
		}
		if zb != xb {
			if zb > xb {
				return false
			}
			if keep != nil {
				keep.long, keep.n, keep.b = zl, 0, 0
			}
			return true
		}
		if r == 0 {
			return false // x's remaining bits are all zero
		}
	}
}

// bernExpRatio returns true with probability exp(−x) for a rational
// x ∈ [0, 1) (or x = 1 when one is set), by von Neumann's method.
func (s *Source) bernExpRatio(x *ratio, one bool) bool {
	var y, z lazy
	if !one && !s.lessRatio(x, &y) {
		return true
	}
	n := 1
	for s.lessLazy(&y, &z) {
		y, z = z, y
		n++
	}
	return n%2 == 0
}

// karneyB returns true with probability exp(−x(2k+x)/(2k+2)) for x = j/m
// given by xr (Karney 2016, algorithm B): a decreasing run below x in which
// every step must also pass a Bernoulli(f) test, f = (2k+x)/(2k+2) given by
// fr (whose expansion is filled in on first use); the answer is whether the
// run length is even.
func (s *Source) karneyB(xr, fr *ratio, k, j, m uint64) bool {
	var y, z lazy
	if !s.lessRatio(xr, &y) {
		return true
	}
	if fr.q64 == 0 && fr.rem == 0 {
		*fr = newRatio(fr.q-2*m+j, fr.q)
	}
	if !s.lessRatio(fr, nil) {
		return true
	}
	n := 1
	for s.lessLazy(&y, &z) {
		if !s.lessRatio(fr, nil) {
			break
		}
		y, z = z, y
		n++
	}
	return n%2 == 0
}

// uniformN returns a uniform integer in [0, n), n > 0, exactly (Lemire's
// multiply-and-reject method).
func (s *Source) uniformN(n uint64) uint64 {
	hi, lo := bits.Mul64(s.rng.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.rng.Uint64(), n)
		}
	}
	return hi
}

// discreteGaussian returns an exact draw from the discrete Gaussian
// N_Z(0, m²), P(v) ∝ exp(−v²/(2m²)), for an integer 1 ≤ m ≤ 2^42, by
// Karney's algorithm D (ACM TOMS 2016) at integer scale and zero mean, with
// k drawn by exact inversion (sampleK): k ≥ 0 with P(k) ∝ exp(−k²/2); a
// sign and j uniform in [0, m), x = j/m, rejecting −0; keep with
// probability exp(−x(2k+x)/2); return ±(k·m + j). The product of the step
// probabilities is ∝ exp(−(km+j)²/(2m²)); docs/privacy.md gives the method.
func (s *Source) discreteGaussian(m uint64) int64 {
	for {
		k := s.sampleK()
		if k >= 1<<20 {
			continue // unreachable: P(k ≥ 2^20) < exp(−2^39)
		}
		neg := s.takeBits(1) == 1
		j := s.uniformN(m)
		if k == 0 && j == 0 && neg {
			continue
		}
		xr := newRatio(j, m)
		// f = (2k+x)/(2k+2) = (2km+j)/((2k+2)m) < 2^63 for k < 2^20,
		// m ≤ 2^42; its expansion is computed only if a run needs it.
		fr := ratio{q: (2*k + 2) * m}
		accept := true
		for i := uint64(0); i <= k; i++ {
			if !s.karneyB(&xr, &fr, k, j, m) {
				accept = false
				break
			}
		}
		if !accept {
			continue
		}
		v := int64(k*m + j)
		if neg {
			return -v
		}
		return v
	}
}

// discreteLaplace returns an exact draw with P(v) ∝ exp(−|v|/t) for an
// integer 1 ≤ t ≤ 2^42 (Canonne, Kamath & Steinke 2020, Algorithm 2, with
// integer scale): u uniform in [0, t) kept with probability exp(−u/t), plus
// t times a geometric count of exp(−1) successes, with a random sign and −0
// rejected.
func (s *Source) discreteLaplace(t uint64) int64 {
	for {
		u := s.uniformN(t)
		ur := newRatio(u, t)
		if !s.bernExpRatio(&ur, false) {
			continue
		}
		v := uint64(0)
		for s.bernExpRatio(nil, true) {
			v++
			if v >= 1<<20 {
				break // probability exp(−2^20): the value is rejected below
			}
		}
		neg := s.takeBits(1) == 1
		if neg && u == 0 && v == 0 {
			continue
		}
		if v >= 1<<20 {
			continue
		}
		x := int64(v*t + u)
		if neg {
			return -x
		}
		return x
	}
}

// extBits is how many bits a lazy deviate grows by when a comparison has
// used all its known bits.
const extBits = 1
