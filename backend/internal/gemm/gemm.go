package gemm

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Register tile (mr×nr, fixed by the micro-kernel) and cache blocks: a
// packed kc×nr strip of B (16 KiB) stays in L1, an mc×kc block of A
// (240 KiB) in L2.
const (
	mr = 6
	nr = 8
	kc = 256
	mc = 20 * mr
	nc = 512 * nr
)

// minParallel is the number of multiply-adds below which a product runs on
// the calling goroutine alone.
const minParallel = 1 << 21

// useAsm selects the assembly micro-kernel; tests clear it to run the
// generic one.
var useAsm = hasAsm

// View is a row-major strided operand: element (i, j) of the matrix it
// denotes is Data[i·Stride+j], or Data[j·Stride+i] when Trans is set.
type View struct {
	Data   []float64
	Stride int
	Trans  bool
}

// Gemm adds alpha·A·B to the m×n row-major matrix c (row stride ldc),
// where A (m×k) and B (k×n) are the matrices a and b denote. It panics if
// a slice is too short for its shape.
func Gemm(m, n, k int, alpha float64, a, b View, c []float64, ldc int) {
	check("A", a, m, k)
	check("B", b, k, n)
	check("C", View{Data: c, Stride: ldc}, m, n)
	run(&problem{m: m, n: n, k: k, alpha: alpha, a: a, b: b}, c, ldc)
}

// Syrk adds alpha·A·Aᵀ to the upper triangle of the n×n row-major matrix
// c (row stride ldc), where A (n×k) is the matrix a denotes; the strict
// lower triangle of c is not written. It panics if a slice is too short
// for its shape.
func Syrk(n, k int, alpha float64, a View, c []float64, ldc int) {
	check("A", a, n, k)
	check("C", View{Data: c, Stride: ldc}, n, n)
	upperABt(n, k, alpha, a, a, c, ldc)
}

// Syr2k adds alpha·(A·Bᵀ + B·Aᵀ) to the upper triangle of the n×n
// row-major matrix c (row stride ldc), where A and B (n×k) are the
// matrices a and b denote; the strict lower triangle of c is not written.
// It panics if a slice is too short for its shape.
func Syr2k(n, k int, alpha float64, a, b View, c []float64, ldc int) {
	check("A", a, n, k)
	check("B", b, n, k)
	check("C", View{Data: c, Stride: ldc}, n, n)
	upperABt(n, k, alpha, a, b, c, ldc)
	upperABt(n, k, alpha, b, a, c, ldc)
}

// upperABt adds the upper triangle of alpha·A·Bᵀ to c.
func upperABt(n, k int, alpha float64, a, b View, c []float64, ldc int) {
	bt := View{Data: b.Data, Stride: b.Stride, Trans: !b.Trans}
	run(&problem{m: n, n: n, k: k, alpha: alpha, a: a, b: bt, upper: true}, c, ldc)
}

// check panics unless v holds an r×c matrix.
func check(name string, v View, r, c int) {
	if r == 0 || c == 0 {
		return
	}
	if v.Trans {
		r, c = c, r
	}
	if v.Stride < c || len(v.Data) < (r-1)*v.Stride+c {
		panic(fmt.Sprintf("gemm: %s storage (%d values, stride %d) too short for %d×%d", name, len(v.Data), v.Stride, r, c))
	}
}

// problem is one product C += alpha·A·B (upper: only the upper triangle).
type problem struct {
	m, n, k int
	alpha   float64
	a, b    View
	upper   bool
}

// buffers are the packed panels of one goroutine.
type buffers struct{ a, b []float64 }

var pool = sync.Pool{New: func() any { return &buffers{a: make([]float64, mc*kc)} }}

// helpers holds one token per core beyond the caller's own: a product
// runs on as many extra goroutines as it can take tokens without waiting.
var helpers = func() chan struct{} {
	n := runtime.GOMAXPROCS(0) - 1
	ch := make(chan struct{}, n)
	for range n {
		ch <- struct{}{}
	}
	return ch
}()

