package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"
	"unsafe"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Reading the snapshot index, the local cache that lets a call read the
// few snapshot lines it needs; its layout and checks are specified under
// "Snapshot index" in doc.go, and index_write.go builds it.
const (
	CacheDir  = "cache"
	IndexFile = "snapshot.idx"
)

var indexMagic = [8]byte{'b', 'l', 'i', 'd', 'x', '0', '0', '5'}

// IndexBlock is the span of the index each checksum covers: a lookup
// checks each block its binary search lands in, so a small block is a
// small cost per probe.
const IndexBlock = 1024

// indexSum is the checksum of an index block and of the block sums:
// CRC-32 (IEEE), as the tail checkpoint's, whose carry-less-multiply path
// checks a block in a tenth of the time CRC-32C's table path takes (a
// short call checks tens of blocks, too few to pay for CRC-32C's
// hardware path's set-up). It guards against damage only, as the line
// CRCs do; every line read through the index is checked again.
func indexSum(b []byte) uint32 { return checkpointSum(0, b) }

// orderLen is one claim-order entry: the card's Position in the card table
// and the end of its lease in Unix nanoseconds (0 when it holds none).
const orderLen = 4 + 8

// IndexHeaderLen is the fixed part of the file before the tables.
const IndexHeaderLen = 8 + 8 + 8 + 4 + 4 + 4 + 4 + 4 + 8 + 4

// EntryLen is one table entry: key offset and length in the string pool,
// line offset and length in the snapshot.
const EntryLen = 4 + 4 + 8 + 4

// snapshotID identifies the snapshot an index was built for.
type snapshotID struct {
	size      int64
	mtime     int64
	headerCRC uint32
}

func snapshotIdentity(fi os.FileInfo, headerLine []byte) snapshotID {
	return snapshotID{size: fi.Size(), mtime: fi.ModTime().UnixNano(), headerCRC: wire.Checksum(headerLine)}
}

// sealedIndex is an index file's content whose blocks are checked against
// their checksums the first time they are read.
type sealedIndex struct {
	data    []byte // header, tables, order and pool
	sums    []byte // an indexSum per block
	checked []bool
}

// openSealed checks an index file's trailer; nil when it does not hold.
func openSealed(file []byte) *sealedIndex {
	le := binary.LittleEndian
	if len(file) < 8 {
		return nil
	}
	n := int(le.Uint32(file[len(file)-8:]))
	end := len(file) - 8 - 4*n
	if n <= 0 || end <= 0 || n != (end+IndexBlock-1)/IndexBlock ||
		indexSum(file[end:len(file)-4]) != le.Uint32(file[len(file)-4:]) {
		return nil
	}
	return &sealedIndex{data: file[:end], sums: file[end : end+4*n], checked: make([]bool, n)}
}

// span returns n bytes at off, checking each block it covers on first
// use; errIndexMismatch when out of range or damaged.
func (c *sealedIndex) span(off, n int) ([]byte, error) {
	if off < 0 || n < 0 || off+n > len(c.data) {
		return nil, errIndexMismatch
	}
	for b := off / IndexBlock; n > 0 && b <= (off+n-1)/IndexBlock; b++ {
		if c.checked[b] {
			continue
		}
		block := c.data[b*IndexBlock : min((b+1)*IndexBlock, len(c.data))]
		if indexSum(block) != binary.LittleEndian.Uint32(c.sums[4*b:]) {
			return nil, errIndexMismatch
		}
		c.checked[b] = true
	}
	return c.data[off : off+n], nil
}

// indexTable is one sorted table of the index.
type indexTable struct {
	c    *sealedIndex
	at   int // offset of the first entry
	n    int
	pool int // offset of the string pool
}

func (t indexTable) entry(i int) ([]byte, error) { return t.c.span(t.at+i*EntryLen, EntryLen) }

