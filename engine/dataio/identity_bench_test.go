package dataio

import (
	"testing"
	"time"
)

// withCPU runs f b.N times and reports the process CPU time per op as
// well (the machine is shared: CPU time is steadier than wall time).
func withCPU(b *testing.B, bytes int64, f func()) {
	b.SetBytes(bytes)
	c0 := cpuTime()
	for range b.N {
		f()
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkIdentityFashionMNIST measures the source identity and the
// content hash on the Fashion-MNIST training images (60000×784, IDX gzip):
//
//   - hash/*: one pass over the loaded matrix in memory: Hash (the per-row
//     SHA-256 digests, then one SHA-256 over them) and IdentityOf (the
//     same digests summed mod 2^256, plus the rounded row hash and the
//     bottom-k sketch);
//   - load/*: the whole load from the gzip file, as dplr fit does it: Load
//     (decompress, convert, digests and sketch in the converting
//     goroutines, the content hash over the digests) and LoadIdentity
//     (the same, returning the identity).
//
// go test ./engine/dataio -run '^$' -bench IdentityFashionMNIST -benchtime 5x -count 3
func BenchmarkIdentityFashionMNIST(b *testing.B) {
	needFashion(b)
	ds, err := Load(fashionTrain, LoadOptions{SkipHash: true})
	if err != nil {
		b.Fatal(err)
	}
	n, p := ds.X.Dims()
	bytes := int64(8 * n * p)
	b.Run("hash/view-sha256", func(b *testing.B) {
		withCPU(b, bytes, func() { _ = Hash(ds) })
	})
	b.Run("hash/identity", func(b *testing.B) {
		withCPU(b, bytes, func() { _ = IdentityOf(ds) })
	})
	b.Run("load/view-hash", func(b *testing.B) {
		withCPU(b, bytes, func() {
			if _, err := Load(fashionTrain, LoadOptions{Scale: 1.0 / 255}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("load/view-hash+identity", func(b *testing.B) {
		withCPU(b, bytes, func() {
			if _, _, err := LoadIdentity(fashionTrain, LoadOptions{Scale: 1.0 / 255}); err != nil {
				b.Fatal(err)
			}
		})
	})
}
