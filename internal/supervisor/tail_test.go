package supervisor

import (
	"bytes"
	"strings"
	"testing"
)

func TestTailKeepsLastLines(t *testing.T) {
	var out bytes.Buffer
	tl := newTail(&out, 3, 20)
	for _, s := range []string{"one\n", "two\nthree\r\n", "four\n\n"} {
		tl.Write([]byte(s))
	}
	if got := tl.String(); got != "two\nthree\nfour" {
		t.Fatalf("tail = %q", got)
	}
	if out.String() != "one\ntwo\nthree\r\nfour\n\n" {
		t.Fatalf("passed on %q", out.String())
	}
	// Bounded in bytes, cut at a rune boundary, however much is written.
	tl = newTail(&out, 100, 10)
	for range 1000 {
		tl.Write([]byte("ééééé\n"))
	}
	if got := tl.String(); len(got) > 10 || !strings.HasSuffix(got, "éééé") || strings.ContainsRune(got, '\uFFFD') || len(tl.buf) > 40+12 {
		t.Fatalf("tail = %q (buffer %d bytes)", got, len(tl.buf))
	}
}
