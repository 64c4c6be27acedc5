package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pre-tokenizers of byte-level BPE vocabularies, by their tokenizer.ggml.pre names. Each
// is a regular expression that llama.cpp and Hugging Face tokenizers apply with a
// backtracking engine; the match functions below implement them by hand (Go's regexp
// has no lookahead) with the same leftmost-first alternation. In all of them \s is
// Unicode white space (unicode.IsSpace), \p{L} letters and \p{N} numbers; an invalid
// UTF-8 byte counts as one character of none of these classes (as U+FFFD would).
//
// GPT-2 ("", "default", "gpt2"):
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Llama 3 ("llama-bpe", "llama3"; whole words that are pieces skip the merges):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Qwen2 ("qwen2"): as Llama 3 with \p{N} for \p{N}{1,3}, and merges always applied.
// The case-insensitive contractions fold ASCII case only.
type preTokenizer int

const (
	preGPT2 preTokenizer = iota
	preLlama3
	preQwen2
)

// preTokenizerByName maps tokenizer.ggml.pre values to pre-tokenizers.
var preTokenizerByName = map[string]preTokenizer{
	"":          preGPT2,
	"default":   preGPT2,
	"gpt2":      preGPT2,
	"gpt-2":     preGPT2,
	"llama-bpe": preLlama3,
	"llama3":    preLlama3,
	"qwen2":     preQwen2,
}

// parsePre resolves a pre-tokenizer name.
func parsePre(name string) (preTokenizer, error) {
	p, ok := preTokenizerByName[name]
	if !ok {
		return 0, fmt.Errorf("%w: pre-tokenizer %q is not supported (known: gpt2, default, llama-bpe, llama3, qwen2)", ErrInvalidVocab, name)
	}
	return p, nil
}

// split calls emit for each consecutive part of s that pre-tokenizer p matches. The
// parts concatenate to s.
func split(s string, p preTokenizer, emit func(string)) {
	for i := 0; i < len(s); {
		var j int
		switch p {
		case preLlama3:
			j = llama3Match(s, i, 3)
		case preQwen2:
			j = llama3Match(s, i, 1)
		default:
			j = gpt2Match(s, i)
		}
		emit(s[i:j])
		i = j
	}
}

// splitGPT2 splits s with the GPT-2 pre-tokenizer.
func splitGPT2(s string, emit func(string)) { split(s, preGPT2, emit) }

// char classes of the pre-tokenizer
const (
	clsOther = iota
	clsLetter
	clsNumber
	clsSpace
)

func classOf(r rune) int {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		return clsSpace
	}
	return clsOther
}

// runAt returns the end of the run of characters of class cls that starts at i.
func runAt(s string, i, cls int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if classOf(r) != cls {
			break
		}
		i += n
	}
	return i
}

// gpt2Match returns the end of the pre-tokenizer match that starts at i < len(s).
func gpt2Match(s string, i int) int {
	// 's|'t|'re|'ve|'m|'ll|'d
	if j := contraction(s, i, false); j >= 0 {
		return j
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	// ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
	start, cls := i, classOf(r)
	if r == ' ' && i+n < len(s) {
		r2, _ := utf8.DecodeRuneInString(s[i+n:])
		if c2 := classOf(r2); c2 != clsSpace {
			start, cls = i+n, c2
		}
	}
	if cls != clsSpace {
		return runAt(s, start, cls)
	}
	// '\s+(?!\S)': the longest white-space run not followed by a non-space, which is
	// the whole run at the end of s, else the run without its last character; when that
	// is empty, '\s+' takes the single character.
	end := runAt(s, i, clsSpace)
	if end == len(s) {
		return end
	}
	_, last := utf8.DecodeLastRuneInString(s[i:end])
	if end-last > i {
		return end - last
	}
	return end
}

// contraction returns the end of 's|'t|'re|'ve|'m|'ll|'d at i (ASCII case folded when
// fold is set), or -1.
func contraction(s string, i int, fold bool) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return -1
	}
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	c1 := lower(s[i+1])
	switch c1 {
	case 's', 't', 'm', 'd':
		return i + 2
	}
	if i+2 < len(s) {
		switch c2 := lower(s[i+2]); {
		case c1 == 'r' && c2 == 'e', c1 == 'v' && c2 == 'e', c1 == 'l' && c2 == 'l':
			return i + 3
		}
	}
	return -1
}

// isNewline reports whether r is \r or \n.
func isNewline(r rune) bool { return r == '\r' || r == '\n' }

// llama3Match returns the end of the Llama 3 / Qwen2 pre-tokenizer match that starts
// at i < len(s); maxDigits is 3 for Llama 3 and 1 for Qwen2.
func llama3Match(s string, i, maxDigits int) int {
	if j := contraction(s, i, true); j >= 0 {
		return j
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	cls := classOf(r)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if cls == clsLetter {
		return runAt(s, i, clsLetter)
	}
	if cls != clsNumber && !isNewline(r) && i+n < len(s) {
		if r2, _ := utf8.DecodeRuneInString(s[i+n:]); classOf(r2) == clsLetter {
			return runAt(s, i+n, clsLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if cls == clsNumber {
		j := i
		for k := 0; k < maxDigits && j < len(s); k++ {
			r, n := utf8.DecodeRuneInString(s[j:])
			if classOf(r) != clsNumber {
				break
			}
			j += n
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	start := i
	if r == ' ' && i+n < len(s) {
		if r2, _ := utf8.DecodeRuneInString(s[i+n:]); classOf(r2) == clsOther {
			start = i + n
		}
	}
	if start > i || cls == clsOther {
		j := runAt(s, start, clsOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// Here s[i] is white space. '\s*[\r\n]+': the white-space run up to and
	// including its last \r or \n, if it has one.
	end := runAt(s, i, clsSpace)
	if k := strings.LastIndexAny(s[i:end], "\r\n"); k >= 0 {
		return i + k + 1
	}
	// '\s+(?!\S)|\s+'
	if end == len(s) {
		return end
	}
	_, last := utf8.DecodeLastRuneInString(s[i:end])
	if end-last > i {
		return end - last
	}
	return end
}
