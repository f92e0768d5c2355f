package host

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/host/internal/remotetest"
	"github.com/dplr/dplr/engine/ledger"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// remoteRows is a small rows data set with rows above and below the clip.
func remoteRows() *data.Dataset {
	x := mat.NewDense(6, 3, []float64{3, 4, 0, 0.3, 0.4, 0.1, -1, 0, 2, 0.5, -0.5, 0.5, 10, 0, 0, 0, 0.2, -0.1})
	return &data.Dataset{Kind: data.Rows, X: x}
}

// remoteHandle is the handle of a remote data set of shape sh: a source
// identity, no file.
func remoteHandle(sh *data.Remote) dataio.Handle {
	id := dataio.Identity{Hash: strings.Repeat("cd", 32), Rows: int64(sh.N), Sketch: []uint64{1, 2, 3}}
	return dataio.Handle{Version: dataio.HandleVersion, Kind: data.Rows, Hash: id.Hash, N: sh.N, P: sh.P, Source: &id}
}

// remoteOf is the remote view of ds run by passer (pass.Local(ds) when
// nil).
func remoteOf(ds *data.Dataset, passer data.Passer) *data.Remote {
	if passer == nil {
		passer = pass.Local(ds)
	}
	sh := *pass.ShapeOf(ds)
	sh.Passer = passer
	return &sh
}

// startIn starts the test plugin bin and returns a runner over it with a
// fresh ledger.
func startIn(t *testing.T, bin string) (*Runner, *ledger.Ledger) {
	t.Helper()
	p, err := Start(context.Background(), filepath.Join(buildPlugins(t), bin), Options{StartTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	led, err := ledger.Open(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = led.Close() })
	return &Runner{Ledger: led, Plugins: Plugins{p}}, led
}

func remoteHistory(t *testing.T, led *ledger.Ledger, h dataio.Handle) []ledger.Run {
	t.Helper()
	runs, err := led.History(context.Background(), BudgetKey(h))
	require.NoError(t, err)
	return runs
}

// countingPasser counts the passes the host runs.
type countingPasser struct {
	inner data.Passer
	n     atomic.Int64
}

func (c *countingPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	c.n.Add(1)
	return c.inner.Pass(ctx, req)
}

// TestRemoteFitEqualsRunLocal: a fit on a data set the host holds only
// remotely, through a real plugin process whose estimator asks the host
// for its pass, releases exactly what sdk.RunLocal releases on the rows
// with the same seed, and is charged its verified cost under the source
// identity.
func TestRemoteFitEqualsRunLocal(t *testing.T) {
	ds := remoteRows()
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	seed := uint64(42)
	raw := map[string]string{"clip": "1.5"}
	want, _, err := sdk.RunLocal(context.Background(), remotetest.Mean{}, ds, raw, grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)

	r, led := startIn(t, "dplr-remote")
	cp := &countingPasser{inner: pass.Local(ds)}
	rm := remoteOf(ds, cp)
	h := remoteHandle(rm)
	var seen []string
	res, err := r.Fit(context.Background(), FitRequest{Estimator: "remote-mean", Params: raw, Grant: grant, Data: h, Remote: rm, Seed: &seed,
		Events: Events{Pass: func(n int, req data.PassRequest) { seen = append(seen, req.Kind) }}})
	require.NoError(t, err)
	assert.Equal(t, []string{pass.RowsMoment}, res.Check.Passes)
	assert.Equal(t, int64(1), cp.n.Load())
	assert.Equal(t, []string{pass.RowsMoment}, seen)
	assert.Equal(t, 1.0, res.Timings["passes"])
	assert.Contains(t, res.Timings, "passes_s")
	require.Len(t, res.Outcome.Matrices, 1)
	wm := want.Matrices[0].M.RawMatrix().Data
	assert.Equal(t, wm, res.Outcome.Matrices[0].Data, "the same release, bit for bit")
	runs := remoteHistory(t, led, h)
	require.Len(t, runs, 1)
	assert.Equal(t, ledger.Succeeded, runs[0].State)
	assert.Equal(t, strings.Repeat("cd", 32), BudgetKey(h))
}

// TestRemoteFitLargeReply: a pass whose result exceeds gRPC's 4 MiB
// message limit (p = 784: a 4.9 MB second moment) travels in chunks.
func TestRemoteFitLargeReply(t *testing.T) {
	const n, p = 3, 784
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, float64((i+1)*(j%7))/100)
		}
	}
	ds := &data.Dataset{Kind: data.Rows, X: x}
	grant := privacy.Grant{Kind: privacy.GrantZCDP, Rho: 0.5}
	seed := uint64(7)
	want, _, err := sdk.RunLocal(context.Background(), remotetest.Mean{}, ds, nil, grant, sdk.LocalOptions{Seed: &seed})
	require.NoError(t, err)
	r, _ := startIn(t, "dplr-remote")
	rm := remoteOf(ds, nil)
	res, err := r.Fit(context.Background(), FitRequest{Estimator: "remote-mean", Params: map[string]string{}, Grant: grant, Data: remoteHandle(rm), Remote: rm, Seed: &seed})
	require.NoError(t, err)
	assert.Equal(t, want.Matrices[0].M.RawMatrix().Data, res.Outcome.Matrices[0].Data)
}

