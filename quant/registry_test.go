package quant

import "testing"

// TestRegistry checks the table itself: unique names that Lookup finds, a per-token
// codec for every entry whose name and bits agree with the entry, parameters only
// where the codecs use them. The codecs' behaviour is the conformance suite's, which
// takes its codecs from the registry (allRowCodecs, TestChannelConformance).
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Registry() {
		if e.Name == "" || seen[e.Name] {
			t.Errorf("entry %q: empty or duplicate name", e.Name)
		}
		seen[e.Name] = true
		if got, ok := Lookup(e.Name); !ok || got.Name != e.Name {
			t.Errorf("Lookup(%q) = %q, %v", e.Name, got.Name, ok)
		}
		if e.Row == nil || e.About == "" || e.Bits < 2 || e.Bits > 32 {
			t.Errorf("%s: row codec %v, about %q, bits %d", e.Name, e.Row != nil, e.About, e.Bits)
			continue
		}
		row := e.Row(RowParams{Group: 32, Scale: 0.5})
		if v, ok := row.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				t.Errorf("%s: %v", e.Name, err)
			}
		}
		// Bits: a row of 128 values (one group) takes at least 128·Bits/8 bytes and,
		// with its parameters, less than 128·(Bits+1)/8.
		if n := e.Row(RowParams{}).RowBytes(128); n < 16*e.Bits || n >= 16*(e.Bits+1) {
			t.Errorf("%s: %d bytes per row of 128 for %d bits", e.Name, n, e.Bits)
		}
		if _, isAffine := row.(Affine); isAffine != e.Takes(ParamGroup) {
			t.Errorf("%s: takes g = %v, but its row codec is %T", e.Name, e.Takes(ParamGroup), row)
		}
		if f, isFP8 := row.(FP8); isFP8 != e.Takes(ParamScale) || (isFP8 && f.TensorScale != 0.5) {
			t.Errorf("%s: takes s = %v, but its row codec is %#v", e.Name, e.Takes(ParamScale), row)
		}
		if e.Key != nil {
			c, ok := e.Key().(Channel)
			if !ok || c.Bits != e.Bits || !e.Takes(ParamRoPE) || !e.Takes(ParamResidual) {
				t.Errorf("%s: key codec %#v, rope %v, residual %v", e.Name, e.Key(), e.Takes(ParamRoPE), e.Takes(ParamResidual))
			}
		} else if e.Takes(ParamRoPE) || e.Takes(ParamResidual) {
			t.Errorf("%s: takes rope or r without per-channel keys", e.Name)
		}
	}
	if _, ok := Lookup("q5"); ok {
		t.Error(`Lookup("q5") found an entry`)
	}
}
