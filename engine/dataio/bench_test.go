package dataio

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

const fashionTrain = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

func needFashion(b *testing.B) {
	if _, err := os.Stat(fashionTrain); err != nil {
		b.Skip("dataset-fashion-mnist not installed")
	}
}

// plainFashionLoop is the baseline: the simplest Go code that decompresses
// the IDX file and converts the pixels to a float64 matrix, with no
// validation beyond the header.
func plainFashionLoop(path string) (*mat.Dense, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, err
	}
	var hdr [16]byte
	if _, err := io.ReadFull(zr, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[4:]))
	p := int(binary.BigEndian.Uint32(hdr[8:])) * int(binary.BigEndian.Uint32(hdr[12:]))
	pix := make([]byte, n*p)
	if _, err := io.ReadFull(zr, pix); err != nil {
		return nil, err
	}
	x := make([]float64, n*p)
	for i, v := range pix {
		x[i] = float64(v)
	}
	return mat.NewDense(n, p, x), nil
}

// BenchmarkFashionMNIST compares Load on the training images (IDX, gzip)
// with the plain loop, with and without the content hash.
func BenchmarkFashionMNIST(b *testing.B) {
	needFashion(b)
	// The floor's first half: decompressing the file (no conversion).
	b.Run("inflate", func(b *testing.B) {
		for b.Loop() {
			src, err := openSource(fashionTrain, FormatAuto)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, src.r); err != nil {
				b.Fatal(err)
			}
			src.Close()
		}
	})
	b.Run("plain-loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := plainFashionLoop(fashionTrain); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Load-nohash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Load(fashionTrain, LoadOptions{SkipHash: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Load(fashionTrain, LoadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What the host does before the first fit on this file: stream it into
	// the canonical 376 MB cache file, hashing each row once.
	b.Run("PrepareFile-first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cache, err := os.MkdirTemp("", "dataio-bench-cache")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := PrepareFile(fashionTrain, LoadOptions{Scale: 1.0 / 255}, cache); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(cache)
			b.StartTimer()
		}
	})
	// The first preparation as it was before the streamed path: load the
	// whole data set with its identity and hash, then write it.
	b.Run("PrepareFile-first-load-then-write", func(b *testing.B) {
		b.ReportAllocs()
		opt := LoadOptions{Scale: 1.0 / 255}
		for b.Loop() {
			cache, err := os.MkdirTemp("", "dataio-bench-cache")
			if err != nil {
				b.Fatal(err)
			}
			ds, id, err := LoadIdentity(fashionTrain, opt)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := prepare(ds, cache, &id); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(cache)
			b.StartTimer()
		}
	})
}

