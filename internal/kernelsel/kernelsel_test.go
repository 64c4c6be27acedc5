package kernelsel

import "testing"

func TestSwitch(t *testing.T) {
	type set struct{ name string }
	scalar, simd := &set{"scalar"}, &set{"simd"}
	for _, tc := range []struct {
		simd   *set
		env    string
		want   *set
		onWant bool
	}{
		{simd, "", simd, true},
		{simd, "0", simd, true},
		{simd, "1", scalar, true},
		{nil, "", scalar, false},
		{nil, "1", scalar, false},
	} {
		if got := Initial(scalar, tc.simd, tc.env); got != tc.want {
			t.Errorf("Initial(simd %v, %q) = %s, want %s", tc.simd != nil, tc.env, got.name, tc.want.name)
		}
		s := New(scalar, tc.simd)
		if on := s.SetSIMD(true); on != tc.onWant || (on && s.Load() != simd) || (!on && s.Load() != scalar) {
			t.Errorf("SetSIMD(true) with simd %v: %v, in use %s", tc.simd != nil, on, s.Load().name)
		}
		if s.SetSIMD(false) || s.Load() != scalar {
			t.Errorf("SetSIMD(false): in use %s", s.Load().name)
		}
	}
}
