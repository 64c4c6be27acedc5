package grammar

import (
	"fmt"
	"math"
	"math/bits"
)

// SchemaObject constrains a generation to one JSON text that a Schema accepts
// (leading whitespace allowed), followed by an end-of-generation token, completed
// within the token budget as JSONObject is. One per generated sequence.
type SchemaObject struct {
	v       *Vocab
	s       *Schema
	st      sstate
	scratch []frame
}

// Frame phases.
const (
	pOpen    uint8 = iota // before the opening bracket
	pKey                  // object: inside (or before) the key of property idx
	pColon                // object: after the key
	pValue                // waiting for a value (object: of property idx; array: an item)
	pInValue              // a value is being read (a leaf or the frame above)
	pAfter                // after a value: a comma or the closer
)

type frame struct {
	n     *node
	phase uint8
	idx   int // object: current property; array: items completed
	kpos  int // object: bytes of the key read
}

// leaf is a scalar being read.
type leaf struct {
	active bool
	kind   kind
	esc    uint8  // string: 1 after '\', 2–5 hex digits of \u left + 1
	num    uint8  // number sub-state (as state.num)
	opts   uint64 // literal: options still matching
	pos    int    // literal: bytes read
	opt    []string
}

type sstate struct {
	frames []frame
	root   bool // the root value has started
	done   bool
	leaf   leaf
	spaces int
}

// JSONSchema returns a fresh constraint for s over v, or an error when some byte a
// completion may need (of a key or an enum value) has no single-byte token.
func (v *Vocab) JSONSchema(s *Schema) (*SchemaObject, error) {
	for i := range len(s.bytes) {
		if !v.single[s.bytes[i]] {
			return nil, fmt.Errorf("grammar: the vocabulary has no single-byte token %q, which completing this schema may need", s.bytes[i])
		}
	}
	return &SchemaObject{v: v, s: s}, nil
}

// Mask is JSONObject.Mask for the schema, with the same shortcuts.
func (j *SchemaObject) Mask(logits []float32, remaining int) {
	remaining = max(remaining, j.st.cost(j.s)) // as JSONObject.Mask
	inString := j.st.leaf.active && j.st.leaf.kind == kString && j.st.leaf.esc == 0
	fits := j.st.cost(j.s) <= remaining-1
	j.v.mask(logits, remaining, j.st.done, inString, fits, func(b []byte, maxCost int) bool {
		st := j.st
		j.scratch = append(j.scratch[:0], j.st.frames...)
		st.frames = j.scratch
		return st.feed(j.s, b) && (maxCost == math.MaxInt || st.cost(j.s) <= maxCost)
	})
}

// MinTokens is the smallest budget with which every generation completes: the
// bytes of the schema's shortest answer, at one byte per token.
func (j *SchemaObject) MinTokens() int { return j.s.root.minLen }

// Accept advances past token id.
func (j *SchemaObject) Accept(id int32) {
	if int(id) >= len(j.v.pieces) || j.v.eog[id] {
		return
	}
	j.st.feed(j.s, j.v.pieces[id])
}

// Done reports whether the text is complete.
func (j *SchemaObject) Done() bool { return j.st.done }

func (st *sstate) feed(s *Schema, b []byte) bool {
	for _, c := range b {
		if !st.byte(s, c) {
			return false
		}
	}
	return true
}

func (st *sstate) byte(s *Schema, c byte) bool {
	if st.done {
		return false
	}
	if st.leaf.active {
		if !isSpace(c) || st.leaf.kind == kString {
			st.spaces = 0
		}
		ok, ended := st.leafByte(c)
		if ok {
			if ended {
				st.valueDone()
			}
			return true
		}
		if !ended {
			return false
		}
		st.valueDone() // the number or literal ended before c
		if st.done {
			return false
		}
	}
	// Whitespace between tokens is free; inside a key's text, which the schema
	// fixes, a space is the key's next byte or nothing.
	if n := len(st.frames); isSpace(c) && (n == 0 || st.frames[n-1].phase != pKey || st.frames[n-1].kpos == 0) {
		st.spaces++
		return st.spaces <= maxSpace
	}
	st.spaces = 0
	if len(st.frames) == 0 {
		if st.root {
			return false
		}
		st.root = true
		return st.start(s.root, c)
	}
	f := &st.frames[len(st.frames)-1]
	n := f.n
	switch f.phase {
	case pOpen:
		open := byte('{')
		if n.kind == kArray {
			open = '['
		}
		if c != open {
			return false
		}
		f.phase = pKey
		if n.kind == kArray {
			f.phase = pValue
		}
		return true
	case pKey:
		if len(n.keys) == 0 {
			if c != '}' {
				return false
			}
			st.pop()
			return true
		}
		k := n.keys[f.idx]
		if c != k[f.kpos] {
			return false
		}
		f.kpos++
		if f.kpos == len(k) {
			f.phase = pColon
		}
		return true
	case pColon:
		if c != ':' {
			return false
		}
		f.phase = pValue
		return true
	case pValue:
		if n.kind == kArray {
			if c == ']' && f.idx == 0 && n.min == 0 {
				st.pop()
				return true
			}
			if n.max >= 0 && f.idx >= n.max {
				return false
			}
			f.phase = pInValue
			return st.start(n.items, c)
		}
		f.phase = pInValue
		return st.start(n.props[f.idx], c)
	case pAfter:
		if n.kind == kObject {
			switch {
			case c == ',' && f.idx+1 < len(n.props):
				f.idx++
				f.phase, f.kpos = pKey, 0
				return true
			case c == '}' && f.idx+1 == len(n.props):
				st.pop()
				return true
			}
			return false
		}
		switch {
		case c == ',' && (n.max < 0 || f.idx < n.max):
			f.phase = pValue
			return true
		case c == ']' && f.idx >= n.min:
			st.pop()
			return true
		}
	}
	return false
}

