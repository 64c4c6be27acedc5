package model

import "math"

// LogSumExp returns log Σ exp(x[i]), formed in float64 after subtracting the
// maximum so that no term overflows. A logit minus it is that token's
// log-probability (the log-softmax); the engine's logprobs and eval's perplexity
// and KL divergence share it so that they agree bit for bit.
func LogSumExp(x []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}
