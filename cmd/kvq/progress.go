package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports long work: on a terminal one line, redrawn at most every 200 ms,
// with the count, the rate and the time left; elsewhere (logs, CI) a plain line at
// each tenth of the work.
type progress struct {
	w     io.Writer
	label string
	unit  string // what is counted, plural: "runs", "MiB"
	scale float64
	tty   bool
	start time.Time
	drawn time.Time // last redraw (terminal)
	last  int       // last tenth printed (not a terminal)
	shown bool
}

// newProgress returns a progress report on w of work counted in unit; update's
// counts are divided by scale for display (1 for plain counts).
func newProgress(w io.Writer, label, unit string, scale float64) *progress {
	return &progress{w: w, label: label, unit: unit, scale: scale, tty: isTerminal(w), start: time.Now(), last: -1}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update reports done of total.
func (p *progress) update(done, total int) { p.update64(int64(done), int64(total)) }

func (p *progress) update64(done, total int64) {
	if total <= 0 {
		return
	}
	now := time.Now()
	if p.tty {
		if done < total && now.Sub(p.drawn) < 200*time.Millisecond {
			return
		}
		p.drawn = now
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(done, total, now))
		p.shown = true
		return
	}
	if tenth := int(10 * done / total); tenth != p.last {
		p.last = tenth
		fmt.Fprintln(p.w, p.line(done, total, now))
	}
}

// line is the report of done of total at now: count, percentage, rate, elapsed and
// time left.
func (p *progress) line(done, total int64, now time.Time) string {
	el := now.Sub(p.start)
	s := fmt.Sprintf("%s: %s/%s %s (%d%%), %s", p.label, p.num(done), p.num(total), p.unit, 100*done/total, el.Round(100*time.Millisecond))
	if done > 0 && el > 0 {
		rate := float64(done) / p.scale / el.Seconds()
		left := time.Duration(float64(el) * float64(total-done) / float64(done))
		s += fmt.Sprintf(", %.3g %s/s", rate, p.unit)
		if done < total {
			s += fmt.Sprintf(", about %s left", left.Round(time.Second))
		}
	}
	return s
}

func (p *progress) num(n int64) string {
	if p.scale == 1 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.0f", float64(n)/p.scale)
}

// done ends the terminal line.
func (p *progress) done() {
	if p.tty && p.shown {
		fmt.Fprintln(p.w)
	}
}

// progressWriter counts the bytes written through it into a progress report.
type progressWriter struct {
	w     io.Writer
	p     *progress
	n     int64
	total int64
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	pw.n += int64(n)
	pw.p.update64(min(pw.n, pw.total), pw.total)
	return n, err
}
