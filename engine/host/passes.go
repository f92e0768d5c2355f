package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// ErrPass is wrapped when the host's own pass runner failed a pass the
// plugin asked for correctly (a pipeline that failed, data that changed
// between passes): the plugin is not at fault.
var ErrPass = errors.New("aggregation pass failed")

// MaxDeclaredPasses bounds the pass kinds one Check response may declare.
const MaxDeclaredPasses = 64

// checkPasses validates the pass kinds a plugin's Check declared for a
// fit on remote data of kind k: each must be a kind this host knows,
// reading k data; at most MaxDeclaredPasses, no duplicates.
func checkPasses(k data.Kind, kinds []string) error {
	if len(kinds) > MaxDeclaredPasses {
		return fmt.Errorf("declares %d pass kinds, more than the %d a host accepts", len(kinds), MaxDeclaredPasses)
	}
	for i, name := range kinds {
		s, ok := pass.Lookup(name)
		if !ok {
			return fmt.Errorf("declares pass kind %q, which this host does not know (known: %v)", cleanText(name), pass.Kinds())
		}
		if s.Data != k {
			return fmt.Errorf("declares pass kind %s, which reads %s data, for %s data", name, s.Data, k)
		}
		if slices.Contains(kinds[:i], name) {
			return fmt.Errorf("declares pass kind %s twice", name)
		}
	}
	return nil
}

