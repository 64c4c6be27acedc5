// Package linalg holds the matrix kernels of the kvq model runtime: weight-matrix ×
// activation products for every GGUF tensor type (MatMul), and the small vector kernels
// the forward pass needs (Dot, Axpy, RMSNorm).
//
// # Layout
//
// A Matrix is a row-major weight of Rows rows of Cols values, each row Type.RowBytes(Cols)
// bytes, exactly as GGUF stores a tensor of shape ne=[Cols, Rows]. Activations are plain
// float32, token-major: token i of a batch occupies x[i*Cols : (i+1)*Cols], and its output
// occupies out[i*Rows : (i+1)*Rows].
//
// # Types
//
// F32 and F16 weights are multiplied directly in float32. Q8_0 and Q4_0 weights are
// multiplied natively against activations quantized per 32-value block to int8 with a
// float32 scale (as llama.cpp's q8_0 dot does): one integer dot per block, then one
// multiply by the two scales. Every other type gguf can dequantize is multiplied by
// dequantizing one weight row at a time into a scratch buffer.
//
// # Kernels
//
// Each hot kernel has a portable scalar version, which is the reference the conformance
// tests check every other version against. Built with GOEXPERIMENT=simd on amd64, the
// package also carries simd/archsimd versions, selected at init when the CPU supports
// AVX2 and FMA; setting the environment variable KVQ_NOSIMD=1, or calling SetSIMD(false),
// forces the scalar kernels.
//
// # Parallelism
//
// MatMul splits the rows of a product across a small persistent pool of worker
// goroutines (SetThreads, default runtime.NumCPU()); the calling goroutine works too.
// All functions are safe for concurrent use.
package linalg
