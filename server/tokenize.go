package server

import (
	"log/slog"
	"net/http"
	"unicode/utf8"

	"kvq/model"
)

// /tokenize and /detokenize, in the shapes of llama-server (content, add_special,
// with_pieces → tokens; tokens → content) and of vLLM (prompt, add_special_tokens
// → tokens, count, max_model_len; tokens → prompt): either set of field names is
// accepted, and the answers carry the fields of both.

var (
	tokenizeFields   = fields("model content prompt add_special add_special_tokens with_pieces parse_special")
	detokenizeFields = fields("model tokens")
)

type tokenizeRequest struct {
	Model            *string `json:"model"`
	Content          *string `json:"content"`
	Prompt           *string `json:"prompt"`
	AddSpecial       *bool   `json:"add_special"`
	AddSpecialTokens *bool   `json:"add_special_tokens"`
	WithPieces       bool    `json:"with_pieces"`
	ParseSpecial     *bool   `json:"parse_special"`
}

type tokenPiece struct {
	ID    int32 `json:"id"`
	Piece any   `json:"piece"` // a string, or its bytes when they are not valid UTF-8 (llama-server)
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	m, release := s.readTokenizer(w, r, &req, &req.Model, tokenizeFields)
	defer release()
	if m == nil {
		return
	}
	text, param := req.Content, "content"
	if text == nil {
		text, param = req.Prompt, "prompt"
	}
	if text == nil {
		s.reject(w, r, invalid("content", "content (or prompt) is required"))
		return
	}
	if req.Content != nil && req.Prompt != nil {
		s.reject(w, r, invalid(param, "give content or prompt, not both"))
		return
	}
	// llama-server adds no BOS unless asked; vLLM adds it unless told not to.
	bos := false
	if req.Prompt != nil {
		bos = true
	}
	for _, b := range []*bool{req.AddSpecial, req.AddSpecialTokens} {
		if b != nil {
			bos = *b
		}
	}
	bos = bos && m.Tok.AddBOS()
	var ids []int32
	if req.ParseSpecial != nil && !*req.ParseSpecial {
		ids = m.Tok.Encode(*text, bos)
	} else {
		ids = m.Tok.EncodeSpecial(*text, bos)
	}
	var toks any = ids
	if req.WithPieces {
		ps := make([]tokenPiece, len(ids))
		for i, id := range ids {
			p := m.Tok.Piece(id)
			if utf8.ValidString(p) {
				ps[i] = tokenPiece{ID: id, Piece: p}
			} else {
				ps[i] = tokenPiece{ID: id, Piece: byteList(p)}
			}
		}
		toks = ps
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": toks, "count": len(ids), "max_model_len": m.Ctx})
}

type detokenizeRequest struct {
	Model  *string `json:"model"`
	Tokens []int64 `json:"tokens"`
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	m, release := s.readTokenizer(w, r, &req, &req.Model, detokenizeFields)
	defer release()
	if m == nil {
		return
	}
	if req.Tokens == nil {
		s.reject(w, r, invalid("tokens", "tokens is required"))
		return
	}
	ids := make([]int32, len(req.Tokens))
	for i, t := range req.Tokens {
		if t < 0 || t >= int64(m.Vocab) {
			s.reject(w, r, invalid("tokens", "token %d is %d, outside the vocabulary of %d tokens", i, t, m.Vocab))
			return
		}
		ids[i] = int32(t)
	}
	text := m.Tok.Decode(ids)
	writeJSON(w, http.StatusOK, map[string]any{"content": text, "prompt": text})
}

// readTokenizer reads the body of a /tokenize or /detokenize request into req
// (whose model field is name), checking its fields and model; a nil model when it
// has answered an error. Tokenizing a large body is parsing work: the caller runs
// it under the parsing gates, until it calls release.
func (s *Server) readTokenizer(w http.ResponseWriter, r *http.Request, req any, name **string, accept fieldSet) (m *model.Model, release func()) {
	_, m, names := s.engine()
	if m == nil {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", message: "the model is not loaded"})
		return nil, func() {}
	}
	body, release, aerr := s.gates.readBody(w, r, s.opts.MaxBodyBytes, s.opts.ReadBodyTimeout)
	if aerr == nil {
		aerr = decodeBody(body, req, accept)
	}
	if aerr == nil {
		aerr = checkModel(*name, names)
	}
	if aerr != nil {
		if aerr.status != 499 {
			s.reject(w, r, aerr)
		}
		return nil, release
	}
	return m, release
}

// reject answers a request error and logs its message with the request.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, aerr *apiError) {
	logRejection(r, aerr)
	writeError(w, aerr)
}

// logRejection adds an error's message and field to the request's log line.
func logRejection(r *http.Request, aerr *apiError) {
	addLog(r, slog.String("error", aerr.message))
	if aerr.param != "" {
		addLog(r, slog.String("param", aerr.param))
	}
}
