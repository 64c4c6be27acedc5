package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// builtinModel is the repository's built-in model, read by path so that this package
// does not depend on the assets package.
const builtinModel = "../assets/stories260K.gguf"

// raw assembles GGUF bytes by hand, independently of Writer, for reader tests.
type raw struct{ bytes.Buffer }

func (r *raw) u8(v uint8)   { r.WriteByte(v) }
func (r *raw) u32(v uint32) { binary.Write(&r.Buffer, binary.LittleEndian, v) }
func (r *raw) u64(v uint64) { binary.Write(&r.Buffer, binary.LittleEndian, v) }
func (r *raw) str(s string) { r.u64(uint64(len(s))); r.WriteString(s) }
func (r *raw) header(version uint32, nTensors, nKV uint64) {
	r.WriteString("GGUF")
	r.u32(version)
	r.u64(nTensors)
	r.u64(nKV)
}
func (r *raw) tensor(name string, typ TensorType, offset uint64, dims ...uint64) {
	r.str(name)
	r.u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	r.u32(uint32(typ))
	r.u64(offset)
}
func (r *raw) pad(align int) {
	for r.Len()%align != 0 {
		r.WriteByte(0)
	}
}

// sampleFile is a small valid v3 file with every value type, a nested array and two
// F32 tensors ("a" of 4 values 1..4, "b" 2×2 of 5..8).
func sampleFile() []byte {
	var r raw
	r.header(3, 2, 15)
	r.str("u8")
	r.u32(uint32(TypeUint8))
	r.u8(200)
	r.str("i8")
	r.u32(uint32(TypeInt8))
	r.u8(0xfe) // -2
	r.str("u16")
	r.u32(uint32(TypeUint16))
	binary.Write(&r.Buffer, binary.LittleEndian, uint16(65000))
	r.str("i16")
	r.u32(uint32(TypeInt16))
	binary.Write(&r.Buffer, binary.LittleEndian, int16(-300))
	r.str("u32")
	r.u32(uint32(TypeUint32))
	r.u32(4000000000)
	r.str("i32")
	r.u32(uint32(TypeInt32))
	binary.Write(&r.Buffer, binary.LittleEndian, int32(-70000))
	r.str("f32")
	r.u32(uint32(TypeFloat32))
	r.u32(math.Float32bits(1.5))
	r.str("bool")
	r.u32(uint32(TypeBool))
	r.u8(1)
	r.str("str")
	r.u32(uint32(TypeString))
	r.str("héllo")
	r.str("u64")
	r.u32(uint32(TypeUint64))
	r.u64(math.MaxUint64)
	r.str("i64")
	r.u32(uint32(TypeInt64))
	binary.Write(&r.Buffer, binary.LittleEndian, int64(-5))
	r.str("f64")
	r.u32(uint32(TypeFloat64))
	r.u64(math.Float64bits(0.25))
	r.str("strs")
	r.u32(uint32(TypeArray))
	r.u32(uint32(TypeString))
	r.u64(2)
	r.str("a")
	r.str("")
	r.str("nested")
	r.u32(uint32(TypeArray))
	r.u32(uint32(TypeArray))
	r.u64(2)
	r.u32(uint32(TypeUint16)) // [1 2]
	r.u64(2)
	binary.Write(&r.Buffer, binary.LittleEndian, []uint16{1, 2})
	r.u32(uint32(TypeFloat32)) // []
	r.u64(0)
	r.str("general.alignment")
	r.u32(uint32(TypeUint32))
	r.u32(64)
	r.tensor("a", TypeF32, 0, 4)
	r.tensor("b", TypeF32, 64, 2, 2)
	r.pad(64)
	binary.Write(&r.Buffer, binary.LittleEndian, []float32{1, 2, 3, 4})
	r.pad(64)
	binary.Write(&r.Buffer, binary.LittleEndian, []float32{5, 6, 7, 8})
	return r.Bytes()
}

