package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

var testSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","age","ok"],"additionalProperties":false}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":3},"score":{"type":"number"},"none":{"type":"null"}}}`,
	`{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"n":{"enum":[1,12,123]},"c":{"const":"x"}}}`,
	`{"title":"t","type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"array","items":{"type":"object","properties":{"r":{"type":"integer"}}}}}},"e":{"type":"object","properties":{}}}}`,
	`{"type":"object","properties":{"empty":{"type":"array","items":{"type":"number"},"maxItems":0},"any":{"type":"array","items":{"type":"boolean"}}}}`,
}

// validate checks v (decoded with UseNumber, objects as *omap) against schema node n.
func validate(t *testing.T, n *node, v any) bool {
	switch n.kind {
	case kObject:
		m, ok := v.(*omap)
		if !ok || len(m.keys) != len(n.props) {
			return false
		}
		for i, k := range m.keys {
			var want string
			json.Unmarshal([]byte(n.keys[i]), &want)
			if k != want || !validate(t, n.props[i], m.vals[k]) {
				return false
			}
		}
		return true
	case kArray:
		a, ok := v.([]any)
		if !ok || len(a) < n.min || n.max >= 0 && len(a) > n.max {
			return false
		}
		for _, x := range a {
			if !validate(t, n.items, x) {
				return false
			}
		}
		return true
	case kString:
		_, ok := v.(string)
		return ok
	case kNumber:
		_, ok := v.(json.Number)
		return ok
	case kInteger:
		num, ok := v.(json.Number)
		return ok && !strings.ContainsAny(string(num), ".eE")
	}
	b, _ := json.Marshal(v)
	for _, o := range n.options {
		if string(b) == o {
			return true
		}
	}
	return false
}

// TestSchemaGenerationsValidate: under random logits and budgets, every generation
// is valid JSON that the schema accepts.
func TestSchemaGenerationsValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vocabs := []*Vocab{byteVocab(t)}
	if !testing.Short() {
		vocabs = append(vocabs, llamaVocab(t))
	}
	for si, src := range testSchemas {
		s, err := CompileSchema([]byte(src))
		if err != nil {
			t.Fatalf("schema %d: %v", si, err)
		}
		for vi, v := range vocabs {
			runs := 40
			if vi == 1 {
				runs = 3
			}
			for range runs {
				budget := s.root.minLen + r.IntN(60)
				if vi == 1 {
					budget = s.root.minLen + r.IntN(30)
				}
				generateSchema(t, fmt.Sprintf("schema %d", si), v, s, budget, func(logits []float32) {
					for i := range logits {
						logits[i] = float32(r.NormFloat64())
					}
				})
			}
		}
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	for _, c := range []struct{ src, mention string }{
		{`{"type":"string"}`, "root must be"},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}`, `"pattern"`},
		{`{"type":"object","properties":{"a":{"anyOf":[]}}}`, "$.properties.a"},
		{`{"type":"object","properties":{"a":{"type":["string","null"]}}}`, "type lists"},
		{`{"type":"object","additionalProperties":true}`, "additionalProperties"},
		{`{"type":"object","properties":{"a":{"type":"array"}}}`, "needs items"},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"minItems":3,"maxItems":2}}}`, "maxItems"},
		{`{"type":"object","properties":{"a":{"enum":[{"x":1}]}}}`, "enum"},
		{`[1]`, "not an object"},
		{`{"type":"object",`, "not JSON"},
		// 1024 items of 1024 items of ...: 2·1024⁷ bytes at least, beyond int64 once doubled.
		{`{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","minItems":1024,"items":`, 7) + `{"type":"integer"}` + strings.Repeat(`}`, 7) + `}}`, "shortest answer"},
	} {
		_, err := CompileSchema([]byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: error %v, want it to mention %s", c.src, err, c.mention)
		}
	}
	// The order of properties is the schema's.
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"z":{"type":"null"},"a":{"type":"null"}}}`))
	if err != nil || len(s.root.keys) != 2 || !bytes.Equal([]byte(s.root.keys[0]), []byte(`"z"`)) {
		t.Errorf("property order: %v %v", s.root.keys, err)
	}
}

// FuzzCompileSchema: any input either compiles or is refused, and a schema that
// compiles generates, within the fewest tokens it allows (MinTokens, single-byte
// tokens, the lowest allowed id each step), an answer that the schema accepts.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s)
	}
	f.Add(`{"type":"object","properties":{"a":{"type":"array","minItems":3,"items":{"enum":["x",1,null]}}}}`)
	f.Fuzz(func(t *testing.T, src string) {
		s, err := CompileSchema([]byte(src))
		if err != nil {
			return
		}
		v := byteVocab(t)
		if _, err := v.JSONSchema(s); err != nil || s.root.minLen > 1<<12 {
			return // a byte the vocabulary lacks; an answer too long to walk here
		}
		generateSchema(t, src, v, s, s.root.minLen, func(l []float32) { clear(l) }) // the lowest allowed id
	})
}

// generateSchema runs s's constraint over v for at most budget tokens, each the
// largest of the logits fill writes that Mask leaves finite (the first of equals),
// until an end token; it fails the test when Mask allows no token or when the
// schema does not accept the text.
func generateSchema(t *testing.T, name string, v *Vocab, s *Schema, budget int, fill func([]float32)) {
	t.Helper()
	j, err := v.JSONSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, len(v.pieces))
	var out strings.Builder
	for n := range budget {
		fill(logits)
		j.Mask(logits, budget-n)
		best := bestAllowed(logits)
		if best < 0 {
			t.Fatalf("%s: no token allowed after %q (budget %d)", name, out.String(), budget)
		}
		if v.eog[best] {
			break
		}
		j.Accept(int32(best))
		out.Write(v.pieces[best])
	}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	dec.UseNumber()
	val, err := decodeOrdered(dec)
	if err != nil || dec.More() || !validate(t, s.root, val) {
		t.Fatalf("%s, budget %d: %q is not accepted by the schema: %v", name, budget, out.String(), err)
	}
}
