package tier

import (
	"bytes"
	"errors"
	"testing"

	"kvq/kv"
)

// testRecord is the record of a block at index 3 with 3 bytes of side rows.
func testRecord() ([]byte, want) {
	toks := []int32{5, 6, 7, 8}
	parent := uint64(0x1122334455667788)
	w := want{root: 42, hash: kv.BlockHash(parent, toks), parent: parent, index: 3, tokens: toks, blockBytes: 10, sideBytes: 3}
	b := kv.PrefixBlock{Hash: w.hash, Parent: parent, Index: 3, Tokens: toks, Bytes: []byte("0123456789"), Side: []byte("abc")}
	return encodeRecord(nil, w.root, b), w
}

func TestRecordRoundTrip(t *testing.T) {
	rec, w := testRecord()
	if len(rec) != 10+3+RecordOverhead(4) {
		t.Fatalf("record of %d bytes, want %d", len(rec), 10+3+RecordOverhead(4))
	}
	b, err := decodeRecord(rec, w)
	if err != nil || string(b.Bytes) != "0123456789" || string(b.Side) != "abc" || b.Index != 3 || b.Hash != w.hash || b.Parent != w.parent {
		t.Fatalf("decode: %+v, %v", b, err)
	}
	// Without side rows (a block that lost them) the record is valid too.
	b.Side = nil
	rec2 := encodeRecord(nil, w.root, b)
	if got, err := decodeRecord(rec2, w); err != nil || got.Side != nil || len(rec2) != 10+RecordOverhead(4) {
		t.Fatalf("decode without side rows: %+v, %v", got, err)
	}
}

// Every byte of a record matters: changing any one of them, or its length, or what
// the reader expects, discards it.
func TestRecordRejects(t *testing.T) {
	rec, w := testRecord()
	for i := range rec {
		bad := bytes.Clone(rec)
		bad[i] ^= 0x10
		if _, err := decodeRecord(bad, w); !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d flipped: %v", i, err)
		}
	}
	for _, n := range []int{0, 3, len(rec) - 1} {
		if _, err := decodeRecord(rec[:n], w); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
	if _, err := decodeRecord(append(bytes.Clone(rec), 0), w); !errors.Is(err, ErrCorrupt) {
		t.Errorf("one byte longer: %v", err)
	}
	for name, mod := range map[string]func(*want){
		"other layout": func(w *want) { w.root++ },
		"other key":    func(w *want) { w.hash++ },
		"other parent": func(w *want) { w.parent++ },
		"other tokens": func(w *want) { w.tokens = []int32{5, 6, 7, 9} },
		"other size":   func(w *want) { w.blockBytes = 11 },
		"other sides":  func(w *want) { w.sideBytes = 4 },
		"other index":  func(w *want) { w.index = 2 },
	} {
		w2 := w
		mod(&w2)
		if _, err := decodeRecord(rec, w2); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A record that passes its checksum but whose key is not the hash of its
	// tokens (a writer that lied) is refused too.
	lie := encodeRecord(nil, w.root, kv.PrefixBlock{Hash: w.hash, Parent: w.parent, Index: 3, Tokens: []int32{1, 2, 3, 4}, Bytes: []byte("0123456789")})
	w2 := w
	w2.tokens = []int32{1, 2, 3, 4}
	if _, err := decodeRecord(lie, w2); !errors.Is(err, ErrCorrupt) {
		t.Errorf("key not the tokens' hash: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	rec, w := testRecord()
	f.Add(rec)
	f.Add(rec[:40])
	f.Add([]byte("KVQB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		blk, err := decodeRecord(b, w)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		// Accepted: it must be the one valid record (or it without side rows).
		if string(blk.Bytes) != "0123456789" || (!bytes.Equal(b, rec) && blk.Side != nil) {
			t.Fatalf("accepted a record that is not the valid one: %q", b)
		}
	})
}
