//go:build amd64

#include "textflag.h"

// PREFETCHW_SI is PREFETCHW (SI) (0F 0D /1), which the Go assembler does not know.
#define PREFETCHW_SI BYTE $0x0F; BYTE $0x0D; BYTE $0x0E

// LINES(PF) runs PF with SI at every 64-byte line that holds one of the n ≥ 1 bytes
// at p, then returns.
#define LINES(PF) \
	MOVQ p+0(FP), SI; \
	MOVQ n+8(FP), CX; \
	LEAQ -1(SI)(CX*1), DI; \
	ANDQ $-64, SI; \
loop: \
	PF; \
	ADDQ $64, SI; \
	CMPQ SI, DI; \
	JBE  loop; \
	RET

// func read(p *byte, n int)
TEXT ·read(SB), NOSPLIT, $0-16
	LINES(PREFETCHT0 (SI))

// func write(p *byte, n int)
TEXT ·write(SB), NOSPLIT, $0-16
	LINES(PREFETCHW_SI)
