//go:build linux && amd64

package linalg

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"kvq/internal/guardpage"
)

// TestKRowsPageEnd runs every kernel set's rows kernels of the types of kquants.go on
// weight rows and activation codes that end where an inaccessible page begins: a read
// past either faults. The results must be the scalar kernel's (within float32 rounding).
func TestKRowsPageEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 5))
	for typ, lay := range kQuantLayout {
		for _, units := range []int{1, 3} {
			if lay.unitElems == 32 {
				units *= 8
			}
			cols, rb, rows := units*lay.unitElems, units*lay.unitBytes, 3
			w := guardpage.Bytes(t, rows*rb)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			for u := 0; u < rows*units; u++ {
				for _, o := range []int{lay.d, lay.dmin} {
					if o >= 0 {
						w[u*lay.unitBytes+o+1] = halfHigh(r)
					}
				}
			}
			qb := guardpage.Bytes(t, cols)
			xq := unsafe.Slice((*int8)(unsafe.Pointer(&qb[0])), cols)
			xd, xsum := make([]float32, cols/blockElems), make([]int32, cols/blockElems)
			scalarKernels.quantQ8(xq, xd, randVals(r, cols, 1))
			blockSums(xsum, xq)
			want := nanSlice(rows)
			scalarKRows[typ].rows(want, w, rb, xq, xd, xsum)
			for _, k := range kernelModes(t) {
				got := nanSlice(rows)
				k.kRows[typ].rows(got, w, rb, xq, xd, xsum)
				for i := range got {
					bound := 1e-6 * kRowMagnitude(t, typ, w[i*rb:(i+1)*rb], cols, xq, xd)
					if d := float64(got[i] - want[i]); !(d <= bound && -d <= bound) {
						t.Errorf("%s %v units=%d row %d: %v, scalar %v", k.name, typ, units, i, got[i], want[i])
					}
				}
			}
		}
	}
}
