package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
	"kvq/server"
)

// Serve the built-in model with a q8 cache of 16 MiB on a loopback port, ask for a
// greedy completion, and shut down.
func Example() {
	srv := server.New(server.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)

	m, err := model.Open("") // the built-in stories260K
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := m.CacheConfig("q8", "")
	if err != nil {
		log.Fatal(err)
	}
	cfg.BudgetBytes = 16 << 20
	c, err := kv.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(m, c, engine.Config{}); err != nil {
		log.Fatal(err)
	}

	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"default","prompt":"Once upon a time","max_tokens":12,"temperature":0}`))
	if err != nil {
		log.Fatal(err)
	}
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %s, %d+%d tokens\n", out.Choices[0].Text, out.Choices[0].FinishReason, out.Usage.PromptTokens, out.Usage.CompletionTokens)

	if err := srv.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ", there was a little girl named Lily. She" length, 5+12 tokens
}
