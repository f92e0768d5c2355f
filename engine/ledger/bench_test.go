package ledger

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/dplr/dplr/engine/privacy"
)

// prefill records n settled runs on data set h through the chain, in one
// transaction (two records each, as real runs leave).
func prefill(b *testing.B, l *Ledger, h string, n int) {
	b.Helper()
	ctx := context.Background()
	err := l.write(ctx, "prefill", func(t *txn) error {
		for i := 0; i < n; i++ {
			g, o := pureG(1e-6), l.self
			res := &event{Kind: evReserve, Dataset: h, Run: &runEvent{Estimator: "prefill", Params: map[string]string{"rank": "5"},
				Grant: &g, Owner: &o, Charge: privacy.GrantCharge(g), Basis: "grant"}}
			if err := t.emit(ctx, res); err != nil {
				return err
			}
			set := &event{Kind: evSettle, Dataset: h, Run: &runEvent{ID: res.Seq, Status: Succeeded, Charge: privacy.GrantCharge(g), Basis: "pure",
				Relation: ReplaceRow, Class: "worst-case", Neighbours: "one row replaced", Factor: 1}}
			if err := t.emit(ctx, set); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// newBenchLedger makes a ledger with one data set holding history runs,
// closed, and returns its directory.
func newBenchLedger(b *testing.B, history int) (string, string) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	l, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	h := hashOf("bench")
	if err := l.SetBudget(ctx, h, "bench", pureG(1e9)); err != nil {
		b.Fatal(err)
	}
	prefill(b, l, h, history)
	if _, err := l.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, h
}

// BenchmarkFitOverhead measures what one fit costs in the ledger: Open
// (verifying the records since the marker's checkpoint), Reserve (verifying
// records appended since, then admission), Settle with the run's steps,
// Show (for the report) and Close, against a data set that already has
// `history` runs. Every commit is durable (WAL, synchronous=FULL: one
// fsync each) and the marker is rewritten (and fsynced) after each.
func BenchmarkFitOverhead(b *testing.B) {
	ctx := context.Background()
	steps := []privacy.Step{pureStep(1e-6)}
	for _, history := range []int{0, 1000, 50000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			dir, h := newBenchLedger(b, history)
			req := ReserveRequest{Estimator: "bench", Params: map[string]string{"rank": "5"}, Grant: pureG(1e-6)}
			var phases [5][]time.Duration
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				l, err := Open(ctx, dir)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				id, err := l.Reserve(ctx, h, req)
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps, Guarantee: privacy.Pure, Neighbours: "one row replaced"}); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				if _, err := l.Show(ctx, h); err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				t5 := time.Now()
				for j, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), t5.Sub(t0)} {
					phases[j] = append(phases[j], d)
				}
			}
			reportCPU(b, cpu0)
			for j, name := range []string{"open", "reserve", "settle", "show", "total"} {
				b.ReportMetric(float64(median(phases[j]))/1e6, name+"-median-ms")
			}
		})
	}
}

// BenchmarkFullCheck measures the full verification `dplr budget verify`
// runs (SQLite's integrity_check plus every record of the chain) and its
// two parts, on a ledger of `history` runs.
func BenchmarkFullCheck(b *testing.B) {
	ctx := context.Background()
	for _, history := range []int{1000, 50000} {
		dir, _ := newBenchLedger(b, history)
		l, err := Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("verify/history=%d", history), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := l.Verify(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("integrity_check/history=%d", history), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := l.integrityCheck(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("quick_check/history=%d", history), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := l.db.ExecContext(ctx, "PRAGMA quick_check"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("chain/history=%d", history), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := l.walk(ctx, l.db, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		l.Close()
	}
}

// BenchmarkShow measures Show on a data set with 1000 runs.
func BenchmarkShow(b *testing.B) {
	ctx := context.Background()
	dir, h := newBenchLedger(b, 1000)
	l, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := l.Show(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// reportCPU adds the process CPU time per operation, which the shared
// machine's load disturbs less than wall time (it excludes waiting for a
// core and for fsync).
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if cpu := cpuTime(); cpu > 0 {
		b.ReportMetric(float64(cpu-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
