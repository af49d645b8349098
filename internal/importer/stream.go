package importer

import (
	"hash/crc32"
	"io"
)

// Stream is a source read once to know its items' references (Refs: to
// order them and name their cards) and read again, item by item, when
// each is planned: an import of 100,000 issues holds their references,
// not their text. Item does not read Items: once the planner is made, a
// caller may drop them (set Items to nil) to free their memory.
type Stream struct {
	Items []Ref
	load  func(i int) (Item, error)
}

// Item is the whole i-th item.
func (s *Stream) Item(i int) (Item, error) { return s.load(i) }

// Whole is a stream of items already in memory (a whole-document source:
// a GitHub export, a markdown plan).
func Whole(items []Item) *Stream {
	return &Stream{Items: refs(items), load: func(i int) (Item, error) { return items[i], nil }}
}

// span is where a line-per-issue source holds an item, and the CRC of its
// bytes: a file changed between the two reads is named, not imported
// half old, half new.
type span struct {
	off  int64
	n    int32
	line int32
	crc  uint32
}

func spanOf(line int, off int64, raw []byte) span {
	return span{off, int32(len(raw)), int32(line), crc32.ChecksumIEEE(raw)}
}

// read reads the span's bytes again from r; ok is false when they are not
// the bytes read the first time.
func (sp span) read(r io.ReaderAt) (raw []byte, ok bool) {
	raw = make([]byte, sp.n)
	if _, err := r.ReadAt(raw, sp.off); err != nil {
		return nil, false
	}
	return raw, crc32.ChecksumIEEE(raw) == sp.crc
}
