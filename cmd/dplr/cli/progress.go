package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dplr/dplr/client"
)

// progressBar draws fit progress on stderr: a redrawn bar on a terminal,
// a log line every few seconds otherwise.
type progressBar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	start    time.Time
	lastLine time.Time
	stage    string
	drawn    bool
	quiet    bool
}

func newProgressBar(w io.Writer, quiet bool) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, tty: tty, start: time.Now(), quiet: quiet}
}

// progress draws one progress event of a plugin.
func (p *progressBar) progress(e client.Progress) {
	p.update(e.Stage, int64(e.Done), int64(e.Total), e.Message)
}

func (p *progressBar) update(stage string, done, total int64, msg string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	el := time.Since(p.start).Seconds()
	frac := 0.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	if p.tty {
		const width = 30
		fill := int(frac * width)
		fill = min(max(fill, 0), width)
		bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
		fmt.Fprintf(p.w, "\r\033[K%-24.24s [%s] %5.1f%% %6.1fs %s", stage, bar, 100*frac, el, msg)
		p.drawn = true
		return
	}
	if stage != p.stage || time.Since(p.lastLine) > 2*time.Second || (total > 0 && done >= total) {
		fmt.Fprintf(p.w, "dplr: %.1fs %s %d/%d %s\n", el, stage, done, total, msg)
		p.lastLine = time.Now()
	}
	p.stage = stage
}

func (p *progressBar) logf(format string, args ...any) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "dplr: "+format+"\n", args...)
}

func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
