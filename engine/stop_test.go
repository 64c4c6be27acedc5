package engine

import (
	"strings"
	"testing"
)

func TestStopper(t *testing.T) {
	cases := []struct {
		name    string
		stops   []string
		pieces  []string
		want    []string // streamed text after each piece
		stopAt  int      // index of the piece that completes a stop string, -1 if none
		flushed string   // flush() after the last piece when no stop
		text    string   // final text
	}{
		{"no stops", nil, []string{"ab", "c"}, []string{"ab", "c"}, -1, "", "abc"},
		{"plain stop", []string{"END"}, []string{"hello ", "EN", "D more"}, []string{"hello ", "", ""}, 2, "", "hello "},
		{"held then released", []string{"END"}, []string{"a E", "Nx"}, []string{"a ", "ENx"}, -1, "", "a ENx"},
		{"held at the end", []string{"END"}, []string{"a EN"}, []string{"a "}, -1, "EN", "a EN"},
		{"stop inside one piece", []string{"\n\n"}, []string{"one\n\ntwo"}, []string{"one"}, 0, "", "one"},
		{"earliest of two", []string{"yz", "b"}, []string{"axyzb"}, []string{"ax"}, 0, "", "ax"},
		{"longest held prefix", []string{"abc", "bcd"}, []string{"xab", "c"}, []string{"x", ""}, 1, "", "x"},
		{"overlap across pieces", []string{"aab"}, []string{"a", "a", "a", "b"}, []string{"", "", "a", ""}, 3, "", "a"},
		{"unicode stop", []string{"é!"}, []string{"café", "!"}, []string{"caf", ""}, 1, "", "caf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := stopper{stops: tc.stops}
			var streamed strings.Builder
			stoppedAt := -1
			for i, p := range tc.pieces {
				out, stopped := st.add(p)
				streamed.WriteString(out)
				if out != tc.want[i] {
					t.Errorf("piece %d %q: streamed %q, want %q", i, p, out, tc.want[i])
				}
				if stopped && stoppedAt < 0 {
					stoppedAt = i
				}
			}
			if stoppedAt != tc.stopAt {
				t.Errorf("stopped at piece %d, want %d", stoppedAt, tc.stopAt)
			}
			if stoppedAt < 0 {
				f := st.flush()
				if f != tc.flushed {
					t.Errorf("flush %q, want %q", f, tc.flushed)
				}
				streamed.WriteString(f)
			}
			if st.text() != tc.text || streamed.String() != tc.text {
				t.Errorf("text %q, streamed %q, want %q", st.text(), streamed.String(), tc.text)
			}
		})
	}
}

// BenchmarkStopper100k feeds 100k one-token pieces to a choice with stop strings that
// never complete: the time per piece stays flat as the text grows (it grew with the
// text, 4.6 s for 100k tokens, when each piece copied the whole text).
func BenchmarkStopper100k(b *testing.B) {
	for b.Loop() {
		st := stopper{stops: []string{"THE END", "\n\n\n"}}
		for i := range 100_000 {
			st.add([]string{"Once", " upon", " a", " time", " THE", " EN", "\n"}[i%7])
		}
		if len(st.text()) == 0 {
			b.Fatal("no text")
		}
	}
}
