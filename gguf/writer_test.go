package gguf

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
)

// allValues has one metadata pair of every value type, arrays of every element type,
// and nested arrays.
func allValues() []KV {
	return []KV{
		{"u8", uint8(7)}, {"i8", int8(-7)}, {"u16", uint16(65535)}, {"i16", int16(-32768)},
		{"u32", uint32(1 << 31)}, {"i32", int32(-1 << 31)}, {"f32", float32(-0.5)}, {"bool", true},
		{"str", "naïve ✓"}, {"u64", uint64(math.MaxUint64)}, {"i64", int64(math.MinInt64)}, {"f64", math.Pi},
		{"a.u8", []uint8{0, 255}}, {"a.i8", []int8{-128, 127}}, {"a.u16", []uint16{1, 2, 3}},
		{"a.i16", []int16{-1}}, {"a.u32", []uint32{}}, {"a.i32", []int32{-5, 5}},
		{"a.f32", []float32{1.5, float32(math.Inf(-1))}}, {"a.bool", []bool{true, false, true}},
		{"a.str", []string{"", "x", "<0x0A>"}}, {"a.u64", []uint64{math.MaxUint64}},
		{"a.i64", []int64{-1, 0}}, {"a.f64", []float64{math.SmallestNonzeroFloat64}},
		{"a.nested", []Value{
			{Type: TypeArray, Elem: TypeString, Data: []string{"p", "q"}},
			{Type: TypeArray, Elem: TypeArray, Data: []Value{{Type: TypeArray, Elem: TypeInt32, Data: []int32{9}}}},
		}},
	}
}

func TestWriteRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randVals := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	tensors := []Tensor{
		{"w.f32", TypeF32, []uint64{5, 3}, randVals(15, 1)},
		{"w.f16", TypeF16, []uint64{7}, randVals(7, 100)},
		{"w.q8", TypeQ8_0, []uint64{64, 3}, randVals(192, 0.02)},
		{"w.bf16", TypeBF16, []uint64{2, 2, 2, 2}, randVals(16, 1)},
		{"empty", TypeF32, []uint64{0, 4}, nil},
	}
	var buf bytes.Buffer
	if err := Write(&buf, allValues(), tensors); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != DefaultAlignment {
		t.Errorf("version %d alignment %d", f.Version, f.Alignment)
	}
	var wantKeys []string
	for _, kv := range allValues() {
		wantKeys = append(wantKeys, kv.Key)
		got, ok := f.Value(kv.Key)
		want, _ := ValueOf(kv.Value)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", kv.Key, got, want)
		}
	}
	if !reflect.DeepEqual(f.Keys(), wantKeys) {
		t.Errorf("keys %v", f.Keys())
	}
	if len(f.Tensors) != len(tensors) {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	for i, want := range tensors {
		ti := &f.Tensors[i]
		if ti.Name != want.Name || ti.Type != want.Type || !reflect.DeepEqual(ti.Dims, want.Dims) {
			t.Errorf("tensor %d: %+v, want %s %v %v", i, ti, want.Name, want.Type, want.Dims)
		}
		b, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, ti.Elems())
		if err := Dequantize(ti.Type, got, b); err != nil {
			t.Fatal(err)
		}
		for j, x := range want.Data {
			var exp float32
			switch want.Type {
			case TypeF32:
				exp = x
			case TypeF16:
				exp = F16ToF32(F32ToF16(x))
			case TypeBF16:
				exp = BF16ToF32(F32ToBF16(x))
			case TypeQ8_0:
				// Independent bound: |x − x̂| ≤ d/2 from rounding the code plus |code|·|d − d16|
				// ≤ 127 · d · 2^-11 from storing d in f16.
				blk := want.Data[j/32*32 : j/32*32+32]
				var amax float64
				for _, v := range blk {
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				d := amax / 127
				if e := math.Abs(float64(got[j] - x)); e > d*(0.5+127.0/2048)+1e-9 {
					t.Errorf("%s[%d] = %v, want %v within %g", want.Name, j, got[j], x, d*0.57)
				}
				continue
			}
			if got[j] != exp {
				t.Errorf("%s[%d] = %v, want %v", want.Name, j, got[j], exp)
			}
		}
	}
	// Writing the parsed metadata again gives identical bytes (metadata is canonical).
	var again bytes.Buffer
	w := NewWriter(&again)
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		if err := w.AddKV(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims...); err != nil {
			t.Fatal(err)
		}
	}
	for i := range f.Tensors {
		b, _ := f.TensorData(&f.Tensors[i])
		if len(b) > 0 {
			if err := w.WriteRaw(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Errorf("rewrite differs: %d vs %d bytes", again.Len(), buf.Len())
	}
}

// TestRewriteBuiltinModel copies the built-in model through Writer byte for byte.
func TestRewriteBuiltinModel(t *testing.T) {
	data, err := os.ReadFile(builtinModel)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		w.AddKV(k, v)
	}
	for _, ti := range f.Tensors {
		w.AddTensor(ti.Name, ti.Type, ti.Dims...)
	}
	for i := range f.Tensors {
		b, _ := f.TensorData(&f.Tensors[i])
		// in two chunks, to exercise chunking
		if err := w.WriteRaw(b[:len(b)/2]); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRaw(b[len(b)/2:]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Errorf("rewritten model differs (%d vs %d bytes)", out.Len(), len(data))
	}
}

func TestWriterAlignment(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, []KV{{KeyAlignment, uint64(256)}}, []Tensor{
		{"a", TypeF32, []uint64{3}, []float32{1, 2, 3}},
		{"b", TypeQ8_0, []uint64{32}, make([]float32, 32)},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 256 || f.DataOffset%256 != 0 || f.Tensors[1].Offset != 256 {
		t.Errorf("alignment %d data offset %d offset of b %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
	if uint64(buf.Len()) != f.DataOffset+512 {
		t.Errorf("file is %d bytes, want data offset %d + 512", buf.Len(), f.DataOffset)
	}
}

func TestQuantizeQ8_0(t *testing.T) {
	// max |x| = 127, so d = 1 and each code is round(x); the steps of 7.33 never land on a half.
	x := make([]float32, 32)
	want := make([]int8, 32)
	for j := range x {
		v := -127 + 7.33*float64(j)
		x[j] = float32(v)
		want[j] = int8(math.Round(v))
	}
	b := make([]byte, 34)
	if err := QuantizeQ8_0(b, x); err != nil {
		t.Fatal(err)
	}
	if b[0] != 0x00 || b[1] != 0x3c {
		t.Errorf("d = %#02x%02x, want f16 1.0 (0x3c00)", b[1], b[0])
	}
	for j := range want {
		if int8(b[2+j]) != want[j] {
			t.Errorf("code %d = %d, want %d", j, int8(b[2+j]), want[j])
		}
	}
	// A block of zeros, and a block whose largest value is negative.
	x = make([]float32, 64)
	x[32], x[33] = -2, 1
	b = make([]byte, 68)
	if err := QuantizeQ8_0(b, x); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:34], make([]byte, 34)) {
		t.Errorf("zero block encoded as %x", b[:34])
	}
	if F16ToF32(uint16(b[34])|uint16(b[35])<<8) != F16ToF32(F32ToF16(2.0/127)) || int8(b[36]) != -127 || int8(b[37]) != 64 {
		t.Errorf("block 2: %x", b[34:40])
	}
	// Errors.
	if err := QuantizeQ8_0(make([]byte, 34), make([]float32, 31)); err == nil {
		t.Error("31 values accepted")
	}
	if err := QuantizeQ8_0(make([]byte, 33), make([]float32, 32)); err == nil {
		t.Error("short destination accepted")
	}
	x = make([]float32, 32)
	x[5] = float32(math.NaN())
	if err := QuantizeQ8_0(make([]byte, 34), x); err == nil || !strings.Contains(err.Error(), "value 5") {
		t.Errorf("NaN: %v", err)
	}
	// Tiny values whose d underflows stay finite codes and decode to zero.
	x = make([]float32, 32)
	x[0] = math.SmallestNonzeroFloat32 * 3
	b = make([]byte, 34)
	if err := QuantizeQ8_0(b, x); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, 32)
	Dequantize(TypeQ8_0, y, b)
	if y[0] != 0 {
		t.Errorf("tiny value decodes to %v", y[0])
	}
}

func TestF32ToBF16(t *testing.T) {
	cases := []struct {
		x    float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {3.140625, 0x4049},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(1)), 0x7f80},
		{math.MaxFloat32, 0x7f80},
	}
	for _, c := range cases {
		if got := F32ToBF16(c.x); got != c.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
	if h := F32ToBF16(float32(math.NaN())); h&0x7f80 != 0x7f80 || h&0x7f == 0 {
		t.Errorf("NaN → %#04x", h)
	}
}

