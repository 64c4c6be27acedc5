package quant

import "testing"

// TestRegistry checks the table itself: unique names that Lookup finds, a per-token
// codec (or per-channel key and value codecs) for every entry whose bits agree with
// the entry, parameters only where the codecs use them. The codecs' behaviour is the conformance suite's, which
// takes its codecs from the registry (TestRegistryConformance).
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
		if e.About == "" || e.Bits < 2 || e.Bits > 32 {
			t.Errorf("%s: about %q, bits %d", e.Name, e.About, e.Bits)
			continue
		}
		if e.Row == nil {
			// Both sides per channel: a block of 32 tokens × 128 channels takes
			// 32·128·Bits/8 bytes of codes and 4 bytes of parameters per channel.
			if e.Key == nil || e.Value == nil || e.Takes(ParamScale) || e.Takes(ParamResidual) || !e.Takes(ParamGroup) {
				t.Errorf("%s: no row codec, key codec %v, value codec %v, params %b", e.Name, e.Key != nil, e.Value != nil, e.Params)
				continue
			}
			if n, want := e.Value().BlockBytes(32, 128), 4*128+32*16*e.Bits; n != want {
				t.Errorf("%s: value block of 32×128 takes %d bytes, want %d", e.Name, n, want)
			}
			if v, ok := e.Value().(interface{ Validate() error }); ok && v.Validate() != nil {
				t.Errorf("%s: %v", e.Name, v.Validate())
			}
		} else {
			if e.Value != nil {
				t.Errorf("%s: both a row codec and a value codec", e.Name)
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
		}
		if e.Key != nil {
			// r: the residual of values stored per token.
			c, ok := e.Key().(Channel)
			if !ok || c.Bits != e.Bits || !e.Takes(ParamRoPE) || e.Takes(ParamResidual) != (e.Row != nil) {
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
