package host

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dplr/dplr/engine/transport"
)

// deadlineCtx has a deadline whose timer has not fired: Err is nil. It is
// what the host sees when the plugin, enforcing the propagated deadline,
// ends the stream before the host's own timer goroutine has run.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

func TestCtxErrAndWrap(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	past := deadlineCtx{context.Background(), time.Now().Add(-time.Hour)}
	future := deadlineCtx{context.Background(), time.Now().Add(time.Hour)}
	p := &Plugin{Catalogue: transport.Catalogue{Plugin: "bad"}}
	rst := status.Error(codes.Canceled, "stream terminated by RST_STREAM with error code: CANCEL")

	cases := []struct {
		name    string
		ctx     context.Context
		want    error
		wrapped error // what wrap() of a transport error leaves in the chain
	}{
		{"live context", context.Background(), nil, nil},
		{"cancelled", cancelled, context.Canceled, context.Canceled},
		{"deadline passed, timer not yet fired", past, context.DeadlineExceeded, context.DeadlineExceeded},
		{"deadline ahead", future, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ctxErr(tc.ctx))
			if tc.wrapped == nil {
				return
			}
			err := p.wrap(tc.ctx, "fit", rst)
			assert.ErrorIs(t, err, tc.wrapped)
			assert.NotErrorIs(t, err, ErrPlugin, "the host's own timeout or cancellation is not a plugin failure")
			assert.Contains(t, err.Error(), "plugin bad: fit")
		})
	}

	t.Run("estimator error status", func(t *testing.T) {
		err := p.wrap(context.Background(), "fit", status.Error(codes.FailedPrecondition, "rank 9 exceeds the dimension 3"))
		assert.ErrorIs(t, err, ErrEstimator)
		assert.NotErrorIs(t, err, ErrPlugin)
		assert.Contains(t, err.Error(), "rank 9 exceeds the dimension 3")
	})
}
