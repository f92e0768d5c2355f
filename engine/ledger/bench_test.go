package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dplr/dplr/engine/privacy"
)

// prefill records n settled runs on data set h in one transaction.
func prefill(b *testing.B, l *Ledger, h string, n int) {
	b.Helper()
	ctx := context.Background()
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	o := l.self
	for i := 0; i < n; i++ {
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs(hash, estimator, grant_kind, grant_epsilon, grant_delta, grant_rho,
	status, charge_epsilon, charge_delta, charge_rho, composition, owner_host, owner_boot, owner_pid, owner_start, reserved_at, settled_at)
	VALUES (?, 'prefill', 'pure', 1e-6, 0, 0, 'succeeded', 1e-6, 0, 5e-13, 'pure', ?, ?, ?, ?, ?, ?)`,
			h, o.Host, o.Boot, o.PID, o.Start, now(), now()); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReserveSettle measures one run's ledger round trip (Reserve, then
// Settle with its steps) against a data set that already has `history`
// runs. Every commit is durable (WAL, synchronous=FULL: one fsync each),
// and each of the two transactions composes the data set's whole history
// (a scan of a covering index), so the cost grows with the history.
func BenchmarkReserveSettle(b *testing.B) {
	ctx := context.Background()
	steps := []privacy.Step{pureStep(1e-6)}
	for _, history := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			l, err := Open(ctx, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			h := hashOf("bench")
			if err := l.SetBudget(ctx, h, "", pureG(1e9)); err != nil {
				b.Fatal(err)
			}
			prefill(b, l, h, history)
			req := ReserveRequest{Estimator: "bench", Params: map[string]string{"rank": "5"}, Grant: pureG(1e-6)}
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				id, err := l.Reserve(ctx, h, req)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: steps}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkShow measures Show on a data set with 1000 runs.
func BenchmarkShow(b *testing.B) {
	ctx := context.Background()
	l, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	h := hashOf("bench-show")
	if err := l.SetBudget(ctx, h, "", pureG(1e9)); err != nil {
		b.Fatal(err)
	}
	prefill(b, l, h, 1000)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := l.Show(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// reportCPU adds the process CPU time per operation, which the shared
// machine's load disturbs less than wall time (it excludes waiting for a
// core and for fsync).
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if cpu := cpuTime(); cpu > 0 {
		b.ReportMetric(float64(cpu-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
