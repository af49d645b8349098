package supervisor

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// tail passes what is written on to w and keeps the last lines of it, for
// a fail's reason.
type tail struct {
	w        io.Writer
	buf      []byte
	maxLines int
	maxBytes int
}

func newTail(w io.Writer, lines, size int) *tail {
	return &tail{w: w, maxLines: lines, maxBytes: size}
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4*t.maxBytes {
		keep := t.buf[len(t.buf)-t.maxBytes:]
		for len(keep) > 0 && !utf8.RuneStart(keep[0]) {
			keep = keep[1:]
		}
		t.buf = append(t.buf[:0], keep...)
	}
	_, _ = t.w.Write(p) // a closed stderr must not fail the command
	return len(p), nil
}

// String is the last lines written, at most maxLines lines and maxBytes
// bytes of valid UTF-8.
func (t *tail) String() string {
	b := bytes.TrimRight(t.buf, "\r\n")
	if len(b) > t.maxBytes {
		b = b[len(b)-t.maxBytes:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	lines := strings.Split(strings.ToValidUTF8(string(b), "?"), "\n")
	if len(lines) > t.maxLines {
		lines = lines[len(lines)-t.maxLines:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	return strings.Join(lines, "\n")
}
