// Package gguf reads and writes GGUF files (versions 2 and 3), the container llama.cpp
// uses for model weights and their metadata, and converts GGML tensor types to float32.
//
// File layout (all integers little-endian):
//
//	magic         4 bytes  "GGUF"
//	version       u32      2 or 3
//	tensor_count  u64
//	kv_count      u64
//	kv_count × {key string, value_type u32, value}
//	tensor_count × {name string, n_dims u32, dims n_dims × u64, type u32, offset u64}
//	padding to a multiple of general.alignment (default 32)
//	tensor data   each tensor at data_start + offset; offsets are multiples of the alignment
//
// A string is a u64 byte length followed by that many bytes (UTF-8, no terminator).
// An array value is {element_type u32, count u64, count × element}; arrays may nest.
// Dims are in GGML order: dims[0] (ne[0]) is the length of a row, the fastest-varying index.
//
// The reader never panics on malformed input: every inconsistency (bad magic, unknown
// types, truncation, counts or lengths larger than the remaining bytes, tensor data out
// of range or overlapping) is reported as an error that names what was wrong.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"
	"strings"

	"kvq/internal/hugemem"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// DefaultAlignment is the alignment of tensor data when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides DefaultAlignment.
const KeyAlignment = "general.alignment"

// maxDims is GGML's limit on tensor dimensions.
const maxDims = 4

// ErrFormat is wrapped by every error that reports a malformed or unsupported file.
var ErrFormat = errors.New("gguf: malformed file")

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name string
	// Dims in GGML order: Dims[0] (ne[0]) is the row length, the fastest-varying index.
	Dims []uint64
	Type TensorType
	// Offset of the tensor's first byte from the start of the data section, in bytes.
	Offset uint64
	// Size of the tensor's data in bytes (computed from Dims and Type).
	Size uint64
}

// Elems returns the number of values of the tensor (the product of its dims; 1 for no dims).
func (ti *TensorInfo) Elems() uint64 {
	n := uint64(1)
	for _, d := range ti.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. Its metadata is decoded into Go values; tensor data stays
// in the underlying bytes (a read-only memory mapping for Open, the caller's slice for
// Parse) and is reached through TensorData.
type File struct {
	// Version is the GGUF version of the file (2 or 3).
	Version uint32
	// Tensors in file order.
	Tensors []TensorInfo
	// Alignment of the tensor data section, in bytes.
	Alignment uint64
	// DataOffset is the position of the tensor data section from the start of the file.
	DataOffset uint64

	keys    []string
	values  map[string]Value
	tensors map[string]int
	data    []byte // whole file
	unmap   func() error
	closed  bool
	copies  [][]byte        // Preload: per tensor, its copy or nil
	region  *hugemem.Region // Preload: the copies' memory
}

// Open maps the file at path read-only into memory (reading it into memory where
// mapping is not possible) and parses it. Close releases the mapping; tensor data
// slices must not be used after Close.
func Open(path string) (*File, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err) // an *fs.PathError: "open PATH: reason"
	}
	f, err := Parse(data)
	if err != nil {
		if unmap != nil {
			unmap()
		}
		return nil, fmt.Errorf("%s: %w", path, err) // err starts "gguf: "
	}
	f.unmap = unmap
	if unmap != nil {
		// The header and metadata are decoded (strings copied); only tensor data is
		// read from the mapping from now on.
		dropPages(data[:f.DataOffset])
	}
	return f, nil
}

// readWhole is the fallback of Open where mapping is unavailable.
func readWhole(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, nil, err
}

// Close releases the file's memory mapping, if any. It is safe to call more than once.
// After Close, TensorData returns an error.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.data, f.copies = nil, nil
	if f.region != nil {
		f.region.Free()
		f.region = nil
	}
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		return u()
	}
	return nil
}

