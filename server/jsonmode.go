package server

import (
	"sync"

	"kvq/engine"
	"kvq/grammar"
	"kvq/tokenizer"
)

// JSON mode (response_format json_object): sampling is constrained by
// grammar.JSONObject over the model's vocabulary, so every answer is one JSON
// object, completed within max_tokens.

type jsonVocab struct {
	once sync.Once
	v    *grammar.Vocab
	err  error
}

// jsonVocabs holds one grammar vocabulary per tokenizer, built on first use.
var jsonVocabs sync.Map // *tokenizer.Tokenizer → *jsonVocab

// jsonConstraint returns the constraint factory of JSON mode for tok, or the
// reason the vocabulary cannot support it.
func jsonConstraint(tok *tokenizer.Tokenizer) (func() engine.Constraint, error) {
	e, _ := jsonVocabs.LoadOrStore(tok, &jsonVocab{})
	jv := e.(*jsonVocab)
	jv.once.Do(func() {
		pieces := make([]string, tok.VocabSize())
		for i := range pieces {
			pieces[i] = tok.Piece(int32(i))
		}
		jv.v, jv.err = grammar.NewVocab(pieces, tok.IsEOG)
	})
	if jv.err != nil {
		return nil, jv.err
	}
	return func() engine.Constraint { return jv.v.JSONObject() }, nil
}
