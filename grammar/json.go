// Package grammar constrains sampling to a formal language, token by token, over a
// model's vocabulary: before each token, the tokens whose text cannot continue a
// valid string are masked out. It implements JSON objects (OpenAI's
// response_format json_object: JSONObject) and a subset of JSON Schema
// (json_schema: CompileSchema, SchemaObject): every answer parses as one JSON
// object, which the schema accepts.
//
// Termination within a token budget: the constraint tracks the fewest bytes that
// complete the text (closing brackets, a value after a colon, the rest of a literal,
// ...) and allows a token only if what it leaves can still be completed in the
// tokens that remain, at one byte per token. That needs a single-byte token for
// every byte a completion may use, which NewVocab checks. Once the object is
// complete only end-of-generation tokens remain allowed.
package grammar

import (
	"fmt"
	"math"
	"strings"
)

// Vocab is a model's vocabulary as the constraint reads it: each token's text and
// whether it ends generation. It is built once per model and shared.
type Vocab struct {
	pieces [][]byte
	eog    []bool
	plain  []bool  // the text holds no '"', '\\' or control byte: inside a string it changes nothing
	lead   []uint8 // leading whitespace bytes (capped at 255)
	single [256]bool
}

// closingBytes are the bytes a completion may need, each of which must exist as a
// single-byte token.
const closingBytes = "{}[]\":,0123456789abcdefABCDEFrulsn\\"

// NewVocab builds the vocabulary from each token's text (as the tokenizer decodes
// it on its own; "" for control tokens, which are never allowed) and its
// end-of-generation test. It fails when some byte a completion needs has no
// single-byte token or no token ends generation.
func NewVocab(pieces []string, isEOG func(id int32) bool) (*Vocab, error) {
	v := &Vocab{pieces: make([][]byte, len(pieces)), eog: make([]bool, len(pieces)), plain: make([]bool, len(pieces)), lead: make([]uint8, len(pieces))}
	single := map[byte]bool{}
	anyEOG := false
	for i, p := range pieces {
		v.pieces[i] = []byte(p)
		v.eog[i] = isEOG(int32(i))
		for v.lead[i] < 255 && int(v.lead[i]) < len(p) && isSpace(p[v.lead[i]]) {
			v.lead[i]++
		}
		v.plain[i] = p != "" && !strings.ContainsFunc(p, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 })
		anyEOG = anyEOG || v.eog[i]
		if len(p) == 1 {
			single[p[0]] = true
		}
	}
	for c := range single {
		v.single[c] = true
	}
	for i := range len(closingBytes) {
		if !single[closingBytes[i]] {
			return nil, fmt.Errorf("grammar: the vocabulary has no single-byte token %q, which completing JSON may need", closingBytes[i])
		}
	}
	if !anyEOG {
		return nil, fmt.Errorf("grammar: the vocabulary has no end-of-generation token")
	}
	return v, nil
}

// JSONObject constrains a generation to one JSON object (leading whitespace
// allowed), followed by an end-of-generation token. Not safe for concurrent use;
// one per generated sequence.
type JSONObject struct {
	v       *Vocab
	st      state
	scratch []byte
}

// JSONObject returns a fresh constraint over v.
func (v *Vocab) JSONObject() *JSONObject {
	return &JSONObject{v: v, st: state{mode: mTop}}
}

// Mask sets to −Inf the logits of the tokens that may not come next, given that at
// most remaining tokens (this one included) can still be generated. Tokens outside
// the vocabulary given to NewVocab are masked.
func (j *JSONObject) Mask(logits []float32, remaining int) {
	done := j.st.mode == mDone
	// Two shortcuts keep this to a pass over the vocabulary: inside a string, a
	// token without quotes, backslashes or control bytes leaves the state as it is;
	// elsewhere, a token whose first byte after its leading whitespace (up to
	// maxLead bytes) cannot come next is refused at once.
	// A budget that cannot hold the shortest completion (the caller should not
	// give one: see MinTokens) still gets a valid prefix rather than no token.
	remaining = max(remaining, j.st.cost())
	inString := j.st.mode == mString && j.st.esc == 0
	fits := j.st.cost() <= remaining-1
	j.v.mask(logits, remaining, done, inString, fits, func(b []byte, maxCost int) bool {
		st := j.st
		j.scratch = append(j.scratch[:0], j.st.stack...)
		st.stack = j.scratch
		return st.feed(b) && (maxCost == math.MaxInt || st.cost() <= maxCost)
	})
}