// start begins a value of node n with byte c.
func (st *sstate) start(n *node, c byte) bool {
	switch n.kind {
	case kObject, kArray:
		st.frames = append(st.frames, frame{n: n, phase: pOpen})
		f := &st.frames[len(st.frames)-1]
		if n.kind == kObject && c == '{' {
			f.phase = pKey
			return true
		}
		if n.kind == kArray && c == '[' {
			f.phase = pValue
			return true
		}
		return false
	case kString:
		if c != '"' {
			return false
		}
		st.leaf = leaf{active: true, kind: kString}
		return true
	case kNumber, kInteger:
		st.leaf = leaf{active: true, kind: n.kind}
		switch {
		case c == '-':
			st.leaf.num = nMinus
		case c == '0':
			st.leaf.num = nZero
		case c >= '1' && c <= '9':
			st.leaf.num = nInt
		default:
			return false
		}
		return true
	}
	st.leaf = leaf{active: true, kind: kLiteral, opt: n.options}
	for i, o := range n.options {
		if o[0] == c {
			st.leaf.opts |= 1 << i
		}
	}
	st.leaf.pos = 1
	return st.leaf.opts != 0
}

// leafByte feeds c to the leaf: ok when c continues it; ended when the leaf is
// complete (with c when ok, before c when not).
func (st *sstate) leafByte(c byte) (ok, ended bool) {
	l := &st.leaf
	switch l.kind {
	case kString:
		s := state{mode: mString, esc: l.esc}
		if !s.stringByte(c) {
			return false, false
		}
		l.esc = s.esc
		return true, s.mode != mString
	case kNumber, kInteger:
		if l.kind == kInteger && (c == '.' || c == 'e' || c == 'E') {
			return false, l.num == nZero || l.num == nInt
		}
		s := state{num: l.num}
		if s.numberByte(c) {
			l.num = s.num
			return true, false
		}
		complete := !(l.num == nMinus || l.num == nDot || l.num == nExp || l.num == nExpSign)
		return false, complete
	}
	var next uint64
	for m := l.opts; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if o := l.opt[i]; l.pos < len(o) && o[l.pos] == c {
			next |= 1 << i
		}
	}
	if next == 0 {
		return false, st.literalComplete()
	}
	l.opts = next
	l.pos++
	// Complete with c when an option ends here and none continues past it.
	longer := false
	for m := next; m != 0; m &= m - 1 {
		if len(l.opt[bits.TrailingZeros64(m)]) > l.pos {
			longer = true
		}
	}
	return true, !longer
}

// literalComplete reports whether the bytes read are a whole option.
func (st *sstate) literalComplete() bool {
	l := &st.leaf
	for m := l.opts; m != 0; m &= m - 1 {
		if len(l.opt[bits.TrailingZeros64(m)]) == l.pos {
			return true
		}
	}
	return false
}

// valueDone ends the current leaf and tells its container a value was read.
func (st *sstate) valueDone() {
	st.leaf = leaf{}
	st.parentDone()
}

func (st *sstate) parentDone() {
	if len(st.frames) == 0 {
		st.done = true
		return
	}
	f := &st.frames[len(st.frames)-1]
	if f.n.kind == kArray {
		f.idx++
	}
	f.phase = pAfter
}

// pop closes the top frame, which is a complete value of its container.
func (st *sstate) pop() {
	st.frames = st.frames[:len(st.frames)-1]
	st.parentDone()
}

// cost is the fewest bytes that complete the text.
func (st *sstate) cost(s *Schema) int {
	if st.done {
		return 0
	}
	if !st.root {
		return s.root.minLen
	}
	n := 0
	if l := &st.leaf; l.active {
		switch l.kind {
		case kString:
			n++
			switch {
			case l.esc == 1:
				n++
			case l.esc > 1:
				n += int(l.esc) - 1
			}
		case kNumber, kInteger:
			if l.num == nMinus || l.num == nDot || l.num == nExp || l.num == nExpSign {
				n++
			}
		default:
			best := math.MaxInt
			for m := l.opts; m != 0; m &= m - 1 {
				best = min(best, len(l.opt[bits.TrailingZeros64(m)])-l.pos)
			}
			n += best
		}
	}
	for i := range st.frames {
		n += rest(&st.frames[i])
	}
	return n
}

// rest is the fewest bytes that complete frame f once its current value (if being
// read) is complete.
func rest(f *frame) int {
	nd := f.n
	if nd.kind == kArray {
		item := nd.items.minLen
		switch f.phase {
		case pOpen:
			return nd.minLen
		case pValue:
			if f.idx == 0 && nd.min == 0 {
				return 1
			}
			need := max(1, nd.min-f.idx)
			return need*item + need - 1 + 1
		case pInValue:
			need := max(0, nd.min-f.idx-1)
			return need*(item+1) + 1
		}
		need := max(0, nd.min-f.idx) // pAfter
		return need*(item+1) + 1
	}
	if f.phase == pOpen {
		return nd.minLen
	}
	after := 1 // the closer
	for i := f.idx + 1; i < len(nd.props); i++ {
		after += 1 + len(nd.keys[i]) + 1 + nd.props[i].minLen
	}
	if len(nd.props) == 0 {
		return 1
	}
	switch f.phase {
	case pKey:
		return len(nd.keys[f.idx]) - f.kpos + 1 + nd.props[f.idx].minLen + after
	case pColon:
		return 1 + nd.props[f.idx].minLen + after
	case pValue:
		return nd.props[f.idx].minLen + after
	}
	return after // pInValue, pAfter
}
