package kv

import (
	"fmt"
	"math"
	"sync"

	"kvq/quant"
)

// FP8 with a fixed scale per layer (vLLM's fp8 cache with per-tensor k_scale and
// v_scale): a spec "fp8e4m3:s=S" stores x as the E4M3 code of x/S and nothing per
// row (d bytes per row instead of d+2), and Config.LayerSpecs gives each layer its
// own S for keys and for values. A Calibrator finds them: wrap the cache of a
// calibration run (any cache type; f32 is the reference) and run representative
// text through the model; Calibrator.LayerSpecs then sets every layer's scale to
// the largest magnitude its keys (values) reached divided by the format's largest
// finite value, so that no calibration value saturates.
//
// The scale is per layer and side, not per head: attention reads all heads of a
// layer's section with one codec.

// Calibrator is a Cache that records, per layer, the largest |key| and |value|
// appended through it, then passes the call on to the cache it wraps.
type Calibrator struct {
	Cache
	mu         sync.Mutex
	kMax, vMax []float32
	rows       int64
}

// NewCalibrator wraps c, a cache of a model with the given number of layers.
func NewCalibrator(c Cache, layers int) *Calibrator {
	return &Calibrator{Cache: c, kMax: make([]float32, layers), vMax: make([]float32, layers)}
}

// Append implements Layers: it records the largest finite magnitudes of k and v
// for layer, then appends them to the wrapped cache.
func (c *Calibrator) Append(layer int, seq SeqID, k, v []float32) error {
	if layer < 0 || layer >= len(c.kMax) {
		return fmt.Errorf("kv: calibrator: layer %d out of range [0, %d)", layer, len(c.kMax))
	}
	km, vm := absMax(k), absMax(v)
	c.mu.Lock()
	c.kMax[layer] = max(c.kMax[layer], km)
	c.vMax[layer] = max(c.vMax[layer], vm)
	c.rows += int64(len(k))
	c.mu.Unlock()
	return c.Cache.Append(layer, seq, k, v)
}

func absMax(x []float32) float32 {
	var m float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > m && a <= math.MaxFloat32 {
			m = a
		}
	}
	return m
}

// Max returns, per layer, the largest |key| and |value| seen so far.
func (c *Calibrator) Max() (k, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]float32(nil), c.kMax...), append([]float32(nil), c.vMax...)
}

// LayerSpecs returns per-layer specs (for Config.LayerSpecs) storing keys as
// kType and values as vType, both FP8 types, each with the scale that maps the
// largest magnitude seen on that layer and side to the format's largest finite
// value, and sinks as given. It fails before any row was appended, for a layer
// that saw no nonzero value, or for a type that is not FP8.
func (c *Calibrator) LayerSpecs(kType, vType Type, sinks int) (map[int]Spec, error) {
	km, vm := c.Max()
	c.mu.Lock()
	rows := c.rows
	c.mu.Unlock()
	if rows == 0 {
		return nil, fmt.Errorf("kv: calibrator: no keys or values appended yet")
	}
	out := make(map[int]Spec, len(km))
	for l := range km {
		ks, err := fp8Scale(kType, km[l])
		if err != nil {
			return nil, fmt.Errorf("kv: calibrator: layer %d keys: %w", l, err)
		}
		vs, err := fp8Scale(vType, vm[l])
		if err != nil {
			return nil, fmt.Errorf("kv: calibrator: layer %d values: %w", l, err)
		}
		out[l] = Spec{K: Part{Type: kType, Scale: ks}, V: Part{Type: vType, Scale: vs}, Sinks: sinks}
	}
	return out, nil
}

// FP8Scale is the fixed scale of FP8 type t that maps amax, the largest magnitude
// to store, to the format's largest finite value (448 for E4M3, 57344 for E5M2).
func FP8Scale(t Type, amax float32) (float32, error) {
	s, err := fp8Scale(t, amax)
	if err != nil {
		return 0, fmt.Errorf("kv: FP8 scale: %w", err)
	}
	return s, nil
}

// fp8Scale is FP8Scale with errors for the caller to put in context.
func fp8Scale(t Type, amax float32) (float32, error) {
	// The FP8 types are those whose codec (from the registry) is FP8.
	e, ok := quant.Lookup(string(t))
	var fp quant.FP8
	if ok {
		fp, ok = e.Row(quant.RowParams{}).(quant.FP8)
	}
	if !ok {
		return 0, fmt.Errorf("%v is not an FP8 type", t)
	}
	f := fp.Format
	if !(amax > 0) || amax > math.MaxFloat32 {
		return 0, fmt.Errorf("largest magnitude %v: want a positive finite value (were any nonzero rows appended?)", amax)
	}
	s := amax / f.Max()
	if s == 0 || s > math.MaxFloat32 {
		return 0, fmt.Errorf("largest magnitude %v gives scale %v, outside float32", amax, s)
	}
	return s, nil
}