// BenchmarkFashionMNISTPaired alternates the plain loop and Load within
// each iteration and reports the medians of the per-iteration ratios
// (Load/plain) of wall time and of process CPU time (which includes the
// garbage collector and, for Load, both goroutines of the pipelined
// reader); paired ratios are steadier than separate runs on a busy machine.
func BenchmarkFashionMNISTPaired(b *testing.B) {
	needFashion(b)
	var nohash, withHash, cpuNohash, cpuHash []float64
	for b.Loop() {
		t0, c0 := time.Now(), cpuTime()
		if _, err := plainFashionLoop(fashionTrain); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), cpuTime()
		if _, err := Load(fashionTrain, LoadOptions{SkipHash: true}); err != nil {
			b.Fatal(err)
		}
		t2, c2 := time.Now(), cpuTime()
		if _, err := Load(fashionTrain, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
		t3, c3 := time.Now(), cpuTime()
		plain := t1.Sub(t0).Seconds()
		nohash = append(nohash, t2.Sub(t1).Seconds()/plain)
		withHash = append(withHash, t3.Sub(t2).Seconds()/plain)
		cplain := (c1 - c0).Seconds()
		cpuNohash = append(cpuNohash, (c2-c1).Seconds()/cplain)
		cpuHash = append(cpuHash, (c3-c2).Seconds()/cplain)
	}
	b.ReportMetric(median(nohash), "ratio-nohash")
	b.ReportMetric(median(withHash), "ratio-hash")
	b.ReportMetric(median(cpuNohash), "cpu-ratio-nohash")
	b.ReportMetric(median(cpuHash), "cpu-ratio-hash")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

var (
	bigOnce sync.Once
	bigPath string
	bigDir  string
	bigErr  error
)

// bigNPY writes a 60000×784 float64 .npy (376 MB) once per test binary,
// filled with the Fashion-MNIST pixels scaled to [0, 1].
func bigNPY(b *testing.B) string {
	needFashion(b)
	bigOnce.Do(func() {
		bigDir, bigErr = os.MkdirTemp("", "dataio-bench")
		if bigErr != nil {
			return
		}
		var ds *mat.Dense
		if ds, bigErr = plainFashionLoop(fashionTrain); bigErr != nil {
			return
		}
		ds.Scale(1.0/255, ds)
		bigPath = filepath.Join(bigDir, "fashion.npy")
		bigErr = SaveNPY(bigPath, ds)
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigPath
}

// sumAll is the estimator's one pass over X.
func sumAll(x *mat.Dense) float64 {
	raw := x.RawMatrix()
	s := 0.0
	for _, v := range raw.Data {
		s += v
	}
	return s
}

var sink float64

// BenchmarkNPY60000x784 compares, on a 376 MB float64 .npy: reading it into
// memory (Load), preparing it in place (PrepareFile: one validating,
// hashing pass over the mapping), opening the handle (Open: mmap, no copy)
// followed by one pass, and the whole host+plugin path.
func BenchmarkNPY60000x784(b *testing.B) {
	path := bigNPY(b)
	cache := filepath.Join(bigDir, "cache")
	b.Run("Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ds, err := Load(path, LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			sink += ds.X.At(0, 0)
		}
	})
	// A fresh cache directory per iteration: the full validating, hashing
	// pass every time.
	fresh := 0
	freshCache := func() string {
		fresh++
		return filepath.Join(bigDir, fmt.Sprintf("cache%d", fresh))
	}
	b.Run("PrepareFile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := PrepareFile(path, LoadOptions{}, freshCache()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same cache directory: the recorded handle is reused.
	b.Run("PrepareFile-again", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := PrepareFile(path, LoadOptions{}, cache); err != nil {
				b.Fatal(err)
			}
		}
	})
	h, err := PrepareFile(path, LoadOptions{}, cache)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Open+pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ds, c, err := Open(h)
			if err != nil {
				b.Fatal(err)
			}
			sink += sumAll(ds.X)
			c.Close()
		}
	})
	b.Run("PrepareFile+Open+pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h, err := PrepareFile(path, LoadOptions{}, freshCache())
			if err != nil {
				b.Fatal(err)
			}
			ds, c, err := Open(h)
			if err != nil {
				b.Fatal(err)
			}
			sink += sumAll(ds.X)
			c.Close()
		}
	})
}

// TestMain removes the benchmark's large temporary file.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		os.RemoveAll(bigDir)
	}
	os.Exit(code)
}

// BenchmarkLoadFMNISTCold prepares the Fashion-MNIST training images (IDX,
// gzip) scaled by 1/255 into an empty cache, as the first fit on them
// does, and reports the CPU time per preparation (cpu-s/op) beside the
// wall time: decompression, conversion, the source identity and the
// content hash, and writing the cache file.
func BenchmarkLoadFMNISTCold(b *testing.B) {
	needFashion(b)
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		cache, err := os.MkdirTemp("", "dataio-cold")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0 := cpuTime()
		_, err = PrepareFile(fashionTrain, LoadOptions{Scale: 1.0 / 255}, cache)
		cpu += cpuTime() - c0
		b.StopTimer()
		os.RemoveAll(cache)
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
