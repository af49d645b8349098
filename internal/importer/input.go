package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxLineBytes is the longest line of a line-per-issue source (beads'
// issues.jsonl): one issue, with every comment, in 16 MiB.
const MaxLineBytes = 16 << 20

// MaxFileBytes is the largest whole-document source (a GitHub export, a
// markdown plan) read into memory.
const MaxFileBytes = 1 << 30

var bom = []byte("\xef\xbb\xbf")

// eachLine calls fn with every line of r, numbered from 1, without its
// line ending, and where in r it starts; a UTF-8 byte order mark before
// the first is dropped. A line
// that is not UTF-8, or longer than MaxLineBytes, is an Error naming it:
// nothing stored from an import ever holds a replacement character the
// file did not.
func eachLine(file string, r io.Reader, fn func(line int, off int64, b []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	var pos int64 // where the line starts
	for n := 1; ; n++ {
		buf = buf[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if len(buf)+len(chunk) > MaxLineBytes {
				return &Error{file, n, fmt.Sprintf("the line is longer than %d bytes (%d MiB), the limit of one issue", MaxLineBytes, MaxLineBytes>>20)}
			}
			buf = append(buf, chunk...)
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && err != io.EOF {
			return &Error{file, n, err.Error()}
		}
		off := pos
		pos += int64(len(buf))
		if n == 1 && bytes.HasPrefix(buf, bom) {
			buf, off = buf[len(bom):], off+int64(len(bom))
		}
		line := bytes.TrimRight(buf, "\r\n")
		if err := validUTF8(line); err != "" {
			return &Error{file, n, err}
		}
		if len(line) > 0 || err == nil {
			if ferr := fn(n, off, line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// ReadAll reads a whole-document source: the byte order mark dropped, the
// first byte that is not UTF-8 named by line.
func ReadAll(file string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{file, 0, err.Error()}
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{file, 0, fmt.Sprintf("the file is larger than %d bytes (%d GiB), the limit of a whole-document import", MaxFileBytes, MaxFileBytes>>30)}
	}
	data = bytes.TrimPrefix(data, bom)
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				line := bytes.Count(data[:i], []byte("\n")) + 1
				col := i - (bytes.LastIndexByte(data[:i], '\n') + 1)
				return nil, &Error{file, line, fmt.Sprintf("byte %d of the line (0x%02x) is not UTF-8; bl stores text as UTF-8: convert the file (iconv -f LATIN1 -t UTF-8, say)", col+1, data[i])}
			}
			i += n
		}
	}
	return data, nil
}

// validUTF8 says where line stops being UTF-8, or "".
func validUTF8(line []byte) string {
	if utf8.Valid(line) {
		return ""
	}
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Sprintf("byte %d of the line (0x%02x) is not UTF-8; bl stores text as UTF-8: convert the file (iconv -f LATIN1 -t UTF-8, say)", i+1, line[i])
		}
		i += n
	}
	return ""
}

// cut returns s cut to at most n bytes at a rune boundary, and the rest.
func cut(s string, n int) (head, rest string) {
	if len(s) <= n {
		return s, ""
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}

// chunks splits s into pieces of at most n bytes at rune boundaries,
// preferring a line break in the second half of a piece.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		head, _ := cut(s, n)
		if i := bytes.LastIndexByte([]byte(head), '\n'); i > n/2 {
			head = head[:i+1]
		}
		out = append(out, head)
		s = s[len(head):]
	}
	return append(out, s)
}
