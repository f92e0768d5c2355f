package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/privacy"
)

// The multi-process tests re-execute this test binary as helper processes:
// with helperEnv set, TestMain runs helperMain instead of the tests.
const (
	helperEnv  = "DPLR_LEDGER_TEST_HELPER" // mode: race, hang, storm
	helperDir  = "DPLR_LEDGER_TEST_DIR"
	helperHash = "DPLR_LEDGER_TEST_HASH"
	helperEps  = "DPLR_LEDGER_TEST_EPS"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is a child process. It prints one line per event on stdout.
func helperMain(mode string) int {
	ctx := context.Background()
	dir, h := os.Getenv(helperDir), os.Getenv(helperHash)
	eps, err := strconv.ParseFloat(os.Getenv(helperEps), 64)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	l, err := Open(ctx, dir)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer l.Close()
	req := ReserveRequest{Estimator: "helper-" + mode, Grant: pureG(eps)}
	switch mode {
	case "open":
		fmt.Println("opened")
	case "race":
		// Wait for the parent's start signal so that all children race.
		fmt.Println("ready")
		for {
			if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		id, err := l.Reserve(ctx, h, req)
		switch {
		case errors.Is(err, ErrBudgetExceeded):
			fmt.Println("refused")
			return 0
		case err != nil:
			fmt.Println("error", err)
			return 2
		}
		// Spend the whole grant, so that settling frees nothing.
		if err := l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(eps)}}); err != nil {
			fmt.Println("error", err)
			return 2
		}
		fmt.Println("ok", int64(id))
	case "hang":
		id, err := l.Reserve(ctx, h, req)
		if err != nil {
			fmt.Println("error", err)
			return 2
		}
		fmt.Println("reserved", int64(id))
		time.Sleep(time.Hour) // "running the estimator" until killed
	case "storm":
		// Reserve and settle as fast as possible until killed.
		fmt.Println("ready")
		for i := 0; ; i++ {
			id, err := l.Reserve(ctx, h, req)
			if err != nil {
				fmt.Println("error", err)
				return 2
			}
			out := Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(eps / 2)}}
			if i%3 == 1 {
				out = Outcome{Status: Failed, NoiseDrawn: i%2 == 0}
			}
			if err := l.Settle(ctx, id, out); err != nil {
				fmt.Println("error", err)
				return 2
			}
		}
	}
	return 0
}

// helper starts a helper process and returns it with a line reader on its
// stdout.
func helper(t *testing.T, mode, dir, h string, eps float64) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDir+"="+dir, helperHash+"="+h,
		helperEps+"="+strconv.FormatFloat(eps, 'g', -1, 64))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}

func line(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	if !sc.Scan() {
		require.NoError(t, sc.Err())
		t.Fatal("helper exited without output")
	}
	return sc.Text()
}

// Processes opening a new ledger at the same moment create and migrate it
// exactly once.
func TestProcessesCreateLedgerOnce(t *testing.T) {
	dir := t.TempDir()
	var scs []*bufio.Scanner
	for i := 0; i < 6; i++ {
		_, sc := helper(t, "open", dir, hashOf("open"), 1)
		scs = append(scs, sc)
	}
	for _, sc := range scs {
		require.Equal(t, "opened", line(t, sc))
	}
	l := openT(t, dir)
	var n int
	require.NoError(t, l.db.QueryRow("SELECT count(*) FROM schema_migrations").Scan(&n))
	assert.Equal(t, SchemaVersion, n)
}

// Ten processes race for a budget that affords exactly six of their grants:
// exactly six succeed, and the ledger ends exactly at the total.
func TestProcessesRaceForLastOfBudget(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h := hashOf("race")
	l := openT(t, dir)
	require.NoError(t, l.SetBudget(ctx, h, "race", pureG(1)))
	id := reserve(t, l, h, pureG(0.25))
	require.NoError(t, l.Settle(ctx, id, Outcome{Status: Succeeded, Steps: []privacy.Step{pureStep(0.25)}}))

	const n, affordable = 10, 6 // (1 − 0.25)/0.125
	scs := make([]*bufio.Scanner, n)
	for i := range scs {
		_, scs[i] = helper(t, "race", dir, h, 0.125)
	}
	for _, sc := range scs {
		require.Equal(t, "ready", line(t, sc))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	ok, refused := 0, 0
	for _, sc := range scs {
		switch l := line(t, sc); {
		case strings.HasPrefix(l, "ok "):
			ok++
		case l == "refused":
			refused++
		default:
			t.Fatalf("helper: %s", l)
		}
	}
	assert.Equal(t, affordable, ok)
	assert.Equal(t, n-affordable, refused)

	st, err := l.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, 1, st.Spent.Epsilon, 1e-12)
	assert.Equal(t, RunCounts{Total: 1 + affordable, Succeeded: 1 + affordable}, st.Runs)
}

