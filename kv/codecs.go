package kv

import (
	"fmt"

	"kvq/quant"
)

// sideCodecs are the codecs of one layer as built from its Spec for a head size.
type sideCodecs struct {
	kRow  quant.RowCodec     // keys stored per token (nil for KIVI keys)
	kChan quant.ChannelCodec // KIVI keys: per channel over blocks of kGroup tokens
	kG    int                // key block length in tokens (KIVI keys only)
	vRow  quant.RowCodec
	r     int // value residual in tokens (KIVI values only; 0 = none)
	// kPlan and vPlan are kRow and vRow resolved for the head size: attention over
	// the blocks skips the codecs' dispatch per span and head.
	kPlan, vPlan *quant.RowPlan
}

// rowCodec returns the per-token codec of a non-KIVI part, or the per-token value
// codec of a KIVI part, for rows of d values. Groups are clipped to d.
func rowCodec(p Part, d int) (quant.RowCodec, error) {
	g := p.G
	if g == 0 {
		g = DefaultGroup
	}
	g = min(g, d)
	switch p.Type {
	case TypeF32:
		return quant.F32{}, nil
	case TypeF16:
		return quant.F16{}, nil
	case TypeBF16:
		return quant.BF16{}, nil
	case TypeQ8:
		return quant.Int8{}, nil
	case TypeFP8E4M3:
		return quant.FP8{Format: quant.E4M3, TensorScale: p.Scale}, nil
	case TypeFP8E5M2:
		return quant.FP8{Format: quant.E5M2, TensorScale: p.Scale}, nil
	case TypeQ4, TypeKIVI4:
		return quant.Affine{Bits: 4, Group: g}, nil
	case TypeQ2, TypeKIVI2:
		return quant.Affine{Bits: 2, Group: g}, nil
	case TypeKIVI8:
		return quant.Affine{Bits: 8, Group: g}, nil
	}
	return nil, fmt.Errorf("kv: no row codec for cache type %v", p.Type)
}

// codecsFor builds the codecs of spec for head size d.
func codecsFor(sp Spec, d int) (sideCodecs, error) {
	var c sideCodecs
	for _, p := range []Part{sp.K, sp.V} {
		if p.Scale != 0 && !p.Type.IsFP8() {
			return c, fmt.Errorf("kv: spec %v: %v takes no scale (only fp8e4m3 and fp8e5m2 do)", sp, p.Type)
		}
	}
	if sp.K.Type.IsKIVI() {
		c.kChan = quant.Channel{Bits: sp.K.Type.Bits()}
		c.kG = sp.K.G
		if c.kG == 0 {
			c.kG = DefaultGroup
		}
		if c.kG < 1 {
			return c, fmt.Errorf("kv: spec %v: key group g=%d must be at least 1", sp, c.kG)
		}
	} else {
		k, err := rowCodec(sp.K, d)
		if err != nil {
			return c, fmt.Errorf("kv: spec %v keys: %w", sp, err)
		}
		c.kRow = k
		if c.kPlan, err = quant.NewRowPlan(k, d); err != nil {
			return c, fmt.Errorf("kv: spec %v keys: %w", sp, err)
		}
	}
	v, err := rowCodec(sp.V, d)
	if err != nil {
		return c, fmt.Errorf("kv: spec %v values: %w", sp, err)
	}
	c.vRow = v
	if c.vPlan, err = quant.NewRowPlan(v, d); err != nil {
		return c, fmt.Errorf("kv: spec %v values: %w", sp, err)
	}
	if sp.V.Type.IsKIVI() {
		c.r = sp.V.R
	}
	return c, nil
}