func acquire(want int) int {
	got := 0
	for got < want {
		select {
		case <-helpers:
			got++
		default:
			return got
		}
	}
	return got
}

func release(n int) {
	for range n {
		helpers <- struct{}{}
	}
}

// run computes the product, splitting C into strips of whole columns (or
// rows, when C is taller than wide) over the goroutines it gets. Every
// element of C is computed by the same operations in the same order
// whatever the split, so the result does not depend on the number of
// goroutines.
func run(p *problem, c []float64, ldc int) {
	if p.m == 0 || p.n == 0 || p.k == 0 {
		return
	}
	w := 1
	work := float64(p.m) * float64(p.n) * float64(p.k)
	if p.upper {
		work /= 2
	}
	if work >= minParallel {
		w += acquire(min(runtime.GOMAXPROCS(0)-1, int(work/minParallel)))
	}
	defer release(w - 1)
	byRows := !p.upper && p.m > p.n
	ext, unit := p.n, nr
	if byRows {
		ext, unit = p.m, mr
	}
	bounds := make([]int, w+1)
	for t := 1; t <= w; t++ {
		f := float64(t) / float64(w)
		if p.upper {
			// Column j of the upper triangle holds j+1 elements.
			f = math.Sqrt(f)
		}
		bounds[t] = min(ext, (int(f*float64(ext))+unit-1)/unit*unit)
	}
	bounds[w] = ext
	var wg sync.WaitGroup
	for t := range w {
		lo, hi := bounds[t], bounds[t+1]
		if lo >= hi {
			continue
		}
		strip := func() {
			buf := pool.Get().(*buffers)
			defer pool.Put(buf)
			if byRows {
				p.serial(c, ldc, lo, hi, 0, p.n, buf)
			} else {
				p.serial(c, ldc, 0, p.m, lo, hi, buf)
			}
		}
		if t == w-1 {
			strip()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			strip()
		}()
	}
	wg.Wait()
}

// serial computes the block rows i0..i1, columns j0..j1 of C (global
// indices) on the calling goroutine.
func (p *problem) serial(c []float64, ldc, i0, i1, j0, j1 int, buf *buffers) {
	for jc := j0; jc < j1; jc += nc {
		jn := min(nc, j1-jc)
		if need := (jn + nr - 1) / nr * nr * kc; len(buf.b) < need {
			buf.b = make([]float64, need)
		}
		for pc := 0; pc < p.k; pc += kc {
			kn := min(kc, p.k-pc)
			packB(buf.b, p.b, pc, jc, kn, jn)
			for ic := i0; ic < i1; ic += mc {
				if p.upper && ic > jc+jn-1 {
					break
				}
				in := min(mc, i1-ic)
				packA(buf.a, p.a, ic, pc, in, kn, p.alpha)
				p.macro(c, ldc, ic, in, jc, jn, kn, buf.a, buf.b)
			}
		}
	}
}

// macro runs the micro-kernel over the packed in×kn block of A and kn×jn
// panel of B, adding into C at (ic, jc). Edge tiles, and with upper the
// tiles the diagonal crosses, go through a scratch tile.
func (p *problem) macro(c []float64, ldc, ic, in, jc, jn, kn int, ap, bp []float64) {
	var tmp [mr * nr]float64
	for jr := 0; jr < jn; jr += nr {
		j, nj := jc+jr, min(nr, jn-jr)
		bs := bp[jr*kn : (jr+nr)*kn]
		for ir := 0; ir < in; ir += mr {
			i, ni := ic+ir, min(mr, in-ir)
			if p.upper && i > j+nj-1 {
				break
			}
			as := ap[ir*kn : (ir+mr)*kn]
			if ni == mr && nj == nr && !(p.upper && i+mr-1 > j) {
				kernel(kn, as, bs, c[i*ldc+j:], ldc)
				continue
			}
			tmp = [mr * nr]float64{}
			kernel(kn, as, bs, tmp[:], nr)
			for r := range ni {
				row := c[(i+r)*ldc+j : (i+r)*ldc+j+nj]
				s := 0
				if p.upper {
					s = max(0, i+r-j)
				}
				for q := s; q < nj; q++ {
					row[q] += tmp[r*nr+q]
				}
			}
		}
	}
}

