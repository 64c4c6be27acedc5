package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Writer writes a GGUF version 3 file in one pass, streaming tensor data so that a file
// larger than memory can be produced chunk by chunk.
//
// Use it in three phases:
//
//  1. AddKV for each metadata pair and AddTensor for each tensor (any order; keys and
//     tensors are written in the order added).
//  2. WriteF32 or WriteRaw with the data of the tensors, in the order they were added,
//     in as many chunks as convenient. The header is written before the first data.
//  3. Close, which writes the header if no data was written (a file without tensors),
//     checks that every tensor received all its data, and flushes. Close does not close
//     the underlying io.Writer.
//
// Tensor offsets are laid out densely: each tensor starts at the next multiple of the
// alignment (general.alignment if added, else 32) after the previous one, and each
// tensor's data is followed by zero padding up to that multiple.
//
// After the first error every method returns that error.
type Writer struct {
	bw       *bufio.Writer
	align    uint64
	keys     []string
	values   map[string]Value
	tensors  []TensorInfo
	names    map[string]bool
	started  bool   // header written
	cur      int    // index of the tensor receiving data
	curBytes uint64 // bytes of tensors[cur] written so far
	scratch  []byte
	err      error
	closed   bool
}

// NewWriter returns a Writer that writes a GGUF v3 file to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{
		bw:     bufio.NewWriterSize(w, 1<<16),
		align:  DefaultAlignment,
		values: map[string]Value{},
		names:  map[string]bool{},
	}
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// AddKV adds a metadata pair. v is a Value or any Go value ValueOf accepts (uint32,
// float32, string, []string, []float32, []int32, ...). Setting general.alignment (any
// integer type, a power of two up to 2^30) changes the alignment of the tensor data.
// Keys must be unique and added before the first tensor data is written.
func (w *Writer) AddKV(key string, v any) error {
	if w.err != nil {
		return w.err
	}
	if w.started {
		return w.fail(fmt.Errorf("gguf: AddKV(%q) after tensor data was written", key))
	}
	if _, dup := w.values[key]; dup {
		return w.fail(fmt.Errorf("gguf: duplicate metadata key %q", key))
	}
	val, err := ValueOf(v)
	if err != nil {
		return w.fail(fmt.Errorf("gguf: metadata %q: %w", key, err))
	}
	if key == KeyAlignment {
		a, ok := asUint64(val.Data)
		if !ok || val.Type == TypeArray || a == 0 || a&(a-1) != 0 || a > 1<<30 {
			return w.fail(fmt.Errorf("gguf: %s must be a power-of-two integer up to 2^30, got %v", KeyAlignment, v))
		}
		w.align = a
	}
	w.keys = append(w.keys, key)
	w.values[key] = val
	return nil
}

// AddTensor declares a tensor of the given type and dims (GGML order: dims[0] is the
// row length, which must be a whole number of the type's blocks). At most 4 dims; no
// dims is a single value (float and integer types only).
func (w *Writer) AddTensor(name string, typ TensorType, dims ...uint64) error {
	if w.err != nil {
		return w.err
	}
	if w.started {
		return w.fail(fmt.Errorf("gguf: AddTensor(%q) after tensor data was written", name))
	}
	if w.names[name] {
		return w.fail(fmt.Errorf("gguf: duplicate tensor name %q", name))
	}
	if len(dims) > maxDims {
		return w.fail(fmt.Errorf("gguf: tensor %q has %d dims, GGML allows at most %d", name, len(dims), maxDims))
	}
	be, bb, ok := typ.layout()
	if !ok {
		return w.fail(fmt.Errorf("gguf: tensor %q: unknown tensor type %v", name, typ))
	}
	if len(dims) == 0 && be != 1 {
		return w.fail(fmt.Errorf("gguf: tensor %q has no dims but type %v has blocks of %d", name, typ, be))
	}
	if len(dims) > 0 && dims[0]%uint64(be) != 0 {
		return w.fail(fmt.Errorf("gguf: tensor %q row length %d is not a multiple of the %v block size %d", name, dims[0], typ, be))
	}
	elems := uint64(1)
	for _, d := range dims {
		if d != 0 && elems > math.MaxInt64/d {
			return w.fail(fmt.Errorf("gguf: tensor %q dims %v overflow", name, dims))
		}
		elems *= d
	}
	if elems/uint64(be) > math.MaxInt64/uint64(bb) {
		return w.fail(fmt.Errorf("gguf: tensor %q dims %v overflow its byte size", name, dims))
	}
	w.names[name] = true
	w.tensors = append(w.tensors, TensorInfo{
		Name: name, Dims: append([]uint64(nil), dims...), Type: typ,
		Size: elems / uint64(be) * uint64(bb),
	})
	return nil
}

// Tensors returns the tensors declared so far, with the offsets they will have once
// the header is written (offsets are final after the first WriteF32/WriteRaw/Close).
func (w *Writer) Tensors() []TensorInfo {
	w.layout()
	return w.tensors
}

