package grammar

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// byteVocab has one token per byte 0x01–0x7f and an end token (id 0).
func byteVocab(t *testing.T) *Vocab {
	t.Helper()
	pieces := make([]string, 128)
	for i := 1; i < 128; i++ {
		pieces[i] = string(rune(i))
	}
	v, err := NewVocab(pieces, func(id int32) bool { return id == 0 })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJSONObjectPrefixes: the automaton accepts exactly the prefixes of JSON objects
// (checked against encoding/json on whole texts), and its completion cost is exact
// for the texts it accepts: appending that many bytes can complete them.
func TestJSONObjectPrefixes(t *testing.T) {
	good := []string{`{}`, ` {"a":1}`, `{"a":[1,2.5,-3e+2,true,false,null,"x\n\u00e9"]}`, `{"a":{"b":{}},"c":[]}`,
		"{\n  \"k\": \"v\" ,\t\"n\" : -0.0E-1\n}", `{"a":[[],[{}]]}`, `{"é":"ü"}`}
	bad := []string{`[]`, `1`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":01}`, `{"a":1,}`, `{"a":tru}`, `{"a":"\x"}`, `{"a":1]`, `{} {}`, "{\"a\":\"\x01\"}", `{"a":.5}`, `{"a":1.}`}
	for _, s := range good {
		st := state{mode: mTop}
		if !st.feed([]byte(s)) || st.mode != mDone {
			t.Errorf("%q refused or not complete (mode %d)", s, st.mode)
		}
	}
	for _, s := range bad {
		st := state{mode: mTop}
		if st.feed([]byte(s)) && st.mode == mDone && json.Valid([]byte(s)) {
			t.Errorf("%q accepted", s)
		}
		if st.feed([]byte(s)) && st.mode == mDone {
			t.Errorf("%q accepted as a complete object", s)
		}
	}
}

// generate draws tokens with random logits under the constraint until an end
// token or the budget, and returns the text and whether it ended by an end token.
func generate(t *testing.T, v *Vocab, r *rand.Rand, budget int, skew func(id int, l float32) float32) (string, bool) {
	j := v.JSONObject()
	logits := make([]float32, len(v.pieces))
	var out strings.Builder
	for n := range budget {
		for i := range logits {
			logits[i] = skew(i, float32(r.NormFloat64()))
		}
		j.Mask(logits, budget-n)
		best := bestAllowed(logits)
		if best < 0 {
			t.Fatalf("no token allowed after %q (budget %d, step %d)", out.String(), budget, n)
		}
		if v.eog[best] {
			return out.String(), true
		}
		j.Accept(int32(best))
		out.Write(v.pieces[best])
	}
	return out.String(), false
}

// TestGenerationsParse: whatever the logits and however short the budget, what
// is generated is one JSON object, ended by an end token or by the budget.
func TestGenerationsParse(t *testing.T) {
	llama := llamaVocab(t)
	r := rand.New(rand.NewPCG(1, 2))
	runs := 30
	if testing.Short() {
		runs = 10
	}
	// Skews: plain noise, and noise favouring tokens that open containers and
	// strings (deep nesting, long strings), so budgets run out mid-structure.
	openers := func(id int, l float32) float32 {
		if p := llama.pieces[id]; bytes.ContainsAny(p, "{[\"") {
			return l + 3
		}
		return l
	}
	plain := func(id int, l float32) float32 { return l }
	for _, v := range []*Vocab{llama, byteVocab(t)} {
		for i := range runs {
			budget := 2 + r.IntN(40)
			skew := plain
			if i%2 == 1 {
				skew = openers
			}
			s, ended := generate(t, v, r, budget, skew)
			var obj map[string]any
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber() // numbers beyond float64 (1e400) are valid JSON
			if err := dec.Decode(&obj); err != nil || dec.More() {
				t.Fatalf("budget %d (ended %v): %q does not parse as an object: %v", budget, ended, s, err)
			}
		}
	}
}

func TestNewVocabErrors(t *testing.T) {
	if _, err := NewVocab([]string{"a", "{"}, func(int32) bool { return true }); err == nil {
		t.Error("a vocabulary without single-byte closers: no error")
	}
	pieces := make([]string, 128)
	for i := 1; i < 128; i++ {
		pieces[i] = string(rune(i))
	}
	if _, err := NewVocab(pieces, func(int32) bool { return false }); err == nil {
		t.Error("a vocabulary without an end token: no error")
	}
}

// FuzzJSONObject: for any input, a prefix the automaton accepts can be completed
// within its cost: the bytes of the minimal completion keep it accepted and end it.
func FuzzJSONObject(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\u00`, `{"x":tr`, `{"k`, `{"a":-`, `{"a":1e`, ` {`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st := state{mode: mTop}
		for i := range len(s) {
			if !st.byte(s[i]) {
				return
			}
		}
		need := st.cost()
		done := st.mode == mDone
		c := complete(&st)
		if len(c) != need {
			t.Fatalf("%q: completion %q is %d bytes, cost %d", s, c, len(c), need)
		}
		if !done && !json.Valid([]byte(s+c)) {
			t.Fatalf("%q + %q is not valid JSON", s, c)
		}
	})
}

// complete appends the minimal completion's bytes to st and returns them.
func complete(st *state) string {
	var b strings.Builder
	for st.mode != mDone {
		var c byte
		switch st.mode {
		case mTop:
			c = '{'
		case mString:
			switch {
			case st.esc == 1:
				c = 'n'
			case st.esc > 1:
				c = '0'
			default:
				c = '"'
			}
		case mNumber:
			if st.num == nMinus || st.num == nDot || st.num == nExp || st.num == nExpSign {
				c = '0'
			} else if st.stack[len(st.stack)-1] == '{' {
				c = '}'
			} else {
				c = ']'
			}
		case mLiteral:
			c = st.lit[0]
		case mValue:
			c = '0'
		case mKey:
			c = '"'
		case mColon:
			c = ':'
		default:
			if st.stack[len(st.stack)-1] == '{' {
				c = '}'
			} else {
				c = ']'
			}
		}
		if !st.byte(c) {
			panic("completion refused")
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestDoneAllowsOnlyEnd: once the object is complete only end tokens are allowed;
// before, end tokens are not.
func TestDoneAllowsOnlyEnd(t *testing.T) {
	v := byteVocab(t)
	j := v.JSONObject()
	logits := make([]float32, 128)
	j.Mask(logits, 10)
	if logits[0] > -1e30 || logits['{'] != 0 || logits['}'] > -1e30 {
		t.Errorf("at the start: end %v, '{' %v, '}' %v", logits[0], logits['{'], logits['}'])
	}
	j.Accept('{')
	j.Accept('}')
	if !j.Done() {
		t.Fatal("{} not done")
	}
	clear(logits)
	j.Mask(logits, 10)
	for id, l := range logits {
		if (id == 0) != (l == 0) {
			t.Fatalf("after {}: token %d has logit %v", id, l)
		}
	}
	// With one token left after '{', only '}' fits.
	j = v.JSONObject()
	j.Accept('{')
	clear(logits)
	j.Mask(logits, 1)
	for id, l := range logits {
		if (id == '}') != (l == 0) {
			t.Fatalf("one token left: token %q has logit %v", rune(id), l)
		}
	}
}

// TestShortBudget: a budget shorter than the shortest completion still leaves a
// token (a valid prefix) instead of masking everything.
func TestShortBudget(t *testing.T) {
	v := byteVocab(t)
	j := v.JSONObject()
	logits := make([]float32, 128)
	j.Mask(logits, 1)
	if logits['{'] != 0 {
		t.Errorf("budget 1 at the start: '{' masked")
	}
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	sj, err := v.JSONSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	if sj.MinTokens() != len(`{"a":""}`) {
		t.Errorf("MinTokens %d, want %d", sj.MinTokens(), len(`{"a":""}`))
	}
	clear(logits)
	sj.Mask(logits, 1)
	if logits['{'] != 0 {
		t.Errorf("schema, budget 1 at the start: '{' masked")
	}
}

// bestAllowed is the id of the highest logit a mask left, or −1 when it left none.
func bestAllowed(logits []float32) int {
	best := -1
	for i, l := range logits {
		if l > -1e30 && (best < 0 || l > logits[best]) {
			best = i
		}
	}
	return best
}