// TestRemoteFitCapsPasses: the host stops a fit that asks for more passes
// than its cap, refunding it (no privacy step was announced).
func TestRemoteFitCapsPasses(t *testing.T) {
	ds := remoteRows()
	r, led := startIn(t, "dplr-remote")
	r.MaxPasses = 3
	rm := remoteOf(ds, nil)
	h := remoteHandle(rm)
	_, err := r.Fit(context.Background(), FitRequest{Estimator: "remote-mean", Params: map[string]string{"passes": "5"},
		Grant: zcdpGrant, Data: h, Remote: rm})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPlugin)
	assert.Contains(t, err.Error(), "more than 3 aggregation passes")
	var fe *FitError
	require.True(t, errors.As(err, &fe))
	assert.False(t, fe.Charged)
	runs := remoteHistory(t, led, h)
	require.Len(t, runs, 1)
	assert.True(t, runs[0].Refunded)
}

// blockingPasser never finishes a pass before its context ends.
type blockingPasser struct{}

func (blockingPasser) Pass(ctx context.Context, _ data.PassRequest) (*data.PassResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// failingPasser is a pass runner that fails (a pipeline error), or returns
// a result the kind forbids.
type failingPasser struct{ nan bool }

func (f failingPasser) Pass(_ context.Context, req data.PassRequest) (*data.PassResult, error) {
	if !f.nan {
		return nil, errors.New("shard 3 is corrupt")
	}
	return &data.PassResult{Records: 6, Outputs: []data.Array{{Name: "sum", Rows: 1, Cols: 3, Data: []float64{0, 0, 0}},
		{Name: "moment", Rows: 3, Cols: 3, Data: []float64{0, 0, 0, 0, 0, 0, 0, 0, nan()}}}}, nil
}

func nan() float64 { z := 0.0; return z / z }

// TestRemoteFitRefusesHostilePlugins: a plugin that asks for an
// undeclared kind, sends malformed, non-finite or huge requests, asks
// for a second pass before the first's reply, or never reads a reply,
// gets an error naming the problem, with bounded memory and no hang; the
// run is refunded when no privacy step was announced, charged otherwise.
// A pass the host's own runner fails is an ErrPass, refunded likewise.
func TestRemoteFitRefusesHostilePlugins(t *testing.T) {
	cases := []struct {
		mode    string
		passer  data.Passer
		timeout time.Duration
		want    string
		is      error
		charged bool
	}{
		{"pass-undeclared", nil, 0, `pass kind "rows.raw", which its pre-flight check did not declare`, ErrPlugin, false},
		{"pass-after-step", nil, 0, "did not declare", ErrPlugin, true},
		{"pass-nan", nil, 0, "not finite", ErrPlugin, false},
		{"pass-negative", nil, 0, "clip -1 is negative", ErrPlugin, false},
		{"pass-huge", nil, 0, "more than the", ErrPlugin, false},
		{"pass-wrong-id", nil, 0, "numbered 7, want 1", ErrPlugin, false},
		{"pass-two", blockingPasser{}, 0, "while pass 1 was running", ErrPlugin, false},
		{"pass-endless", nil, 0, "more than 4 aggregation passes", ErrPlugin, false},
		{"pass-unread", nil, time.Second, "after the host's reply to pass 1", ErrPlugin, false},
		{"pass-ok", failingPasser{}, 0, "shard 3 is corrupt", ErrPass, false},
		{"pass-ok", failingPasser{nan: true}, 0, "not finite", ErrPass, false},
	}
	for _, tc := range cases {
		t.Run(tc.mode+"/"+tc.want, func(t *testing.T) {
			r, led := runnerFor(t, tc.mode)
			r.MaxPasses = 4
			rm := remoteOf(remoteRows(), tc.passer)
			h := remoteHandle(rm)
			_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-" + tc.mode, Grant: zcdpGrant, Data: h, Remote: rm, Timeout: tc.timeout})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
			var fe *FitError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, tc.charged, fe.Charged)
			runs := remoteHistory(t, led, h)
			require.Len(t, runs, 1)
			assert.Equal(t, !tc.charged, runs[0].Refunded)
		})
	}
	t.Run("an honest raw-protocol plugin", func(t *testing.T) {
		r, led := runnerFor(t, "pass-ok")
		rm := remoteOf(remoteRows(), nil)
		h := remoteHandle(rm)
		_, err := r.Fit(context.Background(), FitRequest{Estimator: "bad-pass-ok", Grant: zcdpGrant, Data: h, Remote: rm})
		require.NoError(t, err)
		assert.Len(t, remoteHistory(t, led, h), 1)
	})
}

