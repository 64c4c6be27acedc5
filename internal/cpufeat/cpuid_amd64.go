package cpufeat

func hasAVX2FMA() bool
func hasF16C() bool
