// Shared by lossy_asm_amd64.s, lossy_q4_amd64.s and tiles_amd64.s: the unpacking
// constants of the 4-bit and 2-bit codes (file-local symbols, so each file that
// includes this has its own copy).

// Lane masks of 4-bit (low nibble) and 2-bit codes.
DATA nib4<>+0(SB)/8, $0x0000000f0000000f
DATA nib4<>+8(SB)/8, $0x0000000f0000000f
DATA nib4<>+16(SB)/8, $0x0000000f0000000f
DATA nib4<>+24(SB)/8, $0x0000000f0000000f
GLOBL nib4<>(SB), RODATA|NOPTR, $32

DATA two2<>+0(SB)/8, $0x0000000300000003
DATA two2<>+8(SB)/8, $0x0000000300000003
DATA two2<>+16(SB)/8, $0x0000000300000003
DATA two2<>+24(SB)/8, $0x0000000300000003
GLOBL two2<>(SB), RODATA|NOPTR, $32

// Lane shifts of 8 4-bit codes in one 32-bit word, and of the 16 2-bit codes in one
// 32-bit word (sh2: the first 8 at sh2<>, the second at sh2<>+32; all 16 for ZMM).
DATA sh4<>+0(SB)/8, $0x0000000400000000
DATA sh4<>+8(SB)/8, $0x0000000c00000008
DATA sh4<>+16(SB)/8, $0x0000001400000010
DATA sh4<>+24(SB)/8, $0x0000001c00000018
GLOBL sh4<>(SB), RODATA|NOPTR, $32

DATA sh2<>+0(SB)/8, $0x0000000200000000
DATA sh2<>+8(SB)/8, $0x0000000600000004
DATA sh2<>+16(SB)/8, $0x0000000a00000008
DATA sh2<>+24(SB)/8, $0x0000000e0000000c
DATA sh2<>+32(SB)/8, $0x0000001200000010
DATA sh2<>+40(SB)/8, $0x0000001600000014
DATA sh2<>+48(SB)/8, $0x0000001a00000018
DATA sh2<>+56(SB)/8, $0x0000001e0000001c
GLOBL sh2<>(SB), RODATA|NOPTR, $64
