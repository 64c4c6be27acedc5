package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// JSON Schema (OpenAI's response_format json_schema): a subset compiled into a
// constraint. Supported: type object with properties (all of them are generated,
// in the order given, which satisfies required and additionalProperties: false),
// array with items, minItems and maxItems, string, number, integer, boolean,
// null, enum and const; annotations (title, description, $schema, default,
// examples, strict-mode required/additionalProperties) are accepted. Anything else
// (anyOf, $ref, pattern, format, string lengths, numeric bounds, type lists, ...)
// is an error naming the keyword and where it is, rather than a constraint that
// would let through what the schema forbids.

// Schema is a compiled schema.
type Schema struct {
	root  *node
	bytes string // every byte a minimal completion may need
}

type kind uint8

const (
	kObject kind = iota
	kArray
	kString
	kNumber
	kInteger
	kLiteral // one of a set of JSON texts (boolean, null, enum, const)
)

type node struct {
	kind     kind
	keys     []string // object: each property's key as JSON text, quotes included
	props    []*node
	items    *node // array
	min, max int   // array item counts (max −1: unbounded)
	options  []string
	minLen   int // bytes of the shortest text of this node
}

// maxOptions bounds enum sizes (a literal's live options are a bit set).
const maxOptions = 64

// CompileSchema compiles a JSON Schema (the JSON text of the schema object).
func CompileSchema(raw []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil, fmt.Errorf("grammar: schema is not JSON: %w", err)
	}
	s := &Schema{}
	root, err := s.compile(v, "$", 0)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, fmt.Errorf("grammar: the schema's root must be of type object")
	}
	s.root = root
	set := map[byte]bool{}
	for _, c := range []byte(`{}[]":,0n`) {
		set[c] = true
	}
	var walk func(n *node)
	walk = func(n *node) {
		for _, k := range n.keys {
			for i := range len(k) {
				set[k[i]] = true
			}
		}
		for _, o := range n.options {
			for i := range len(o) {
				set[o[i]] = true
			}
		}
		for _, p := range n.props {
			walk(p)
		}
		if n.items != nil {
			walk(n.items)
		}
	}
	walk(root)
	var b []byte
	for c := range set {
		b = append(b, c)
	}
	slices.Sort(b)
	s.bytes = string(b)
	return s, nil
}

var annotations = map[string]bool{"title": true, "description": true, "$schema": true, "default": true, "examples": true,
	"$comment": true, "required": true, "additionalProperties": true, "$id": true}

