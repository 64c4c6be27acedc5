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
	vRow  quant.RowCodec     // values stored per token (nil for values per channel)
	vChan quant.ChannelAdder // values per channel over blocks of vG tokens
	vG    int                // value block length in tokens (values per channel only)
	r     int                // value residual in tokens (KIVI values only; 0 = none)
	// kPlan and vPlan are kRow and vRow resolved for the head size: attention over
	// the blocks skips the codecs' dispatch per span and head.
	kPlan, vPlan *quant.RowPlan
}

// rowCodec returns the per-token codec of a part (a KIVI part's values) for rows of
// d values, from the registry. Groups are clipped to d.
func rowCodec(p Part, d int) (quant.RowCodec, error) {
	e := p.Type.entry()
	if e.Row == nil {
		return nil, fmt.Errorf("no row codec for cache type %v", p.Type)
	}
	var rp quant.RowParams
	if e.Takes(quant.ParamGroup) {
		g := p.G
		if g == 0 {
			g = DefaultGroup
		}
		rp.Group = min(g, d)
	}
	if e.Takes(quant.ParamScale) {
		rp.Scale = p.Scale
	}
	return e.Row(rp), nil
}

// codecsFor builds the codecs of spec for head size d.
func codecsFor(sp Spec, d int) (sideCodecs, error) {
	var c sideCodecs
	for _, p := range []Part{sp.K, sp.V} {
		if p.Scale != 0 && !p.Type.IsFP8() {
			return c, fmt.Errorf("spec %v: %v takes no scale (only the types with s do: fp8e4m3, fp8e5m2)", sp, p.Type)
		}
	}
	k, ve := sp.K.Type.entry(), sp.V.Type.entry()
	if k.Key == nil && k.Row == nil || ve.Value == nil && ve.Row == nil {
		return c, fmt.Errorf("spec %v: no codec for keys of %v or values of %v", sp, sp.K.Type, sp.V.Type)
	}
	var err error
	if k.Key != nil {
		c.kChan = k.Key()
		if c.kG, err = channelGroup(sp.K); err != nil {
			return c, fmt.Errorf("spec %v: key %w", sp, err)
		}
	} else if c.kRow, c.kPlan, err = rowCodecPlan(sp.K, d); err != nil {
		return c, fmt.Errorf("spec %v keys: %w", sp, err)
	}
	if ve.Value != nil {
		c.vChan = ve.Value()
		if c.vG, err = channelGroup(sp.V); err != nil {
			return c, fmt.Errorf("spec %v: value %w", sp, err)
		}
		return c, nil
	}
	if c.vRow, c.vPlan, err = rowCodecPlan(sp.V, d); err != nil {
		return c, fmt.Errorf("spec %v values: %w", sp, err)
	}
	if ve.Takes(quant.ParamResidual) {
		c.r = sp.V.R
	}
	return c, nil
}

// rowCodecPlan is p's row codec for head size d and its plan.
func rowCodecPlan(p Part, d int) (quant.RowCodec, *quant.RowPlan, error) {
	c, err := rowCodec(p, d)
	if err != nil {
		return nil, nil, err
	}
	pl, err := quant.NewRowPlan(c, d)
	return c, pl, err
}

// channelGroup is the block length in tokens of p's per-channel codec:
// p.G, or DefaultGroup when 0.
func channelGroup(p Part) (int, error) {
	g := p.G
	if g == 0 {
		g = DefaultGroup
	}
	if g < 1 {
		return 0, fmt.Errorf("group g=%d must be at least 1", g)
	}
	return g, nil
}
