package gitdir

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strings"
)

// packIndex is one pack's .idx (version 2: gitformat-pack, "Version 2
// pack-*.idx files") and its .pack, both read at offsets, never whole.
type packIndex struct {
	idx, pack *os.File
	hashSize  int
	count     uint32
	fanout    [256]uint32
	idxSize   int64
	packSize  int64
}

func openPackIndex(name string, hashSize int) (*packIndex, error) {
	idx, err := openRegular(name)
	if err != nil {
		return nil, ErrUnsure
	}
	pack, err := openRegular(strings.TrimSuffix(name, ".idx") + ".pack")
	if err != nil {
		idx.Close()
		return nil, ErrUnsure // an .idx without its pack: git's business
	}
	p := &packIndex{idx: idx, pack: pack, hashSize: hashSize}
	if err := p.check(); err != nil {
		idx.Close()
		pack.Close()
		return nil, err
	}
	return p, nil
}

// check reads the idx's header and fanout and the pack's header.
func (p *packIndex) check() error {
	idx, pack, hashSize := p.idx, p.pack, p.hashSize
	ifi, err1 := idx.Stat()
	pfi, err2 := pack.Stat()
	if err1 != nil || err2 != nil {
		return ErrUnsure
	}
	p.idxSize, p.packSize = ifi.Size(), pfi.Size()
	head := make([]byte, 8+256*4)
	if _, err := idx.ReadAt(head, 0); err != nil || !bytes.Equal(head[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return ErrUnsure
	}
	prev := uint32(0)
	for i := range p.fanout {
		v := binary.BigEndian.Uint32(head[8+4*i:])
		if v < prev {
			return ErrUnsure
		}
		p.fanout[i], prev = v, v
	}
	p.count = prev
	// names, CRCs, 32-bit offsets, the two checksums at least.
	if want := int64(8+256*4) + int64(p.count)*int64(hashSize+8) + 2*int64(hashSize); p.idxSize < want {
		return ErrUnsure
	}
	var ph [12]byte
	if _, err := pack.ReadAt(ph[:], 0); err != nil || string(ph[:4]) != "PACK" {
		return ErrUnsure
	}
	if v := binary.BigEndian.Uint32(ph[4:]); v != 2 && v != 3 || binary.BigEndian.Uint32(ph[8:]) != p.count {
		return ErrUnsure
	}
	return nil
}

// find is id's offset in the pack, by the fanout and a binary search of
// the sorted names.
func (p *packIndex) find(id []byte) (int64, bool, error) {
	lo := uint32(0)
	if id[0] > 0 {
		lo = p.fanout[id[0]-1]
	}
	hi := p.fanout[id[0]]
	name := make([]byte, p.hashSize)
	namesAt := int64(8 + 256*4)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := p.idx.ReadAt(name, namesAt+int64(mid)*int64(p.hashSize)); err != nil {
			return 0, false, ErrUnsure
		}
		switch c := bytes.Compare(name, id); {
		case c == 0:
			off, err := p.offset(mid)
			return off, err == nil, err
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false, nil
}

// offset is the pack offset of the idx's entry i.
func (p *packIndex) offset(i uint32) (int64, error) {
	n := int64(p.count)
	at := int64(8+256*4) + n*int64(p.hashSize) + n*4 + int64(i)*4
	var b [8]byte
	if _, err := p.idx.ReadAt(b[:4], at); err != nil {
		return 0, ErrUnsure
	}
	v := binary.BigEndian.Uint32(b[:4])
	if v&0x80000000 == 0 {
		return p.checkOffset(int64(v))
	}
	at = int64(8+256*4) + n*int64(p.hashSize) + n*8 + int64(v&0x7fffffff)*8
	if at+8 > p.idxSize-2*int64(p.hashSize) {
		return 0, ErrUnsure
	}
	if _, err := p.idx.ReadAt(b[:], at); err != nil {
		return 0, ErrUnsure
	}
	return p.checkOffset(int64(binary.BigEndian.Uint64(b[:])))
}

func (p *packIndex) checkOffset(off int64) (int64, error) {
	if off < 12 || off >= p.packSize-int64(p.hashSize) {
		return 0, ErrUnsure
	}
	return off, nil
}

// Pack entry types (gitformat-pack).
const (
	packOfsDelta = 6
	packRefDelta = 7
)

// packed reads the object at off of pack p, resolving deltas.
func (s *Store) packed(p *packIndex, off int64, depth int) (string, []byte, error) {
	if depth > maxDeltaDepth {
		return "", nil, ErrUnsure
	}
	r := bufio.NewReaderSize(io.NewSectionReader(p.pack, off, p.packSize-int64(p.hashSize)-off), 4096)
	c, err := r.ReadByte()
	if err != nil {
		return "", nil, ErrUnsure
	}
	typ := int(c>>4) & 7
	size := int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return "", nil, ErrUnsure
		}
		if c, err = r.ReadByte(); err != nil {
			return "", nil, ErrUnsure
		}
		size |= int64(c&0x7f) << shift
	}
	if size > s.MaxSize {
		return "", nil, ErrUnsure
	}
	switch typ {
	case 1, 2, 3, 4:
		data, err := s.inflate(r, size)
		return objectTypes[typ], data, err
	case packOfsDelta:
		c, err := r.ReadByte()
		if err != nil {
			return "", nil, ErrUnsure
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if rel > 1<<48 {
				return "", nil, ErrUnsure
			}
			if c, err = r.ReadByte(); err != nil {
				return "", nil, ErrUnsure
			}
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		if rel <= 0 || off-rel < 12 {
			return "", nil, ErrUnsure
		}
		delta, err := s.inflate(r, size)
		if err != nil {
			return "", nil, err
		}
		btyp, base, err := s.packed(p, off-rel, depth+1)
		if err != nil {
			return "", nil, err
		}
		return s.undelta(btyp, base, delta)
	case packRefDelta:
		id := make([]byte, s.hashSize)
		if _, err := io.ReadFull(r, id); err != nil {
			return "", nil, ErrUnsure
		}
		delta, err := s.inflate(r, size)
		if err != nil {
			return "", nil, err
		}
		btyp, base, err := s.read(id, depth+1)
		if err != nil {
			return "", nil, err
		}
		return s.undelta(btyp, base, delta)
	}
	return "", nil, ErrUnsure
}

// inflate reads exactly size bytes of zlib data from r, within what one
// Read may inflate in all (a delta chain of big objects, a zlib bomb).
func (s *Store) inflate(r io.Reader, size int64) ([]byte, error) {
	if s.spent += size; s.spent > 4*s.MaxSize {
		return nil, ErrUnsure
	}
	z, err := s.zlib(r)
	if err != nil {
		return nil, ErrUnsure
	}
	return readExactly(z, size)
}

// undelta applies delta to base, counting what it makes against what
// one Read may make in all: a few bytes of delta copy up to 64 KB each,
// so a small chain could otherwise make gigabytes.
func (s *Store) undelta(typ string, base, delta []byte) (string, []byte, error) {
	_, rest, ok := deltaSize(delta)
	if !ok {
		return "", nil, ErrUnsure
	}
	dst, _, ok := deltaSize(rest)
	if !ok || dst > s.MaxSize {
		return "", nil, ErrUnsure
	}
	if s.spent += dst; s.spent > 4*s.MaxSize {
		return "", nil, ErrUnsure
	}
	data, err := applyDelta(base, delta, s.MaxSize)
	return typ, data, err
}

// applyDelta applies a git delta (gitformat-pack, "Deltified
// representation") to base; every copy is bounds-checked.
func applyDelta(base, delta []byte, maxSize int64) ([]byte, error) {
	src, delta, ok := deltaSize(delta)
	if !ok || src != int64(len(base)) {
		return nil, ErrUnsure
	}
	dst, delta, ok := deltaSize(delta)
	if !ok || dst > maxSize {
		return nil, ErrUnsure
	}
	out := make([]byte, 0, dst)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		if op&0x80 == 0 {
			n := int(op)
			if n == 0 || n > len(delta) {
				return nil, ErrUnsure
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		} else {
			var offset, size int64
			for i := range 4 {
				if op&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, ErrUnsure
					}
					offset |= int64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			for i := range 3 {
				if op&(0x10<<i) != 0 {
					if len(delta) == 0 {
						return nil, ErrUnsure
					}
					size |= int64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			if size == 0 {
				size = 0x10000
			}
			if offset+size > int64(len(base)) {
				return nil, ErrUnsure
			}
			out = append(out, base[offset:offset+size]...)
		}
		if int64(len(out)) > dst {
			return nil, ErrUnsure
		}
	}
	if int64(len(out)) != dst {
		return nil, ErrUnsure
	}
	return out, nil
}

// deltaSize reads one of a delta's two leading sizes (7 bits a byte,
// least significant first).
func deltaSize(b []byte) (int64, []byte, bool) {
	var v int64
	for i, shift := 0, 0; i < len(b); i, shift = i+1, shift+7 {
		if shift > 56 {
			return 0, nil, false
		}
		v |= int64(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// Close closes the store's files.
func (s *Store) Close() error {
	for _, p := range s.packs {
		p.idx.Close()
		p.pack.Close()
	}
	s.packs, s.listed = nil, false
	return nil
}

// packedSize is the size of the object at off as its entry says (for a
// delta, the size it makes, from the delta's first bytes).
func (s *Store) packedSize(p *packIndex, off int64) (int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(p.pack, off, p.packSize-int64(p.hashSize)-off), 512)
	c, err := r.ReadByte()
	if err != nil {
		return 0, ErrUnsure
	}
	typ := int(c>>4) & 7
	size := int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return 0, ErrUnsure
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, ErrUnsure
		}
		size |= int64(c&0x7f) << shift
	}
	switch typ {
	case 1, 2, 3, 4:
		return size, nil
	case packOfsDelta:
		for c, err = r.ReadByte(); err == nil && c&0x80 != 0; c, err = r.ReadByte() {
		}
	case packRefDelta:
		_, err = r.Discard(s.hashSize)
	default:
		return 0, ErrUnsure
	}
	if err != nil {
		return 0, ErrUnsure
	}
	z, err := s.zlib(r)
	if err != nil {
		return 0, ErrUnsure
	}
	head := make([]byte, min(size, 20))
	if _, err := io.ReadFull(z, head); err != nil {
		return 0, ErrUnsure
	}
	_, rest, ok := deltaSize(head)
	if !ok {
		return 0, ErrUnsure
	}
	dst, _, ok := deltaSize(rest)
	if !ok {
		return 0, ErrUnsure
	}
	return dst, nil
}
