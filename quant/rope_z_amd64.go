//go:build amd64

package quant

// haveRoPEZ reports the CPU features of the ZMM pair kernel (dotRoPEIntZ,
// ropeIntPrepZ): AVX-512 BW, VBMI and VNNI, and F16C (haveVBMIGFNI).
var haveRoPEZ = haveVBMIGFNI

// dotRoPEIntZ is the ZMM integer pair kernel, ropeIntGoZ in assembly for n a positive
// multiple of 8 (contract in rope_z_amd64.s).
//
//go:noescape
func dotRoPEIntZ(out *float32, codes *byte, w *float32, tab *int16, n, d int, unp *byte, past bool)

// ropeIntPrepZ is ropeIntPrepZGo in assembly, bit for bit (contract in
// rope_z_amd64.s).
//
//go:noescape
func ropeIntPrepZ(w *float32, q, sp *float32, hdr *byte, d int, zmax float32) bool

// ropeZUnpack holds dotRoPEIntZ's unpack tables for 2-, 3- and 4-bit codes: the byte
// permute that gives qword m of a chunk (channels 8m..8m+7) the 8 bytes from its
// first code byte, m·bits, the multishift control moving code k of the qword (bit
// k·bits) to byte k, the code mask and the code bytes per chunk, 8·bits.
var ropeZUnpack = func() (t [3][130]byte) {
	for i := range t {
		bits := i + 2
		for m := range 8 {
			for k := range 8 {
				t[i][8*m+k] = byte(m*bits + k)
				t[i][64+8*m+k] = byte(k * bits)
			}
		}
		t[i][128], t[i][129] = byte(1<<bits-1), byte(8*bits)
	}
	return t
}()

// ropeZTakes reports whether ropeDotZ scores blocks of c (when their zero terms fit):
// the ZMM kernels' features, interleaved pairs rotating all d values, d a multiple of
// 64 up to 256, 4-, 3- or 2-bit codes.
func ropeZTakes(c Channel, r *RoPE, d int) bool {
	return haveRoPEZ && r.pairsZ != nil && r.Dims() == d && d%64 == 0 && d <= 256 &&
		(c.Bits == 4 || c.Bits == 3 || c.Bits == 2)
}

// ropeDotZ scores rows b0..b1 of block with the ZMM pair kernel where ropeZTakes and
// the block's zero terms fit: the query q rotated back by sp (RoPE.backSpread of the
// block's first position) and prepared into w (d/64·ropeIntChunk values) in one
// pass, the rows scored eight at a time. It reports false, having scored nothing,
// for the rest.
func ropeDotZ(c Channel, r *RoPE, out, q, sp []float32, block []byte, d, b0, b1 int, w []float32) bool {
	if !ropeZTakes(c, r, d) || b0 >= b1 {
		return false
	}
	_, _, _ = q[d-1], sp[2*d-1], w[d/64*ropeIntChunk-1]
	_ = block[4*d-1]
	if !ropeIntPrepZ(&w[0], &q[0], &sp[0], &block[0], d, ropeZMax(c.Bits)) {
		return false
	}
	rb := packedBytes(d, c.Bits)
	ropeRowsZ(out, block[4*d+b0*rb:4*d+b1*rb], w, r.pairsZ[b0*d:], b1-b0, d, c.Bits)
	return true
}

// ropeZPast is dotRoPEIntZ's past for n code rows rb bytes apart (d channels of the
// given bits) with avail bytes readable from the first: whether 64 bytes from the
// last row's last chunk of codes (8·bits bytes a chunk) are.
func ropeZPast(avail, n, rb, d, bits int) bool {
	return avail >= (n-1)*rb+(d/64-1)*8*bits+64
}

