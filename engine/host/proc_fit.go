package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dplr/dplr/engine/proto/dplrpb"
)

// fitStream opens a fit's event stream. A sandboxed plugin runs each fit
// in a fresh process of the same executable whose sandbox also lets it
// read the data set's files (and no others): the process that answered
// the catalogue was started before the data was known and can read no
// data at all. Without a sandbox the fit runs in the plugin's process.
// Concurrent fits each get their own process.
func (p *Plugin) fitStream(ctx context.Context, req *dplrpb.FitRequest) (dplrpb.Estimators_FitClient, error) {
	if !p.Sandboxed {
		s, err := p.rpc.Fit(ctx, req)
		if err != nil {
			return nil, err
		}
		return &fitProcStream{Estimators_FitClient: s, p: p, pr: p.proc}, nil
	}
	pr, err := launch(ctx, p.Path, p.image.path, p.opt, handlePaths(req.GetData()))
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
	s, err := pr.rpc.Fit(ctx, req)
	if err != nil {
		p.noteFitError(pr)
		return nil, err
	}
	return &fitProcStream{Estimators_FitClient: s, p: p, pr: pr, own: true}, nil
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
	dplrpb.Estimators_FitClient
	p    *Plugin
	pr   *proc
	own  bool // pr runs this fit only
	once sync.Once
}

func (s *fitProcStream) Recv() (*dplrpb.FitEvent, error) {
	ev, err := s.Estimators_FitClient.Recv()
	if err == nil {
		return ev, nil
	}
	return ev, s.p.streamEnded(s.pr, s.own, &s.once, err)
}

// streamEnded handles the end of a fit's stream (err, io.EOF after a
// normal end): when the fit has its own process (own), that process is
// stopped at once after a normal end and fitErrorGrace after an error,
// once; an error is reported as a flood of the plugin's output when the
// process flooded it.
func (p *Plugin) streamEnded(pr *proc, own bool, once *sync.Once, err error) error {
	if own {
		once.Do(func() {
			if errors.Is(err, io.EOF) {
				go p.endFit(pr)
			} else {
				p.noteFitError(pr)
			}
		})
	}
	if ferr := pr.floodErr(); ferr != nil {
		return fmt.Errorf("%w: %w", ferr, ErrPlugin)
	}
	return err
}

// handlePaths lists the files a data set handle refers to.
func handlePaths(h *dplrpb.DatasetHandle) []string {
	var out []string
	for _, r := range []*dplrpb.FileRef{h.GetX(), h.GetY(), h.GetUserStart(), h.GetUserIds(), h.GetLabels(),
		h.GetStatistics().GetSum(), h.GetStatistics().GetMoment()} {
		if r.GetPath() != "" {
			out = append(out, r.GetPath())
		}
	}
	return out
}
