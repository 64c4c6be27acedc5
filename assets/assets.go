// Package assets holds the built-in default model and evaluation text, embedded in
// the binary so that kvq works after `go install` from any directory.
// See PROVENANCE.md for their origin and licences.
package assets

import _ "embed"

// ModelName is the name under which the built-in model is served and reported.
const ModelName = "stories260K"

// Model is the built-in GGUF model (stories260K, ~1 MB, all F32).
//
//go:embed stories260K.gguf
var Model []byte

// ModelLicense is the built-in model's licence notice (MIT, from llama2.c), which
// copies of the model, this binary among them, carry.
//
//go:embed LICENSE.stories260K
var ModelLicense string

// Text is the head of the TinyStories validation split used by `kvq eval`.
//
//go:embed tinystories-valid-head.txt
var Text string

// LlamaVocab is the 32,000-piece LLaMA SentencePiece vocabulary as a tensor-less GGUF
// (llama.cpp's models/ggml-vocab-llama-spm.gguf): the tokenizer of synthetic models and a
// real vocabulary for tokenizer tests.
//
//go:embed ggml-vocab-llama-spm.gguf
var LlamaVocab []byte

// LlamaVocabLicense is the vocabulary's licence notice (MIT, from llama.cpp), which
// copies of the vocabulary, this binary among them, carry.
//
//go:embed LICENSE.ggml-vocab-llama-spm
var LlamaVocabLicense string
