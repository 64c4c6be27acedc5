// Package reference holds the figures that independent implementations computed for
// the built-in model (stories260K.json: greedy continuations, top-5 logits, tokenizer
// cases, the perplexity protocol's figures and codec simulations), for the tests of
// tokenizer, model and eval to reproduce.
package reference

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed stories260K.json
var stories260K []byte

// Stories260K is the part of stories260K.json the tests use.
type Stories260K struct {
	Greedy []struct {
		Prompt       string  `json:"prompt"`
		PromptTokens []int32 `json:"prompt_tokens"`
		Tokens       []int32 `json:"tokens"`
		Text         string  `json:"text"`
	} `json:"greedy"`
	Logits struct {
		Tokens []int32 `json:"tokens"`
		Top5   []struct {
			Pos  int          `json:"pos"`
			Top5 [][2]float64 `json:"top5"` // (token id, logit), best first
		} `json:"logits_top5"`
	} `json:"logits"`
	Perplexity struct {
		Ctx         int     `json:"ctx"`
		Chunks      int     `json:"chunks"`
		F32         float64 `json:"f32"`
		FirstTokens []int32 `json:"first_16_text_tokens"`
	} `json:"perplexity"`
	Tokenizer struct {
		Cases []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		} `json:"cases"`
	} `json:"tokenizer"`
}

// Load parses the embedded stories260K.json and checks that every section is present.
func Load() (*Stories260K, error) {
	var r Stories260K
	if err := json.Unmarshal(stories260K, &r); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if len(r.Greedy) == 0 || len(r.Logits.Top5) == 0 || r.Perplexity.F32 == 0 || len(r.Perplexity.FirstTokens) == 0 || len(r.Tokenizer.Cases) == 0 {
		return nil, fmt.Errorf("reference: stories260K.json lacks a section")
	}
	return &r, nil
}