// Parse parses a GGUF file held in data. Tensor data is not copied: TensorData returns
// sub-slices of data, which must stay unchanged while the File is used.
func Parse(data []byte) (*File, error) {
	d := decoder{buf: data}
	magic, err := d.bytes(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("%w: bad magic %q, want %q (not a GGUF file)", ErrFormat, magic, Magic)
	}
	f := &File{values: map[string]Value{}, tensors: map[string]int{}, data: data}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if sw := bits.ReverseBytes32(f.Version); sw == 2 || sw == 3 {
		return nil, fmt.Errorf("%w: big-endian GGUF (version %d byte-swapped) is not supported", ErrFormat, sw)
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("%w: unsupported GGUF version %d (kvq reads 2 and 3)", ErrFormat, f.Version)
	}
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// Each key/value pair takes at least 13 bytes (key length, type, one byte of value),
	// each tensor info at least 24 (name length, n_dims, type, offset).
	if err := d.checkCount(nKV, 13, "metadata count"); err != nil {
		return nil, err
	}
	if err := d.checkCount(nTensors, 24, "tensor count"); err != nil {
		return nil, err
	}

	f.keys = make([]string, 0, nKV)
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str("metadata key")
		if err != nil {
			return nil, fmt.Errorf("metadata #%d: %w", i, err)
		}
		if err := d.charge(kvCost, "metadata"); err != nil {
			return nil, err
		}
		if _, dup := f.values[key]; dup {
			return nil, fmt.Errorf("%w: duplicate metadata key %q", ErrFormat, key)
		}
		vt, err := d.u32("value type")
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		v, err := d.value(ValueType(vt), 0)
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		f.keys = append(f.keys, key)
		f.values[key] = v
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.values[KeyAlignment]; ok {
		a, isInt := asUint64(v.Data)
		if !isInt || v.Type == TypeArray || a == 0 || a&(a-1) != 0 || a > 1<<30 {
			return nil, fmt.Errorf("%w: %s must be a power-of-two integer up to 2^30, got %v (%v)", ErrFormat, KeyAlignment, v.Data, v.Type)
		}
		f.Alignment = a
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		ti, err := d.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("tensor info #%d: %w", i, err)
		}
		if err := d.charge(tensorCost+8*int64(len(ti.Dims)), "tensor infos"); err != nil {
			return nil, err
		}
		if _, dup := f.tensors[ti.Name]; dup {
			return nil, fmt.Errorf("%w: duplicate tensor name %q", ErrFormat, ti.Name)
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}

	start := alignUp(uint64(d.pos), f.Alignment)
	if start > uint64(len(data)) {
		needData := false
		for _, ti := range f.Tensors {
			needData = needData || ti.Size > 0
		}
		if needData {
			return nil, fmt.Errorf("%w: truncated before the tensor data section (file is %d bytes, data starts at %d)", ErrFormat, len(data), start)
		}
		start = uint64(len(data))
	}
	f.DataOffset = start
	if err := f.checkTensorRanges(uint64(len(data)) - start); err != nil {
		return nil, err
	}
	return f, nil
}