// mask is the pass over the vocabulary of JSONObject.Mask and SchemaObject.Mask,
// with their shortcuts. done: only end-of-generation tokens may come; inString:
// inside a string, outside an escape; fits: the state as it is can still complete
// in the budget left after this token, of remaining tokens. accepts reports
// whether a copy of the state takes bytes b and can then complete within maxCost
// tokens (math.MaxInt: whatever it costs).
func (v *Vocab) mask(logits []float32, remaining int, done, inString, fits bool, accepts func(b []byte, maxCost int) bool) {
	ninf := float32(math.Inf(-1))
	// first[k][c]: a token whose first byte after k bytes of leading whitespace is
	// c can come next.
	var first [maxLead + 1][256]bool
	var buf [maxLead + 1]byte
	for k := range maxLead + 1 {
		for c := range 256 {
			for i := range k {
				buf[i] = ' '
			}
			buf[k] = byte(c)
			first[k][c] = accepts(buf[:k+1], math.MaxInt)
		}
	}
	for id := range logits {
		if id >= len(v.pieces) {
			logits[id] = ninf
			continue
		}
		if v.eog[id] {
			if !done {
				logits[id] = ninf
			}
			continue
		}
		p, lead := v.pieces[id], int(v.lead[id])
		switch {
		case done || len(p) == 0 || lead <= maxLead && lead < len(p) && !first[lead][p[lead]]:
			logits[id] = ninf
			continue
		case inString && v.plain[id]:
			if !fits {
				logits[id] = ninf
			}
			continue
		}
		if !accepts(p, remaining-1) {
			logits[id] = ninf
		}
	}
}

// MinTokens is the smallest budget with which every generation completes: the
// shortest object, "{}", at one byte per token.
func (j *JSONObject) MinTokens() int { return 2 }

// Accept advances past token id (a token Mask allowed).
func (j *JSONObject) Accept(id int32) {
	if int(id) >= len(j.v.pieces) || j.v.eog[id] {
		return
	}
	j.st.feed(j.v.pieces[id])
}

// Done reports whether the object is complete.
func (j *JSONObject) Done() bool { return j.st.mode == mDone }

// Parser modes.
const (
	mTop        uint8 = iota // before the top-level object: whitespace or '{'
	mValue                   // a value is required (after ':' or ',' in an array)
	mValueOrEnd              // after '[': a value or ']'
	mKeyOrEnd                // after '{': a key or '}'
	mKey                     // after ',' in an object: a key
	mColon                   // after a key: ':'
	mAfter                   // after a value: ',' or the closer, or the end at the top
	mString                  // inside a string
	mNumber                  // inside a number
	mLiteral                 // inside true, false or null
	mDone                    // the top-level object is complete
)

// Number sub-states: what was read last.
const (
	nMinus   uint8 = iota // '-'
	nZero                 // a leading 0
	nInt                  // integer digits
	nDot                  // '.'
	nFrac                 // fraction digits
	nExp                  // 'e' or 'E'
	nExpSign              // the exponent's sign
	nExpInt               // exponent digits
)

// maxLead is the most leading whitespace bytes Mask's first-byte test looks past.
const maxLead = 4

// maxSpace bounds consecutive whitespace bytes between tokens of the grammar, so
// that a generation cannot spend its budget on blanks.
const maxSpace = 16

// state is the parser state of a JSON prefix.
type state struct {
	stack  []byte // open containers, '{' or '['
	mode   uint8
	key    bool   // the string is a key
	esc    uint8  // in a string: 1 after '\', 2–5: hex digits of \u left + 1
	num    uint8  // number sub-state
	lit    string // the literal's bytes still to come
	spaces int
}

