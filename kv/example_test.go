package kv_test

import (
	"errors"
	"fmt"
	"math"

	"kvq/kv"
)

// One sequence of a grouped-query model (8 query heads over 2 KV heads), one step of
// three tokens: Grow, then per layer Append and Attend.
func Example() {
	sp, _ := kv.ParseSpec("kivi4/kivi2")
	cfg := kv.Config{Layers: 2, Heads: 8, KVHeads: 2, HeadDim: 64, Spec: sp}
	st, _ := kv.New(cfg)
	id, _ := st.NewSeq()
	_ = st.Grow(id, []int32{1, 2, 3})
	k := make([]float32, 3*2*64) // 3 tokens × 2 KV heads × 64
	q := make([]float32, 3*8*64) // 3 tokens × 8 query heads × 64
	out := make([]float32, len(q))
	for l := range 2 {
		_ = st.Append(l, id, k, k)
		_ = st.Attend(l, id, q, out)
	}
	bpt, _ := kv.BytesPerToken(cfg)
	comp, _ := kv.CompressionVsF16(cfg)
	fmt.Printf("len %d, %.0f bytes/token, %.2fx smaller than f16, block %d tokens\n", st.Len(id), bpt, comp, st.Config().BlockTokens)
	// Output: len 3, 256 bytes/token, 4.00x smaller than f16, block 16 tokens
}

// Reading back what the cache holds: a q8 key comes back dequantized, close to what
// was appended but not equal to it.
func ExampleStore_ReadKey() {
	st, _ := kv.New(kv.Config{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 4, Spec: kv.MustParseSpec("q8")})
	id, _ := st.NewSeq()
	_ = st.Grow(id, []int32{42})
	k := []float32{0.5, -1, 0.25, 2}
	_ = st.Append(0, id, k, k)
	got := make([]float32, 4)
	_ = st.ReadKey(id, 0, 0, 0, got) // layer 0, position 0, KV head 0
	fmt.Printf("%.4f\n", got)
	lay := st.Layout()
	fmt.Printf("key rows of %d bytes (%s), %d bytes per block of %d tokens\n",
		lay.Layers[0].KRowBytes, lay.Layers[0].KRow.Name(), lay.BlockBytes, lay.BlockTokens)
	// Output:
	// [0.5044 -0.9930 0.2522 2.0018]
	// key rows of 6 bytes (q8), 192 bytes per block of 16 tokens
}

// Rows that have no token ids (an image's embeddings, rows from another engine)
// are grown with GrowWithoutTokens: they are attended as usual but never shared
// through the prefix cache.
func ExampleStore_GrowWithoutTokens() {
	st, _ := kv.New(kv.Config{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 4, Spec: kv.MustParseSpec("f16"), BlockTokens: 2})
	id, _ := st.NewSeq()
	_ = st.GrowWithoutTokens(id, 4)
	rows := make([]float32, 4*4)
	_ = st.Append(0, id, rows, rows)
	_ = st.Attend(0, id, rows, make([]float32, len(rows)))
	toks, _ := st.Tokens(id)
	_, cached, _ := st.NewSeqWithPrefix([]int32{kv.OpaqueToken, kv.OpaqueToken, kv.OpaqueToken, kv.OpaqueToken})
	fmt.Println(toks, cached)
	// Output: [-1 -1 -1 -1] 0
}

// A NaN or an infinity is refused before anything is written; the layer can be
// appended again.
func ExampleErrNonFinite() {
	st, _ := kv.New(kv.Config{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 2, Spec: kv.MustParseSpec("q8")})
	id, _ := st.NewSeq()
	_ = st.Grow(id, []int32{1})
	err := st.Append(0, id, []float32{1, float32(math.NaN())}, []float32{1, 2})
	fmt.Println(errors.Is(err, kv.ErrNonFinite))
	fmt.Println(err)
	fmt.Println(st.Append(0, id, []float32{1, 0}, []float32{1, 2}))
	// Output:
	// true
	// kv: append sequence 0 layer 0: key or value is NaN or infinite: key of position 0, head 0, element 1 is NaN
	// <nil>
}

// Spec strings: one type for keys and values, or KTYPE/VTYPE, with parameters.
func ExampleParseSpec() {
	for _, s := range []string{"q8", "kivi4/kivi2:r=64", "fp8e4m3:s=0.0125", "q4:g=64,sinks=4"} {
		sp, err := kv.ParseSpec(s)
		fmt.Printf("%-18s → K %v g=%d, V %v, sinks %d, canonical %q, err %v\n", s, sp.K.Type, sp.K.G, sp.V.Type, sp.Sinks, sp.String(), err)
	}
	fmt.Println(kv.Part{Type: kv.TypeQ4}.String())
	// Output:
	// q8                 → K q8 g=0, V q8, sinks 0, canonical "q8", err <nil>
	// kivi4/kivi2:r=64   → K kivi4 g=32, V kivi2, sinks 0, canonical "kivi4/kivi2:r=64", err <nil>
	// fp8e4m3:s=0.0125   → K fp8e4m3 g=0, V fp8e4m3, sinks 0, canonical "fp8e4m3:s=0.0125", err <nil>
	// q4:g=64,sinks=4    → K q4 g=64, V q4, sinks 4, canonical "q4:g=64,sinks=4", err <nil>
	// q4
}

// Per-layer FP8 scales from a calibration run: wrap the run's cache in a
// Calibrator, append through it, then build the FP8 cache with its LayerSpecs.
func ExampleCalibrator() {
	cfg := kv.Config{Layers: 2, Heads: 1, KVHeads: 1, HeadDim: 4, Spec: kv.MustParseSpec("f32")}
	st, _ := kv.New(cfg)
	cal := kv.NewCalibrator(st, cfg.Layers)
	id, _ := cal.NewSeq()
	_ = cal.Grow(id, []int32{1})
	for l := range cfg.Layers {
		k := []float32{0.5, -44.8 * float32(l+1), 1, 2} // largest |key|: 44.8, then 89.6
		v := []float32{0.1, 0.2, -4.48, 0}
		_ = cal.Append(l, id, k, v)
		_ = cal.Attend(l, id, make([]float32, 4), make([]float32, 4))
	}
	specs, _ := cal.LayerSpecs(kv.TypeFP8E4M3, kv.TypeFP8E4M3, 0)
	fmt.Println(kv.FormatLayerOverrides(specs))
	cfg.Spec, cfg.LayerSpecs = kv.MustParseSpec("fp8e4m3"), specs
	fp8, _ := kv.New(cfg)
	fmt.Println(fp8.Layout().Layers[0].KRowBytes, "bytes per key row of 4 values")
	// Output:
	// 0=fp8e4m3:s=0.1/fp8e4m3:s=0.01;1=fp8e4m3:s=0.2/fp8e4m3:s=0.01
	// 4 bytes per key row of 4 values
}