// key is the i-th key.
func (t indexTable) key(i int) ([]byte, error) {
	e, err := t.entry(i)
	if err != nil {
		return nil, err
	}
	return t.c.span(t.pool+int(binary.LittleEndian.Uint32(e)), int(binary.LittleEndian.Uint32(e[4:])))
}

// line is where the i-th entry's line lies in the snapshot.
func (t indexTable) line(i int) (off int64, n int, err error) {
	e, err := t.entry(i)
	if err != nil {
		return 0, 0, err
	}
	return int64(binary.LittleEndian.Uint64(e[8:])), int(binary.LittleEndian.Uint32(e[16:])), nil
}

// find returns the Position of key, or -1.
func (t indexTable) find(key string) (int, error) {
	lo, hi := 0, t.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k, err := t.key(m)
		if err != nil {
			return -1, err
		}
		if string(k) < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < t.n {
		k, err := t.key(lo)
		if err != nil || string(k) != key {
			return -1, err
		}
		return lo, nil
	}
	return -1, nil
}

// snapshotIndex reads snapshot lines on demand through a valid index. Its
// errors say only that the index cannot be used; the source it serves
// (snapshotSource) then reads the snapshot whole.
type snapshotIndex struct {
	path                  string // the snapshot
	cards, keys, receipts indexTable
	refs                  indexTable // by the id a card names, to the naming card's line
	sealed                *sealedIndex
	order, orders         int // offset and length of the claim-order list
	conflicts             int64
	size                  int64
	snap                  []byte // the snapshot, mapped: lines are copied out before decoding
	file                  []byte // the index file, mapped
	unmap                 func() // releases the index's and the snapshot's mappings
}

// readMapped runs fn, which reads the mappings maps, turning a fault on
// them into errIndexMismatch. bl replaces both files by a rename, but a
// user or a tool may cut one short in place (": > snapshot.idx", cp over
// it) while a process holds it mapped (bl mcp, bl serve hold theirs for
// many calls), and a read past the file's new end faults (SIGBUS): the
// caller falls back to reading the snapshot whole, as for a damaged block.
func readMapped(maps [2][]byte, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if f, ok := r.(interface{ Addr() uintptr }); ok {
			for _, m := range maps {
				if len(m) > 0 {
					if base := uintptr(unsafe.Pointer(unsafe.SliceData(m))); f.Addr() >= base && f.Addr()-base < uintptr(len(m)) {
						err = errIndexMismatch
						return
					}
				}
			}
		}
		panic(r)
	}()
	return fn()
}

// read is readMapped over ix's mappings.
func (ix *snapshotIndex) read(fn func() error) error {
	return readMapped([2][]byte{ix.file, ix.snap}, fn)
}

var errIndexMismatch = errors.New("index does not match the snapshot")

// openIndex loads the cached index for the snapshot f (identified by id) if
// there is one and it matches; nil otherwise.
func openIndex(dir string, f *os.File, path string, id snapshotID) *snapshotIndex {
	// A cache file is never read through a link (a teammate may commit
	// one: bl doctor --repair removes it), nor waited on (a FIFO).
	name := filepath.Join(dir, CacheDir, IndexFile)
	if fi, err := os.Lstat(name); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	idx, err := fsutil.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer idx.Close()
	fi, err := idx.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, unmap, err := mapFile(idx, fi.Size())
	if err != nil {
		return nil
	}
	var ix *snapshotIndex
	if readMapped([2][]byte{data}, func() error { ix = parseIndex(data, id); return nil }) != nil {
		ix = nil
	}
	if ix == nil {
		unmap()
		return nil
	}
	snap, unmapSnap, err := mapFile(f, id.size)
	if err != nil {
		unmap()
		return nil
	}
	ix.path, ix.snap, ix.file = path, snap, data
	ix.unmap = func() { unmap(); unmapSnap() }
	return ix
}

