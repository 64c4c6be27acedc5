package quant

import (
	"encoding/binary"
	"math"
)

func putF32(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) }

func getF32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
