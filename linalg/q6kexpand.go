package linalg

import "sync"

// A Q6_K row expanded for the many-token Q6_K kernel (q6kz_amd64.s), per 32-value
// block b: its codes − 32 as int8 (codes[32b:]), −128 times the sum of each group of
// four of those (corr[8b:]: a pack's codes are the activations' plus 128, which adds
// 128 times that sum to each group's dot), and for each 16-value half i of the row its
// d·sc as float32 (ds[i], rounded as q6kDotRows rounds it).
type q6kScratch struct {
	codes []int8
	corr  []int32
	ds    []float32
	res   []float32 // one row's results, a value per token of the groups
}

var q6kPool sync.Pool

// getQ6KScratch returns scratch for a row of nb blocks and groups 16-token groups
// (put back to q6kPool).
func getQ6KScratch(nb, groups int) *q6kScratch {
	s, _ := q6kPool.Get().(*q6kScratch)
	if s == nil {
		s = &q6kScratch{}
	}
	if cap(s.codes) < nb*blockElems {
		s.codes, s.corr, s.ds = make([]int8, nb*blockElems), make([]int32, nb*8), make([]float32, 2*nb)
	}
	if cap(s.res) < groups*tokenGroup {
		s.res = make([]float32, groups*tokenGroup)
	}
	s.codes, s.corr, s.ds, s.res = s.codes[:nb*blockElems], s.corr[:nb*8], s.ds[:2*nb], s.res[:groups*tokenGroup]
	return s
}

// q6kExpandScalar is the reference for q6kExpandZ: the Q6_K row of len(ds)/16
// super-blocks at w into codes, corr and ds (see q6kScratch).
func q6kExpandScalar(codes []int8, corr []int32, ds []float32, w []byte) {
	for sb := 0; sb < len(ds)/16; sb++ {
		blk := (*[q6KBlockBytes]byte)(w[sb*q6KBlockBytes:])
		d := f16Table[uint16(blk[208])|uint16(blk[209])<<8]
		for i := range 16 {
			ds[16*sb+i] = float32(int8(blk[192+i])) * d
		}
		for h := range 2 {
			L, H := (*[64]byte)(blk[64*h:]), (*[32]byte)(blk[128+32*h:])
			for k := range 4 {
				b := 8*sb + 4*h + k
				for l := range blockElems {
					codes[32*b+l] = int8(q6KCode(L, H, k, l) - 32)
				}
				for j := range 8 {
					var sum int32
					for _, c := range codes[32*b+4*j : 32*b+4*j+4] {
						sum += int32(c)
					}
					corr[8*b+j] = -128 * sum
				}
			}
		}
	}
}