// ropeRowsZ runs dotRoPEIntZ over n ≥ 1 rows (d ≤ 256): eight at a time, the last
// eight again where n is not a multiple of 8 (the same bits: a row's score does not
// depend on its neighbours), and fewer than eight from padded copies; each chunk's
// codes read as 64 bytes where the slice's capacity holds them.
func ropeRowsZ(out []float32, codes []byte, w []float32, tab []int16, n, d, bits int) {
	rb := packedBytes(d, bits)
	_, _, _ = out[n-1], codes[n*rb-1], tab[n*d-1]
	unp := &ropeZUnpack[bits-2][0]
	if n >= 8 {
		m := n &^ 7
		past := ropeZPast(cap(codes), n, rb, d, bits)
		dotRoPEIntZ(&out[0], &codes[0], &w[0], &tab[0], m, d, unp, past)
		if m < n {
			dotRoPEIntZ(&out[n-8], &codes[(n-8)*rb], &w[0], &tab[(n-8)*d], 8, d, unp, past)
		}
		return
	}
	var cb [8*4*256/8 + 64]byte
	var tb [8 * 256]int16
	var o [8]float32
	copy(cb[:], codes[:n*rb])
	t := tab
	if len(t) < 8*d {
		copy(tb[:], tab[:n*d])
		t = tb[:]
	}
	dotRoPEIntZ(&o[0], &cb[0], &w[0], &t[0], 8, d, unp, true)
	copy(out[:n], o[:n])
}

// ropeSpanZ is the kernel set's ropeSpan1 where ropeZTakes: a run of blocks scored
// by the ZMM pair kernel, block j+1's query prepared (in the other half of tmp)
// before block j's rows are scored, so that the preparation's dependency chains
// overlap the scoring; a block whose zero terms do not fit goes to ropeDotAsm. tmp
// holds at least 2·(d/64)·ropeIntChunk + 4·d values; it reports false, having scored
// nothing, for the rest.
func ropeSpanZ(c Channel, r *RoPE, pos int, scores, q []float32, src []byte, stride, t, off, n, d int, tmp, qr, lo, s []float32) bool {
	u := d / 64 * ropeIntChunk
	if !ropeZTakes(c, r, d) || len(tmp) < 2*u+4*d {
		return false
	}
	blocks := (off + n + t - 1) / t
	bb, rb := c.BlockBytes(t, d), packedBytes(d, c.Bits)
	zmax, unp := ropeZMax(c.Bits), &ropeZUnpack[c.Bits-2][0]
	_, _ = q[d-1], src[(blocks-1)*stride+bb-1]
	_ = scores[n-1]
	next := ropeIntPrepZ(&tmp[0], &q[0], &r.backSpread(pos)[0], &src[0], d, zmax)
	for j := range blocks {
		ok, w := next, tmp[j%2*u:][:u]
		if j+1 < blocks {
			next = ropeIntPrepZ(&tmp[(j+1)%2*u], &q[0], &r.backSpread(pos + (j+1)*t)[0], &src[(j+1)*stride], d, zmax)
		}
		b0, b1 := max(0, off-j*t), min(t, off+n-j*t)
		out := scores[j*t+b0-off:]
		switch {
		case !ok:
			ropeDotAsm(c, r, out, q, r.backSpread(pos+j*t), src[j*stride:][:bb], t, d, b0, b1, qr, lo, s, tmp[2*u:])
		case (b1-b0)%8 == 0:
			// Whole batches of eight rows, their bounds checked above (the block's
			// codes, its scores, the table's rows b0..b1 < MaxRoPEBlock).
			at := j*stride + 4*d + b0*rb
			past := ropeZPast(cap(src)-at, b1-b0, rb, d, c.Bits)
			dotRoPEIntZ(&out[0], &src[at], &w[0], &r.pairsZ[b0*d], b1-b0, d, unp, past)
		default:
			ropeRowsZ(out, src[j*stride+4*d+b0*rb:][:(b1-b0)*rb], w, r.pairsZ[b0*d:], b1-b0, d, c.Bits)
		}
	}
	return true
}