// kill -9 after Reserve and before Settle: the run stays charged its full
// grant and shows as interrupted.
func TestKilledRunStaysChargedAndInterrupted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process liveness is not checked on Windows")
	}
	ctx := context.Background()
	dir := t.TempDir()
	h := hashOf("kill")
	l := openT(t, dir)
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1)))

	cmd, sc := helper(t, "hang", dir, h, 0.75)
	f := strings.Fields(line(t, sc))
	require.Len(t, f, 2)
	require.Equal(t, "reserved", f[0])
	n, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	id := RunID(n)

	r, err := l.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, Reserved, r.State, "the child is alive: its run is in progress")

	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()

	// A fresh handle (as a later dplr invocation would open) sees it too.
	l2 := openT(t, dir)
	runs, err := l2.History(ctx, h)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, Interrupted, runs[0].State)
	assert.Equal(t, privacy.ReserveCharge(pureG(0.75)), runs[0].Charge)
	assert.Equal(t, cmd.Process.Pid, runs[0].PID)
	st, err := l2.Show(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, RunCounts{Total: 1, Interrupted: 1}, st.Runs)
	assert.InDelta(t, 0.75, st.Spent.Epsilon, 1e-12)
	_, err = l2.Reserve(ctx, h, ReserveRequest{Estimator: "e", Grant: pureG(0.5)})
	require.ErrorIs(t, err, ErrBudgetExceeded, "an interrupted run is not refunded")
	require.ErrorIs(t, l2.Settle(ctx, id, Outcome{Status: Failed}), ErrInterrupted, "nor can anyone else refund it")
	reserve(t, l2, h, pureG(0.25))
}

// kill -9 at arbitrary points of a stream of reservations and settlements
// (including inside write transactions) leaves a healthy, consistent ledger.
func TestKillDuringWritesLeavesConsistentLedger(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process liveness is not checked on Windows")
	}
	ctx := context.Background()
	dir := t.TempDir()
	h := hashOf("storm")
	l := openT(t, dir)
	require.NoError(t, l.SetBudget(ctx, h, "", pureG(1e6)))
	delays := []time.Duration{0, 5 * time.Millisecond, 17 * time.Millisecond, 41 * time.Millisecond, 83 * time.Millisecond, 127 * time.Millisecond}
	for _, d := range delays {
		cmd, sc := helper(t, "storm", dir, h, 0.5)
		require.Equal(t, "ready", line(t, sc))
		time.Sleep(d)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
	}

	l2 := openT(t, dir) // runs the integrity check
	runs, err := l2.History(ctx, h)
	require.NoError(t, err)
	var sumEps float64
	interrupted := 0
	for _, r := range runs {
		switch r.State {
		case Interrupted:
			interrupted++
			assert.Equal(t, privacy.ReserveCharge(pureG(0.5)), r.Charge)
			assert.True(t, r.SettledAt.IsZero())
		case Succeeded:
			assert.InDelta(t, 0.25, r.Charge.Epsilon, 1e-12)
		case Failed:
			if r.Refunded {
				assert.True(t, r.Charge.IsZero())
			} else {
				assert.Equal(t, privacy.ReserveCharge(pureG(0.5)), r.Charge)
			}
		default:
			t.Errorf("run %v in state %s after its process was killed", r.ID, r.State)
		}
		sumEps += r.Charge.Epsilon
	}
	assert.LessOrEqual(t, interrupted, len(delays), "at most one run in flight per killed process")
	st, err := l2.Show(ctx, h)
	require.NoError(t, err)
	assert.InDelta(t, sumEps, st.Spent.Epsilon, 1e-9)
	assert.Equal(t, len(runs), st.Runs.Total)
	t.Logf("%d runs, %d interrupted", len(runs), interrupted)
}
