package kv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCalibrator: the recorded maxima are the largest magnitudes appended per layer
// and side; the scales map them to the format's largest value; a store built with
// the calibrated specs stores one byte per value and reads back within FP8's error.
func TestCalibrator(t *testing.T) {
	const layers, kvh, d, n = 2, 2, 16, 40
	st, err := New(Config{Layers: layers, Heads: 4, KVHeads: kvh, HeadDim: d, Spec: MustParseSpec("f32")})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCalibrator(st, layers)
	if _, err := c.LayerSpecs(TypeFP8E4M3, TypeFP8E4M3, 0); err == nil {
		t.Error("LayerSpecs before any append: no error")
	}
	r := rand.New(rand.NewPCG(3, 4))
	id, _ := c.NewSeq()
	if err := c.Grow(id, make([]int32, n)); err != nil {
		t.Fatal(err)
	}
	rows := make([][2][]float32, layers)
	var wantK, wantV [layers]float32
	for l := range layers {
		k, v := make([]float32, n*kvh*d), make([]float32, n*kvh*d)
		for i := range k {
			k[i] = float32(r.NormFloat64()) * float32(l+1) * 3
			v[i] = float32(r.NormFloat64()) / float32(l+1)
			wantK[l] = max(wantK[l], float32(math.Abs(float64(k[i]))))
			wantV[l] = max(wantV[l], float32(math.Abs(float64(v[i]))))
		}
		rows[l] = [2][]float32{k, v}
		if err := c.Append(l, id, k, v); err != nil {
			t.Fatal(err)
		}
		if err := c.Attend(l, id, make([]float32, n*4*d), make([]float32, n*4*d)); err != nil {
			t.Fatal(err)
		}
	}
	km, vm := c.Max()
	for l := range layers {
		if km[l] != wantK[l] || vm[l] != wantV[l] {
			t.Errorf("layer %d: max %v/%v, want %v/%v", l, km[l], vm[l], wantK[l], wantV[l])
		}
	}
	specs, err := c.LayerSpecs(TypeFP8E4M3, TypeFP8E5M2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for l := range layers {
		if got, want := specs[l].K.Scale, wantK[l]/448; got != want {
			t.Errorf("layer %d key scale %v, want %v", l, got, want)
		}
		if got, want := specs[l].V.Scale, wantV[l]/57344; got != want {
			t.Errorf("layer %d value scale %v, want %v", l, got, want)
		}
	}
	// The calibrated store: d bytes per row, and every row read back within the
	// format's relative error (E4M3: 2⁻⁴, E5M2: 2⁻³ of the value, saturating at the scale's max).
	fp, err := New(Config{Layers: layers, Heads: 4, KVHeads: kvh, HeadDim: d, Spec: MustParseSpec("fp8e4m3/fp8e5m2"), LayerSpecs: specs})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fp.Layout().Layers[1].KRowBytes, d; got != want {
		t.Errorf("calibrated key rows of %d bytes, want %d", got, want)
	}
	fid, _ := fp.NewSeq()
	_ = fp.Grow(fid, make([]int32, n))
	for l := range layers {
		if err := fp.Append(l, fid, rows[l][0], rows[l][1]); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]float32, d)
	for l := range layers {
		for p := range n {
			for h := range kvh {
				for side, rel := range []float64{1.0 / 16, 1.0 / 8} {
					read := fp.ReadKey
					if side == 1 {
						read = fp.ReadValue
					}
					if err := read(fid, l, p, h, got); err != nil {
						t.Fatal(err)
					}
					src := rows[l][side][(p*kvh+h)*d:][:d]
					sc := float64(specs[l].K.Scale)
					if side == 1 {
						sc = float64(specs[l].V.Scale)
					}
					for i, x := range src {
						if e := math.Abs(float64(got[i] - x)); e > rel*math.Abs(float64(x))+sc/512 {
							t.Fatalf("layer %d pos %d head %d side %d: %v read back as %v", l, p, h, side, x, got[i])
						}
					}
				}
			}
		}
	}
	if _, err := FP8Scale(TypeQ8, 1); err == nil {
		t.Error("FP8Scale of q8: no error")
	}
	if _, err := FP8Scale(TypeFP8E4M3, 0); err == nil {
		t.Error("FP8Scale of 0: no error")
	}
}
