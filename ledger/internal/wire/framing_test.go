package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// crlf gives every line a "\r\n" line end, as a core.autocrlf=true checkout
// does.
func crlf(data []byte) []byte {
	return bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
}

// framingOutcome is what reading a whole file says.
type framingOutcome struct {
	ids     []string
	torn    int64 // offset of the torn tail, -1 for none
	corrupt int64 // offset of the damage, -1 for none
}

func readOutcome(t *testing.T, data []byte) framingOutcome {
	t.Helper()
	evs, end, torn, err := ReadEventsData("F", data)
	o := framingOutcome{torn: -1, corrupt: -1}
	for _, e := range evs {
		o.ids = append(o.ids, e.ID)
	}
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		o.corrupt, o.ids = ce.Offset, nil
	case err != nil:
		t.Fatalf("not a *CorruptError: %v", err)
	case torn != nil:
		o.torn = torn.Offset
		if end != torn.Offset || torn.Offset+torn.Bytes != int64(len(data)) || torn.Line < 1 || torn.Reason == "" {
			t.Fatalf("torn tail %+v, end %d, of %d bytes", torn, end, len(data))
		}
	case end != int64(len(data)):
		t.Fatalf("clean read ended at %d of %d", end, len(data))
	}
	return o
}

func (o framingOutcome) kind() string {
	switch {
	case o.corrupt >= 0:
		return "corrupt"
	case o.torn >= 0:
		return "torn"
	}
	return "clean"
}

// FuzzFraming: the reader never panics, and its one rule is consistent:
// what precedes a torn tail reads clean; a torn tail with a line after it
// is damage; "\r\n" line ends and a lost final newline change nothing; a
// follower that resumes after any event sees the rest the same way.
func FuzzFraming(f *testing.F) {
	var ledger []byte
	for _, ev := range roundTripEvents() {
		line, err := EncodeLine(ev)
		if err != nil {
			f.Fatal(err)
		}
		ledger = append(ledger, line...)
	}
	f.Add(ledger)
	f.Add(ledger[:len(ledger)-1])
	f.Add(ledger[:len(ledger)/2])
	f.Add(crlf(ledger))
	f.Add(append(append([]byte{}, ledger...), make([]byte, 9)...))
	f.Add(append(append([]byte{}, ledger...), "\n\x00\x00\ngarbage"...))
	f.Add([]byte("\n"))
	f.Add([]byte("\r"))
	good, err := EncodeLine(roundTripEvents()[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o := readOutcome(t, data)
		if o.torn >= 0 {
			if before := readOutcome(t, data[:o.torn]); before.kind() != "clean" || strings.Join(before.ids, ",") != strings.Join(o.ids, ",") {
				t.Fatalf("what precedes the torn tail reads %+v, the whole %+v", before, o)
			}
			then := append(append(append([]byte{}, data...), '\n'), good...)
			if after := readOutcome(t, then); after.corrupt != o.torn {
				t.Fatalf("a torn tail at %d with a good line after it reads %+v", o.torn, after)
			}
		}
		if !bytes.Contains(data, []byte{'\r'}) {
			c := readOutcome(t, crlf(data))
			if c.kind() != o.kind() || strings.Join(c.ids, ",") != strings.Join(o.ids, ",") {
				t.Fatalf("with \\r\\n line ends: %+v, with \\n: %+v", c, o)
			}
		}
		if o.kind() == "clean" && bytes.HasSuffix(data, []byte{'\n'}) {
			c := readOutcome(t, data[:len(data)-1])
			if c.kind() != "clean" || strings.Join(c.ids, ",") != strings.Join(o.ids, ",") {
				t.Fatalf("without the final newline: %+v, with it: %+v", c, o)
			}
		}
		// A follower resuming after the k-th event, as ReadEventsFile does.
		if len(o.ids) > 0 {
			k := int(data[0]) % len(o.ids)
			lr := NewLineReader("F", bytes.NewReader(data), LineStart{}, MinBufSize)
			var off int64
			for range k + 1 {
				_, l, _, err := lr.Event()
				if err != nil {
					t.Fatal(err)
				}
				off = l.Off + l.Size
			}
			bare, err := EndsBare(bytes.NewReader(data), off)
			if err != nil {
				t.Fatal(err)
			}
			rest := NewLineReader("F", bytes.NewReader(data), LineStart{Off: off, Bare: bare}, MinBufSize)
			var ids []string
			for {
				e, _, torn, err := rest.Event()
				if err == io.EOF || torn != nil {
					break
				}
				if err != nil {
					if o.kind() != "corrupt" {
						t.Fatalf("resumed at %d: %v; whole file %+v", off, err, o)
					}
					break
				}
				ids = append(ids, e.ID)
			}
			if o.kind() != "corrupt" && strings.Join(ids, ",") != strings.Join(o.ids[k+1:], ",") {
				t.Fatalf("resumed at %d after %d events: %v, want %v", off, k+1, ids, o.ids[k+1:])
			}
		}
	})
}

// growingFile is a ledger a writer is appending to while it is read: reads
// see the first visible bytes until one meets their end, and the whole
// file after that, as a reader without the lock sees a write land.
type growingFile struct {
	data    []byte
	visible int
}

func (g *growingFile) ReadAt(p []byte, off int64) (int, error) {
	end := g.visible
	if off >= int64(end) {
		g.visible = len(g.data) // the writer finishes its line, and more
		return 0, io.EOF
	}
	n := copy(p, g.data[off:end])
	if n < len(p) {
		g.visible = len(g.data)
		return n, io.EOF
	}
	return n, nil
}

// TestAppendInProgressIsNotDamage: a line read while its append was landing
// ends at the end of the file; lines after it, there by the time the
// reader looks past it, mean the file grew, not that it is damaged. The
// read ends quietly before the line, and the next read gets it whole.
func TestAppendInProgressIsNotDamage(t *testing.T) {
	var data []byte
	var starts []int
	for _, ev := range roundTripEvents()[:3] {
		line, err := EncodeLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, len(data))
		data = append(data, line...)
	}
	g := &growingFile{data: data, visible: starts[1] + 17} // inside line 2
	lr := NewLineReader("ledger.jsonl", g, LineStart{}, MinBufSize)
	if _, _, torn, err := lr.Event(); torn != nil || err != nil {
		t.Fatalf("line 1: torn %v, err %v", torn, err)
	}
	_, _, torn, err := lr.Event()
	if err != nil {
		t.Fatalf("an append in progress read as damage: %v", err)
	}
	if torn == nil || !torn.Growing || torn.Offset != int64(starts[1]) || torn.Line != 2 {
		t.Fatalf("line 2: torn %+v, want an append in progress at offset %d", torn, starts[1])
	}
	again := NewLineReader("ledger.jsonl", g, LineStart{Off: torn.Offset, N: 1}, MinBufSize)
	for n := 2; n <= 3; n++ {
		if _, l, torn, err := again.Event(); torn != nil || err != nil || l.N != n {
			t.Fatalf("read again, line %d: %+v torn %v err %v", n, l, torn, err)
		}
	}
	// A file that holds still with the same bytes is a torn line with a
	// line after it: damage, as before.
	static := append(append([]byte{}, data[:starts[1]+17]...), '\n')
	static = append(static, data[starts[2]:]...)
	if o := readOutcome(t, static); o.corrupt < 0 {
		t.Fatalf("torn bytes ended by a line end, then a line: %+v", o)
	}
}