// cleanText makes a plugin's text printable (escaped, cut to 80 bytes).
func cleanText(s string) string {
	if len(s) > 80 {
		s = s[:80]
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// received is one message (or the end) of a plugin's stream.
type received struct {
	ev  transport.Event
	err error
}

// passDone is the end of one pass the host ran for the plugin.
type passDone struct {
	id      uint64
	err     error
	seconds float64
}

// Phases of the outstanding pass.
const (
	phaseIdle int32 = iota
	phaseRunning
	phaseReplying
)

// runPasses reads the events of a fit's open stream (cancel ends ctx and
// the stream) and handles them as Fit says, checking, running and checking
// the result of each pass a fit on remote data requests (docs/plugins.md,
// "Inside engine/host"; refused: ErrPlugin, failed: ErrPass). A fit on a
// local data set declares no passes, so it may request none.
func (p *Plugin) runPasses(ctx context.Context, cancel context.CancelFunc, stream fitEvents, c Call, ev Events, out *FitOutcome) (*FitOutcome, error) {
	events := make(chan received)
	go func() {
		for {
			e, err := stream.Recv()
			select {
			case events <- received{e, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	r := &passRun{p: p, c: c, ev: ev, stream: stream, done: make(chan passDone, 1), cancel: cancel, out: out}
	r.replyTimeout = c.ReplyTimeout
	if r.replyTimeout <= 0 {
		r.replyTimeout = DefaultPassReplyTimeout
	}
	r.max = c.MaxPasses
	if r.max <= 0 {
		r.max = sdk.MaxPasses
	}
	mats := newMatrixSet()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: a pass in flight sees its context end
	defer cancel()
loop:
	for {
		select {
		case <-ctx.Done():
			if r.replyLate.Load() {
				return out, fmt.Errorf("plugin %s: the plugin did not read the reply to pass %d within %s: %w", p.Name(), r.count, r.replyTimeout, ErrPlugin)
			}
			return out, p.wrap(ctx, r.where(), ctx.Err())
		case d := <-r.done:
			if err := r.finish(d); err != nil {
				return out, err
			}
		case m := <-events:
			if errors.Is(m.err, io.EOF) {
				break loop
			}
			if m.err != nil {
				if err := r.pending(); err != nil {
					return out, err
				}
				return out, p.wrap(ctx, r.where(), m.err)
			}
			if part, ok := m.ev.(transport.PassPart); ok {
				if err := r.take(ctx, part, &wg); err != nil {
					return out, fmt.Errorf("plugin %s: %w", p.Name(), err)
				}
				continue
			}
			if err := p.handle(m.ev, c.Grant, out, mats, ev); err != nil {
				return out, err
			}
		}
	}
	if r.phase.Load() == phaseRunning {
		return out, fmt.Errorf("plugin %s: the fit ended while pass %d was running: %w", p.Name(), r.count, ErrPlugin)
	}
	return p.finish(c, out, mats)
}

// passRun is the host's side of the passes of one fit.
type passRun struct {
	p      *Plugin
	c      Call
	ev     Events
	stream fitEvents
	out    *FitOutcome
	max    int
	// count is the number of passes requested so far; asm assembles the
	// request being received (nil between requests).
	count int
	asm   *transport.PassRequestAssembler
	phase atomic.Int32
	done  chan passDone
	// replyTimeout bounds the delivery of a reply; cancel ends the fit
	// when it passes (replyLate then says so).
	replyTimeout time.Duration
	cancel       context.CancelFunc
	replyLate    atomic.Bool
}

// DefaultPassReplyTimeout bounds how long the host waits for the plugin to
// take a pass's reply: the plugin asked for it and is waiting, so a
// reply that cannot be delivered means a plugin that stopped reading.
const DefaultPassReplyTimeout = time.Minute

// take handles one message of a pass request: the first is checked for a
// declared kind, the cap and one pass at a time; the complete request is
// validated against its kind and the public shape, then run.
func (r *passRun) take(ctx context.Context, m transport.PassPart, wg *sync.WaitGroup) error {
	if r.asm == nil {
		// A new request.
		switch r.phase.Load() {
		case phaseRunning:
			return fmt.Errorf("requested pass %d while pass %d was running (one pass at a time): %w", r.count+1, r.count, ErrPlugin)
		case phaseReplying:
			// The reply is on its way; the plugin may have read it already.
			select {
			case d := <-r.done:
				if err := r.finish(d); err != nil {
					return err
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if r.count >= r.max {
			return fmt.Errorf("requested more than %d aggregation passes in one fit: %w", r.max, ErrPlugin)
		}
		if !slices.Contains(r.c.Passes, m.Kind) {
			return fmt.Errorf("requested pass kind %q, which its pre-flight check did not declare (declared: %v): %w", cleanText(m.Kind), r.c.Passes, ErrPlugin)
		}
		r.count++
		r.asm = transport.NewPassRequestAssembler(uint64(r.count), transport.MaxPassValues(r.c.Remote))
	}
	req, err := r.asm.Add(m)
	if err != nil {
		return fmt.Errorf("malformed %w: %w", err, ErrPlugin)
	}
	if req == nil {
		return nil
	}
	r.asm = nil
	sh := r.c.Remote
	spec, err := pass.Validate(r.c.Data.Kind, sh, *req)
	if err != nil {
		return fmt.Errorf("pass %d refused: %w: %w", r.count, err, ErrPlugin)
	}
	if r.ev.Pass != nil {
		r.ev.Pass(r.count, *req)
	}
	r.phase.Store(phaseRunning)
	id := uint64(r.count)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t0 := time.Now()
		err := r.run(ctx, id, spec, *req)
		r.done <- passDone{id: id, err: err, seconds: time.Since(t0).Seconds()}
		if errors.Is(err, ErrPass) {
			// The plugin learns of the failure only once the host holds
			// it, so the fit ends as the pass's failure, not as the
			// plugin's reaction to it (see pending).
			_ = r.stream.Reply(id, nil, "the host's pass runner failed")
		}
	}()
	return nil
}

// run runs one pass with the host's runner, checks its result and sends
// the reply.
func (r *passRun) run(ctx context.Context, id uint64, spec pass.Spec, req data.PassRequest) error {
	sh := r.c.Remote
	res, err := sh.Passer.Pass(ctx, req)
	if err == nil {
		err = pass.CheckResult(spec, sh, req, res)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("pass %d (%s): %w: %w", id, req.Kind, err, ErrPass)
	}
	r.phase.Store(phaseReplying)
	timer := time.AfterFunc(r.replyTimeout, func() {
		r.replyLate.Store(true)
		r.cancel()
	})
	err = r.stream.Reply(id, res, "")
	timer.Stop()
	if r.replyLate.Load() {
		return fmt.Errorf("the plugin did not read the reply to pass %d within %s: %w", id, r.replyTimeout, ErrPlugin)
	}
	if err != nil {
		return fmt.Errorf("sending the result of pass %d to the plugin: %w", id, err)
	}
	return nil
}

// where says what the fit was doing, for an error that ends it: the plugin
// working on its own, a pass running in the host, or the plugin expected
// to read the host's reply.
func (r *passRun) where() string {
	switch {
	case r.count == 0:
		return "fit"
	case r.asm != nil:
		return fmt.Sprintf("fit (receiving the request for pass %d)", r.count)
	case r.phase.Load() == phaseRunning:
		return fmt.Sprintf("fit (while the host ran pass %d)", r.count)
	}
	return fmt.Sprintf("fit (after the host's reply to pass %d: did the plugin read it?)", r.count)
}

// pending takes the end of a pass that has already arrived, if any: the
// error of a failed pass, which the plugin may have reacted to before the
// loop read it.
func (r *passRun) pending() error {
	select {
	case d := <-r.done:
		return r.finish(d)
	default:
		return nil
	}
}

// finish takes the end of a pass: its error ends the fit.
func (r *passRun) finish(d passDone) error {
	r.phase.Store(phaseIdle)
	r.out.Passes++
	r.out.PassSeconds += d.seconds
	if d.err == nil {
		return nil
	}
	if errors.Is(d.err, ErrPass) || errors.Is(d.err, context.Canceled) || errors.Is(d.err, context.DeadlineExceeded) {
		return d.err
	}
	return fmt.Errorf("plugin %s: %w: %w", r.p.Name(), d.err, ErrPlugin)
}
