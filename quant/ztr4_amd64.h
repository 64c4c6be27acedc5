// Shared by the ZMM score kernels (lossy_i8z_amd64.s, int8_i16z_amd64.s; file-local
// symbols, so each file that includes this has its own copy).

// ztr4 is the VPERMPS index of the 4×4 transpose of a ZMM register's dwords: lane r
// holding row r's scores of four queries becomes lane q holding query q's scores of
// the four rows, ready to store per query.
DATA ztr4<>+0(SB)/8, $0x0000000400000000
DATA ztr4<>+8(SB)/8, $0x0000000c00000008
DATA ztr4<>+16(SB)/8, $0x0000000500000001
DATA ztr4<>+24(SB)/8, $0x0000000d00000009
DATA ztr4<>+32(SB)/8, $0x0000000600000002
DATA ztr4<>+40(SB)/8, $0x0000000e0000000a
DATA ztr4<>+48(SB)/8, $0x0000000700000003
DATA ztr4<>+56(SB)/8, $0x0000000f0000000b
GLOBL ztr4<>(SB), RODATA|NOPTR, $64