// TestRemoteFitRefusesBeforeReserving: a remote request that cannot run
// is refused before anything is reserved.
func TestRemoteFitRefusesBeforeReserving(t *testing.T) {
	rm := remoteOf(remoteRows(), nil)
	h := remoteHandle(rm)
	cases := []struct {
		name, mode string
		edit       func(req *FitRequest)
		is         error
		want       string
	}{
		{"no path through passes", "ok", nil, ErrUsage, "no path through aggregation passes"},
		{"no passes declared", "pass-declare-none", nil, ErrUsage, "declared no aggregation passes"},
		{"an unknown kind declared", "pass-declare-unknown", nil, ErrPlugin, `"rows.everything", which this host does not know`},
		{"shape mismatch", "pass-ok", func(req *FitRequest) { req.Data.N = 7 }, ErrUsage, "differs from the remote's"},
		{"no pass runner", "pass-ok", func(req *FitRequest) { r := *rm; r.Passer = nil; req.Remote = &r }, ErrUsage, "without a pass runner"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, led := runnerFor(t, tc.mode)
			req := FitRequest{Estimator: "bad-" + tc.mode, Grant: zcdpGrant, Data: h, Remote: rm}
			if tc.edit != nil {
				tc.edit(&req)
			}
			_, err := r.Fit(context.Background(), req)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, remoteHistory(t, led, h), "nothing was reserved")
		})
	}
}

// BenchmarkRemotePasses measures a remote fit through a real plugin
// process on p = 784 (each pass returns a 4.9 MB second moment through the
// stream) with 1 and 11 passes: the difference over 10 is the protocol's
// cost per pass (request, reply in chunks, the host's and the plugin's
// checks), beside the pass itself (pass.Local over 3 rows).
func BenchmarkRemotePasses(b *testing.B) {
	const n, p = 3, 784
	x := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			x.Set(i, j, float64((i+1)*(j%7))/100)
		}
	}
	ds := &data.Dataset{Kind: data.Rows, X: x}
	pl, err := Start(context.Background(), filepath.Join(buildPlugins(b), "dplr-remote"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pl.Close()
	led, err := ledger.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer led.Close()
	r := &Runner{Ledger: led, Plugins: Plugins{pl}}
	rm := remoteOf(ds, nil)
	for _, passes := range []string{"1", "11"} {
		b.Run("passes="+passes, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, err := r.Fit(context.Background(), FitRequest{Estimator: "remote-mean", Params: map[string]string{"passes": passes},
					Grant: privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e-3}, Data: remoteHandle(rm), Remote: rm})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stuckStream is a plugin's FitPasses stream that asks for one pass and
// then never reads: its Send blocks (a full flow-control window) until
// the fit's context ends.
type stuckStream struct {
	ctx  context.Context
	sent atomic.Bool
}

func (s *stuckStream) Reply(uint64, *data.PassResult, string) error {
	<-s.ctx.Done()
	return s.ctx.Err()
}

func (s *stuckStream) Recv() (transport.Event, error) {
	if !s.sent.Swap(true) {
		return transport.PassRequestMessages(1, data.PassRequest{Kind: pass.RowsMoment, Params: map[string]float64{"clip": 1}})[0], nil
	}
	<-s.ctx.Done()
	return nil, s.ctx.Err()
}

// TestRemoteFitReplyNeverRead: a plugin that asks for a pass and never
// takes the reply is a plugin failure once the reply could not be
// delivered within the reply timeout, with no other limit set.
func TestRemoteFitReplyNeverRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &Plugin{Catalogue: transport.Catalogue{Plugin: "stuck"}}
	rm := remoteOf(remoteRows(), nil)
	c := Call{Estimator: "x", Grant: zcdpGrant, Data: remoteHandle(rm), Remote: rm, Passes: []string{pass.RowsMoment}, ReplyTimeout: 50 * time.Millisecond}
	out, err := p.runPasses(ctx, cancel, &stuckStream{ctx: ctx}, c, Events{}, &FitOutcome{})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPlugin)
	assert.Contains(t, err.Error(), "did not read the reply to pass 1 within 50ms")
	assert.False(t, out.NoiseDrawn())
}