func (w *Writer) layout() {
	off := uint64(0)
	for i := range w.tensors {
		w.tensors[i].Offset = off
		off = alignUp(off+w.tensors[i].Size, w.align)
	}
}

// writeHeader writes magic, counts, metadata, tensor infos and the padding before the
// data section.
func (w *Writer) writeHeader() error {
	w.started = true
	w.layout()
	var e encoder
	e.buf = append(e.buf, Magic...)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.keys)))
	for _, k := range w.keys {
		e.str(k)
		v := w.values[k]
		e.u32(uint32(v.Type))
		if err := e.value(v, 0); err != nil {
			return w.fail(fmt.Errorf("gguf: metadata %q: %w", k, err))
		}
	}
	for _, ti := range w.tensors {
		e.str(ti.Name)
		e.u32(uint32(len(ti.Dims)))
		for _, d := range ti.Dims {
			e.u64(d)
		}
		e.u32(uint32(ti.Type))
		e.u64(ti.Offset)
	}
	for uint64(len(e.buf))%w.align != 0 {
		e.buf = append(e.buf, 0)
	}
	if _, err := w.bw.Write(e.buf); err != nil {
		return w.fail(fmt.Errorf("gguf: write header: %w", err))
	}
	w.skipEmpty()
	return nil
}

// skipEmpty advances past zero-sized tensors, which need no data.
func (w *Writer) skipEmpty() {
	for w.cur < len(w.tensors) && w.tensors[w.cur].Size == 0 {
		w.cur++
	}
}

// WriteRaw writes bytes already encoded in the current tensor's type. b may be any part
// of the tensor's remaining data; a chunk never spans two tensors.
func (w *Writer) WriteRaw(b []byte) error {
	if err := w.beginData(); err != nil {
		return err
	}
	ti := &w.tensors[w.cur]
	if uint64(len(b)) > ti.Size-w.curBytes {
		return w.fail(fmt.Errorf("gguf: tensor %q: %d bytes written past its remaining %d", ti.Name, len(b), ti.Size-w.curBytes))
	}
	return w.emit(b)
}

// WriteF32 encodes values into the current tensor's type (F32, F16, BF16 or Q8_0) and
// writes them. len(src) must be a whole number of the type's blocks (32 for Q8_0) and
// not exceed the tensor's remaining values; a chunk never spans two tensors. Q8_0
// rejects non-finite values.
func (w *Writer) WriteF32(src []float32) error {
	if err := w.beginData(); err != nil {
		return err
	}
	ti := &w.tensors[w.cur]
	n, err := ti.Type.RowBytes(len(src))
	if err != nil {
		return w.fail(fmt.Errorf("gguf: tensor %q: %w", ti.Name, err))
	}
	if uint64(n) > ti.Size-w.curBytes {
		return w.fail(fmt.Errorf("gguf: tensor %q: %d values written past its end", ti.Name, len(src)))
	}
	if cap(w.scratch) < n {
		w.scratch = make([]byte, n)
	}
	buf := w.scratch[:n]
	if err := Encode(ti.Type, buf, src); err != nil {
		return w.fail(fmt.Errorf("gguf: tensor %q: %w", ti.Name, err))
	}
	return w.emit(buf)
}

func (w *Writer) beginData() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return w.fail(errors.New("gguf: write after Close"))
	}
	if !w.started {
		if err := w.writeHeader(); err != nil {
			return err
		}
	}
	if w.cur >= len(w.tensors) {
		return w.fail(errors.New("gguf: tensor data written after the last tensor was complete"))
	}
	return nil
}

// emit writes b to the current tensor and, when it is complete, its padding.
func (w *Writer) emit(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		return w.fail(fmt.Errorf("gguf: write tensor %q: %w", w.tensors[w.cur].Name, err))
	}
	w.curBytes += uint64(len(b))
	ti := &w.tensors[w.cur]
	if w.curBytes == ti.Size {
		pad := alignUp(ti.Size, w.align) - ti.Size
		if pad > 0 {
			if _, err := w.bw.Write(make([]byte, pad)); err != nil {
				return w.fail(fmt.Errorf("gguf: write padding after %q: %w", ti.Name, err))
			}
		}
		w.cur++
		w.curBytes = 0
		w.skipEmpty()
	}
	return nil
}

// Close finishes the file: it writes the header if no data was written, checks that
// every declared tensor received all its data, and flushes buffered bytes. It does not
// close the underlying io.Writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	if !w.started {
		if err := w.writeHeader(); err != nil {
			return err
		}
	}
	w.closed = true
	if w.cur < len(w.tensors) {
		ti := w.tensors[w.cur]
		return w.fail(fmt.Errorf("gguf: Close with tensor %q incomplete (%d of %d bytes written) and %d tensors after it",
			ti.Name, w.curBytes, ti.Size, len(w.tensors)-w.cur-1))
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(fmt.Errorf("gguf: flush: %w", err))
	}
	return nil
}

