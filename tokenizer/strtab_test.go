package tokenizer

import (
	"fmt"
	"testing"
)

// TestStrIndex checks the string table and its index against a map on duplicates,
// empty and multi-byte strings, misses, and a table grown past many collisions.
func TestStrIndex(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ss := []string{"", "▁a", "a", "▁a", "<0x0A>"} // duplicate: the first id wins
			for i := range n {
				ss = append(ss, fmt.Sprintf("p%d", i%(n/2+1))) // half of them repeat
			}
			tab, err := newStrTable(ss)
			if err != nil {
				t.Fatal(err)
			}
			if tab.len() != len(ss) {
				t.Fatalf("len %d, want %d", tab.len(), len(ss))
			}
			x := newStrIndex(len(ss))
			want := map[string]int32{}
			for i, s := range ss {
				if got := tab.at(int32(i)); got != s {
					t.Fatalf("at(%d) = %q, want %q", i, got, s)
				}
				x.add(&tab, int32(i))
				if _, dup := want[s]; !dup {
					want[s] = int32(i) // the first id of equal strings stays
				}
			}
			for s, id := range want {
				if got, ok := x.get(&tab, s); !ok || got != id {
					t.Errorf("get(%q) = %d, %v; want %d", s, got, ok, id)
				}
				if got, ok := x.getBytes(&tab, []byte(s)); !ok || got != id {
					t.Errorf("getBytes(%q) = %d, %v; want %d", s, got, ok, id)
				}
			}
			for _, s := range []string{"b", "▁", "p-1", "a▁", "<0x0a>"} {
				if id, ok := x.get(&tab, s); ok {
					t.Errorf("get(%q) = %d, want a miss", s, id)
				}
			}
		})
	}
}
