package server

import (
	"sync"

	"kvq/engine"
	"kvq/grammar"
	"kvq/tokenizer"
)

// JSON mode (response_format json_object or json_schema): sampling is constrained
// by grammar.JSONObject or grammar.SchemaObject over the model's vocabulary, so
// every answer is one JSON object (that the schema accepts), completed within
// max_tokens.

type jsonVocab struct {
	once sync.Once
	v    *grammar.Vocab
	err  error
}

// jsonVocabs holds one grammar vocabulary per tokenizer, built on first use.
var jsonVocabs sync.Map // *tokenizer.Tokenizer → *jsonVocab

// grammarVocab returns the grammar vocabulary of tok, built on first use.
func grammarVocab(tok *tokenizer.Tokenizer) (*grammar.Vocab, error) {
	e, _ := jsonVocabs.LoadOrStore(tok, &jsonVocab{})
	jv := e.(*jsonVocab)
	jv.once.Do(func() {
		pieces := make([]string, tok.VocabSize())
		for i := range pieces {
			pieces[i] = tok.Piece(int32(i))
		}
		jv.v, jv.err = grammar.NewVocab(pieces, tok.IsEOG)
	})
	return jv.v, jv.err
}

// jsonConstraint returns the constraint factory of JSON mode for tok and the
// fewest tokens an answer may need, or the reason the vocabulary cannot support it.
func jsonConstraint(tok *tokenizer.Tokenizer) (func() engine.Constraint, int, error) {
	v, err := grammarVocab(tok)
	if err != nil {
		return nil, 0, err
	}
	return func() engine.Constraint { return v.JSONObject() }, v.JSONObject().MinTokens(), nil
}

// schemaConstraint compiles a JSON schema into a constraint factory for tok and
// the fewest tokens an answer may need.
func schemaConstraint(tok *tokenizer.Tokenizer, schema []byte) (func() engine.Constraint, int, error) {
	v, err := grammarVocab(tok)
	if err != nil {
		return nil, 0, err
	}
	s, err := grammar.CompileSchema(schema)
	if err != nil {
		return nil, 0, err
	}
	c, err := v.JSONSchema(s)
	if err != nil {
		return nil, 0, err
	}
	return func() engine.Constraint {
		c, _ := v.JSONSchema(s) // checked above
		return c
	}, c.MinTokens(), nil
}
