package eval

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// familyColours gives each Row.Family its colour in the chart, in legend order.
var familyColours = []struct{ family, colour, label string }{
	{"float", "#7f7f7f", "float (f16, bf16)"},
	{"int", "#1f77b4", "integer (q8, q4, q2)"},
	{"fp8", "#ff7f0e", "fp8"},
	{"kivi", "#2ca02c", "kivi"},
	{"mixed", "#9467bd", "mixed K/V"},
}

// WriteSVG draws the result as a scatter chart: compression against f16 on the x axis
// (from 1×), mean KL divergence from f32 on a logarithmic y axis (values below 1e-6 are
// drawn at 1e-6), one labelled point per cache except f32, which is the reference,
// coloured by family. Recommended rows (the efficient frontier) are filled and joined
// by a line; rows with a Warning are drawn hollow and dashed.
func WriteSVG(w io.Writer, res *Result) error {
	const (
		width, height = 760, 480
		left, right   = 70, 170
		top, bottom   = 40, 60
		minKLD        = 1e-6
	)
	var rows []Row
	maxX := 2.0
	maxY := minKLD * 10
	for _, r := range res.Rows {
		if r.Cache == "f32" || r.CompressionVsF16 < 1 {
			continue
		}
		rows = append(rows, r)
		maxX = math.Max(maxX, r.CompressionVsF16)
		maxY = math.Max(maxY, r.KLDMean)
	}
	maxX = math.Ceil(maxX + 0.25)
	loY, hiY := math.Log10(minKLD), math.Ceil(math.Log10(maxY))
	px := func(x float64) float64 { return left + (x-1)/(maxX-1)*(width-left-right) }
	py := func(y float64) float64 {
		y = math.Log10(math.Max(y, minKLD))
		return float64(height-bottom) - (y-loY)/(hiY-loY)*(height-top-bottom)
	}
	colour := map[string]string{}
	for _, f := range familyColours {
		colour[f.family] = f.colour
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14">%s: KV cache compression and its error (ctx %d × %d chunks)</text>`+"\n", left, html.EscapeString(res.Model), res.Ctx, res.Chunks)
	step := 0.5
	if maxX > 6 {
		step = 1
	}
	for x := 1.0; x <= maxX+1e-9; x += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%g×</text>`+"\n", px(x), top, px(x), height-bottom, px(x), height-bottom+16, x)
	}
	for e := loY; e <= hiY; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">1e%d</text>`+"\n", left, y, width-right, y, left-6, y+4, int(e))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">memory saved: f16 cache bytes ÷ this cache's bytes (×)</text>`+"\n", (left+width-right)/2, height-18)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">mean KL divergence from f32 (lower is better)</text>`+"\n", (top+height-bottom)/2)

	// The frontier: recommended rows by compression.
	var front []Row
	for _, r := range rows {
		if r.Recommended {
			front = append(front, r)
		}
	}
	slices.SortFunc(front, func(a, b Row) int { return cmpFloat(a.CompressionVsF16, b.CompressionVsF16) })
	if len(front) > 1 {
		var pts []string
		for _, r := range front {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(r.CompressionVsF16), py(r.KLDMean)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#d62728" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "))
	}
	for _, r := range rows {
		x, y := px(r.CompressionVsF16), py(r.KLDMean)
		c := colour[r.Family]
		if c == "" {
			c = "#000"
		}
		fill, dash := c, ""
		if !r.Recommended {
			fill = "white"
		}
		if r.Warning != "" {
			dash = ` stroke-dasharray="2,2"`
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s" stroke="%s" stroke-width="1.5"%s><title>%s</title></circle><text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n",
			x, y, fill, c, dash, html.EscapeString(r.Warning), x+6, y-6, c, html.EscapeString(r.Cache))
	}
	// Legend: families, then the marks.
	lx, ly := width-right+20, top+10
	for _, f := range familyColours {
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4.5" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly, f.colour, lx+10, ly+4, f.label)
		ly += 18
	}
	ly += 8
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#d62728" stroke-width="1.5"/><text x="%d" y="%d">recommended (filled):</text><text x="%d" y="%d">the efficient frontier</text>`+"\n",
		lx-6, ly, lx+6, ly, lx+10, ly+4, lx+10, ly+20)
	ly += 40
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4.5" fill="white" stroke="#000" stroke-dasharray="2,2"/><text x="%d" y="%d">ctx within a full-</text><text x="%d" y="%d">precision window</text>`+"\n", lx, ly, lx+10, ly+4, lx+10, ly+20)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
