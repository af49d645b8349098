package wire

import (
	"fmt"

	json "github.com/goccy/go-json"
)

// ReadSnapshotLine reads a snapshot line after the header, one that passed
// CheckFrame, for use: DecodeSnapshotFast, else (refusing a line that
// repeats a key, which the fast path never takes) the JSON decoder, then every card, receipt and
// conflict validated against what the fold produces (validateCard). A line
// that fails is damage: an edited snapshot.
func ReadSnapshotLine(line []byte) (SnapshotLine, error) {
	l, ok := DecodeSnapshotFast(line)
	if !ok {
		if err := refuseRepeatedKey(line); err != nil {
			return SnapshotLine{}, err
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return l, err
		}
	}
	var err error
	switch {
	case l.Card != nil:
		err = validateCard(l.Card)
	case l.Receipt != nil:
		err = validateReceipt(l.Receipt)
	case l.Conflict != nil:
		err = validateConflict(l.Conflict)
	}
	return l, err
}

// refuseRepeatedKey is the damage of a line that names a key twice, or nil.
func refuseRepeatedKey(line []byte) error {
	if k := RepeatedKey(line); k != "" {
		return fmt.Errorf("%w: %w %q: the JSON decoder would take its last value while a reader sees the first", ErrFraming, ErrRepeatedKey, k)
	}
	return nil
}

// decodeSnapshotFast decodes a snapshot line of one card, receipt or
// conflict in the shape EncodeFramed writes it, with the same rules as
// decodeFast: the keys of the struct in its order, each at most once, none
// unknown, no whitespace, no nulls, integers of at most 18 digits, times in
// UTC as RFC 3339, strings of valid UTF-8. The members a struct always
// writes (those without omitempty) must be there. It reports any other line
// as not handled (ok false), never as an error. The objects are read by the
// decoders codec_gen.go holds.
func DecodeSnapshotFast(line []byte) (l SnapshotLine, ok bool) {
	n := len(line) - crcSuffixLen
	if n < 2 || line[0] != '{' || !crcMemberOK(line[n:]) {
		return l, false
	}
	d := fastDecoder{b: line[:n]}
	b := d.b
	var i int
	if j := lit(b, 0, `{"card":`); j >= 0 {
		blk := new(cardBlock)
		i = d.cardObject(j, &blk.v, blk)
		l.Card = &blk.v
	} else if j := lit(b, lit(b, 0, `{"receip`), `t":`); j >= 0 {
		k := new(Keyed)
		i = d.receiptObject(j, k)
		l.Receipt = k
	} else if j := lit(b, lit(b, 0, `{"confli`), `ct":`); j >= 0 {
		c := new(Conflict)
		i = d.conflictObject(j, c)
		l.Conflict = c
	} else {
		return SnapshotLine{}, false
	}
	// The top-level object ends with the crc member.
	if i != len(b) {
		return SnapshotLine{}, false
	}
	d.finish()
	return l, true
}

// ReadHeader reads a snapshot's header line, one that passed CheckFrame,
// for use: DecodeHeader, refusing a line that repeats a key, then the
// header validated (validateHeader).
func ReadHeader(line []byte) (SnapshotHeader, error) {
	hdr, fast := decodeHeaderFast(line)
	if !fast {
		if err := refuseRepeatedKey(line); err != nil {
			return SnapshotHeader{}, err
		}
		if err := json.Unmarshal(line, &hdr); err != nil {
			return hdr, err
		}
	}
	return hdr, validateHeader(&hdr)
}

// DecodeHeader decodes a snapshot's header line, one that passed
// CheckFrame. A header in the shape EncodeFramed writes is read without
// the JSON decoder, whose first use in a process costs more than the read;
// any other goes to the JSON decoder.
func DecodeHeader(line []byte) (SnapshotHeader, error) {
	if hdr, fast := decodeHeaderFast(line); fast {
		return hdr, nil
	}
	var hdr SnapshotHeader
	err := json.Unmarshal(line, &hdr)
	return hdr, err
}

// decodeHeaderFast reads a header in the shape EncodeFramed writes; fast is
// false for any other line.
func decodeHeaderFast(line []byte) (hdr SnapshotHeader, fast bool) {
	if n := len(line) - crcSuffixLen; n >= 2 && line[0] == '{' && crcMemberOK(line[n:]) {
		d := fastDecoder{b: line[:n]}
		if d.headerMembers(0, &hdr) == n {
			d.finish()
			return hdr, true
		}
	}
	return SnapshotHeader{}, false
}