// feed advances st by the bytes of b; false when b cannot continue the prefix.
func (st *state) feed(b []byte) bool {
	for _, c := range b {
		if !st.byte(c) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func (st *state) byte(c byte) bool {
	if !isSpace(c) || st.mode == mString {
		st.spaces = 0
	}
	switch st.mode {
	case mString:
		return st.stringByte(c)
	case mNumber:
		if st.numberByte(c) {
			return true
		}
		if st.num == nMinus || st.num == nDot || st.num == nExp || st.num == nExpSign {
			return false
		}
		st.mode = mAfter // the number ended; c follows it
	case mLiteral:
		if c != st.lit[0] {
			return false
		}
		st.lit = st.lit[1:]
		if st.lit == "" {
			st.mode = mAfter
		}
		return true
	case mDone:
		return false
	}
	if isSpace(c) {
		st.spaces++
		return st.spaces <= maxSpace
	}
	switch st.mode {
	case mTop:
		if c != '{' {
			return false
		}
		st.stack = append(st.stack, '{')
		st.mode = mKeyOrEnd
		return true
	case mKeyOrEnd, mKey:
		switch {
		case c == '"':
			st.mode, st.key, st.esc = mString, true, 0
			return true
		case c == '}' && st.mode == mKeyOrEnd:
			return st.close('{')
		}
		return false
	case mColon:
		if c != ':' {
			return false
		}
		st.mode = mValue
		return true
	case mValue, mValueOrEnd:
		if c == ']' && st.mode == mValueOrEnd {
			return st.close('[')
		}
		return st.startValue(c)
	case mAfter:
		switch {
		case c == ',' && len(st.stack) > 0:
			if st.stack[len(st.stack)-1] == '{' {
				st.mode = mKey
			} else {
				st.mode = mValue
			}
			return true
		case c == '}':
			return st.close('{')
		case c == ']':
			return st.close('[')
		}
	}
	return false
}

// close pops the open container, which must be open.
func (st *state) close(open byte) bool {
	n := len(st.stack)
	if n == 0 || st.stack[n-1] != open {
		return false
	}
	st.stack = st.stack[:n-1]
	st.mode = mAfter
	if len(st.stack) == 0 {
		st.mode = mDone
	}
	return true
}

func (st *state) startValue(c byte) bool {
	switch {
	case c == '{':
		st.stack = append(st.stack, '{')
		st.mode = mKeyOrEnd
	case c == '[':
		st.stack = append(st.stack, '[')
		st.mode = mValueOrEnd
	case c == '"':
		st.mode, st.key, st.esc = mString, false, 0
	case c == '-':
		st.mode, st.num = mNumber, nMinus
	case c == '0':
		st.mode, st.num = mNumber, nZero
	case c >= '1' && c <= '9':
		st.mode, st.num = mNumber, nInt
	case c == 't':
		st.mode, st.lit = mLiteral, "rue"
	case c == 'f':
		st.mode, st.lit = mLiteral, "alse"
	case c == 'n':
		st.mode, st.lit = mLiteral, "ull"
	default:
		return false
	}
	return true
}

func (st *state) stringByte(c byte) bool {
	switch {
	case st.esc == 1:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			st.esc = 0
		case 'u':
			st.esc = 5
		default:
			return false
		}
		return true
	case st.esc > 1:
		if !isHex(c) {
			return false
		}
		st.esc--
		if st.esc == 1 {
			st.esc = 0
		}
		return true
	case c == '\\':
		st.esc = 1
		return true
	case c == '"':
		if st.key {
			st.mode = mColon
		} else {
			st.mode = mAfter
		}
		return true
	case c < 0x20:
		return false
	}
	return true
}

// numberByte consumes c if it continues the number.
func (st *state) numberByte(c byte) bool {
	digit := c >= '0' && c <= '9'
	switch st.num {
	case nMinus:
		switch {
		case c == '0':
			st.num = nZero
		case digit:
			st.num = nInt
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case digit && st.num == nInt:
		case c == '.':
			st.num = nDot
		case c == 'e' || c == 'E':
			st.num = nExp
		default:
			return false
		}
	case nDot, nFrac:
		switch {
		case digit:
			st.num = nFrac
		case (c == 'e' || c == 'E') && st.num == nFrac:
			st.num = nExp
		default:
			return false
		}
	case nExp:
		switch {
		case c == '+' || c == '-':
			st.num = nExpSign
		case digit:
			st.num = nExpInt
		default:
			return false
		}
	case nExpSign, nExpInt:
		if !digit {
			return false
		}
		st.num = nExpInt
	}
	return true
}

// cost is the fewest bytes that complete the object from st.
func (st *state) cost() int {
	n := len(st.stack)
	switch st.mode {
	case mTop:
		return 2 // {}
	case mDone:
		return 0
	case mString:
		n++ // the closing quote
		switch {
		case st.esc == 1:
			n++
		case st.esc > 1:
			n += int(st.esc) - 1
		}
		if st.key {
			n += 2 // :0
		}
	case mNumber:
		if st.num == nMinus || st.num == nDot || st.num == nExp || st.num == nExpSign {
			n++
		}
	case mLiteral:
		n += len(st.lit)
	case mValue:
		n++ // 0
	case mKey:
		n += 4 // "":0
	case mColon:
		n += 2 // :0
	}
	return n
}
