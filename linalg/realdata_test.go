package linalg

import (
	"fmt"
	"math"
	"testing"

	"kvq/assets"
	"kvq/gguf"
)

// TestMatMulRealWeights multiplies weights of the built-in stories260K model (F32 in the
// file; F16, BF16 and Q8_0 made with package gguf's own encoders, which match llama.cpp)
// against activations taken from its token embeddings, and checks every output against
// the float64 product of the decoded weights, with both kernel sets.
func TestMatMulRealWeights(t *testing.T) {
	f, err := gguf.Parse(assets.Model)
	if err != nil {
		t.Fatal(err)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("token_embd.weight missing")
	}
	embData, err := f.TensorData(emb)
	if err != nil {
		t.Fatal(err)
	}
	embVals := make([]float32, emb.Elems())
	if err := gguf.Dequantize(gguf.TypeF32, embVals, embData); err != nil {
		t.Fatal(err)
	}
	names := []string{"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.1.ffn_gate.weight",
		"blk.1.ffn_down.weight", "token_embd.weight"}
	for _, name := range names {
		ti, ok := f.Tensor(name)
		if !ok || len(ti.Dims) != 2 || ti.Type != gguf.TypeF32 {
			t.Fatalf("%s: missing or not a 2-D F32 tensor", name)
		}
		cols, rows := int(ti.Dims[0]), int(ti.Dims[1])
		raw, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float32, rows*cols)
		if err := gguf.Dequantize(gguf.TypeF32, vals, raw); err != nil {
			t.Fatal(err)
		}
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0} {
			if cols%typ.BlockElems() != 0 {
				continue
			}
			rb, _ := typ.RowBytes(cols)
			data := make([]byte, rows*rb)
			if err := gguf.Encode(typ, data, vals); err != nil {
				t.Fatalf("%s as %v: %v", name, typ, err)
			}
			wref32 := make([]float32, rows*cols)
			if err := gguf.Dequantize(typ, wref32, data); err != nil {
				t.Fatal(err)
			}
			wref := make([]float64, len(wref32))
			for i, v := range wref32 {
				wref[i] = float64(v)
			}
			w, err := NewMatrix(typ, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 6} {
				x := embVals[7*cols : 7*cols+n*cols] // n tokens of real activations
				ref, tol := refMatMul(wref, rows, cols, x, n, typ == gguf.TypeQ8_0)
				for _, k := range kernelModes(t) {
					t.Run(fmt.Sprintf("%s/%v/n=%d/%s", name, typ, n, k.name), func(t *testing.T) {
						withKernels(t, k)
						out := make([]float32, n*rows)
						if err := MatMul(out, w, x, n); err != nil {
							t.Fatal(err)
						}
						for i := range out {
							if d := math.Abs(float64(out[i]) - ref[i]); !(d <= tol[i]) {
								t.Fatalf("out[%d] = %v, want %v ± %.3g", i, out[i], ref[i], tol[i])
							}
						}
					})
				}
			}
		}
	}
}