// Encode converts src into dst in tensor type t: F32, F16 and BF16 (rounded to nearest
// even), Q8_0, Q4_0, Q5_0 or Q4_K (QuantizeQ8_0, QuantizeQ4_0, QuantizeQ5_0,
// QuantizeQ4_K, which reject non-finite values).
// len(src) must be a whole number of t's blocks and len(dst) exactly
// t.RowBytes(len(src)).
func Encode(t TensorType, dst []byte, src []float32) error {
	n, err := t.RowBytes(len(src))
	if err != nil {
		return fmt.Errorf("gguf: encode: %w", err)
	}
	if len(dst) != n {
		return fmt.Errorf("gguf: encode %d %v values: destination has %d bytes, want %d", len(src), t, len(dst), n)
	}
	switch t {
	case TypeF32:
		for i, x := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
		}
	case TypeF16:
		for i, x := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(x))
		}
	case TypeBF16:
		for i, x := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(x))
		}
	case TypeQ8_0:
		return QuantizeQ8_0(dst, src)
	case TypeQ4_K:
		return QuantizeQ4_K(dst, src)
	case TypeQ4_0:
		return QuantizeQ4_0(dst, src)
	case TypeQ5_0:
		return QuantizeQ5_0(dst, src)
	default:
		return fmt.Errorf("gguf: encode: no encoder for type %v (write its bytes with WriteRaw)", t)
	}
	return nil
}

// KV is one metadata pair for Write. Value is a Value or any Go value ValueOf accepts.
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor for Write: its name, the type to store it in (F32, F16, BF16 or
// Q8_0), its dims in GGML order, and its values (the product of Dims of them, row-major
// with Dims[0] fastest).
type Tensor struct {
	Name string
	Type TensorType
	Dims []uint64
	Data []float32
}

// Write writes a whole GGUF v3 file: the metadata in order, then the tensors in order,
// each encoded from float32 into its Type.
func Write(out io.Writer, meta []KV, tensors []Tensor) error {
	w := NewWriter(out)
	for _, kv := range meta {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	for _, t := range tensors {
		if err := w.AddTensor(t.Name, t.Type, t.Dims...); err != nil {
			return err
		}
	}
	for i, t := range tensors {
		ti := w.Tensors()[i]
		if uint64(len(t.Data)) != ti.Elems() {
			return fmt.Errorf("gguf: tensor %q has %d values, its dims %v hold %d", t.Name, len(t.Data), t.Dims, ti.Elems())
		}
		if len(t.Data) == 0 {
			continue
		}
		if err := w.WriteF32(t.Data); err != nil {
			return err
		}
	}
	return w.Close()
}

// F32ToBF16 converts a float32 to bfloat16 bits, rounding to nearest with ties to even;
// NaNs stay NaNs.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// encoder appends little-endian GGUF fields to buf.
type encoder struct{ buf []byte }

func (e *encoder) u32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }
func (e *encoder) u64(v uint64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.buf = append(e.buf, s...) }

// value appends v's payload (without its type tag).
func (e *encoder) value(v Value, depth int) error {
	if err := v.check(depth); err != nil {
		return err
	}
	le := binary.LittleEndian
	switch x := v.Data.(type) {
	case uint8:
		e.buf = append(e.buf, x)
	case int8:
		e.buf = append(e.buf, byte(x))
	case uint16:
		e.buf = le.AppendUint16(e.buf, x)
	case int16:
		e.buf = le.AppendUint16(e.buf, uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		e.buf = append(e.buf, boolByte(x))
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	default:
		e.u32(uint32(v.Elem))
		e.u64(uint64(v.Len()))
		return e.array(v, depth)
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// array appends the elements of an array value.
func (e *encoder) array(v Value, depth int) error {
	le := binary.LittleEndian
	switch x := v.Data.(type) {
	case []uint8:
		e.buf = append(e.buf, x...)
	case []int8:
		for _, y := range x {
			e.buf = append(e.buf, byte(y))
		}
	case []uint16:
		for _, y := range x {
			e.buf = le.AppendUint16(e.buf, y)
		}
	case []int16:
		for _, y := range x {
			e.buf = le.AppendUint16(e.buf, uint16(y))
		}
	case []uint32:
		for _, y := range x {
			e.u32(y)
		}
	case []int32:
		for _, y := range x {
			e.u32(uint32(y))
		}
	case []float32:
		for _, y := range x {
			e.u32(math.Float32bits(y))
		}
	case []bool:
		for _, y := range x {
			e.buf = append(e.buf, boolByte(y))
		}
	case []string:
		for _, y := range x {
			e.str(y)
		}
	case []uint64:
		for _, y := range x {
			e.u64(y)
		}
	case []int64:
		for _, y := range x {
			e.u64(uint64(y))
		}
	case []float64:
		for _, y := range x {
			e.u64(math.Float64bits(y))
		}
	case []Value:
		for i, y := range x {
			e.u32(uint32(y.Elem))
			e.u64(uint64(y.Len()))
			if err := e.array(y, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	default:
		return fmt.Errorf("array holds %T", v.Data)
	}
	return nil
}
