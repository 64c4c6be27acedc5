package engine_test

import (
	"context"
	"fmt"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

// Submit one request to an engine over the built-in model and a q8 cache, and wait
// for its tokens; requests submitted together are batched.
func ExampleEngine() {
	m, err := model.LoadDefault()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, _ := m.CacheConfig("q8", "")
	c, err := kv.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := engine.New(m, c, engine.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close(context.Background())
	s, err := e.Submit(context.Background(), engine.Request{Prompt: m.Tok.Encode("Once upon a time", true), MaxTokens: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := s.Wait()
	fmt.Printf("%q %v\n", m.Tok.Decode(res.Choices[0].Tokens), err)
	// Output: ", there was a little girl" <nil>
}
