//go:build unix

package dataio

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FIFO without a writer blocks the open inside the loader; cancelling
// the context (what SIGINT/SIGTERM do in the CLI) must still return.
func TestInterruptibleFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data.csv")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	t.Cleanup(func() {
		// Release the abandoned loader: give the FIFO a writer with no data.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	entered := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := Interruptible(ctx, func() (Handle, error) {
			close(entered)
			return PrepareFileContext(ctx, fifo, LoadOptions{Format: FormatCSV}, filepath.Join(dir, "cache"))
		})
		done <- err
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second): // safety bound only
		t.Fatal("loading from a FIFO ignored the cancelled context")
	}
}

func TestInterruptiblePassesResults(t *testing.T) {
	v, err := Interruptible(context.Background(), func() (int, error) { return 7, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Interruptible(ctx, func() (int, error) { t.Fatal("not run on a done context"); return 0, nil })
	assert.ErrorIs(t, err, context.Canceled)
}
