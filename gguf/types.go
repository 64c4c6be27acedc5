package gguf

import "fmt"

// TensorType is a GGML tensor element type as stored in GGUF tensor infos.
type TensorType uint32

// Tensor types kvq reads. The numeric values are GGML's.
const (
	TypeF32    TensorType = 0
	TypeF16    TensorType = 1
	TypeQ4_0   TensorType = 2
	TypeQ4_1   TensorType = 3
	TypeQ5_0   TensorType = 6
	TypeQ5_1   TensorType = 7
	TypeQ8_0   TensorType = 8
	TypeQ2_K   TensorType = 10
	TypeQ3_K   TensorType = 11
	TypeQ4_K   TensorType = 12
	TypeQ5_K   TensorType = 13
	TypeQ6_K   TensorType = 14
	TypeIQ4_NL TensorType = 20
	TypeIQ4_XS TensorType = 23
	TypeBF16   TensorType = 30
)

type typeInfo struct {
	name       string
	blockElems int // values per block
	blockBytes int // bytes per block
}

var typeInfos = map[TensorType]typeInfo{
	TypeF32:    {"F32", 1, 4},
	TypeF16:    {"F16", 1, 2},
	TypeBF16:   {"BF16", 1, 2},
	TypeQ4_0:   {"Q4_0", 32, 18},
	TypeQ4_1:   {"Q4_1", 32, 20},
	TypeQ5_0:   {"Q5_0", 32, 22},
	TypeQ5_1:   {"Q5_1", 32, 24},
	TypeQ8_0:   {"Q8_0", 32, 34},
	TypeQ2_K:   {"Q2_K", 256, 84},
	TypeQ3_K:   {"Q3_K", 256, 110},
	TypeQ4_K:   {"Q4_K", 256, 144},
	TypeQ5_K:   {"Q5_K", 256, 176},
	TypeQ6_K:   {"Q6_K", 256, 210},
	TypeIQ4_NL: {"IQ4_NL", 32, 18},
	TypeIQ4_XS: {"IQ4_XS", 256, 136},
}

// String returns GGML's name for the type, or "type(N)" for one kvq does not know.
func (t TensorType) String() string {
	if ti, ok := typeInfos[t]; ok {
		return ti.name
	}
	if ti, ok := otherLayouts[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Supported reports whether kvq can read tensors of this type.
func (t TensorType) Supported() bool { _, ok := typeInfos[t]; return ok }

// BlockElems is the number of values in one block of the type (1 for float types).
func (t TensorType) BlockElems() int { return typeInfos[t].blockElems }

// RowBytes returns the bytes of a row of n values, and an error if the type is unknown
// or n is not a whole number of blocks.
func (t TensorType) RowBytes(n int) (int, error) {
	ti, ok := typeInfos[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unsupported tensor type %v", t)
	}
	if n < 0 || n%ti.blockElems != 0 {
		return 0, fmt.Errorf("gguf: row of %d values is not a whole number of %v blocks (%d values each)", n, t, ti.blockElems)
	}
	return n / ti.blockElems * ti.blockBytes, nil
}

// layout gives the block geometry of every tensor type a file may hold, including
// GGML types kvq cannot dequantize (their tensors can be listed and sliced, not
// converted). ok is false for a type id GGML does not define.
func (t TensorType) layout() (blockElems, blockBytes int, ok bool) {
	if ti, found := typeInfos[t]; found {
		return ti.blockElems, ti.blockBytes, true
	}
	if l, found := otherLayouts[t]; found {
		return l.blockElems, l.blockBytes, true
	}
	return 0, 0, false
}

// otherLayouts are {values per block, bytes per block} of GGML types kvq reads past
// but does not convert.
var otherLayouts = map[TensorType]typeInfo{
	9:  {"Q8_1", 32, 36},   // f16 d, f16 s, 32 × i8
	15: {"Q8_K", 256, 292}, // f32 d, 256 × i8, 16 × i16 bsums
	16: {"IQ2_XXS", 256, 66},
	17: {"IQ2_XS", 256, 74},
	18: {"IQ3_XXS", 256, 98},
	19: {"IQ1_S", 256, 50},
	21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82},
	29: {"IQ1_M", 256, 56},
	34: {"TQ1_0", 256, 54},
	35: {"TQ2_0", 256, 66},
	24: {"I8", 1, 1},
	25: {"I16", 1, 2},
	26: {"I32", 1, 4},
	27: {"I64", 1, 8},
	28: {"F64", 1, 8},
}