// parseIndex checks an index file against the snapshot it must describe
// and returns a view of it; nil when it does not match.
func parseIndex(file []byte, id snapshotID) *snapshotIndex {
	c := openSealed(file)
	if c == nil {
		return nil
	}
	data, err := c.span(0, IndexHeaderLen)
	if err != nil || !bytes.Equal(data[:8], indexMagic[:]) {
		return nil
	}
	le := binary.LittleEndian
	if int64(le.Uint64(data[8:])) != id.size || int64(le.Uint64(data[16:])) != id.mtime || le.Uint32(data[24:]) != id.headerCRC {
		return nil
	}
	nc, nk, nr, no := int(le.Uint32(data[28:])), int(le.Uint32(data[32:])), int(le.Uint32(data[36:])), int(le.Uint32(data[40:]))
	nf := int(le.Uint32(data[52:]))
	tables := IndexHeaderLen + EntryLen*(nc+nk+nr+nf)
	pool := tables + orderLen*no
	if pool > len(c.data) {
		return nil
	}
	ix := &snapshotIndex{size: id.size, conflicts: int64(le.Uint64(data[44:])), sealed: c, order: tables, orders: no}
	at := IndexHeaderLen
	for _, t := range []struct {
		dst *indexTable
		n   int
	}{{&ix.cards, nc}, {&ix.keys, nk}, {&ix.receipts, nr}, {&ix.refs, nf}} {
		*t.dst = indexTable{c: c, at: at, n: t.n, pool: pool}
		at += EntryLen * t.n
	}
	if ix.conflicts < 0 || ix.conflicts > id.size {
		return nil
	}
	return ix
}

// readLine reads and checks the snapshot line at off.
func (ix *snapshotIndex) readLine(off int64, n int) (wire.SnapshotLine, error) {
	return ix.readLineInto(nil, off, n)
}

// readLineInto is readLine copying the line into *buf, grown as needed,
// when buf is not nil: the decoders copy out all they keep, so a caller
// that reads line after line (fill) needs one buffer, not one per line.
func (ix *snapshotIndex) readLineInto(buf *[]byte, off int64, n int) (wire.SnapshotLine, error) {
	var l wire.SnapshotLine
	if n <= 0 || off < 0 || off+int64(n) > ix.size {
		return l, &wire.CorruptError{Path: ix.path, Offset: off, Err: errIndexMismatch}
	}
	// A copy: nothing decoded may point into the mapping.
	var raw []byte
	if buf != nil {
		*buf = append((*buf)[:0], ix.snap[off:off+int64(n)]...)
		raw = *buf
	} else {
		raw = append([]byte(nil), ix.snap[off:off+int64(n)]...)
	}
	line, err := wire.CheckFrame(raw)
	if err == nil {
		l, err = wire.ReadSnapshotLine(line)
	}
	if err != nil {
		return l, &wire.CorruptError{Path: ix.path, Offset: off, Err: err}
	}
	return l, nil
}

// card reads the card with the given id; nil when the snapshot has none.
func (ix *snapshotIndex) card(id string) (*wire.Card, error) {
	i, err := ix.cards.find(id)
	if i < 0 {
		return nil, err
	}
	return ix.cardAt(i)
}

func (ix *snapshotIndex) cardAt(i int) (*wire.Card, error) { return ix.cardAtInto(nil, i) }

// cardAtInto is cardAt reading the line through buf (readLineInto).
func (ix *snapshotIndex) cardAtInto(buf *[]byte, i int) (*wire.Card, error) {
	off, n, err := ix.cards.line(i)
	if err != nil {
		return nil, err
	}
	key, err := ix.cards.key(i)
	if err != nil {
		return nil, err
	}
	l, err := ix.readLineInto(buf, off, n)
	if err != nil {
		return nil, err
	}
	if l.Card == nil || l.Card.ID != string(key) {
		return nil, &wire.CorruptError{Path: ix.path, Offset: off, Err: errIndexMismatch}
	}
	return l.Card, nil
}

