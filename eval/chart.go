package eval

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteSVG draws the result as a scatter chart: compression against f16 on the x axis,
// mean KL divergence from f32 on a logarithmic y axis (values below 1e-6 are drawn at
// 1e-6), one labelled point per cache except f32, which is the reference.
func WriteSVG(w io.Writer, res *Result) error {
	const (
		width, height = 720, 460
		left, right   = 70, 30
		top, bottom   = 40, 60
		minKLD        = 1e-6
	)
	var rows []Row
	maxX := 1.0
	maxY := minKLD * 10
	for _, r := range res.Rows {
		if r.Cache == "f32" {
			continue
		}
		rows = append(rows, r)
		maxX = math.Max(maxX, r.CompressionVsF16)
		maxY = math.Max(maxY, r.KLDMean)
	}
	maxX = math.Ceil(maxX + 0.25)
	loY, hiY := math.Log10(minKLD), math.Ceil(math.Log10(maxY))
	px := func(x float64) float64 { return left + x/maxX*(width-left-right) }
	py := func(y float64) float64 {
		y = math.Log10(math.Max(y, minKLD))
		return float64(height-bottom) - (y-loY)/(hiY-loY)*(height-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14">%s — KV cache: compression vs KL divergence from f32 (ctx %d × %d chunks)</text>`+"\n", left, html.EscapeString(res.Model), res.Ctx, res.Chunks)
	for x := 0.0; x <= maxX; x++ {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%g×</text>`+"\n", px(x), top, px(x), height-bottom, px(x), height-bottom+16, x)
	}
	for e := loY; e <= hiY; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">1e%d</text>`+"\n", left, y, width-right, y, left-6, y+4, int(e))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">compression vs f16 (bytes per token, higher is smaller)</text>`+"\n", (left+width-right)/2, height-18)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">mean KL divergence (lower is better)</text>`+"\n", (top+height-bottom)/2)
	for _, r := range rows {
		x, y := px(r.CompressionVsF16), py(r.KLDMean)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#1f77b4"/><text x="%.1f" y="%.1f">%s</text>`+"\n", x, y, x+6, y-6, html.EscapeString(r.Cache))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
