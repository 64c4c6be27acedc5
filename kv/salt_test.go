package kv

import "testing"

// Salted sequences share cached blocks only with sequences of the same salt: the
// unsalted cache and other salts find none of them, and a fork keeps its salt.
func TestPrefixSalt(t *testing.T) {
	f := newFixture(t, "q8", 1, 2, 1, 8, 64, 0)
	st, B := f.st, f.st.g.B
	toks := seqTokens(3*B, 1)
	alice, cached, err := st.NewSeqWithPrefixSalt(toks, "alice")
	if err != nil || cached != 0 {
		t.Fatalf("first sequence: %d cached, %v", cached, err)
	}
	f.run(t, alice, toks, 0, 2*B, B)
	fork, err := st.Fork(alice)
	if err != nil {
		t.Fatal(err)
	}
	f.run(t, fork, toks, 2*B, 3*B, B) // the fork's own third block, under alice's salt
	for _, tc := range []struct {
		salt string
		want int
	}{{"", 0}, {"bob", 0}, {"alice", 3 * B}} {
		id, got, err := st.NewSeqWithPrefixSalt(toks, tc.salt)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("salt %q: %d cached tokens, want %d", tc.salt, got, tc.want)
		}
		st.Drop(id)
	}
	if _, got, _ := st.NewSeqWithPrefix(toks); got != 0 {
		t.Errorf("NewSeqWithPrefix found %d tokens of salted sequences", got)
	}
}