// referrers reads the cards that name id (as parent, dependency or link).
func (ix *snapshotIndex) referrers(id string) ([]*wire.Card, error) {
	i, err := ix.refs.find(id)
	if i < 0 {
		return nil, err
	}
	var out []*wire.Card
	for ; i < ix.refs.n; i++ {
		key, err := ix.refs.key(i)
		if err != nil {
			return nil, err
		}
		if string(key) != id {
			break
		}
		off, n, err := ix.refs.line(i)
		if err != nil {
			return nil, err
		}
		l, err := ix.readLine(off, n)
		if err != nil {
			return nil, err
		}
		if l.Card == nil || !slices.Contains(namedBy(l.Card), id) {
			return nil, &wire.CorruptError{Path: ix.path, Offset: off, Err: errIndexMismatch}
		}
		out = append(out, l.Card)
	}
	return out, nil
}

// named is CardSource.Named through the index: the ids with each prefix
// from the sorted card table, and a scan of the idempotency keys alone,
// reading only the lines of the keys that end in keySuffix.
func (ix *snapshotIndex) named(prefixes []string, keySuffix string) ([]string, error) {
	var out []string
	for _, p := range prefixes {
		lo, hi := 0, ix.cards.n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			k, err := ix.cards.key(m)
			if err != nil {
				return nil, err
			}
			if string(k) < p {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for i := lo; i < ix.cards.n; i++ {
			k, err := ix.cards.key(i)
			if err != nil {
				return nil, err
			}
			if !bytes.HasPrefix(k, []byte(p)) {
				break
			}
			out = append(out, string(k))
		}
	}
	for i := range ix.keys.n {
		k, err := ix.keys.key(i)
		if err != nil {
			return nil, err
		}
		if !bytes.HasSuffix(k, []byte(keySuffix)) {
			continue
		}
		id, ok, err := ix.keyOwner(string(k))
		if err != nil || !ok {
			return nil, errIndexMismatch
		}
		out = append(out, id)
	}
	return out, nil
}

// keyOwner returns the id of the card created with an idempotency key.
func (ix *snapshotIndex) keyOwner(key string) (string, bool, error) {
	i, err := ix.keys.find(key)
	if i < 0 {
		return "", false, err
	}
	off, n, err := ix.keys.line(i)
	if err != nil {
		return "", false, err
	}
	l, err := ix.readLine(off, n)
	if err != nil {
		return "", false, err
	}
	if l.Card == nil || l.Card.IdempotencyKey != key {
		return "", false, &wire.CorruptError{Path: ix.path, Offset: off, Err: errIndexMismatch}
	}
	return l.Card.ID, true, nil
}

// receipt returns what a request id did, as the snapshot remembers it.
func (ix *snapshotIndex) receipt(rid string) (wire.Receipt, bool, error) {
	i, err := ix.receipts.find(rid)
	if i < 0 {
		return wire.Receipt{}, false, err
	}
	r, err := ix.receiptAt(i)
	return r, err == nil, err
}

func (ix *snapshotIndex) receiptAt(i int) (wire.Receipt, error) {
	off, n, err := ix.receipts.line(i)
	if err != nil {
		return wire.Receipt{}, err
	}
	key, err := ix.receipts.key(i)
	if err != nil {
		return wire.Receipt{}, err
	}
	l, err := ix.readLine(off, n)
	if err != nil {
		return wire.Receipt{}, err
	}
	if l.Receipt == nil || l.Receipt.RequestID != string(key) {
		return wire.Receipt{}, &wire.CorruptError{Path: ix.path, Offset: off, Err: errIndexMismatch}
	}
	return l.Receipt.Receipt, nil
}

// candidate returns the Position in cards of the i-th card in claim order
// and the end of its lease (zero when it holds none).
func (ix *snapshotIndex) candidate(i int) (pos int, lease time.Time, err error) {
	e, err := ix.sealed.span(ix.order+orderLen*i, orderLen)
	if err != nil {
		return 0, lease, err
	}
	pos = int(binary.LittleEndian.Uint32(e))
	if pos >= ix.cards.n {
		return 0, lease, &wire.CorruptError{Path: ix.path, Err: errIndexMismatch}
	}
	if ns := int64(binary.LittleEndian.Uint64(e[4:])); ns != 0 {
		lease = time.Unix(0, ns)
	}
	return pos, lease, nil
}

// candidates is CardSource.Candidates through the claim-order list, from
// its from-th entry: a card skipped or under a live lease is left out
// without reading its line. next is the entry after the last card fn saw.
func (ix *snapshotIndex) candidates(from int, leasedAt time.Time, skip func([]byte) bool, fn func(*wire.Card) bool) (next int, err error) {
	for k := max(from, 0); k < ix.orders; k++ {
		pos, lease, err := ix.candidate(k)
		if err != nil {
			return 0, err
		}
		id, err := ix.cards.key(pos)
		if err != nil {
			return 0, err
		}
		if skip(id) || (!leasedAt.IsZero() && leasedAt.Before(lease)) {
			continue
		}
		c, err := ix.cardAt(pos)
		if err != nil {
			return 0, err
		}
		if !fn(c) {
			return k + 1, nil
		}
	}
	return ix.orders, nil
}

// leased is CardSource.Leased through the claim-order list: only the
// cards whose lease end lies after at are read.
func (ix *snapshotIndex) leased(at time.Time, skip func([]byte) bool, fn func(*wire.Card) bool) error {
	for k := range ix.orders {
		pos, lease, err := ix.candidate(k)
		if err != nil {
			return err
		}
		if !at.Before(lease) {
			continue
		}
		id, err := ix.cards.key(pos)
		if err != nil {
			return err
		}
		if skip(id) {
			continue
		}
		c, err := ix.cardAt(pos)
		if err != nil {
			return err
		}
		if !fn(c) {
			return nil
		}
	}
	return nil
}

// readRange copies bytes [off, end) of the snapshot.
func (ix *snapshotIndex) readRange(off, end int64) ([]byte, error) {
	if off < 0 || off > end || end > int64(len(ix.snap)) {
		return nil, &wire.CorruptError{Path: ix.path, Offset: off, Err: errIndexMismatch}
	}
	return append([]byte(nil), ix.snap[off:end]...), nil
}

func (ix *snapshotIndex) close() {
	if ix != nil && ix.unmap != nil {
		ix.unmap()
		ix.unmap = nil
	}
}

// fill reads every card and receipt the maps lack.
func (ix *snapshotIndex) fill(cards map[string]*wire.Card, requests map[string]wire.Receipt) error {
	var released int64 // the snapshot's pages before this are let go (FillRelease)
	var buf []byte
	for i := range ix.cards.n {
		if off, _, err := ix.cards.line(i); err == nil && off-released >= FillRelease && off <= int64(len(ix.snap)) {
			releaseMapped(ix.snap[released:off])
			released = off
		}
		id, err := ix.cards.key(i)
		if err != nil {
			return err
		}
		if _, ok := cards[string(id)]; ok {
			continue
		}
		c, err := ix.cardAtInto(&buf, i)
		if err != nil {
			return err
		}
		cards[c.ID] = c
	}
	for i := range ix.receipts.n {
		rid, err := ix.receipts.key(i)
		if err != nil {
			return err
		}
		if _, ok := requests[string(rid)]; ok {
			continue
		}
		r, err := ix.receiptAt(i)
		if err != nil {
			return err
		}
		requests[string(rid)] = r
	}
	return nil
}

// FillRelease is how much of the snapshot fill reads before it lets the
// pages read go: every card is copied out and decoded, so the mapping
// need not stay resident too (bl list of 100k cards: 31 MB less). A
// variable for the tests.
var FillRelease int64 = 4 << 20
