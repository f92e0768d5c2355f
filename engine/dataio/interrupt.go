package dataio

import "context"

// Interruptible runs load and returns its result, or ctx's error as soon as
// ctx is done, whichever comes first. Loading can block where no context
// reaches: opening a FIFO waits for a writer, reading it waits for data,
// and a slow network file system can stall any read. The CLI's context is
// cancelled by SIGINT and SIGTERM, so wrapping a load in Interruptible is
// what lets Ctrl-C stop `dplr fit --data /path/to/fifo`.
//
// When ctx ends first, load keeps running in its goroutine until it
// returns by itself; its result is dropped. That is meant for a process
// about to exit: load must not hold anything the caller still needs.
func Interruptible[T any](ctx context.Context, load func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := load()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
