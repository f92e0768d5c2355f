package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/transport"
)

// fitEvents is a fit's stream of events; a fit on remote data takes the
// replies to the passes it requests.
type fitEvents interface {
	Recv() (transport.Event, error)
	Reply(id uint64, res *data.PassResult, errText string) error
}

// fitStream opens the event stream of the fit c: over Fit, or over
// FitPasses for remote data. A sandboxed plugin runs each fit in a fresh
// process of the same executable whose sandbox also lets it read the
// data set's files (and no others; none for remote data): the process
// that answered the catalogue was started before the data was known and
// can read no data at all. Without a sandbox the fit runs in the plugin's
// process. Concurrent fits each get their own process.
func (p *Plugin) fitStream(ctx context.Context, c Call) (fitEvents, error) {
	req := c.fitRequest()
	var paths []string
	if c.Remote == nil {
		paths = handlePaths(c.Data)
	}
	return p.stream(ctx, paths, c.pending, func(rpc *transport.Client) (*transport.Stream, error) {
		if c.Remote != nil {
			return rpc.FitPasses(ctx, req)
		}
		return rpc.Fit(ctx, req)
	})
}

// stream opens a stream with open, in a fresh process that may read paths
// when the plugin is sandboxed (see fitStream; pending, when not nil, is
// that process started ahead), in the plugin's process otherwise.
func (p *Plugin) stream(ctx context.Context, paths []string, pending *FitProcess, open func(*transport.Client) (*transport.Stream, error)) (fitEvents, error) {
	if !p.Sandboxed {
		pr, rpc, err := p.process(ctx)
		if err != nil {
			return nil, err
		}
		s, err := open(rpc)
		if err != nil {
			return nil, err
		}
		return &fitProcStream{Stream: s, p: p, pr: pr}, nil
	}
	var pr *proc
	var err error
	if pending != nil {
		pr, err = pending.take(ctx)
	} else {
		pr, err = launch(ctx, p.Path, p.image.path, p.opt, paths)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the fit's process: %w", err)
	}
	p.mu.Lock()
	if p.fits == nil {
		p.fits = map[*proc]bool{}
	}
	p.fits[pr] = true
	p.fit = pr
	p.mu.Unlock()
	s, err := open(pr.rpc)
	if err != nil {
		p.noteFitError(pr)
		return nil, err
	}
	return &fitProcStream{Stream: s, p: p, pr: pr, own: true}, nil
}

// fitErrorGrace is how long a fit's process is kept after its stream
// failed, for the host to tell whether it crashed.
const fitErrorGrace = 2 * time.Second

// endFit stops a fit's process and forgets it.
func (p *Plugin) endFit(pr *proc) {
	p.mu.Lock()
	delete(p.fits, pr)
	if p.fit == pr {
		p.fit = nil
	}
	p.mu.Unlock()
	pr.kill(p.opt.callTimeout())
}

// noteFitError makes pr the process Exited reports on (the host is about
// to ask whether the failed fit's process crashed) and stops it a little
// later.
func (p *Plugin) noteFitError(pr *proc) {
	p.mu.Lock()
	p.fit = pr
	p.mu.Unlock()
	time.AfterFunc(fitErrorGrace, func() { p.endFit(pr) })
}

// fitProcStream stops the fit's own process once its stream has ended:
// at once after a normal end, fitErrorGrace after an error.
type fitProcStream struct {
	*transport.Stream
	p    *Plugin
	pr   *proc
	own  bool // pr runs this fit only
	once sync.Once
}

// Recv implements fitEvents. At the stream's end (err, io.EOF after a
// normal end) a fit's own process is stopped, once; an error is reported
// as a flood of the plugin's output when the process flooded it.
func (s *fitProcStream) Recv() (transport.Event, error) {
	ev, err := s.Stream.Recv()
	if err == nil {
		return ev, nil
	}
	if s.own {
		s.once.Do(func() {
			if errors.Is(err, io.EOF) {
				go s.p.endFit(s.pr)
			} else {
				s.p.noteFitError(s.pr)
			}
		})
	}
	if ferr := s.pr.floodErr(); ferr != nil {
		return ev, fmt.Errorf("%w: %w", ferr, ErrPlugin)
	}
	return ev, err
}

// handlePaths lists the files a data set handle refers to.
func handlePaths(h dataio.Handle) []string {
	refs := []*dataio.FileRef{&h.X, h.Y, h.UserStart, h.UserIDs, h.Labels}
	var out []string
	for _, r := range refs {
		if r != nil && r.Path != "" {
			out = append(out, r.Path)
		}
	}
	return out
}

// FitProcess is a fit's sandboxed process, started ahead of the fit
// (Plugin.StartFit) so that its start overlaps the ledger's work, the
// pre-flight check and the reservation. It receives no request until the
// fit takes it; a fit that is refused drops it.
type FitProcess struct {
	done   chan struct{}
	pr     *proc
	err    error
	taken  bool
	plugin *Plugin
	paths  []string
}

// StartFit starts, for a sandboxed plugin, the process of a fit on the
// local data set h, which may read h's files and no others (nil when the
// plugin is not sandboxed: its fits run in its own process). Pass it as
// FitRequest.Process; the runner drops it when the fit ends.
func (p *Plugin) StartFit(h dataio.Handle) *FitProcess {
	if !p.Sandboxed {
		return nil
	}
	fp := &FitProcess{done: make(chan struct{}), plugin: p, paths: handlePaths(h)}
	go func() {
		defer close(fp.done)
		fp.pr, fp.err = launch(context.Background(), p.Path, p.image.path, p.opt, fp.paths)
	}()
	return fp
}

// take returns the started process for the fit (its start error if it
// did not start); ctx ends the wait.
func (fp *FitProcess) take(ctx context.Context) (*proc, error) {
	select {
	case <-fp.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fp.taken = true
	return fp.pr, fp.err
}

// Drop stops the process if no fit took it (or Drop did).
func (fp *FitProcess) Drop() {
	if fp == nil || fp.taken {
		return
	}
	<-fp.done
	fp.taken = true
	fp.pr.kill(fp.plugin.opt.callTimeout())
}