func TestParseSample(t *testing.T) {
	f, err := Parse(sampleFile())
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "u64", "i64", "f64", "strs", "nested", "general.alignment"}
	if !reflect.DeepEqual(f.Keys(), wantKeys) {
		t.Errorf("Keys() = %v, want %v", f.Keys(), wantKeys)
	}
	if f.Version != 3 || f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	uints := []struct {
		key  string
		want uint64
		ok   bool
	}{
		{"u8", 200, true}, {"i8", 0, false}, {"u16", 65000, true}, {"i16", 0, false},
		{"u32", 4000000000, true}, {"i32", 0, false}, {"u64", math.MaxUint64, true},
		{"i64", 0, false}, {"f32", 0, false}, {"str", 0, false}, {"strs", 0, false}, {"missing", 0, false},
	}
	for _, c := range uints {
		if got, ok := f.Uint(c.key); got != c.want || ok != c.ok {
			t.Errorf("Uint(%q) = %d, %v; want %d, %v", c.key, got, ok, c.want, c.ok)
		}
	}
	ints := []struct {
		key  string
		want int64
		ok   bool
	}{
		{"u8", 200, true}, {"i8", -2, true}, {"i16", -300, true}, {"i32", -70000, true},
		{"i64", -5, true}, {"u64", 0, false}, {"f64", 0, false}, {"bool", 0, false},
	}
	for _, c := range ints {
		if got, ok := f.Int(c.key); got != c.want || ok != c.ok {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", c.key, got, ok, c.want, c.ok)
		}
	}
	floats := []struct {
		key  string
		want float64
		ok   bool
	}{
		{"f32", 1.5, true}, {"f64", 0.25, true}, {"i16", -300, true}, {"str", 0, false},
	}
	for _, c := range floats {
		if got, ok := f.Float(c.key); got != c.want || ok != c.ok {
			t.Errorf("Float(%q) = %g, %v; want %g, %v", c.key, got, ok, c.want, c.ok)
		}
	}
	if b, ok := f.Bool("bool"); !b || !ok {
		t.Errorf("Bool(bool) = %v, %v", b, ok)
	}
	if _, ok := f.Bool("u8"); ok {
		t.Error("Bool(u8) succeeded")
	}
	if s, ok := f.String("str"); s != "héllo" || !ok {
		t.Errorf("String(str) = %q, %v", s, ok)
	}
	if s, ok := f.Strings("strs"); !ok || !reflect.DeepEqual(s, []string{"a", ""}) {
		t.Errorf("Strings(strs) = %q, %v", s, ok)
	}
	nested, _ := f.Value("nested")
	want := Value{Type: TypeArray, Elem: TypeArray, Data: []Value{
		{Type: TypeArray, Elem: TypeUint16, Data: []uint16{1, 2}},
		{Type: TypeArray, Elem: TypeFloat32, Data: []float32{}},
	}}
	if !reflect.DeepEqual(nested, want) {
		t.Errorf("nested = %#v, want %#v", nested, want)
	}
	if i, ok := f.Int32s("nested"); ok {
		t.Errorf("Int32s(nested) = %v, want failure", i)
	}

	wantT := map[string][]float32{"a": {1, 2, 3, 4}, "b": {5, 6, 7, 8}}
	for name, vals := range wantT {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("tensor %q missing", name)
		}
		if ti.Elems() != 4 || ti.Size != 16 {
			t.Errorf("%s: elems %d size %d", name, ti.Elems(), ti.Size)
		}
		b, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 4)
		if err := Dequantize(TypeF32, got, b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, vals) {
			t.Errorf("%s = %v, want %v", name, got, vals)
		}
	}
	if _, ok := f.Tensor("c"); ok {
		t.Error("Tensor(c) found")
	}
}

func TestInt32sWidths(t *testing.T) {
	f := &File{values: map[string]Value{}}
	for _, x := range []any{[]uint8{1, 2}, []int8{1, 2}, []uint16{1, 2}, []int16{1, 2}, []uint32{1, 2}, []int32{1, 2}, []int64{1, 2}, []uint64{1, 2}} {
		v, err := ValueOf(x)
		if err != nil {
			t.Fatal(err)
		}
		f.values["k"] = v
		if got, ok := f.Int32s("k"); !ok || !reflect.DeepEqual(got, []int32{1, 2}) {
			t.Errorf("Int32s(%T) = %v, %v", x, got, ok)
		}
	}
	for _, x := range []any{[]uint32{math.MaxUint32}, []int64{math.MinInt32 - 1}, []uint64{math.MaxUint64}, []float32{1}, int32(1)} {
		v, _ := ValueOf(x)
		f.values["k"] = v
		if got, ok := f.Int32s("k"); ok {
			t.Errorf("Int32s(%v) = %v, want failure", x, got)
		}
	}
}

