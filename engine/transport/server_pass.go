package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/pass"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// MaxPassValues bounds the values in the side inputs of one pass request
// (host side) and the outputs of a reply of a kind a plugin does not know
// (plugin side) on a data set of shape sh: four p×p matrices and change,
// beyond any kind's needs (the largest, a second moment, is p×p), but at
// least 2²⁰ values (8 MiB: histogram edges and other inputs that do not
// scale with p) and never more than 2²⁸ (2 GiB). The exact shapes are the
// pass kind's (pass.Validate); this bound only caps what a message can
// make the receiver allocate before they are checked.
func MaxPassValues(sh *data.Remote) int64 {
	p := int64(max(sh.P, sh.D1, sh.D2, 1))
	return min(max(4*(p+1)*(p+1), 1<<20), 1<<28)
}

// FitPasses implements dplrpb.EstimatorsServer: a fit whose data set the
// host holds elsewhere (DatasetHandle.remote), the estimator reaching it
// only through aggregation passes that this stream carries to the host
// and whose results it brings back. The first message must carry the
// FitRequest. A handle without remote is opened as Fit opens it.
func (s *Server) FitPasses(stream dplrpb.Estimators_FitPassesServer) error {
	first, err := stream.Recv()
	if err != nil {
		return status.Errorf(codes.Canceled, "no fit request: %v", err)
	}
	req := first.GetRequest()
	if req == nil {
		return status.Errorf(codes.InvalidArgument, "the first message of FitPasses must carry the fit request")
	}
	est, ok := s.byName[req.GetEstimator()]
	if !ok {
		return status.Errorf(codes.NotFound, "plugin %s has no estimator %q", s.name, req.GetEstimator())
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var mu sync.Mutex // stream.Send is not safe for concurrent use
	send := func(ev *dplrpb.FitEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(ev)
	}
	h := req.GetData()
	if h.GetRemote() == nil {
		return s.fit(ctx, est, req, send, func() (*data.Dataset, io.Closer, error) { return openHandle(h) })
	}
	ps := newStreamPasser(send)
	go ps.receive(ctx, stream)
	return s.fit(ctx, est, req, send, func() (*data.Dataset, io.Closer, error) {
		ds, err := openRemote(h, ps)
		return ds, io.NopCloser(nil), err
	})
}

// openRemote is the data set a remote handle describes: its public shape,
// no rows, and p to run its passes.
func openRemote(h *dplrpb.DatasetHandle, p data.Passer) (*data.Dataset, error) {
	if h.GetX() != nil || h.GetY() != nil || h.GetUserStart() != nil || h.GetUserIds() != nil || h.GetLabels() != nil {
		return nil, errors.New("remote handle also names files")
	}
	r := remoteFromProto(h.GetRemote())
	if sp, ok := p.(*streamPasser); ok {
		sh := *r
		sp.sh = &sh
	}
	r.Passer = p
	ds := &data.Dataset{Kind: data.Kind(h.GetKind()), D1: r.D1, D2: r.D2, Hash: h.GetHash(), Name: h.GetName(), Remote: r}
	if err := ds.CheckShape(); err != nil {
		return nil, err
	}
	return ds, nil
}

// streamPasser runs passes by asking the host over a FitPasses stream: it
// sends the request as FitEvents and waits for the host's reply, with no
// deadline of its own (a pass over a large data set may take long), until
// the fit's context ends. Passes run one at a time.
type streamPasser struct {
	send func(*dplrpb.FitEvent) error
	// sh is the data set's public shape, which replies are checked
	// against (set before the first pass).
	sh *data.Remote

	mu   sync.Mutex // one pass at a time
	next uint64

	// replies carries the host's messages to the waiting pass.
	replies chan *dplrpb.PassReply
	// closed is closed when the host's side of the stream ended (err
	// says how).
	closed chan struct{}
	err    error
}

func newStreamPasser(send func(*dplrpb.FitEvent) error) *streamPasser {
	return &streamPasser{send: send, replies: make(chan *dplrpb.PassReply), closed: make(chan struct{})}
}

// receive reads the host's messages until the stream ends.
func (p *streamPasser) receive(ctx context.Context, stream dplrpb.Estimators_FitPassesServer) {
	defer close(p.closed)
	for {
		in, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the host closed the stream")
			}
			p.err = fmt.Errorf("waiting for the host's pass reply: %w", err)
			return
		}
		r := in.GetReply()
		if r == nil {
			p.err = errors.New("the host sent a second fit request")
			return
		}
		select {
		case p.replies <- r:
		case <-ctx.Done():
			p.err = ctx.Err()
			return
		}
	}
}

// Pass implements data.Passer: it sends req to the host and waits for the
// reply, checking it against the kind (a result the kind does not allow
// is an error, as on the host).
func (p *streamPasser) Pass(ctx context.Context, req data.PassRequest) (*data.PassResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	id := p.next
	for _, m := range PassRequestMessages(id, req) {
		if err := p.send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Pass{Pass: m.m}}); err != nil {
			return nil, fmt.Errorf("pass %s: sending the request: %w", req.Kind, err)
		}
	}
	// The reply's outputs are bounded by what the kind specifies.
	spec, known := pass.Lookup(req.Kind)
	limit := MaxPassValues(p.sh)
	if known {
		limit = 0
		for _, a := range spec.Outputs(p.sh, req) {
			limit += int64(a.Rows) * int64(a.Cols)
		}
	}
	asm := newPassReplyAssembler(id, limit)
	for {
		var m *dplrpb.PassReply
		select {
		case m = <-p.replies:
		case <-p.closed:
			return nil, fmt.Errorf("pass %s: %w", req.Kind, p.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		res, errText, done, err := asm.Add(m)
		if err != nil {
			return nil, fmt.Errorf("pass %s: malformed reply from the host: %w", req.Kind, err)
		}
		if !done {
			continue
		}
		if errText != "" {
			return nil, fmt.Errorf("pass %s: the host refused or failed it: %s", req.Kind, errText)
		}
		if known {
			if err := pass.CheckResult(spec, p.sh, req, res); err != nil {
				return nil, fmt.Errorf("the host's reply: %w", err)
			}
		}
		return res, nil
	}
}
