package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
)

// style is how a target is drawn.
type style struct {
	c      color.RGBA
	dashed bool
}

var styles = map[string]style{
	"native":     {color.RGBA{40, 40, 40, 255}, false},
	"hangar-go":  {color.RGBA{31, 100, 200, 255}, false},
	"hangar-wat": {color.RGBA{31, 100, 200, 255}, true},
	// Hangar at 2026-07-28, stateless
	"hangar-go-2026":  {color.RGBA{20, 150, 80, 255}, false},
	"hangar-wat-2026": {color.RGBA{20, 150, 80, 255}, true},
	// Hangar through the go-sdk only (--no-fast-path)
	"hangar-go-sdk":  {color.RGBA{130, 170, 225, 255}, false},
	"hangar-wat-sdk": {color.RGBA{130, 170, 225, 255}, true},
	"node-go":        {color.RGBA{225, 110, 10, 255}, false},
	"node-wat":       {color.RGBA{225, 110, 10, 255}, true},
}

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{110, 110, 110, 255}
	light = color.RGBA{225, 225, 225, 255}
)

// writePlot draws throughput against concurrency for every target, one
// panel per transport, and writes it as a PNG.
func writePlot(path string, r *results) error {
	img := renderPlot(r)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func renderPlot(r *results) *image.RGBA {
	const W = 1280
	// The legend, in as many rows as it takes.
	type entry struct{ x, y int }
	var legend []entry
	x, y := 120, 670
	for _, t := range r.Targets {
		if w := 62 + textWidth(t.Label, 2); x > 120 && x+w > W-20 {
			x, y = 120, y+34
		}
		legend = append(legend, entry{x, y})
		x += 62 + textWidth(t.Label, 2) + 50
	}
	H := max(760, y+40)
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	fillRect(img, 0, 0, W, H, white)

	title := "Throughput vs concurrency: tools/call of an echo tool"
	drawText(img, (W-textWidth(title, 3))/2, 18, title, 3, black)
	for i, sub := range []string{
		fmt.Sprintf("calls per second (higher is better), %d cores, load generator on the same machine", r.Machine.Cores),
		"absolute numbers are machine-specific: compare the lines, not the values",
	} {
		drawText(img, (W-textWidth(sub, 2))/2, 58+i*22, sub, 2, grey)
	}

	ymax := 0.0
	for _, c := range r.Cells {
		ymax = math.Max(ymax, c.Throughput)
	}
	step := niceStep(ymax / 5)
	if step <= 0 {
		step = 1
	}
	top := math.Ceil(ymax*1.05/step) * step

	panels := []struct{ transport, title string }{
		{"http", "Streamable HTTP (one session per caller)"},
		{"stdio", "stdio (one session, C calls in flight)"},
	}
	for i, p := range panels {
		area := image.Rect(120+i*620, 150, 120+i*620+500, 590)
		drawPanel(img, area, p.title, p.transport, r, top, step)
	}

	for i, t := range r.Targets {
		x, y := legend[i].x, legend[i].y
		st := styles[t.Key]
		drawLine(img, float64(x), float64(y+8), float64(x+50), float64(y+8), st.c, st.dashed)
		drawMarker(img, float64(x+25), float64(y+8), st.c)
		drawText(img, x+62, y, t.Label, 2, black)
	}
	return img
}

func drawPanel(img *image.RGBA, a image.Rectangle, title, transport string, r *results, top, step float64) {
	drawText(img, a.Min.X+(a.Dx()-textWidth(title, 2))/2, a.Min.Y-30, title, 2, black)
	// Grid and y ticks.
	for v := 0.0; v <= top+step/2; v += step {
		y := yPos(a, v, top)
		drawLine(img, float64(a.Min.X), y, float64(a.Max.X), y, light, false)
		lbl := formatCount(v)
		drawText(img, a.Min.X-12-textWidth(lbl, 2), int(y)-7, lbl, 2, black)
	}
	// Axes.
	fillRect(img, a.Min.X, a.Min.Y, 2, a.Dy()+1, black)
	fillRect(img, a.Min.X, a.Max.Y, a.Dx(), 2, black)
	drawText(img, a.Min.X-100, a.Min.Y-30, "calls/s", 2, grey)
	// X ticks at the levels, on a log scale.
	levels := r.Levels
	for _, c := range levels {
		x := xPos(a, c, levels)
		fillRect(img, int(x), a.Max.Y, 2, 8, black)
		lbl := fmt.Sprint(c)
		drawText(img, int(x)-textWidth(lbl, 2)/2, a.Max.Y+14, lbl, 2, black)
	}
	xl := "concurrent callers C (log scale)"
	drawText(img, a.Min.X+(a.Dx()-textWidth(xl, 2))/2, a.Max.Y+42, xl, 2, grey)
	// Series.
	for _, t := range r.Targets {
		st := styles[t.Key]
		var pts [][2]float64
		for _, c := range levels {
			if x := r.cell(transport, t.Key, c); x != nil {
				pts = append(pts, [2]float64{xPos(a, c, levels), yPos(a, x.Throughput, top)})
			}
		}
		for i := 1; i < len(pts); i++ {
			drawLine(img, pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1], st.c, st.dashed)
		}
		for _, p := range pts {
			drawMarker(img, p[0], p[1], st.c)
		}
	}
}

func xPos(a image.Rectangle, c int, levels []int) float64 {
	lo, hi := math.Log2(float64(levels[0])), math.Log2(float64(levels[len(levels)-1]))
	const pad = 40
	if hi == lo {
		return float64(a.Min.X+a.Max.X) / 2
	}
	return float64(a.Min.X+pad) + (math.Log2(float64(c))-lo)/(hi-lo)*float64(a.Dx()-2*pad)
}

func yPos(a image.Rectangle, v, top float64) float64 {
	return float64(a.Max.Y) - v/top*float64(a.Dy())
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func formatCount(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	// Thousands separators keep big numbers readable.
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

// drawLine draws a 3-pixel-wide line, dashed if asked.
func drawLine(img *image.RGBA, x0, y0, x1, y1 float64, c color.Color, dashed bool) {
	dx, dy := x1-x0, y1-y0
	n := math.Hypot(dx, dy)
	for s := 0.0; s <= n; s += 0.5 {
		if dashed && math.Mod(s, 14) > 8 {
			continue
		}
		x, y := x0+dx*s/math.Max(n, 1), y0+dy*s/math.Max(n, 1)
		fillRect(img, int(x)-1, int(y)-1, 3, 3, c)
	}
}

func drawMarker(img *image.RGBA, x, y float64, c color.Color) {
	const r = 6
	for py := -r; py <= r; py++ {
		for px := -r; px <= r; px++ {
			if px*px+py*py <= r*r {
				img.Set(int(x)+px, int(y)+py, c)
			}
		}
	}
}
