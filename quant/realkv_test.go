package quant

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// Real K/V rows for measurements: testdata/stories260K_kv.f16 holds the keys (after
// RoPE) and values of all 5 layers of the stories260K model (llama2.c TinyStories,
// dim 64, 4 KV heads of head size 8, so a K or V row of one token is 32 values) for
// the 69 tokens of the first greedy sequence of /work/shared/reference/stories260K.json
// (prompt "Once upon a time" and its continuation). Layout: little-endian f16,
// [layer][token][K row (32) then V row (32)]. TestGenerateStoriesKV regenerates it
// (KVQ_GEN_KV=1) with a float64 forward pass that first reproduces the reference
// logits.
const (
	kvLayers, kvTokens, kvDim = 5, 69, 32
	kvFile                    = "testdata/stories260K_kv.f16"
)

// loadStoriesKV returns the keys and values as layers × tokens × kvDim.
func loadStoriesKV(t *testing.T) (k, v [][]float32) {
	t.Helper()
	b, err := os.ReadFile(kvFile)
	if err != nil {
		t.Fatalf("reading real K/V rows: %v", err)
	}
	if want := kvLayers * kvTokens * 2 * kvDim * 2; len(b) != want {
		t.Fatalf("%s: %d bytes, want %d", kvFile, len(b), want)
	}
	for l := range kvLayers {
		var kl, vl []float32
		for tok := range kvTokens {
			for i := range 2 * kvDim {
				off := 2 * (((l*kvTokens + tok) * 2 * kvDim) + i)
				x := F16ToF32(binary.LittleEndian.Uint16(b[off:]))
				if i < kvDim {
					kl = append(kl, x)
				} else {
					vl = append(vl, x)
				}
			}
		}
		k, v = append(k, kl), append(v, vl)
	}
	return k, v
}

// TestRealKV measures, on real keys and values, f16 against f32 parameters and
// per-channel against per-token key quantization.
func TestRealKV(t *testing.T) {
	k, v := loadStoriesKV(t)
	var kAll, vAll []float32
	for l := range kvLayers {
		kAll, vAll = append(kAll, k[l]...), append(vAll, v[l]...)
	}
	rows := len(kAll) / kvDim
	for _, data := range []struct {
		name string
		x    []float32
	}{{"keys", kAll}, {"values", vAll}} {
		for _, bits := range []int{8, 4, 2} {
			c := Affine{Bits: bits, Group: 32}
			got, ref := make([]float32, len(data.x)), make([]float32, len(data.x))
			enc := make([]byte, c.RowBytes(kvDim))
			for i := range rows {
				row := data.x[i*kvDim : (i+1)*kvDim]
				c.Encode(enc, row)
				c.Decode(got[i*kvDim:(i+1)*kvDim], enc)
				affineF32(ref[i*kvDim:(i+1)*kvDim], row, bits, 32)
			}
			e16, e32 := rmse32(got, data.x), rmse32(ref, data.x)
			t.Logf("stories260K %-6s %-8s f16 params RMSE %.5g (%d B/row)  f32 params RMSE %.5g (%d B/row)  error ×%.4f",
				data.name, c.Name(), e16, c.RowBytes(kvDim), e32, c.RowBytes(kvDim)+4, e16/e32)
			if e16 > 1.01*e32 {
				t.Errorf("%s %s: f16 parameters RMSE %.5g more than 1%% above f32 %.5g", data.name, c.Name(), e16, e32)
			}
		}
	}
	// KIVI: keys per channel over blocks of 32 tokens against per token, layer by layer.
	for _, bits := range []int{4, 2} {
		var eTok, eCh float64
		for l := range kvLayers {
			const blk = 32
			for start := 0; start+blk <= kvTokens; start += blk {
				src := k[l][start*kvDim : (start+blk)*kvDim]
				ch := Channel{Bits: bits}
				enc := make([]byte, ch.BlockBytes(blk, kvDim))
				ch.Encode(enc, src, blk, kvDim)
				dec := make([]float32, len(src))
				ch.Decode(dec, enc, blk, kvDim)
				eCh += sq(rmse32(dec, src))
				tok := Affine{Bits: bits, Group: 8} // per token and KV head (head size 8)
				row := make([]byte, tok.RowBytes(kvDim))
				for i := range blk {
					tok.Encode(row, src[i*kvDim:(i+1)*kvDim])
					tok.Decode(dec[i*kvDim:(i+1)*kvDim], row)
				}
				eTok += sq(rmse32(dec, src))
			}
		}
		t.Logf("stories260K keys %d bits: per-channel (kivi%d) RMSE %.4g, per-token-head RMSE %.4g", bits, bits, math.Sqrt(eCh), math.Sqrt(eTok))
		if eCh >= eTok {
			t.Errorf("%d bits: per-channel key error %.4g not below per-token %.4g", bits, math.Sqrt(eCh), math.Sqrt(eTok))
		}
	}
}