func TestParseBuiltinModel(t *testing.T) {
	data, err := os.ReadFile(builtinModel)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		key  string
		want uint64
	}{
		{"llama.embedding_length", 64}, {"llama.block_count", 5}, {"llama.attention.head_count", 8},
		{"llama.attention.head_count_kv", 4}, {"llama.feed_forward_length", 172}, {"llama.context_length", 512},
	}
	for _, c := range checks {
		if got, ok := f.Uint(c.key); !ok || got != c.want {
			t.Errorf("%s = %d, %v; want %d", c.key, got, ok, c.want)
		}
	}
	if a, _ := f.String("general.architecture"); a != "llama" {
		t.Errorf("architecture %q", a)
	}
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) != 512 || toks[1] != "<s>" {
		t.Errorf("tokens: %d, %v", len(toks), ok)
	}
	if sc, ok := f.Float32s("tokenizer.ggml.scores"); !ok || len(sc) != 512 {
		t.Errorf("scores: %d, %v", len(sc), ok)
	}
	if tt, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(tt) != 512 || tt[0] != 2 {
		t.Errorf("token types: %v", ok)
	}
	if len(f.Tensors) != 47 {
		t.Errorf("%d tensors, want 47 (5 layers × 9 + token_embd + output_norm)", len(f.Tensors))
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || !reflect.DeepEqual(emb.Dims, []uint64{64, 512}) || emb.Type != TypeF32 {
		t.Fatalf("token_embd: %+v", emb)
	}
	b, err := f.TensorData(emb)
	if err != nil || len(b) != 64*512*4 {
		t.Fatalf("token_embd data: %d bytes, %v", len(b), err)
	}
	// The data section must hold exactly the tensors' bytes (no slack after the last one).
	last := f.Tensors[len(f.Tensors)-1]
	if f.DataOffset+last.Offset+last.Size != uint64(len(data)) {
		t.Errorf("last tensor ends at %d, file is %d bytes", f.DataOffset+last.Offset+last.Size, len(data))
	}
	// Open (mmap) sees the same file.
	g, err := Open(builtinModel)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := g.TensorData(&g.Tensors[3])
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := f.TensorData(&f.Tensors[3])
	if !bytes.Equal(gb, fb) || !reflect.DeepEqual(g.Keys(), f.Keys()) {
		t.Error("Open and Parse disagree")
	}
	// Open released the mapped header pages; every byte of the mapping still reads as
	// in the file.
	if !bytes.Equal(g.data, data) {
		t.Error("the mapped file differs from its bytes after Open")
	}
	// DropMetadata forgets the metadata and nothing else.
	g.DropMetadata()
	if len(g.Keys()) != 0 {
		t.Errorf("%d keys after DropMetadata", len(g.Keys()))
	}
	if v, ok := g.Uint("llama.block_count"); ok {
		t.Errorf("llama.block_count = %d after DropMetadata", v)
	}
	if gb, err := g.TensorData(&g.Tensors[3]); err != nil || !bytes.Equal(gb, fb) {
		t.Errorf("tensor data after DropMetadata: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := g.TensorData(&g.Tensors[3]); err == nil {
		t.Error("TensorData after Close succeeded")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "empty.gguf") {
		t.Errorf("empty file: %v", err)
	}
	text := filepath.Join(dir, "text.gguf")
	os.WriteFile(text, []byte("hello world, not a model"), 0o644)
	if _, err := Open(text); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("text file: %v", err)
	}
	full, err := os.ReadFile(builtinModel)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, full[:len(full)-100], 0o644)
	if _, err := Open(truncated); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "truncated.gguf") {
		t.Errorf("truncated file: %v", err)
	}
}

