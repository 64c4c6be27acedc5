package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a progress bar on a terminal, or prints a line per tenth of the work
// when the output is not a terminal (logs, CI).
type progress struct {
	w     io.Writer
	label string
	tty   bool
	start time.Time
	last  int // last tenth printed (non-terminal)
	shown bool
}

func newProgress(w io.Writer, label string) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: w, label: label, tty: tty, start: time.Now(), last: -1}
}

func (p *progress) update(done, total int) {
	if total <= 0 {
		return
	}
	el := time.Since(p.start)
	eta := time.Duration(0)
	if done > 0 {
		eta = time.Duration(float64(el) * float64(total-done) / float64(done))
	}
	if p.tty {
		const width = 30
		fill := width * done / total
		fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d  %s elapsed, %s left ", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, total, el.Round(time.Second), eta.Round(time.Second))
		p.shown = true
		return
	}
	if tenth := 10 * done / total; tenth != p.last {
		p.last = tenth
		fmt.Fprintf(p.w, "%s: %d/%d (%d%%) after %s\n", p.label, done, total, 100*done/total, el.Round(100*time.Millisecond))
	}
}

func (p *progress) done() {
	if p.tty && p.shown {
		fmt.Fprintln(p.w)
	}
}
