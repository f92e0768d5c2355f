package host

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dplr/dplr/engine/proto/dplrpb"
)

// fitStream opens a fit's event stream. A sandboxed plugin runs each fit
// in a fresh process of the same executable whose sandbox also lets it
// read the data set's files (and no others): the process that answered
// the catalogue was started before the data was known and can read no
// data at all. Without a sandbox the fit runs in the plugin's process.
func (p *Plugin) fitStream(ctx context.Context, req *dplrpb.FitRequest) (dplrpb.Estimators_FitClient, error) {
	if !p.Sandboxed {
		s, err := p.rpc.Fit(ctx, req)
		if err != nil {
			return nil, err
		}
		return &fitProcStream{Estimators_FitClient: s, p: p, pr: p.proc}, nil
	}
	p.mu.Lock()
	prev := p.fit
	p.fit = nil
	p.mu.Unlock()
	prev.kill(p.opt.callTimeout())
	pr, err := launch(ctx, p.Path, p.image.path, p.opt, handlePaths(req.GetData()))
	if err != nil {
		return nil, fmt.Errorf("starting the fit's process: %w", err)
	}
	p.mu.Lock()
	p.fit = pr
	p.mu.Unlock()
	s, err := pr.rpc.Fit(ctx, req)
	if err != nil {
		return nil, err
	}
	return &fitProcStream{Estimators_FitClient: s, p: p, pr: pr, own: true}, nil
}

// fitProcStream stops the fit's process once its stream has ended
// normally; after an error the process is kept until the next fit or
// Close, so that the host can tell whether it crashed.
type fitProcStream struct {
	dplrpb.Estimators_FitClient
	p   *Plugin
	pr  *proc
	own bool // pr runs this fit only
}

func (s *fitProcStream) Recv() (*dplrpb.FitEvent, error) {
	ev, err := s.Estimators_FitClient.Recv()
	if errors.Is(err, io.EOF) && s.own {
		s.p.mu.Lock()
		if s.p.fit == s.pr {
			s.p.fit = nil
		}
		s.p.mu.Unlock()
		go s.pr.kill(s.p.opt.callTimeout())
	}
	if err != nil {
		if ferr := s.pr.floodErr(); ferr != nil {
			return nil, fmt.Errorf("%w: %w", ferr, ErrPlugin)
		}
	}
	return ev, err
}

// handlePaths lists the files a data set handle refers to.
func handlePaths(h *dplrpb.DatasetHandle) []string {
	var out []string
	for _, r := range []*dplrpb.FileRef{h.GetX(), h.GetY(), h.GetUserStart(), h.GetUserIds(), h.GetLabels()} {
		if r.GetPath() != "" {
			out = append(out, r.GetPath())
		}
	}
	return out
}