func (s *Schema) compile(v any, path string, depth int) (*node, error) {
	if depth > 32 {
		return nil, fmt.Errorf("grammar: schema at %s: nested more than 32 deep", path)
	}
	om, ok := v.(*omap)
	if !ok {
		return nil, fmt.Errorf("grammar: schema at %s is not an object", path)
	}
	m, keys := om.vals, om.keys
	n := &node{}
	typ, _ := m["type"].(string)
	if _, has := m["type"]; has && typ == "" {
		return nil, fmt.Errorf("grammar: schema at %s: type must be one string (type lists are not supported)", path)
	}
	if ap, has := m["additionalProperties"]; has && ap != any(false) {
		return nil, fmt.Errorf("grammar: schema at %s: additionalProperties other than false is not supported", path)
	}
	allowed := map[string]bool{"type": true}
	switch {
	case m["enum"] != nil || m["const"] != nil:
		var vals []any
		if c, ok := m["const"]; ok {
			vals = []any{c}
			allowed["const"] = true
		} else {
			arr, ok := m["enum"].([]any)
			if !ok || len(arr) == 0 || len(arr) > maxOptions {
				return nil, fmt.Errorf("grammar: schema at %s: enum must be an array of 1 to %d values", path, maxOptions)
			}
			vals = arr
			allowed["enum"] = true
		}
		n.kind = kLiteral
		for _, x := range vals {
			switch x.(type) {
			case string, json.Number, bool, nil:
			default:
				return nil, fmt.Errorf("grammar: schema at %s: enum and const values must be strings, numbers, booleans or null", path)
			}
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("grammar: schema at %s: %w", path, err)
			}
			n.options = append(n.options, string(b))
		}
	case typ == "object":
		n.kind = kObject
		allowed["properties"] = true
		props, _ := m["properties"].(*omap)
		if m["properties"] != nil && props == nil {
			return nil, fmt.Errorf("grammar: schema at %s: properties must be an object", path)
		}
		if props == nil {
			props = &omap{}
		}
		for _, k := range props.keys { // in the order the schema gives them
			kb, _ := json.Marshal(k)
			c, err := s.compile(props.vals[k], path+".properties."+k, depth+1)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, string(kb))
			n.props = append(n.props, c)
		}
	case typ == "array":
		n.kind = kArray
		allowed["items"], allowed["minItems"], allowed["maxItems"] = true, true, true
		if m["items"] == nil {
			return nil, fmt.Errorf("grammar: schema at %s: an array needs items", path)
		}
		c, err := s.compile(m["items"], path+".items", depth+1)
		if err != nil {
			return nil, err
		}
		n.items, n.max = c, -1
		for _, b := range []struct {
			key string
			dst *int
		}{{"minItems", &n.min}, {"maxItems", &n.max}} {
			if x, ok := m[b.key]; ok {
				num, ok := x.(json.Number)
				i, err := num.Int64()
				if !ok || err != nil || i < 0 || i > 1024 {
					return nil, fmt.Errorf("grammar: schema at %s: %s must be an integer in [0, 1024]", path, b.key)
				}
				*b.dst = int(i)
			}
		}
		if n.max >= 0 && n.max < n.min {
			return nil, fmt.Errorf("grammar: schema at %s: maxItems < minItems", path)
		}
	case typ == "string":
		n.kind = kString
	case typ == "number":
		n.kind = kNumber
	case typ == "integer":
		n.kind = kInteger
	case typ == "boolean":
		n.kind, n.options = kLiteral, []string{"true", "false"}
	case typ == "null":
		n.kind, n.options = kLiteral, []string{"null"}
	case typ == "":
		return nil, fmt.Errorf("grammar: schema at %s: no type (schemas without type, enum or const are not supported)", path)
	default:
		return nil, fmt.Errorf("grammar: schema at %s: type %q is not supported", path, typ)
	}
	for _, k := range keys {
		if !allowed[k] && !annotations[k] {
			return nil, fmt.Errorf("grammar: schema at %s: keyword %q is not supported", path, k)
		}
	}
	// Children are checked first, so the sum cannot overflow before this check.
	if n.minLen = minLen(n); n.minLen > MaxSchemaBytes {
		return nil, fmt.Errorf("grammar: schema at %s: its shortest answer is %d bytes, more than %d", path, n.minLen, MaxSchemaBytes)
	}
	return n, nil
}

// MaxSchemaBytes bounds the shortest answer of a schema, in bytes (at one byte per
// token, the fewest tokens it can be generated in): nested minItems multiply, and a
// schema whose every answer is longer than any context is refused.
const MaxSchemaBytes = 1 << 24

// omap is a JSON object with its keys in order.
type omap struct {
	keys []string
	vals map[string]any
}

// decodeOrdered reads one JSON value, objects as *omap (a key given twice is an
// error), arrays as []any, numbers as json.Number.
func decodeOrdered(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		m := &omap{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := m.vals[k]; dup {
				return nil, fmt.Errorf("key %q given twice", k)
			}
			m.keys = append(m.keys, k)
			m.vals[k] = v
		}
		_, err := dec.Token()
		return m, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return t, nil
}

func minLen(n *node) int {
	switch n.kind {
	case kObject:
		l := 2
		for i, p := range n.props {
			l += len(n.keys[i]) + 1 + p.minLen
			if i > 0 {
				l++
			}
		}
		return l
	case kArray:
		if n.min == 0 {
			return 2
		}
		return 2 + n.min*n.items.minLen + n.min - 1
	case kString:
		return 2
	case kNumber, kInteger:
		return 1
	}
	m := math.MaxInt
	for _, o := range n.options {
		m = min(m, len(o))
	}
	return m
}