// TestParseTruncated cuts a valid file at every length: each prefix must fail cleanly.
func TestParseTruncated(t *testing.T) {
	full := sampleFile()
	for n := 0; n < len(full); n++ {
		if _, err := Parse(full[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes parsed", n, len(full))
		} else if !errors.Is(err, ErrFormat) {
			t.Fatalf("prefix of %d bytes: error %v does not wrap ErrFormat", n, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	kv := func(r *raw, key string, typ ValueType) { r.str(key); r.u32(uint32(typ)) }
	cases := []struct {
		name  string
		build func(r *raw)
		want  string
	}{
		{"bad magic", func(r *raw) { r.WriteString("GGML"); r.u32(3); r.u64(0); r.u64(0) }, "bad magic"},
		{"version 1", func(r *raw) { r.header(1, 0, 0) }, "unsupported GGUF version 1"},
		{"version 4", func(r *raw) { r.header(4, 0, 0) }, "unsupported GGUF version 4"},
		{"big endian", func(r *raw) { r.header(3<<24, 0, 0) }, "big-endian"},
		{"huge kv count", func(r *raw) { r.header(3, 0, math.MaxUint64) }, "metadata count"},
		{"huge tensor count", func(r *raw) { r.header(3, 1<<40, 0) }, "tensor count"},
		{"unknown value type", func(r *raw) { r.header(3, 0, 1); kv(r, "k", 13); r.u64(0) }, "unknown value type 13"},
		{"huge key length", func(r *raw) { r.header(3, 0, 1); r.u64(1 << 62); r.u64(0) }, "length"},
		{"huge string", func(r *raw) { r.header(3, 0, 1); kv(r, "k", TypeString); r.u64(1 << 50) }, "string length"},
		{"huge array", func(r *raw) {
			r.header(3, 0, 1)
			kv(r, "k", TypeArray)
			r.u32(uint32(TypeUint32))
			r.u64(1 << 40)
		}, "array length"},
		{"array count times size overflows", func(r *raw) {
			r.header(3, 0, 1)
			kv(r, "k", TypeArray)
			r.u32(uint32(TypeUint64))
			r.u64(1<<61 + 1)
		}, "array length"},
		{"unknown array element type", func(r *raw) {
			r.header(3, 0, 1)
			kv(r, "k", TypeArray)
			r.u32(99)
			r.u64(0)
		}, "unknown array element type 99"},
		{"deep nesting", func(r *raw) {
			r.header(3, 0, 1)
			kv(r, "k", TypeArray)
			for i := 0; i < 40; i++ {
				r.u32(uint32(TypeArray))
				r.u64(1)
			}
			r.u32(uint32(TypeUint8))
			r.u64(0)
		}, "nested deeper"},
		{"bad bool", func(r *raw) { r.header(3, 0, 1); kv(r, "k", TypeBool); r.u8(2) }, "bool value 2"},
		{"duplicate key", func(r *raw) {
			r.header(3, 0, 2)
			kv(r, "k", TypeUint8)
			r.u8(1)
			kv(r, "k", TypeUint8)
			r.u8(2)
		}, `duplicate metadata key "k"`},
		{"alignment zero", func(r *raw) { r.header(3, 0, 1); kv(r, KeyAlignment, TypeUint32); r.u32(0) }, KeyAlignment},
		{"alignment not power of two", func(r *raw) { r.header(3, 0, 1); kv(r, KeyAlignment, TypeUint32); r.u32(48) }, KeyAlignment},
		{"alignment string", func(r *raw) { r.header(3, 0, 1); kv(r, KeyAlignment, TypeString); r.str("32") }, KeyAlignment},
		{"unknown tensor type", func(r *raw) { r.header(3, 1, 0); r.tensor("t", 99, 0, 4); r.pad(32) }, "unknown tensor type 99"},
		{"too many dims", func(r *raw) { r.header(3, 1, 0); r.tensor("t", TypeF32, 0, 1, 1, 1, 1, 1); r.pad(32) }, "5 dims"},
		{"dims overflow", func(r *raw) {
			r.header(3, 1, 0)
			r.tensor("t", TypeF32, 0, 1<<32, 1<<32)
			r.pad(32)
		}, "overflow"},
		{"size overflow", func(r *raw) {
			r.header(3, 1, 0)
			r.tensor("t", TypeF32, 0, 1<<40, 1<<22)
			r.pad(32)
		}, "overflow"},
		{"partial block", func(r *raw) { r.header(3, 1, 0); r.tensor("t", TypeQ8_0, 0, 33); r.pad(32) }, "multiple of the Q8_0 block size 32"},
		{"misaligned offset", func(r *raw) {
			r.header(3, 1, 0)
			r.tensor("t", TypeF32, 4, 1)
			r.pad(32)
			r.Write(make([]byte, 64))
		}, "not a multiple of the alignment"},
		{"offset out of range", func(r *raw) {
			r.header(3, 1, 0)
			r.tensor("t", TypeF32, 32, 8)
			r.pad(32)
			r.Write(make([]byte, 48))
		}, "beyond"},
		{"huge offset", func(r *raw) {
			r.header(3, 1, 0)
			r.tensor("t", TypeF32, math.MaxUint64&^31, 8)
			r.pad(32)
		}, "beyond"},
		{"overlap", func(r *raw) {
			r.header(3, 2, 0)
			r.tensor("a", TypeF32, 0, 16)
			r.tensor("b", TypeF32, 32, 16)
			r.pad(32)
			r.Write(make([]byte, 96))
		}, "overlaps"},
		{"duplicate tensor", func(r *raw) {
			r.header(3, 2, 0)
			r.tensor("a", TypeF32, 0, 8)
			r.tensor("a", TypeF32, 32, 8)
			r.pad(32)
			r.Write(make([]byte, 64))
		}, `duplicate tensor name "a"`},
		{"data missing", func(r *raw) { r.header(3, 1, 0); r.tensor("t", TypeF32, 0, 8) }, "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r raw
			c.build(&r)
			_, err := Parse(r.Bytes())
			if err == nil {
				t.Fatalf("parsed; want error containing %q", c.want)
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q; want ErrFormat containing %q", err, c.want)
			}
		})
	}
}

func TestParseVersion2AndEmpty(t *testing.T) {
	var r raw
	r.header(2, 0, 1)
	r.str("general.architecture")
	r.u32(uint32(TypeString))
	r.str("llama")
	f, err := Parse(r.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.String("general.architecture"); f.Version != 2 || a != "llama" || len(f.Tensors) != 0 {
		t.Errorf("v2 file: version %d arch %q", f.Version, a)
	}
	// Zero-sized tensors may share an offset and need no data.
	r = raw{}
	r.header(3, 2, 0)
	r.tensor("e1", TypeF32, 0, 0)
	r.tensor("e2", TypeQ4_K, 0, 0, 7)
	if f, err = Parse(r.Bytes()); err != nil {
		t.Fatal(err)
	}
	b, err := f.TensorData(&f.Tensors[1])
	if err != nil || len(b) != 0 {
		t.Errorf("empty tensor: %d bytes, %v", len(b), err)
	}
	// Types kvq cannot convert are still listed with their sizes.
	r = raw{}
	r.header(3, 1, 0)
	r.tensor("k5", 17, 0, 256, 2)
	r.pad(32)
	r.Write(make([]byte, 2*74))
	if f, err = Parse(r.Bytes()); err != nil {
		t.Fatal(err)
	}
	if f.Tensors[0].Size != 148 || f.Tensors[0].Type.String() != "IQ2_XS" || f.Tensors[0].Type.Supported() {
		t.Errorf("IQ2_XS tensor: %+v", f.Tensors[0])
	}
}

func TestTensorDataBounds(t *testing.T) {
	f, err := Parse(sampleFile())
	if err != nil {
		t.Fatal(err)
	}
	bad := []*TensorInfo{
		nil,
		{Name: "far", Offset: 1 << 40, Size: 4},
		{Name: "long", Offset: 64, Size: 1 << 63},
		{Name: "tail", Offset: 64, Size: 17},
	}
	for _, ti := range bad {
		if b, err := f.TensorData(ti); err == nil {
			t.Errorf("TensorData(%+v) = %d bytes, want error", ti, len(b))
		}
	}
}
