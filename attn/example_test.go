package attn_test

import (
	"fmt"

	"kvq/attn"
)

// Decode attention of two query heads over one KV head of two f32 tokens: head 0's
// query points at token 0 and takes its value; head 1's is zero and averages both.
func ExampleDecode() {
	// One KV head of size 2, two query heads, two tokens stored as f32.
	sh := attn.Shape{Heads: 2, KVHeads: 1, HeadDim: 2}
	keys := []float32{1, 0, 0, 1}   // token 0, token 1
	vals := []float32{10, 0, 0, 10} // token 0, token 1
	span := attn.Span{N: 2,
		K: attn.Src{Kind: attn.F32, F: keys, Stride: 2},
		V: attn.Src{Kind: attn.F32, F: vals, Stride: 2}}
	q := []float32{100, 0, 0, 0} // head 0 looks at token 0; head 1 is uniform
	out := make([]float32, 4)
	if err := attn.Decode(out, q, sh, []attn.Span{span}, attn.Options{}, nil); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("%.2f\n", out)
	// Output: [10.00 0.00 5.00 5.00]
}
