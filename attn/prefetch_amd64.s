//go:build amd64

#include "textflag.h"

// func prefetchBytes(p *byte, n int)
// PREFETCHT0 of every 64-byte line that holds one of the n ≥ 1 bytes at p.
TEXT ·prefetchBytes(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), DI
	ANDQ $-64, SI

pfloop:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	CMPQ       SI, DI
	JBE        pfloop
	RET
