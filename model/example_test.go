package model_test

import (
	"fmt"
	"log"

	"kvq/kv"
	"kvq/model"
)

// Generate greedily from the built-in stories260K model with an 8-bit KV cache: the
// library's shortest path from a prompt to text. model.Open(path) loads a GGUF file
// instead; CacheConfig takes any cache spec (kvq eval compares them).
func Example() {
	m, err := model.Open("") // "": the built-in model
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	cfg, err := m.CacheConfig("q8", "") // the cache spec, and per-layer overrides
	if err != nil {
		log.Fatal(err)
	}
	c, err := kv.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	seq, err := c.NewSeq()
	if err != nil {
		log.Fatal(err)
	}
	prompt := m.Tok.Encode("Once upon a time", true)
	greedy := model.NewSampler(model.SamplerConfig{Temp: 0})
	out, err := m.Generate(c, seq, prompt, 12, greedy, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", m.Tok.Decode(out))
	u := c.Usage()
	fmt.Printf("%d tokens cached in %.0f bytes each\n", c.Len(seq), u.BytesPerToken)
	// Output:
	// ", there was a little girl named Lily. She"
	// 16 tokens cached in 400 bytes each
}
