// Shared by rows_fp8_amd64.s and rows_fp8z_amd64.s: the query scaling of the E4M3
// score kernels that widen codes straight to float32 (dotE4M3R4ZD, dotE4M3Q4ZD).

// QS112CONSTS sets QS112STEP's constants: Z16 = 2¹¹², Z17 = 2¹⁶, Z18 the sign-clearing
// mask; and clears K2. It uses AX.
#define QS112CONSTS \
	MOVL         $0x77800000, AX \
	VPBROADCASTD AX, Z16         \
	MOVL         $0x47800000, AX \
	VPBROADCASTD AX, Z17         \
	MOVL         $0x7FFFFFFF, AX \
	VPBROADCASTD AX, Z18         \
	KXORW        K2, K2, K2

// QS112STEP writes the 16 query values at SI + 4·AX times 2¹¹² to dst + 4·AX and
// marks in K2 any with |q| ≥ 2¹⁶ (GE_OQ: infinities too, not NaN), whose multiple
// would overflow. It uses Z19, Z20 and K1.
#define QS112STEP(dst) \
	VMOVUPS (SI)(AX*4), Z19     \
	VPANDD  Z18, Z19, Z20       \
	VCMPPS  $0x1d, Z17, Z20, K1 \
	KORW    K1, K2, K2          \
	VMULPS  Z16, Z19, Z19       \
	VMOVUPS Z19, (dst)(AX*4)
