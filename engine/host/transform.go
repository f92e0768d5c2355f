package host

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/engine/transport"
)

// Transform maps the rows of a prepared data set through the model m, in
// the plugin of the estimator that fitted it, run as a fit is: a sandboxed
// plugin does it in a fresh process that may read the rows' files and the
// model's and no others. It is post-processing of released outputs and the
// caller's rows: no budget is involved, and a plugin that sends anything
// but one finite matrix (a privacy step, say) fails. A refusal (no
// transform, unusable model or rows) wraps ErrRequest.
func (p *Plugin) Transform(ctx context.Context, m sdk.Model, opts map[string]string, rows dataio.Handle) (Matrix, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	paths := handlePaths(rows)
	for _, o := range m.Outputs {
		if o.File != "" {
			paths = append(paths, o.File)
		}
	}
	req := transport.TransformRequest{Model: m, Options: opts, Data: rows}
	stream, err := p.stream(ctx, paths, nil, func(rpc *transport.Client) (*transport.Stream, error) { return rpc.Transform(ctx, req) })
	if err != nil {
		return Matrix{}, p.wrap(ctx, "starting transform", err)
	}
	mats := newMatrixSet()
	for {
		e, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Matrix{}, p.wrap(ctx, "transform", err)
		}
		c, ok := e.(transport.MatrixChunk)
		if !ok {
			return Matrix{}, fmt.Errorf("plugin %s: transform sent %T, not its output: %w", p.Name(), e, ErrPlugin)
		}
		if err := p.takeChunk(mats, c); err != nil {
			return Matrix{}, err
		}
	}
	ms, err := mats.complete()
	if err == nil && len(ms) != 1 {
		err = fmt.Errorf("transform returned %d matrices, want one", len(ms))
	}
	if err == nil {
		err = checkFinite(&FitOutcome{Matrices: ms})
	}
	if err != nil {
		return Matrix{}, fmt.Errorf("plugin %s: %w: %w", p.Name(), err, ErrPlugin)
	}
	return ms[0], nil
}
