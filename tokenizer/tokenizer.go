// Package tokenizer converts text to token ids and back for the two tokenizer families
// that GGUF models name in tokenizer.ggml.model:
//
//   - "llama": SentencePiece-style BPE driven by piece scores, as llama.cpp's SPM
//     tokenizer. Spaces become ▁ (U+2581), a dummy leading space is added when
//     AddSpacePrefix is set, the text is split into UTF-8 characters, and the adjacent
//     pair whose concatenation is a vocabulary piece with the highest score is merged
//     repeatedly (ties: leftmost). Characters left without a piece fall back to one
//     <0xNN> token per byte, or to UNK.
//   - "gpt2": byte-level BPE driven by merge ranks, after a pre-tokenizer splits the
//     text into words (GPT-2's, Llama 3's or Qwen2's regular expression).
//
// Encode never fails: any byte string, including invalid UTF-8, has an encoding, and
// for vocabularies with byte tokens (every llama vocabulary with byte fallback, every
// gpt2 vocabulary) Decode(Encode(s, true)) restores s exactly (for a space-prefix
// vocabulary this needs its BOS; see Decode), with two exceptions: for
// "llama", a literal ▁ (U+2581) in the input comes back as a space, because
// SentencePiece uses that character to stand for the space; and with a space-prefix
// vocabulary, text that follows a user-defined token comes back with the dummy space
// Encode put in front of it (llama.cpp's behaviour).
//
// Encode treats its input as plain text, apart from user-defined tokens: the text "<s>"
// is three characters, never the BOS control token. EncodeSpecial also recognises
// control tokens, for prompts built from chat templates.
//
// In decoding, control tokens produce no text, byte tokens their byte, user-defined
// tokens their text verbatim (as in llama.cpp), the unknown token " ⁇ " (as in
// SentencePiece), and other pieces their text with ▁ read as a space ("llama") or mapped back
// from the byte-level alphabet ("gpt2").
//
// A Tokenizer is immutable after New and safe for concurrent use; a StreamDecoder is
// not.
package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Token types as GGUF stores them in tokenizer.ggml.token_type (llama.cpp's values).
const (
	TypeUndefined   int32 = 0
	TypeNormal      int32 = 1
	TypeUnknown     int32 = 2
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
	TypeByte        int32 = 6
)

// Model names accepted in Vocab.Model.
const (
	ModelLlama = "llama"
	ModelGPT2  = "gpt2"
)

// ErrInvalidVocab is returned (wrapped, with what was wrong) by New and FromGGUF for a
// vocabulary that cannot be used.
var ErrInvalidVocab = errors.New("tokenizer: invalid vocabulary")

// Vocab is a tokenizer's vocabulary as GGUF metadata describes it. Token ids are
// indices into Tokens.
type Vocab struct {
	// Model is "llama" (SentencePiece BPE by scores) or "gpt2" (byte-level BPE by merges).
	Model string
	// Tokens holds each token's piece. For "llama", ▁ (U+2581) stands for a space and
	// byte tokens are spelled <0xNN> (two upper-case hex digits). For "gpt2", pieces are
	// spelled in the GPT-2 byte-to-unicode alphabet.
	Tokens []string
	// Scores holds each token's merge priority for "llama" (higher merges first). It may
	// be nil (all zero); otherwise its length equals len(Tokens).
	Scores []float32
	// Types holds each token's type (TypeNormal, TypeControl, ...). It may be nil, in
	// which case BOS/EOS/PAD are control tokens, UNK is the unknown token and the rest
	// are normal; otherwise its length equals len(Tokens). For "llama", a normal,
	// undefined or unused piece spelled <0xNN> is taken as a byte token.
	Types []int32
	// Merges holds "left right" merge rules for "gpt2", highest priority first. Unused by
	// "llama".
	Merges []string
	// Pre names the pre-tokenizer of a "gpt2" vocabulary as tokenizer.ggml.pre does:
	// "" or "default" or "gpt2" (GPT-2's), "llama-bpe" or "llama3" (Llama 3's), "qwen2"
	// (Qwen2's). Unused by "llama".
	Pre string
	// BOS, EOS, UNK and PAD are token ids, or -1 if the vocabulary has none.
	BOS, EOS, UNK, PAD int32
	// EOG lists further ids that end a generation besides EOS (from
	// tokenizer.ggml.eot_token_id and eom_token_id). May be nil; see IsEOG.
	EOG []int32
	// AddBOS and AddEOS record whether the model expects BOS in front of / EOS after a
	// prompt. Encode does not consult them (its caller decides); see Tokenizer.AddBOS.
	AddBOS, AddEOS bool
	// AddSpacePrefix adds one space in front of the text before encoding, and makes
	// Decode drop the one leading space this produces. New takes the value as given;
	// FromGGUF defaults it to true for "llama" and false for "gpt2" when the GGUF file
	// does not say.
	AddSpacePrefix bool
}

// Tokenizer encodes text to token ids and decodes ids to text. Create it with New or
// FromGGUF.
type Tokenizer struct {
	model   string
	pieces  strTable // raw pieces, as in Vocab.Tokens
	scores  []float32
	types   []int32 // resolved: never TypeUndefined-by-absence
	bos     int32
	eos     int32
	unk     int32
	pad     int32
	addBOS  bool
	addEOS  bool
	prefix  bool
	lookup  strIndex   // mergeable piece → id (normal, user-defined, unused), over pieces
	byteTok [256]int32 // byte → its byte token, or -1
	text    strTable   // id → the text the token adds (control tokens: "")

	eog         map[int32]bool // ids that end a generation
	userDefined []special      // user-defined tokens, matched whole by Encode
	control     []special      // control tokens, matched whole by EncodeSpecial only

	// maxTokenBytes is the most bytes of input text one token stands for; 0 when
	// Encode may drop bytes (no UNK and no token for some byte). See MaxTokenBytes.
	maxTokenBytes int

	// llama only
	splitWords bool // no piece has ▁ after another character; see encodeSPM

	// gpt2 only
	merges       strTable // merge rules "left right", as in Vocab.Merges
	ranks        strIndex // merge rule → rank (lower merges first), over merges
	pre          preTokenizer
	ignoreMerges bool // a pre-tokenized word that is a piece is taken whole
}

// New validates v and builds a tokenizer from it; the tokenizer keeps no reference to
// v's slices. It returns an error wrapping
// ErrInvalidVocab when the model is unknown, the vocabulary is empty, Scores or Types
// have a length other than len(Tokens), a special id is out of range, or (gpt2) a merge
// rule is malformed or the pre-tokenizer unknown.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if v.Model != ModelLlama && v.Model != ModelGPT2 {
		return nil, fmt.Errorf("%w: unknown model %q (want %q or %q)", ErrInvalidVocab, v.Model, ModelLlama, ModelGPT2)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrInvalidVocab)
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("%w: %d tokens do not fit int32 ids", ErrInvalidVocab, n)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("%w: %d scores for %d tokens", ErrInvalidVocab, len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrInvalidVocab, len(v.Types), n)
	}
	for _, s := range []struct {
		name string
		id   int32
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"UNK", v.UNK}, {"PAD", v.PAD}} {
		if s.id < -1 || int(s.id) >= n {
			return nil, fmt.Errorf("%w: %s id %d out of range [-1, %d)", ErrInvalidVocab, s.name, s.id, n)
		}
	}
	for i, id := range v.EOG {
		if id < 0 || int(id) >= n {
			return nil, fmt.Errorf("%w: EOG[%d] id %d out of range [0, %d)", ErrInvalidVocab, i, id, n)
		}
	}
	pieces, err := newStrTable(v.Tokens)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{
		model:  v.Model,
		pieces: pieces,
		scores: slices.Clone(v.Scores),
		bos:    v.BOS,
		eos:    v.EOS,
		unk:    v.UNK,
		pad:    v.PAD,
		addBOS: v.AddBOS,
		addEOS: v.AddEOS,
		prefix: v.AddSpacePrefix,
		lookup: newStrIndex(n),
		eog:    make(map[int32]bool),
		types:  make([]int32, n),
	}
	text := make([]string, n) // becomes t.text
	if t.scores == nil {
		t.scores = make([]float32, n)
	}
	for i := range t.byteTok {
		t.byteTok[i] = -1
	}
	inner := false // an indexed piece has ▁ after another character (splitWords)
	for i, p := range v.Tokens {
		id := int32(i)
		typ := TypeNormal
		if v.Types != nil {
			typ = v.Types[i]
		} else {
			switch {
			case id == v.BOS || id == v.EOS || id == v.PAD:
				typ = TypeControl
			case id == v.UNK:
				typ = TypeUnknown
			}
		}
		// A llama piece spelled <0xNN> is a byte token even where a converter recorded
		// it as normal (llama.cpp and llama2.c find byte tokens by their spelling).
		if v.Model == ModelLlama && (typ == TypeNormal || typ == TypeUndefined || typ == TypeUnused) && isBytePiece(p) {
			typ = TypeByte
		}
		t.types[i] = typ
		switch typ {
		case TypeControl:
			// No text; produced from text only by EncodeSpecial.
			if p != "" {
				t.control = append(t.control, special{p, id})
			}
			if eogPieces[p] {
				t.eog[id] = true
			}
		case TypeUserDefined:
			// Matched whole in any text, and decoded verbatim.
			if p != "" {
				t.userDefined = append(t.userDefined, special{p, id})
				t.lookup.add(&t.pieces, id)
				inner = inner || innerSpaceMark(p)
			}
			text[i] = p
		case TypeUnknown:
			text[i] = unknownText
		case TypeByte:
			if b, ok := parseBytePiece(p); ok {
				if t.byteTok[b] < 0 {
					t.byteTok[b] = id
				}
				text[i] = string([]byte{b})
			} else {
				text[i] = t.pieceText(p)
			}
		default:
			if p != "" {
				t.lookup.add(&t.pieces, id)
				inner = inner || innerSpaceMark(p)
			}
			text[i] = t.pieceText(p)
		}
	}
	if t.text, err = newStrTable(text); err != nil {
		return nil, err
	}
	t.splitWords = v.Model == ModelLlama && !inner
	t.maxTokenBytes = t.longestToken()
	if v.EOS >= 0 {
		t.eog[v.EOS] = true
	}
	for _, id := range v.EOG {
		t.eog[id] = true
	}
	sortSpecials(t.userDefined)
	sortSpecials(t.control)
	if v.Model == ModelGPT2 {
		pre, err := parsePre(v.Pre)
		if err != nil {
			return nil, err
		}
		t.pre = pre
		t.ignoreMerges = pre == preLlama3
		if err := t.initGPT2(v.Merges); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// longestToken computes maxTokenBytes. A merged symbol is always a piece, so a token
// is a piece (its text, or for a control or user-defined token its spelling, is what
// it covers), one byte (a byte token), or one character of at most 4 bytes that has
// neither (UNK).
func (t *Tokenizer) longestToken() int {
	covered := true // every byte has a token of its own
	for b := range 256 {
		if t.model == ModelGPT2 {
			_, ok := t.lookup.get(&t.pieces, string(byteRune[b]))
			covered = covered && ok
		} else {
			covered = covered && t.byteTok[b] >= 0
		}
	}
	if !covered && t.unk < 0 {
		return 0
	}
	longest := utf8.UTFMax
	for i := range t.pieces.len() {
		id := int32(i)
		n := len(t.text.at(id))
		if typ := t.types[i]; typ == TypeControl || typ == TypeUserDefined {
			n = len(t.pieces.at(id))
		}
		longest = max(longest, n)
	}
	return longest
}

// MaxTokenBytes is the most bytes of text one token of Encode or EncodeSpecial stands
// for, so that no text of n bytes encodes to fewer than ⌈n / MaxTokenBytes⌉ tokens:
// a bound that rejects text too long for a context without encoding it. It is 0 when
// the vocabulary has no such bound (bytes without a token and no UNK are dropped).
func (t *Tokenizer) MaxTokenBytes() int { return t.maxTokenBytes }

// eogPieces are control tokens that end a turn in common chat vocabularies; like
// llama.cpp, IsEOG counts them even when the GGUF file does not list them.
var eogPieces = map[string]bool{
	"<|eot_id|>":          true,
	"<|im_end|>":          true,
	"<|end|>":             true,
	"<end_of_turn>":       true,
	"<|endoftext|>":       true,
	"<|end_of_text|>":     true,
	"<EOT>":               true,
	"<|eom_id|>":          true,
	"<｜end▁of▁sentence｜>": true,
}

// unknownText is what the unknown token decodes to (SentencePiece's surface for it).
const unknownText = " \u2047 "

// pieceText is the text a normal piece stands for.
func (t *Tokenizer) pieceText(p string) string {
	if t.model == ModelGPT2 {
		return unmapBytes(p)
	}
	return strings.ReplaceAll(p, spaceMark, " ")
}

// innerSpaceMark reports whether p has a ▁ right after a character other than ▁.
func innerSpaceMark(p string) bool {
	for i := 1; i < len(p); {
		k := strings.Index(p[i:], spaceMark)
		if k < 0 {
			return false
		}
		i += k
		if !strings.HasSuffix(p[:i], spaceMark) {
			return true
		}
		i += len(spaceMark)
	}
	return false
}

// isBytePiece reports whether p is spelled <0xNN>.
func isBytePiece(p string) bool {
	_, ok := parseBytePiece(p)
	return ok
}

// parseBytePiece parses a byte token's piece <0xNN> (hex digits of either case).
func parseBytePiece(p string) (byte, bool) {
	if len(p) != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexVal(p[3])
	lo, ok2 := hexVal(p[4])
	if !ok1 || !ok2 {
		return 0, false
	}
	return hi<<4 | lo, true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Model returns the tokenizer family, "llama" or "gpt2".
func (t *Tokenizer) Model() string { return t.model }

// VocabSize returns the number of tokens; valid ids are 0 ≤ id < VocabSize().
func (t *Tokenizer) VocabSize() int { return t.pieces.len() }

// BOS returns the beginning-of-sequence token id, or -1 if the vocabulary has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token id, or -1 if the vocabulary has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// UNK returns the unknown token id, or -1 if the vocabulary has none.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD returns the padding token id, or -1 if the vocabulary has none.
func (t *Tokenizer) PAD() int32 { return t.pad }

// AddBOS reports whether the model expects BOS in front of a prompt
// (tokenizer.ggml.add_bos_token); pass it as Encode's addBOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether the model expects EOS after a prompt
// (tokenizer.ggml.add_eos_token). Encode never appends EOS; callers that honour this
// append EOS() themselves.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends a generation: EOS, the ids in Vocab.EOG, and control
// tokens that end a turn in common chat vocabularies ("<|eot_id|>", "<|im_end|>",
// "<|endoftext|>", "<end_of_turn>", ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// valid reports whether id names a token.
func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < t.pieces.len() }

// IsControl reports whether id is a control token (BOS, EOS, padding, ...), which
// decodes to no text. It is false for ids out of range.
func (t *Tokenizer) IsControl(id int32) bool {
	return t.valid(id) && t.types[id] == TypeControl
}

// Type returns the token type of id (TypeNormal, TypeControl, ...), or TypeUndefined
// for an id out of range.
func (t *Tokenizer) Type(id int32) int32 {
	if !t.valid(id) {
		return TypeUndefined
	}
	return t.types[id]
}

// Score returns the piece score of id (0 when the vocabulary has no scores or id is out
// of range).
func (t *Tokenizer) Score(id int32) float32 {
	if !t.valid(id) {
		return 0
	}
	return t.scores[id]
}

// Token returns the raw vocabulary piece of id as stored (e.g. "▁the", "<0x0A>",
// "Ġthe"), or "" for an id out of range.
func (t *Tokenizer) Token(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.pieces.at(id)
}

// Piece returns the text of token id on its own: ▁
// becomes a space, a byte token is its single byte (possibly an incomplete UTF-8
// sequence; see NewStreamDecoder), a control token or an id out of range is "". Piece
// keeps the dummy leading space that Decode and StreamDecoder drop after BOS.
func (t *Tokenizer) Piece(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.text.at(id)
}

// Decode returns the text of ids: the concatenation of their pieces, with control
// tokens and ids out of range contributing nothing. When the vocabulary adds a space
// prefix, a piece that directly follows BOS loses its one leading space (the dummy
// space Encode added), as in llama2.c; a piece that does not follow BOS keeps it, so
// that decoding a continuation joins it correctly to what came before. Hence
// Decode(Encode(s, true)) == s, while Decode(Encode(s, false)) is s with that space in
// front. The result is the exact byte concatenation and may be invalid UTF-8 if ids
// split a character.
func (t *Tokenizer) Decode(ids []int32) string {
	var b strings.Builder
	prev := int32(-1)
	for _, id := range ids {
		b.WriteString(t.afterPrev(prev, id))
		prev = id
	}
	return b.String()
}

// afterPrev is the text token id adds after token prev: its piece, without the dummy
// leading space when prev is BOS.
func (t *Tokenizer) afterPrev(prev, id int32) string {
	s := t.Piece(id)
	if t.prefix && prev == t.bos && prev >= 0 && s != "" && s[0] == ' ' {
		s = s[1:]
	}
	return s
}

// Encode returns the token ids of text, with BOS in front when addBOS is true and the
// vocabulary has a BOS token. Encode never fails; bytes that the vocabulary cannot
// represent (no piece, no byte token) become UNK, or are dropped if there is no UNK.
//
// The text is plain text, except that user-defined tokens (TypeUserDefined) are matched
// whole wherever their text occurs, as llama.cpp and Hugging Face tokenizers do; the
// text around them is encoded separately, and with a space prefix vocabulary, text
// that follows one gets its own dummy space, as in llama.cpp. Control tokens such as
// "<s>" are never produced from text; see EncodeSpecial.
func (t *Tokenizer) Encode(text string, addBOS bool) []int32 {
	return t.encode(text, addBOS, false)
}

// EncodeSpecial is Encode that also turns the text of control tokens (e.g. "</s>",
// "<|im_start|>") into those tokens, for prompts built from chat templates. Where
// several special tokens match at one position, the longest wins.
func (t *Tokenizer) EncodeSpecial(text string, addBOS bool) []int32 {
	return t.encode(text, addBOS, true)
}

// Segment is one part of a text given to EncodeSegments: Special marks text in which
// control tokens are recognised (a chat template's own markers); in the other parts
// (what users wrote) they are plain text.
type Segment struct {
	Text    string
	Special bool
}

// EncodeSegments encodes the concatenation of segs as EncodeSpecial would, except that
// a control token's text counts as that token only where it lies wholly inside a
// Special segment: a message that holds "</s>" or "<|im_end|>" cannot end its turn.
// Segments are joined before encoding, so merges and user-defined tokens cross their
// boundaries exactly as in the whole text.
func (t *Tokenizer) EncodeSegments(segs []Segment, addBOS bool) []int32 {
	var b strings.Builder
	var special [][2]int // byte ranges of Special segments, in order
	for _, sg := range segs {
		if sg.Special && sg.Text != "" {
			special = append(special, [2]int{b.Len(), b.Len() + len(sg.Text)})
		}
		b.WriteString(sg.Text)
	}
	return t.encodeIn(b.String(), addBOS, special)
}

func (t *Tokenizer) encode(text string, addBOS, withControl bool) []int32 {
	if withControl {
		return t.encodeIn(text, addBOS, [][2]int{{0, len(text)}})
	}
	return t.encodeIn(text, addBOS, nil)
}

// encodeIn encodes text, recognising control tokens only inside the byte ranges of
// special (sorted, disjoint).
func (t *Tokenizer) encodeIn(text string, addBOS bool, special [][2]int) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	prevSpecial := true // a dummy space goes in front of text at the start or after a special token
	encodeText := func(frag string) {
		if frag == "" {
			return
		}
		if t.prefix && prevSpecial {
			frag = " " + frag
		}
		if t.model == ModelGPT2 {
			out = t.encodeGPT2(out, frag)
		} else {
			out = t.encodeSPM(out, frag)
		}
		prevSpecial = false
	}
	specials := t.userDefined
	var allow func(i, at int) bool
	if len(special) > 0 && len(t.control) > 0 {
		specials = mergeSpecials(t.userDefined, t.control)
		if !(len(special) == 1 && special[0] == [2]int{0, len(text)}) {
			allow = func(i, at int) bool {
				if t.types[specials[i].id] != TypeControl {
					return true
				}
				end := at + len(specials[i].text)
				k, _ := slices.BinarySearchFunc(special, at, func(r [2]int, at int) int {
					if r[1] <= at {
						return -1
					}
					return 1
				})
				return k < len(special) && special[k][0] <= at && end <= special[k][1]
			}
		}
	}
	if len(specials) == 0 {
		encodeText(text)
		return out
	}
	partition(text, specials, allow, func(frag string, id int32) {
		if id < 0 {
			encodeText(frag)
			return
		}
		out = append(out, id)
		prevSpecial = true
	})
	return out
}