// checkTensorRanges verifies that every tensor is aligned, lies inside a data section
// of dataLen bytes, and overlaps no other tensor.
func (f *File) checkTensorRanges(dataLen uint64) error {
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	for _, ti := range f.Tensors {
		if ti.Offset%f.Alignment != 0 {
			return fmt.Errorf("%w: tensor %q offset %d is not a multiple of the alignment %d", ErrFormat, ti.Name, ti.Offset, f.Alignment)
		}
		if ti.Offset > dataLen || ti.Size > dataLen-ti.Offset {
			return fmt.Errorf("%w: tensor %q data [%d, %d+%d) lies beyond the %d-byte data section (file truncated or offset out of range)",
				ErrFormat, ti.Name, ti.Offset, ti.Offset, ti.Size, dataLen)
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if prev.Size > 0 && cur.Size > 0 && prev.Offset+prev.Size > cur.Offset {
			return fmt.Errorf("%w: tensor %q data [%d, %d) overlaps tensor %q starting at %d",
				ErrFormat, prev.Name, prev.Offset, prev.Offset+prev.Size, cur.Name, cur.Offset)
		}
	}
	return nil
}

func alignUp(x, a uint64) uint64 {
	if r := x % a; r != 0 {
		return x + (a - r)
	}
	return x
}

// DropMetadata forgets the decoded metadata, to free its memory: afterwards Keys is
// empty and the getters find nothing; tensors and their data stay. A vocabulary's
// arrays are most of it (about 1 MB for 32k tokens, over 10 MB for 128k tokens and
// their merge rules), which a model no longer needs once its tokenizer is built.
func (f *File) DropMetadata() {
	f.keys, f.values = nil, nil
}

// Keys returns the metadata keys in file order. The slice is shared; do not modify it.
func (f *File) Keys() []string { return f.keys }

// Value returns the metadata value stored under key.
func (f *File) Value(key string) (Value, bool) {
	v, ok := f.values[key]
	return v, ok
}

// String returns a string metadata value.
func (f *File) String(key string) (string, bool) {
	s, ok := f.values[key].Data.(string)
	return s, ok
}

// Uint returns an integer metadata value of any width and signedness as uint64; ok is
// false if the key is absent, not an integer, or negative.
func (f *File) Uint(key string) (uint64, bool) {
	v, ok := f.values[key]
	if !ok || v.Type == TypeArray {
		return 0, false
	}
	return asUint64(v.Data)
}

// Int returns an integer metadata value of any width and signedness as int64; ok is
// false if the key is absent, not an integer, or a uint64 above math.MaxInt64.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.values[key]
	if !ok || v.Type == TypeArray {
		return 0, false
	}
	return asInt64(v.Data)
}

// Float returns a float32, float64 or integer metadata value as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.values[key]
	if !ok {
		return 0, false
	}
	switch x := v.Data.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	}
	if i, ok := asInt64(v.Data); ok {
		return float64(i), true
	}
	return 0, false
}

// Bool returns a bool metadata value.
func (f *File) Bool(key string) (bool, bool) {
	b, ok := f.values[key].Data.(bool)
	return b, ok
}

// Strings returns an array-of-strings metadata value. The slice is shared; do not modify it.
func (f *File) Strings(key string) ([]string, bool) {
	s, ok := f.values[key].Data.([]string)
	return s, ok
}

// Float32s returns an array of float32 metadata value. The slice is shared; do not
// modify it. An array of float64 is converted (into a new slice).
func (f *File) Float32s(key string) ([]float32, bool) {
	switch x := f.values[key].Data.(type) {
	case []float32:
		return x, true
	case []float64:
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = float32(v)
		}
		return out, true
	}
	return nil, false
}

// Int32s returns an integer array metadata value of any element width as []int32; ok is
// false if the key is absent, not an integer array, or an element does not fit in int32.
// An []int32 array is shared (do not modify it); other widths are converted.
func (f *File) Int32s(key string) ([]int32, bool) {
	v, ok := f.values[key]
	if !ok || v.Type != TypeArray {
		return nil, false
	}
	if x, ok := v.Data.([]int32); ok {
		return x, true
	}
	var get func(i int) (int64, bool)
	switch x := v.Data.(type) {
	case []uint8:
		get = func(i int) (int64, bool) { return int64(x[i]), true }
	case []int8:
		get = func(i int) (int64, bool) { return int64(x[i]), true }
	case []uint16:
		get = func(i int) (int64, bool) { return int64(x[i]), true }
	case []int16:
		get = func(i int) (int64, bool) { return int64(x[i]), true }
	case []uint32:
		get = func(i int) (int64, bool) { return int64(x[i]), true }
	case []int64:
		get = func(i int) (int64, bool) { return x[i], true }
	case []uint64:
		get = func(i int) (int64, bool) { return asInt64(x[i]) }
	default:
		return nil, false
	}
	out := make([]int32, v.Len())
	for i := range out {
		n, ok := get(i)
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(n)
	}
	return out, true
}

