package wire

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"sync"

	json "github.com/goccy/go-json"
)

// NewEventID returns 64 random bits in hex, from the kernel (crypto/rand),
// not from a generator in the process's memory (math/rand/v2): a process
// copied whole (a VM or container restored twice from one snapshot) would
// draw the same ids in both copies, and math/rand/v2 does not promise ids
// a teammate cannot predict (one id on two events is damage, so a
// predicted id could take a clone's events out of the others').
// ids_linux_test.go in package ledger holds the first.
func NewEventID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// before reports whether e sorts before f in ledger order: by time, then id.
func (e *Event) Before(f *Event) bool {
	if c := e.At.Compare(f.At); c != 0 {
		return c < 0
	}
	return e.ID < f.ID
}

// Castagnoli is the CRC-32C table, made on first use: making it sets up
// the hardware path (about 0.3 ms), which a call that reads little need
// not pay (see Checksum).
var Castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

var closingBrace = []byte{'}'}

// crcSuffixLen is the length of `,"crc":"xxxxxxxx"}`.
const crcSuffixLen = len(`,"crc":"`) + 8 + len(`"}`)

// EncodeLine renders e as one ledger line, checksum and newline included.
func EncodeLine(e *Event) ([]byte, error) {
	line, err := EncodeFramed(e)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode %s event: %w", e.Op, err)
	}
	return line, nil
}

// EncodeFramed marshals v (a JSON object) and frames it as a checksummed
// line: the object with a final "crc" member, then a newline. Ledger,
// snapshot and archive lines share this framing.
func EncodeFramed(v any) ([]byte, error) {
	return AppendFramed(nil, v)
}

// AppendFramed appends the line EncodeFramed returns to dst. The wire
// types are written by their encoders in codec_gen.go; anything else, and
// any value those leave, by the JSON encoder.
func AppendFramed(dst []byte, v any) ([]byte, error) {
	start := len(dst)
	ok := false
	switch v := v.(type) {
	case *Event:
		if dst == nil {
			dst = make([]byte, 0, eventSize(v)+crcSuffixLen+1)
		}
		dst, ok = appendEvent(dst, v)
	case SnapshotHeader:
		dst, ok = appendHeader(dst, &v)
	case SnapshotLine:
		var out []byte
		switch {
		case v.Card != nil && v.Receipt == nil && v.Conflict == nil:
			out, ok = appendCard(append(dst, `{"card":`...), v.Card)
		case v.Card == nil && v.Receipt != nil && v.Conflict == nil:
			out, ok = appendReceipt(append(dst, `{"receipt":`...), v.Receipt)
		case v.Card == nil && v.Receipt == nil && v.Conflict != nil:
			out, ok = appendConflict(append(dst, `{"conflict":`...), v.Conflict)
		}
		if ok {
			dst = append(out, '}')
		}
	}
	if !ok {
		body, err := json.MarshalWithOption(v, json.DisableHTMLEscape())
		if err != nil {
			return dst[:start], err
		}
		dst = append(dst[:start], body...)
	}
	sum := Checksum(dst[start:])
	dst = append(dst[:len(dst)-1], `,"crc":"`...)
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[sum>>shift&0xf])
	}
	return append(dst, '"', '}', '\n'), nil
}

// CheckFrame verifies a framed line's checksum and returns the line without
// its line end ("\n" or "\r\n"; a final line may have none, or only the
// '\r'); the checksum covers the line without it. The crc member stays, as
// valid JSON the decoders ignore.
func CheckFrame(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	n := len(line)
	if n < crcSuffixLen+2 || line[0] != '{' || !bytes.HasPrefix(line[n-crcSuffixLen:], []byte(`,"crc":"`)) || !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, ErrFraming
	}
	want, ok := parseHex32(line[n-10 : n-2])
	if !ok {
		return nil, ErrFraming
	}
	sum := UpdateChecksum(0, line[:n-crcSuffixLen])
	if UpdateChecksum(sum, closingBrace) != uint32(want) {
		return nil, ErrChecksum
	}
	return line, nil
}

// parseHex32 reads eight hex digits, either case, as written by %08x.
func parseHex32(b []byte) (uint32, bool) {
	var v uint32
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, len(b) == 8
}

// DecodeLine parses one line (with or without its trailing newline),
// verifying its checksum and format version.
func DecodeLine(line []byte) (*Event, error) {
	line, err := CheckFrame(line)
	if err != nil {
		return nil, err
	}
	e, ok := decodeFast(line)
	if !ok {
		if e, err = decodeSlow(line); err != nil {
			return nil, err
		}
	}
	if e.V > FormatVersion {
		return nil, Errorf(ErrVersion, "line has format v%d, this bl reads v%d; upgrade bl", e.V, FormatVersion)
	}
	if e.V < 1 || e.ID == "" || e.Card == "" || e.At.IsZero() || !knownOp(e.Op) {
		return nil, fmt.Errorf("%w: missing or unknown v, id, at, op or card", ErrFraming)
	}
	if err := checkStamps(e); err != nil {
		return nil, err
	}
	return e, nil
}

// ByAtID orders events as the ledger does.
func ByAtID(a, b *Event) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
