//go:build !amd64

package quant

// planFast is empty where no fused kernels skip the dispatch: RowPlans call the
// package functions.
type planFast struct{ ok bool }

func resolveFast(*kernelSet, RowCodec, int) planFast { return planFast{} }

func (*planFast) queryFloats(int, int) int { return 0 }

func (*planFast) prepare([]float32, []float32, int, int) {}

func (*planFast) dot([]float32, int, []float32, []float32, int, []byte, int, int, int, []float32) {}

func (*planFast) add([]float32, []float32, int, int, []byte, int, int, int, []float32) bool {
	return false
}