// Tensor returns the info of the tensor with the given name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of a tensor as a sub-slice of the file's data (no copy;
// read-only for mapped files). ti must describe a tensor of f (its Offset and Size are
// checked against the data section).
func (f *File) TensorData(ti *TensorInfo) ([]byte, error) {
	if f.closed {
		return nil, errors.New("gguf: TensorData on a closed file")
	}
	if ti == nil {
		return nil, errors.New("gguf: TensorData of a nil tensor info")
	}
	dataLen := uint64(len(f.data)) - f.DataOffset
	if ti.Offset > dataLen || ti.Size > dataLen-ti.Offset {
		return nil, fmt.Errorf("gguf: tensor %q data [%d, %d+%d) lies outside the %d-byte data section", ti.Name, ti.Offset, ti.Offset, ti.Size, dataLen)
	}
	if i, ok := f.tensors[ti.Name]; ok && f.copies != nil && f.copies[i] != nil && f.Tensors[i].Offset == ti.Offset && f.Tensors[i].Size == ti.Size {
		return f.copies[i], nil
	}
	lo := f.DataOffset + ti.Offset
	return f.data[lo : lo+ti.Size : lo+ti.Size], nil
}

// decoder reads little-endian fields from buf, tracking the position for error messages.
type decoder struct {
	buf  []byte
	pos  int
	cost int64 // bytes of memory the values decoded so far take, estimated from above
}

// Memory a decoded item takes beyond its contents, in bytes: a metadata pair (its
// key's header, a Value, a map entry and the slice of keys), a tensor info (the
// struct, its name's header, the map entry), a string header, and a nested array (a
// Value and the slice header boxed in it).
const (
	kvCost     = 128
	tensorCost = 128
	strCost    = 16
	arrayCost  = 48
)

// charge adds n bytes to the decoded cost and fails once it exceeds twice the bytes
// read so far plus 1 MiB: the metadata of real files takes less than twice its size
// in memory (a vocabulary is strings, each read as a header and its bytes), so a
// file whose metadata would cost more (millions of tiny values, nested empty arrays)
// is refused before it is decoded, instead of costing 5–9× its size.
func (d *decoder) charge(n int64, what string) error {
	d.cost += n
	if limit := 2*int64(d.pos) + 1<<20; d.cost > limit {
		return fmt.Errorf("%w: %s at offset %d would take %d bytes of memory decoded, more than the %d allowed for %d bytes of file", ErrFormat, what, d.pos, d.cost, limit, d.pos)
	}
	return nil
}

func (d *decoder) remaining() int { return len(d.buf) - d.pos }

