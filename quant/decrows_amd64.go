//go:build amd64

package quant

// Row decoders in AVX2 assembly (decrows_amd64.s) for the plain row codecs, bit for
// bit their Decode (NaN payloads aside: VCVTPH2PS quiets signaling NaNs), serving
// the codecs' decode entries. Each writes the n ≥ 1 rows at src + i·stride bytes
// to dst[i·d:(i+1)·d], d a positive multiple of 8.

// decF16RowsF16C decodes F16 rows with VCVTPH2PS. It needs F16C.
//
//go:noescape
func decF16RowsF16C(dst *float32, src *byte, stride uintptr, n, d int)

// decBF16RowsAsm decodes BF16 rows (VPMOVZXWD and a shift). It needs AVX2.
//
//go:noescape
func decBF16RowsAsm(dst *float32, src *byte, stride uintptr, n, d int)

// decInt8RowsF16C decodes Int8 rows: the f16 scale widened by VCVTPH2PS times each
// code. It needs AVX2 and F16C.
//
//go:noescape
func decInt8RowsF16C(dst *float32, src *byte, stride uintptr, n, d int)

// decE5M2RowsF16C decodes FP8 E5M2 rows: hdr 2 when each row starts with its f16
// scale (TensorScale 0), else 0 and scale the tensor scale. It needs AVX2 and F16C.
//
//go:noescape
func decE5M2RowsF16C(dst *float32, src *byte, stride uintptr, n, d, hdr int, scale float32)

// decE4M3RowsF16C is decE5M2RowsF16C for E4M3 rows.
//
//go:noescape
func decE4M3RowsF16C(dst *float32, src *byte, stride uintptr, n, d, hdr int, scale float32)