// kernel adds the product of the packed strips a (k×mr) and b (k×nr) to
// the mr×nr tile at c (row stride ldc).
func kernel(k int, a, b, c []float64, ldc int) {
	if useAsm {
		_ = c[(mr-1)*ldc+nr-1]
		kernelAsm(k, &a[0], &b[0], &c[0], ldc)
		return
	}
	kernelGo(k, a, b, c, ldc)
}

// kernelGo is the generic micro-kernel.
func kernelGo(k int, a, b, c []float64, ldc int) {
	var acc [mr][nr]float64
	for l := range k {
		al := a[l*mr : l*mr+mr]
		bl := b[l*nr : l*nr+nr]
		for i, ai := range al {
			row := &acc[i]
			for j, bj := range bl {
				row[j] += ai * bj
			}
		}
	}
	for i := range mr {
		row := c[i*ldc : i*ldc+nr]
		for j := range row {
			row[j] += acc[i][j]
		}
	}
}

// packA packs alpha·A[ic:ic+in, pc:pc+kn] into dst as mr-high strips, each
// stored step by step (mr values per step), zero-padded to whole strips.
func packA(dst []float64, a View, ic, pc, in, kn int, alpha float64) {
	s, d := a.Stride, a.Data
	if !a.Trans {
		for ir := 0; ir < in; ir += mr {
			strip := dst[ir*kn : (ir+mr)*kn]
			for r := range mr {
				if ir+r >= in {
					for l := range kn {
						strip[l*mr+r] = 0
					}
					continue
				}
				row := d[(ic+ir+r)*s+pc:]
				row = row[:kn]
				for l, v := range row {
					strip[l*mr+r] = alpha * v
				}
			}
		}
		return
	}
	full := in / mr * mr
	for l := range kn {
		row := d[(pc+l)*s+ic:]
		row = row[:in]
		for ir := 0; ir < full; ir += mr {
			o := ir*kn + l*mr
			t := dst[o : o+mr]
			src := row[ir : ir+mr]
			for r := range t {
				t[r] = alpha * src[r]
			}
		}
		if full < in {
			o := full*kn + l*mr
			t := dst[o : o+mr]
			for r := range t {
				t[r] = 0
				if full+r < in {
					t[r] = alpha * row[full+r]
				}
			}
		}
	}
}

// packB packs B[pc:pc+kn, jc:jc+jn] into dst as nr-wide strips, each
// stored step by step (nr values per step), zero-padded to whole strips.
func packB(dst []float64, b View, pc, jc, kn, jn int) {
	s, d := b.Stride, b.Data
	if !b.Trans {
		full := jn / nr * nr
		for l := range kn {
			row := d[(pc+l)*s+jc:]
			row = row[:jn]
			for jr := 0; jr < full; jr += nr {
				o := jr*kn + l*nr
				copy(dst[o:o+nr], row[jr:jr+nr])
			}
			if full < jn {
				o := full*kn + l*nr
				t := dst[o : o+nr]
				n := copy(t, row[full:])
				clear(t[n:])
			}
		}
		return
	}
	for jr := 0; jr < jn; jr += nr {
		strip := dst[jr*kn : (jr+nr)*kn]
		for q := range nr {
			if jr+q >= jn {
				for l := range kn {
					strip[l*nr+q] = 0
				}
				continue
			}
			col := d[(jc+jr+q)*s+pc:]
			col = col[:kn]
			for l, v := range col {
				strip[l*nr+q] = v
			}
		}
	}
}