func (d *decoder) bytes(n uint64, what string) ([]byte, error) {
	if n > uint64(d.remaining()) {
		return nil, fmt.Errorf("%w: truncated reading %s at offset %d (need %d bytes, %d remain)", ErrFormat, what, d.pos, n, d.remaining())
	}
	b := d.buf[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.bytes(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.bytes(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// checkCount rejects a count of items that cannot fit in the remaining bytes when each
// takes at least minSize bytes, so that no allocation exceeds the input's size.
func (d *decoder) checkCount(n uint64, minSize int, what string) error {
	if minSize > 0 && n > uint64(d.remaining())/uint64(minSize) {
		return fmt.Errorf("%w: %s %d is impossible: %d bytes remain at offset %d", ErrFormat, what, n, d.remaining(), d.pos)
	}
	return nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		return "", fmt.Errorf("%w: %s length %d exceeds the %d bytes remaining at offset %d", ErrFormat, what, n, d.remaining(), d.pos)
	}
	if err := d.charge(strCost+int64(n), what); err != nil {
		return "", err
	}
	b, _ := d.bytes(n, what)
	return string(b), nil
}

// value decodes one value of type t; depth counts enclosing arrays.
func (d *decoder) value(t ValueType, depth int) (Value, error) {
	if !t.valid() {
		return Value{}, fmt.Errorf("%w: unknown value type %d at offset %d", ErrFormat, uint32(t), d.pos-4)
	}
	if t == TypeArray {
		return d.array(depth)
	}
	if t == TypeString {
		s, err := d.str("string")
		return Value{Type: t, Data: s}, err
	}
	b, err := d.bytes(uint64(t.size()), t.String())
	if err != nil {
		return Value{}, err
	}
	v := Value{Type: t}
	switch t {
	case TypeUint8:
		v.Data = b[0]
	case TypeInt8:
		v.Data = int8(b[0])
	case TypeUint16:
		v.Data = binary.LittleEndian.Uint16(b)
	case TypeInt16:
		v.Data = int16(binary.LittleEndian.Uint16(b))
	case TypeUint32:
		v.Data = binary.LittleEndian.Uint32(b)
	case TypeInt32:
		v.Data = int32(binary.LittleEndian.Uint32(b))
	case TypeFloat32:
		v.Data = math.Float32frombits(binary.LittleEndian.Uint32(b))
	case TypeBool:
		if b[0] > 1 {
			return Value{}, fmt.Errorf("%w: bool value %d at offset %d is neither 0 nor 1", ErrFormat, b[0], d.pos-1)
		}
		v.Data = b[0] == 1
	case TypeUint64:
		v.Data = binary.LittleEndian.Uint64(b)
	case TypeInt64:
		v.Data = int64(binary.LittleEndian.Uint64(b))
	case TypeFloat64:
		v.Data = math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return v, nil
}

func (d *decoder) array(depth int) (Value, error) {
	if depth >= maxDepth {
		return Value{}, fmt.Errorf("%w: arrays nested deeper than %d at offset %d", ErrFormat, maxDepth, d.pos)
	}
	et, err := d.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, fmt.Errorf("%w: unknown array element type %d at offset %d", ErrFormat, et, d.pos-4)
	}
	n, err := d.u64("array length")
	if err != nil {
		return Value{}, err
	}
	if err := d.checkCount(n, elem.minSize(), "array length"); err != nil {
		return Value{}, err
	}
	v := Value{Type: TypeArray, Elem: elem}
	switch elem {
	case TypeString:
		out, err := d.strings(n)
		if err != nil {
			return Value{}, err
		}
		v.Data = out
	case TypeArray:
		// Grown as decoded, each element charged once read: a count cannot claim
		// memory ahead of the bytes that back it.
		var out []Value
		for i := range n {
			e, err := d.array(depth + 1)
			if err != nil {
				return Value{}, fmt.Errorf("array element %d: %w", i, err)
			}
			if err := d.charge(arrayCost, "nested arrays"); err != nil {
				return Value{}, err
			}
			out = append(out, e)
		}
		v.Data = out
	default:
		raw, _ := d.bytes(n*uint64(elem.size()), "array")
		if err := d.charge(int64(len(raw)), "array"); err != nil {
			return Value{}, err
		}
		v.Data, err = decodeScalars(elem, raw, d.pos-len(raw))
		if err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

// strings reads an array of n strings into one allocation of their bytes (a string
// each would cost an allocation of its own, rounded up to a size class): a first
// pass finds their total length, a second copies them, a third slices them out.
func (d *decoder) strings(n uint64) ([]string, error) {
	start := d.pos
	total := uint64(0)
	for i := range n {
		k, err := d.u64("string length")
		if err != nil {
			return nil, fmt.Errorf("array element %d: %w", i, err)
		}
		if _, err := d.bytes(k, "string"); err != nil {
			return nil, fmt.Errorf("array element %d: %w", i, err)
		}
		total += k
	}
	if err := d.charge(int64(n)*strCost+int64(total), "string array"); err != nil {
		return nil, err
	}
	end := d.pos
	var all strings.Builder
	all.Grow(int(total))
	for d.pos = start; d.pos < end; {
		k, _ := d.u64("string length")
		b, _ := d.bytes(k, "string")
		all.Write(b)
	}
	whole := all.String()
	out := make([]string, n)
	off := uint64(0)
	d.pos = start
	for i := range out {
		k, _ := d.u64("string length")
		d.pos += int(k)
		out[i] = whole[off : off+k]
		off += k
	}
	return out, nil
}

// decodeScalars converts the little-endian encoding of fixed-size scalars of type t
// into a typed slice; at is the file offset of raw, for error messages.
func decodeScalars(t ValueType, raw []byte, at int) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append([]uint8(nil), raw...), nil
	case TypeInt8:
		out := make([]int8, len(raw))
		for i, b := range raw {
			out[i] = int8(b)
		}
		return out, nil
	case TypeBool:
		out := make([]bool, len(raw))
		for i, b := range raw {
			if b > 1 {
				return nil, fmt.Errorf("%w: bool value %d at offset %d is neither 0 nor 1", ErrFormat, b, at+i)
			}
			out[i] = b == 1
		}
		return out, nil
	case TypeUint16:
		out := make([]uint16, len(raw)/2)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return out, nil
	case TypeInt16:
		out := make([]int16, len(raw)/2)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return out, nil
	case TypeUint32:
		out := make([]uint32, len(raw)/4)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return out, nil
	case TypeInt32:
		out := make([]int32, len(raw)/4)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case TypeFloat32:
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case TypeUint64:
		out := make([]uint64, len(raw)/8)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return out, nil
	case TypeInt64:
		out := make([]int64, len(raw)/8)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return out, nil
	case TypeFloat64:
		out := make([]float64, len(raw)/8)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: value type %v is not a fixed-size scalar", ErrFormat, t)
}

func (d *decoder) tensorInfo() (TensorInfo, error) {
	var ti TensorInfo
	var err error
	if ti.Name, err = d.str("tensor name"); err != nil {
		return ti, err
	}
	nDims, err := d.u32("n_dims")
	if err != nil {
		return ti, fmt.Errorf("tensor %q: %w", ti.Name, err)
	}
	if nDims > maxDims {
		return ti, fmt.Errorf("%w: tensor %q has %d dims, GGML allows at most %d", ErrFormat, ti.Name, nDims, maxDims)
	}
	ti.Dims = make([]uint64, nDims)
	elems := uint64(1)
	for i := range ti.Dims {
		if ti.Dims[i], err = d.u64("dim"); err != nil {
			return ti, fmt.Errorf("tensor %q: %w", ti.Name, err)
		}
		hi, lo := bits.Mul64(elems, ti.Dims[i])
		if hi != 0 || lo > math.MaxInt64 {
			return ti, fmt.Errorf("%w: tensor %q dims %v overflow the element count", ErrFormat, ti.Name, ti.Dims[:i+1])
		}
		elems = lo
	}
	typ, err := d.u32("tensor type")
	if err != nil {
		return ti, fmt.Errorf("tensor %q: %w", ti.Name, err)
	}
	ti.Type = TensorType(typ)
	be, bb, ok := ti.Type.layout()
	if !ok {
		return ti, fmt.Errorf("%w: tensor %q has unknown tensor type %d", ErrFormat, ti.Name, typ)
	}
	if len(ti.Dims) > 0 && ti.Dims[0]%uint64(be) != 0 {
		return ti, fmt.Errorf("%w: tensor %q row length %d is not a multiple of the %v block size %d", ErrFormat, ti.Name, ti.Dims[0], ti.Type, be)
	}
	if len(ti.Dims) == 0 && be != 1 {
		return ti, fmt.Errorf("%w: tensor %q has no dims but type %v has blocks of %d", ErrFormat, ti.Name, ti.Type, be)
	}
	hi, size := bits.Mul64(elems/uint64(be), uint64(bb))
	if hi != 0 || size > math.MaxInt64 {
		return ti, fmt.Errorf("%w: tensor %q of %d %v values overflows its byte size", ErrFormat, ti.Name, elems, ti.Type)
	}
	ti.Size = size
	if ti.Offset, err = d.u64("tensor offset"); err != nil {
		return ti, fmt.Errorf("tensor %q: %w", ti.Name, err)
	}
	return ti, nil
}
