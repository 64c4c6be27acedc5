package quant

// The codec registry: one row per cache type, the table the rest of kvq reads to
// name, parse, lay out and list codecs (kv's spec parser and layout, kvq eval's and
// kvq inspect's lists), as ggml's per-type traits table. A new cache type is a new
// row here plus its codec's own files.

// Param is a set of spec parameters a cache type takes besides sinks, which every
// type takes.
type Param uint8

// Spec parameters.
const (
	ParamGroup    Param = 1 << iota // g: values per group along the quantized axis (tokens per key block for per-channel keys)
	ParamResidual                   // r: recent values kept in full precision (value side)
	ParamRoPE                       // rope=pre: keys stored before RoPE (key side of per-channel keys)
	ParamScale                      // s: a fixed scale instead of one per row (FP8)
)

// RowParams are the spec parameters a per-token codec is built from.
type RowParams struct {
	Group int     // values per group, the spec's g clipped to the row length (0 for types without groups)
	Scale float32 // the fixed scale s (0: none, a scale per row)
}

// Entry is one cache type of the registry.
type Entry struct {
	Name  string // spec name, e.g. "kivi3"
	About string // one line for listings
	Bits  int    // bits per stored value code (32 for f32)
	// Params are the spec parameters the type takes.
	Params Param
	// Lossless types are kept exactly: no sink rows are needed for them.
	Lossless bool
	// Row returns the per-token codec of the type with the given parameters: every
	// type's values, and its keys unless Key is set.
	Row func(p RowParams) RowCodec
	// Key, when set, returns the codec of keys stored per channel over blocks of g
	// tokens (KIVI); nil when keys are rows of Row.
	Key func() ChannelCodec
	// Value, when set, returns the codec of values stored per channel over blocks of
	// g tokens; nil when values are rows of Row. A type has Row, or both Key and
	// Value.
	Value func() ChannelAdder
}

// Takes reports whether e takes the spec parameter p.
func (e Entry) Takes(p Param) bool { return e.Params&p != 0 }

func affineEntry(name, about string, bits int) Entry {
	return Entry{Name: name, About: about, Bits: bits, Params: ParamGroup,
		Row: func(p RowParams) RowCodec { return Affine{Bits: bits, Group: p.Group} }}
}

func kiviEntry(bits int, name, about string) Entry {
	e := affineEntry(name, about, bits)
	e.Params |= ParamResidual | ParamRoPE
	e.Key = func() ChannelCodec { return Channel{Bits: bits} }
	return e
}

var registry = []Entry{
	{Name: "f32", About: "float32, lossless", Bits: 32, Lossless: true, Row: func(RowParams) RowCodec { return F32{} }},
	{Name: "f16", About: "IEEE half precision per value", Bits: 16, Row: func(RowParams) RowCodec { return F16{} }},
	{Name: "bf16", About: "bfloat16 per value", Bits: 16, Row: func(RowParams) RowCodec { return BF16{} }},
	{Name: "q8", About: "symmetric int8 per row, f16 scale", Bits: 8, Row: func(RowParams) RowCodec { return Int8{} }},
	{Name: "fp8e4m3", About: "OCP FP8 E4M3 with an f16 scale per row, or a fixed scale s", Bits: 8, Params: ParamScale,
		Row: func(p RowParams) RowCodec { return FP8{Format: E4M3, TensorScale: p.Scale} }},
	{Name: "fp8e5m2", About: "OCP FP8 E5M2 with an f16 scale per row, or a fixed scale s", Bits: 8, Params: ParamScale,
		Row: func(p RowParams) RowCodec { return FP8{Format: E5M2, TensorScale: p.Scale} }},
	affineEntry("q4", "asymmetric 4-bit per group of g values along the row", 4),
	affineEntry("q3", "asymmetric 3-bit per group of g values along the row", 3),
	affineEntry("q2", "asymmetric 2-bit per group of g values along the row", 2),
	kiviEntry(8, "kivi8", "KIVI 8-bit: keys per channel over blocks of g tokens, values per token"),
	kiviEntry(4, "kivi4", "KIVI 4-bit"),
	kiviEntry(3, "kivi3", "KIVI 3-bit"),
	kiviEntry(2, "kivi2", "KIVI 2-bit"),
	chanEntry(4, "chan4", "4-bit per channel over blocks of g tokens, keys (as KIVI) and values"),
	chanEntry(2, "chan2", "2-bit per channel over blocks of g tokens, keys (as KIVI) and values"),
}

// Registry returns every cache type, in the order of the spec grammar. The slice is
// the caller's.
func Registry() []Entry { return append([]Entry(nil), registry...) }

// Lookup returns the registry entry named name.
func Lookup(name string) (Entry, bool) {
	for _, e := range registry {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}
