package privacy

import (
	"math/big"
)

// Exact sampling of the integer part k ≥ 0 of the discrete Gaussian in
// units of its scale, P(k) ∝ e^(−k²/2), by inversion against rigorous
// big.Float bounds of the boundaries F_j = Σ_{i<j} e^(−i²/2)/Z (a 16-bit
// table, then 64-bit bounds, then more bits of U at doubled precision); no
// float64 value decides anything. docs/privacy.md, "Release noise and the
// floating-point attack", gives the method.

// kBounds returns outward-rounded bounds of F_1 … F_n at prec bits.
func kBounds(n int, prec uint) (lo, hi []*big.Float) {
	f := func(mode big.RoundingMode) *big.Float { return new(big.Float).SetPrec(prec).SetMode(mode) }
	down, up := big.ToNegativeInf, big.ToPositiveInf

	// e^(1/2) = Σ (1/2)^m/m!: the partial sum is a lower bound; the tail
	// after term t_N is at most 2·t_(N+1) (consecutive terms at least halve).
	eLo, eHi := f(down).SetInt64(1), f(up).SetInt64(1)
	tLo, tHi := f(down).SetInt64(1), f(up).SetInt64(1)
	limit := new(big.Float).SetMantExp(big.NewFloat(1), -int(prec)-16)
	for m := int64(1); ; m++ {
		tLo.Quo(tLo, f(down).SetInt64(2*m))
		tHi.Quo(tHi, f(up).SetInt64(2*m))
		eLo.Add(eLo, tLo)
		eHi.Add(eHi, tHi)
		if tHi.Cmp(limit) < 0 {
			next := f(up).Quo(tHi, f(up).SetInt64(2*(m+1)))
			eHi.Add(eHi, next.Mul(next, f(up).SetInt64(2)))
			break
		}
	}
	// q = e^(−1/2) ∈ [1/eHi, 1/eLo].
	qLo := f(down).Quo(f(down).SetInt64(1), eHi)
	qHi := f(up).Quo(f(up).SetInt64(1), eLo)

	// w_i = q^(i²), summed until the tail bound 2·q^((M+1)²) is negligible.
	var wLo, wHi []*big.Float
	curLo, curHi := f(down).SetInt64(1), f(up).SetInt64(1)
	for i := 0; ; i++ {
		if i > 0 { // q^(i²) = q^((i−1)²)·q^(2i−1)
			for r := 0; r < 2*i-1; r++ {
				curLo = f(down).Mul(curLo, qLo)
				curHi = f(up).Mul(curHi, qHi)
			}
		}
		wLo = append(wLo, curLo)
		wHi = append(wHi, curHi)
		if i >= n && curHi.Cmp(limit) < 0 {
			break
		}
	}
	m := len(wLo) - 1
	// Tail beyond index m: Σ_{i>m} w_i ≤ 2·q^((m+1)²) ≤ 2·w_m·q^(2m+1).
	tail := f(up).Set(wHi[m])
	for r := 0; r < 2*m+1; r++ {
		tail.Mul(tail, qHi)
	}
	tail.Mul(tail, f(up).SetInt64(2))

	zLo, zHi := f(down), f(up).Set(tail)
	for i := 0; i <= m; i++ {
		zLo.Add(zLo, wLo[i])
		zHi.Add(zHi, wHi[i])
	}
	sLo, sHi := f(down), f(up)
	for j := 1; j <= n; j++ {
		sLo.Add(sLo, wLo[j-1])
		sHi.Add(sHi, wHi[j-1])
		lo = append(lo, f(down).Quo(sLo, zHi))
		hi = append(hi, f(up).Quo(sHi, zLo))
	}
	return lo, hi
}

// kBoundaries bounds the number of boundaries kept at 64 bits; F_12 is
// within 2^-70 of 1, beyond the resolution of a 64-bit prefix.
const kBoundaries = 12