func TestWriterErrors(t *testing.T) {
	cases := []struct {
		name string
		run  func(w *Writer) error
		want string
	}{
		{"duplicate key", func(w *Writer) error { w.AddKV("k", uint8(1)); return w.AddKV("k", uint8(2)) }, "duplicate metadata key"},
		{"bad go type", func(w *Writer) error { return w.AddKV("k", 3) }, "no metadata type for Go type int"},
		{"bad alignment", func(w *Writer) error { return w.AddKV(KeyAlignment, uint32(24)) }, KeyAlignment},
		{"mismatched value", func(w *Writer) error { return w.AddKV("k", Value{Type: TypeUint32, Data: "x"}) }, "holds string"},
		{"mixed nested", func(w *Writer) error {
			return w.AddKV("k", []Value{{Type: TypeUint8, Data: uint8(1)}})
		}, "array of arrays"},
		{"duplicate tensor", func(w *Writer) error { w.AddTensor("t", TypeF32, 1); return w.AddTensor("t", TypeF32, 1) }, "duplicate tensor"},
		{"no dims", func(w *Writer) error { return w.AddTensor("t", TypeQ8_0) }, "no dims"},
		{"five dims", func(w *Writer) error { return w.AddTensor("t", TypeF32, 1, 1, 1, 1, 1) }, "at most 4"},
		{"partial block", func(w *Writer) error { return w.AddTensor("t", TypeQ8_0, 48) }, "block size 32"},
		{"unknown type", func(w *Writer) error { return w.AddTensor("t", 77, 1) }, "unknown tensor type"},
		{"overflow", func(w *Writer) error { return w.AddTensor("t", TypeF32, 1<<40, 1<<40) }, "overflow"},
		{"too much data", func(w *Writer) error { w.AddTensor("t", TypeF32, 2); return w.WriteF32(make([]float32, 3)) }, "past its end"},
		{"raw too much", func(w *Writer) error { w.AddTensor("t", TypeF32, 2); return w.WriteRaw(make([]byte, 9)) }, "past its remaining"},
		{"q8 partial chunk", func(w *Writer) error { w.AddTensor("t", TypeQ8_0, 64); return w.WriteF32(make([]float32, 16)) }, "whole number"},
		{"no encoder", func(w *Writer) error { w.AddTensor("t", TypeQ6_K, 256); return w.WriteF32(make([]float32, 256)) }, "no encoder"},
		{"incomplete", func(w *Writer) error {
			w.AddTensor("t", TypeF32, 4)
			w.AddTensor("u", TypeF32, 4)
			w.WriteF32([]float32{1, 2})
			return w.Close()
		}, `tensor "t" incomplete`},
		{"data after last", func(w *Writer) error {
			w.AddTensor("t", TypeF32, 1)
			w.WriteF32([]float32{1})
			return w.WriteF32([]float32{1})
		}, "after the last tensor"},
		{"kv after data", func(w *Writer) error {
			w.AddTensor("t", TypeF32, 1)
			w.WriteF32([]float32{1})
			return w.AddKV("k", "v")
		}, "after tensor data"},
		{"sticky", func(w *Writer) error { w.AddKV("k", 3); return w.AddKV("j", "fine") }, "Go type int"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run(NewWriter(&bytes.Buffer{}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if err := Write(&bytes.Buffer{}, nil, []Tensor{{"t", TypeF32, []uint64{4}, []float32{1}}}); err == nil || !strings.Contains(err.Error(), "has 1 values") {
		t.Errorf("short data: %v", err)
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errDisk = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterIOError(t *testing.T) {
	w := NewWriter(&failWriter{n: 100})
	w.AddTensor("t", TypeF32, 1<<16)
	var err error
	for i := 0; i < 4 && err == nil; i++ {
		err = w.WriteF32(make([]float32, 1<<14))
	}
	if err == nil {
		err = w.Close()
	}
	if !errors.Is(err, errDisk) {
		t.Errorf("error %v does not wrap the I/O error", err)
	}
}

func TestWriteMetadataOnly(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []KV{{"general.architecture", "llama"}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.String("general.architecture"); a != "llama" || len(f.Tensors) != 0 {
		t.Errorf("arch %q, %d tensors", a, len(f.Tensors))
	}
}

func TestWriteScalarTensor(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, nil, []Tensor{{Name: "s", Type: TypeF32, Data: []float32{42}}}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := f.Tensor("s")
	if !ok || len(ti.Dims) != 0 || ti.Elems() != 1 || ti.Size != 4 {
		t.Fatalf("scalar tensor: %+v", ti)
	}
	b, _ := f.TensorData(ti)
	got := make([]float32, 1)
	if err := Dequantize(TypeF32, got, b); err != nil || got[0] != 42 {
		t.Errorf("scalar = %v, %v", got, err)
	}
}

// TestRoundCode compares roundCode with math.Round (halves away from zero) at every
// half-integer in range, one float32 ulp either side, and random values.
func TestRoundCode(t *testing.T) {
	var xs []float32
	for k := -128; k <= 127; k++ {
		h := float32(k) + 0.5
		xs = append(xs, h, math.Nextafter32(h, 0), math.Nextafter32(h, 200), math.Nextafter32(h, -200), float32(k))
	}
	xs = append(xs, 0.49999997, -0.49999997, 1e-30, -1e-30, 0, 127.00001, -127.00001)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 100000; i++ {
		xs = append(xs, float32(rng.Float64()*260-130))
	}
	for _, x := range xs {
		want := math.Max(-127, math.Min(127, math.Round(float64(x))))
		if got := roundCode(x); float64(got) != want {
			t.Fatalf("roundCode(%v) = %d, want %v", x, got, want)
		}
	}
}

func TestEncode(t *testing.T) {
	src := make([]float32, 64)
	for i := range src {
		src[i] = float32(i-32) / 8
	}
	for _, typ := range []TensorType{TypeF32, TypeF16, TypeBF16, TypeQ8_0} {
		rb, _ := typ.RowBytes(len(src))
		dst := make([]byte, rb)
		if err := Encode(typ, dst, src); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, len(src))
		if err := Dequantize(typ, back, dst); err != nil {
			t.Fatal(err)
		}
		// Multiples of 1/8 in [-4, 4) are exact in F32, F16 and BF16; Q8_0 (d ≤ 4/127)
		// is within 0.57 of a step.
		for i := range src {
			tol := 0.0
			if typ == TypeQ8_0 {
				tol = 4.0 / 127 * 0.57
			}
			if math.Abs(float64(back[i]-src[i])) > tol {
				t.Errorf("%v value %d: %v, want %v", typ, i, back[i], src[i])
			}
		}
		if err := Encode(typ, dst[:rb-1], src); err == nil {
			t.Errorf("%v: short destination accepted", typ)
		}
	}
	if err := Encode(TypeQ6_K, make([]byte, 210), make([]float32, 256)); err == nil || !strings.Contains(err.Error(), "no encoder") {
		t.Errorf("Q6_K: %v", err)
	}
}
