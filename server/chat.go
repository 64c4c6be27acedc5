package server

import (
	"fmt"
	"strings"

	"kvq/assets"
	"kvq/gguf"
)

// KeyChatTemplate is the GGUF metadata key of a model's Jinja chat template.
const KeyChatTemplate = "tokenizer.chat_template"

// ChatFormat is a family of chat prompt layouts.
type ChatFormat int

// Chat formats. kvq does not run Jinja: it recognises the common template families
// by their markers and renders them with Go code.
const (
	// ChatPlain is the fallback for models without a recognised template: one line
	// "<role>: <content>\n" per message, then "assistant:" for the reply.
	ChatPlain ChatFormat = iota
	// ChatML: "<|im_start|>role\ncontent<|im_end|>\n" per message, then
	// "<|im_start|>assistant\n" (Qwen, many fine-tunes).
	ChatML
	// ChatLlama2: "[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant </s><s>[INST] ..."
	// (Llama 2 chat, Mistral instruct).
	ChatLlama2
	// ChatLlama3: "<|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>" per
	// message, then the assistant header.
	ChatLlama3
)

func (f ChatFormat) String() string {
	switch f {
	case ChatML:
		return "chatml"
	case ChatLlama2:
		return "llama2"
	case ChatLlama3:
		return "llama3"
	}
	return "plain"
}

// DetectChatFormat recognises the family of a Jinja chat template by its markers.
// An empty or unrecognised template gives ChatPlain.
func DetectChatFormat(template string) ChatFormat {
	switch {
	case strings.Contains(template, "<|im_start|>"):
		return ChatML
	case strings.Contains(template, "<|start_header_id|>"):
		return ChatLlama3
	case strings.Contains(template, "[INST]"):
		return ChatLlama2
	}
	return ChatPlain
}

// ReadChatTemplate returns the chat template stored in the GGUF metadata of the
// model file at path ("" for the built-in model), or "" when it has none.
func ReadChatTemplate(path string) (string, error) {
	var (
		f   *gguf.File
		err error
	)
	if path == "" {
		f, err = gguf.Parse(assets.Model)
	} else {
		f, err = gguf.Open(path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the chat template: %w", err)
	}
	defer f.Close()
	if v, ok := f.Value(KeyChatTemplate); ok {
		s, ok := f.String(KeyChatTemplate)
		if !ok {
			return "", fmt.Errorf("reading the chat template: %s is %v, not a string", KeyChatTemplate, v)
		}
		return s, nil
	}
	return "", nil
}

// message is one validated chat turn.
type message struct {
	role, content string
}

// renderChat lays out messages in format f, ending with the opening of the
// assistant's reply. The text may contain control-token text (e.g. "<|im_end|>")
// and must be tokenized with EncodeSpecial; BOS is left to the tokenizer.
func renderChat(f ChatFormat, msgs []message) string {
	var b strings.Builder
	switch f {
	case ChatML:
		for _, m := range msgs {
			fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.role, m.content)
		}
		b.WriteString("<|im_start|>assistant\n")
	case ChatLlama3:
		for _, m := range msgs {
			fmt.Fprintf(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", m.role, strings.TrimSpace(m.content))
		}
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	case ChatLlama2:
		// The system prompt goes inside the first [INST]; each user turn opens an
		// [INST] block, each assistant turn closes the exchange with </s>.
		sys := ""
		first := true
		for _, m := range msgs {
			switch m.role {
			case "system":
				sys += strings.TrimSpace(m.content)
			case "assistant":
				fmt.Fprintf(&b, " %s </s>", strings.TrimSpace(m.content))
			default:
				if !first {
					b.WriteString("<s>")
				}
				first = false
				b.WriteString("[INST] ")
				if sys != "" {
					fmt.Fprintf(&b, "<<SYS>>\n%s\n<</SYS>>\n\n", sys)
					sys = ""
				}
				fmt.Fprintf(&b, "%s [/INST]", strings.TrimSpace(m.content))
			}
		}
	default:
		for _, m := range msgs {
			fmt.Fprintf(&b, "%s: %s\n", m.role, m.content)
		}
		b.WriteString("assistant:")
	}
	return b.String()
}