// kThresholds holds ⌊F_lo·2^64⌋ and ⌈F_hi·2^64⌉ for F_1 … F_n, the
// boundaries whose upper bound fits 64 bits.
type kThresholds struct {
	lo64, hi64 [kBoundaries]uint64
	n          int // boundaries usable at 64 bits
}

// kThr is computed from kBounds(kBoundaries, 192) (a test recomputes it),
// so that no process pays for the big.Float arithmetic.
var kThr = kThresholds{
	lo64: [kBoundaries]uint64{0x92025b19482ce72b, 0xea91798547a0ef93, 0xfe5415c6e9da4bae, 0xfff3523319908c11, 0xffffdc31b8ef5942,
		0xffffffdaa2d72344, 0xfffffffff1a20da4, 0xfffffffffffdf76c, 0xffffffffffffffe4},
	hi64: [kBoundaries]uint64{0x92025b19482ce72c, 0xea91798547a0ef94, 0xfe5415c6e9da4baf, 0xfff3523319908c12, 0xffffdc31b8ef5943,
		0xffffffdaa2d72345, 0xfffffffff1a20da5, 0xfffffffffffdf76d, 0xffffffffffffffe5},
	n: 9,
}

// kCell settles k from U's 16-bit prefix c when the cell
// [c·2^48, (c+1)·2^48) lies between two consecutive boundaries' 64-bit
// bounds (false when it meets one).
func kCell(c uint64) (uint64, bool) {
	start, end := c<<48, (c+1)<<48 // end 0: 2^64
	for j := 0; j < kThr.n; j++ {
		if start < kThr.hi64[j] {
			return uint64(j), end != 0 && end <= kThr.lo64[j]
		}
	}
	return 0, false
}

// sampleK draws k with P(k) = e^(−k²/2)/Z exactly.
func (s *Source) sampleK() uint64 {
	u := s.peek64()
	if k, ok := kCell(u >> 48); ok {
		s.consume(16)
		return k
	}
	s.consume(64)
	return s.sampleKFrom64(u)
}

// sampleKFrom64 finishes sampleK given the first 64 bits u of U.
func (s *Source) sampleKFrom64(u uint64) uint64 {
	t := kThr
	for j := 0; j < t.n; j++ {
		if u < t.lo64[j] { // U < (u+1)/2^64 ≤ F_lo ≤ F_(j+1)
			return uint64(j)
		}
		if u < t.hi64[j] {
			return s.sampleKSlow(u, j)
		}
	}
	return s.sampleKSlow(u, t.n)
}

// sampleKSlow settles k = #{j : F_j ≤ U} when U's 64-bit prefix u does not:
// boundaries before index j0 (0-based) are known to lie at or below U. It
// extends U 64 bits at a time and recomputes the boundaries at growing
// precision.
func (s *Source) sampleKSlow(u uint64, j0 int) uint64 {
	prefix := new(big.Int).SetUint64(u)
	nbits := uint(64)
	for j := j0; ; j++ {
		for prec := uint(256); ; prec *= 2 {
			for nbits < prec+64 {
				prefix.Lsh(prefix, 64)
				prefix.Or(prefix, new(big.Int).SetUint64(s.rng.Uint64()))
				nbits += 64
			}
			lo, hi := kBounds(j+1, prec)
			// U ∈ [P/2^n, (P+1)/2^n).
			pLow := new(big.Float).SetPrec(nbits + 8).SetInt(prefix)
			pLow.SetMantExp(pLow, -int(nbits))
			pHigh := new(big.Float).SetPrec(nbits + 8).SetInt(new(big.Int).Add(prefix, big.NewInt(1)))
			pHigh.SetMantExp(pHigh, -int(nbits))
			if pHigh.Cmp(lo[j]) <= 0 {
				return uint64(j) // U < F_(j+1)
			}
			if pLow.Cmp(hi[j]) >= 0 {
				break // U ≥ F_(j+1): next boundary
			}
			if prec > 1<<20 {
				// Reached only if U equals the boundary, an event of
				// probability zero.
				return uint64(j)
			}
		}
	}
}
