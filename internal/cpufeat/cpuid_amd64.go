package cpufeat

func hasAVX2FMA() bool
func hasF16C() bool
func hasAVX512F() bool
func hasAVX512VNNI() bool
func hasVBMIGFNI() bool
