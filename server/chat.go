package server

import (
	"fmt"
	"strings"

	"kvq/assets"
	"kvq/gguf"
	"kvq/tokenizer"
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
	// ChatGemma: "<start_of_turn>role\ncontent<end_of_turn>\n" per message with the
	// roles user and model (assistant), a system message folded into the first user
	// turn, then "<start_of_turn>model\n" (Gemma 2, Gemma 3).
	ChatGemma
	// ChatPhi3: "<|role|>\ncontent<|end|>\n" per message, then "<|assistant|>\n"
	// (Phi-3, Phi-3.5).
	ChatPhi3
)

func (f ChatFormat) String() string {
	switch f {
	case ChatML:
		return "chatml"
	case ChatLlama2:
		return "llama2"
	case ChatLlama3:
		return "llama3"
	case ChatGemma:
		return "gemma"
	case ChatPhi3:
		return "phi3"
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
	case strings.Contains(template, "<start_of_turn>"):
		return ChatGemma
	case strings.Contains(template, "<|assistant|>") && strings.Contains(template, "<|end|>"):
		return ChatPhi3
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

// chatBuilder collects a rendered chat as tokenizer segments: the template's own
// text, in which control tokens count, and message content, in which they are plain
// text (a user cannot end a turn or open a system turn by typing "<|im_end|>").
type chatBuilder struct{ segs []tokenizer.Segment }

func (b *chatBuilder) add(text string, special bool) {
	if text == "" {
		return
	}
	if n := len(b.segs); n > 0 && b.segs[n-1].Special == special {
		b.segs[n-1].Text += text
		return
	}
	b.segs = append(b.segs, tokenizer.Segment{Text: text, Special: special})
}

// tmpl adds template text; content adds what a message says.
func (b *chatBuilder) tmpl(format string, args ...any) { b.add(fmt.Sprintf(format, args...), true) }
func (b *chatBuilder) content(text string)             { b.add(text, false) }

// renderChat lays out messages in format f, ending with the opening of the
// assistant's reply, as segments for Tokenizer.EncodeSegments: the template's text may
// hold control-token text (e.g. "<|im_end|>"), the messages' content is plain text.
// BOS is left to the tokenizer.
func renderChat(f ChatFormat, msgs []message) []tokenizer.Segment {
	var b chatBuilder
	switch f {
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
				b.tmpl(" ")
				b.content(strings.TrimSpace(m.content))
				b.tmpl(" </s>")
			default:
				if !first {
					b.tmpl("<s>")
				}
				first = false
				b.tmpl("[INST] ")
				if sys != "" {
					b.tmpl("<<SYS>>\n")
					b.content(sys)
					b.tmpl("\n<</SYS>>\n\n")
					sys = ""
				}
				b.content(strings.TrimSpace(m.content))
				b.tmpl(" [/INST]")
			}
		}
	case ChatGemma:
		// Gemma has no system role: the system text opens the first user turn.
		sys := ""
		for _, m := range msgs {
			switch m.role {
			case "system":
				sys += strings.TrimSpace(m.content) + "\n\n"
				continue
			case "assistant":
				m.role = "model"
			}
			if m.role == "user" && sys != "" {
				m.content, sys = sys+m.content, "" // the system text is content too
			}
			b.tmpl("<start_of_turn>%s\n", m.role)
			b.content(strings.TrimSpace(m.content))
			b.tmpl("<end_of_turn>\n")
		}
		b.tmpl("<start_of_turn>model\n")
	default:
		l, ok := turnLayouts[f]
		if !ok {
			l = turnLayouts[ChatPlain]
		}
		for _, m := range msgs {
			b.tmpl(l.open, m.role)
			if l.trim {
				m.content = strings.TrimSpace(m.content)
			}
			b.content(m.content)
			b.add(l.close, true)
		}
		b.add(l.reply, true)
	}
	return b.segs
}

// turnLayout is a format whose every turn is the same frame around its content:
// open (holding the role as %s), the content, close; reply opens the
// assistant's turn at the end of the prompt.
type turnLayout struct {
	open, close, reply string
	trim               bool // content is stripped of surrounding space
}

// turnLayouts holds the formats renderChat lays out by table; Llama 2 and Gemma
// move the system text and are laid out in code.
var turnLayouts = map[ChatFormat]turnLayout{
	ChatPlain: {open: "%s: ", close: "\n", reply: "assistant:"},
	ChatML:    {open: "<|im_start|>%s\n", close: "<|im_end|>\n", reply: "<|im_start|>assistant\n"},
	ChatLlama3: {open: "<|start_header_id|>%s<|end_header_id|>\n\n", close: "<|eot_id|>",
		reply: "<|start_header_id|>assistant<|end_header_id|>\n\n", trim: true},
	ChatPhi3: {open: "<|%s|>\n", close: "<|end|>\n", reply: "<|assistant|>\n"},
}
