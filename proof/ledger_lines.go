package proof

import (
	"bytes"
	"fmt"

	"github.com/bl-backlog/bl/ledger"
)

// LedgerLine is one line of a ledger file as Check reads it.
type LedgerLine struct {
	No     int   // 1-based line number
	Offset int64 // byte offset of its first byte
	Raw    []byte
	Event  *ledger.Event // nil when the line is damaged
	Err    error
}

// ParseLedger splits a ledger into lines and decodes each with
// ledger.DecodeLine. It returns the good lines in file order, any damaged
// line that has a good line after it (damage mid-file), and the number of
// bytes of the torn tail: damaged or unterminated bytes with no good line
// after them. Order between lines is not checked here.
func ParseLedger(b []byte) (good []LedgerLine, damaged []LedgerLine, tornBytes int) {
	var all []LedgerLine
	off := 0
	for no := 1; off < len(b); no++ {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			// A complete line that only lost its newline is an event (the
			// framing rule in ledger/doc.go): a torn write can stop just
			// before the newline, and the next writer restores it.
			l := LedgerLine{No: no, Offset: int64(off), Raw: b[off:]}
			if l.Event, l.Err = ledger.DecodeLine(l.Raw); l.Err != nil {
				l.Err = fmt.Errorf("unterminated line")
			}
			all = append(all, l)
			break
		}
		raw := b[off : off+end+1]
		l := LedgerLine{No: no, Offset: int64(off), Raw: raw}
		l.Event, l.Err = ledger.DecodeLine(raw)
		all = append(all, l)
		off += end + 1
	}
	lastGood := -1
	for i, l := range all {
		if l.Err == nil {
			lastGood = i
		}
	}
	for i, l := range all {
		switch {
		case l.Err == nil:
			good = append(good, l)
		case i < lastGood:
			damaged = append(damaged, l)
		default:
			tornBytes += len(l.Raw)
		}
	}
	return good, damaged, tornBytes
}
