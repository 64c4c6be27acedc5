//go:build !amd64

package cpufeat

func hasAVX2FMA() bool    { return false }
func hasF16C() bool       { return false }
func hasAVX512F() bool    { return false }
func hasAVX512VNNI() bool { return false }
func hasVBMIGFNI() bool   { return false }
