package export

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/browsertest"
)

// TestHTMLSelfContained: the page fetches nothing — no scripts, style
// sheets, images, fonts or imports; the only URL is the SVG namespace.
func TestHTMLSelfContained(t *testing.T) {
	page := string(render(t, HTML, richCards(), Options{Now: testNow}))
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "@import", "@font-face"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("html contains %q", bad)
		}
	}
	if urls := regexp.MustCompile(`https?://[^"\s]+`).FindAllString(page, -1); len(urls) != 1 || urls[0] != "http://www.w3.org/2000/svg" {
		t.Errorf("html mentions URLs %q", urls)
	}
	for _, u := range regexp.MustCompile(`url\([^)]*\)`).FindAllString(page, -1) {
		if u != "url(#arrow)" {
			t.Errorf("html refers to %s", u)
		}
	}
	// Titles are escaped, never markup.
	if strings.Contains(page, "<script>alert") {
		t.Error("a title's <script> reached the page unescaped")
	}
	for _, want := range []string{
		`<article class="card claimed" id="card-e1">`,
		`<span class="badge expired">lease expired</span>`,
		`<p class="asof">As of 2026-03-01T10:00:00Z</p>`,
		`<a href="#card-a2"><g class="node claimed">`,
		`<g class="node external"><title>Z9 (not in this export)</title>`,
		`<p class="meta">depends on <a class="ref claimed" href="#card-a2">A2</a>, <a class="ref ready" href="#card-b1">B1</a></p>`,
		`Quote &#34;this&#34; &lt;script&gt;alert(1)&lt;/script&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("html lacks %s", want)
		}
	}
}

// TestHTMLInChromium opens the html export in headless Chromium and checks
// the screenshot shows the DAG and the board: a 1400x1000 PNG with large
// areas of every status colour (the SVG boxes) and of the lanes' grey.
// Without chromium installed (.ci/run installs it) the test is skipped.
// Set BL_EXPORT_SCREENSHOT=FILE to keep the PNG.
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not starting a browser")
	}
	bin := browsertest.Chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "board.html")
	if err := os.WriteFile(page, render(t, HTML, richCards(), Options{Now: testNow}), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "board.png")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot,
		"--window-size=1400,1000", "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if keep := os.Getenv("BL_EXPORT_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot kept at %s", keep)
	}
	if len(raw) < 20_000 {
		t.Errorf("screenshot is only %d bytes", len(raw))
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 1000 {
		t.Errorf("screenshot is %dx%d, want 1400x1000", b.Dx(), b.Dy())
	}
	counts := colourCounts(img)
	if len(counts) < 200 {
		t.Errorf("screenshot has only %d colours: blank or broken page", len(counts))
	}
	for name, min := range map[string]int{
		// SVG node fills: a box is 200x44 px.
		palette["ready"].fill: 20_000, palette["claimed"].fill: 8_000, palette["blocked"].fill: 4_000,
		palette["done"].fill: 8_000, palette["external"].fill: 4_000,
		"#eef2f7": 50_000, // the lanes
	} {
		if n := counts[name]; n < min {
			t.Errorf("screenshot has %d pixels of %s, want at least %d", n, name, min)
		}
	}
}

func colourCounts(img image.Image) map[string]int {
	counts := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			counts[hexColour(c)]++
		}
	}
	return counts
}

func hexColour(c color.NRGBA) string {
	const digits = "0123456789abcdef"
	return string([]byte{'#', digits[c.R>>4], digits[c.R&15], digits[c.G>>4], digits[c.G&15], digits[c.B>>4], digits[c.B&15]})
}
