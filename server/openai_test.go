package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

func openaiClient(e *testEnv, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.ts.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithHTTPClient(e.ts.Client()))
}

// The official client streams a completion and a chat completion and gets the same
// greedy text as model.Generate with an f32 cache.
func TestOpenAIClientStreams(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{APIKey: "k"}})
	client := openaiClient(e, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("completion", func(t *testing.T) {
		const prompt = "Once upon a time"
		want := greedy(t, e.m.Tok.Encode(prompt, true), 40)
		stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
			Model:       "default",
			Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens:   openai.Int(40),
			Temperature: openai.Float(0),
		})
		var text strings.Builder
		finish, chunks := "", 0
		for stream.Next() {
			c := stream.Current()
			chunks++
			for _, ch := range c.Choices {
				text.WriteString(ch.Text)
				if ch.FinishReason != "" {
					finish = string(ch.FinishReason)
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if text.String() != want {
			t.Fatalf("streamed %q\nwant     %q", text.String(), want)
		}
		if finish != "length" || chunks < 10 {
			t.Errorf("finish %q after %d chunks", finish, chunks)
		}
	})

	t.Run("chat", func(t *testing.T) {
		want := greedy(t, e.m.Tok.Encode("user: Tom had a dog.\nassistant:", true), 32)
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "stories260K",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tom had a dog.")},
			MaxTokens:     openai.Int(32),
			Temperature:   openai.Float(0),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if len(acc.Choices) != 1 {
			t.Fatalf("%d choices", len(acc.Choices))
		}
		if got := acc.Choices[0].Message.Content; got != want {
			t.Fatalf("streamed %q\nwant     %q", got, want)
		}
		if acc.Choices[0].FinishReason != "length" || acc.Usage.CompletionTokens != 32 || acc.Usage.PromptTokens == 0 {
			t.Errorf("finish %q, usage %+v", acc.Choices[0].FinishReason, acc.Usage)
		}
	})

	t.Run("chat whole", func(t *testing.T) {
		want := greedy(t, e.m.Tok.Encode("user: Tom had a dog.\nassistant:", true), 20)
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:       "default",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tom had a dog.")},
			MaxTokens:   openai.Int(20),
			Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) != 1 || res.Choices[0].Message.Content != want || res.Usage.CompletionTokens != 20 {
			t.Fatalf("response %+v, want %q", res, want)
		}
	})

	t.Run("error", func(t *testing.T) {
		_, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:     "gpt-4o",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")},
			MaxTokens: openai.Int(4),
		})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %v, want an API error", err)
		}
		if apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "model" || apiErr.Type != "invalid_request_error" {
			t.Errorf("status %d, param %q, type %q", apiErr.StatusCode, apiErr.Param, apiErr.Type)
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		bad := openaiClient(e, "nope")
		_, err := bad.Models.List(ctx)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("error %v, want 401", err)
		}
	})
}
