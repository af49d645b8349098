package gitdir

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// git's index (the staging area, .git/index) records, for each tracked
// file, the object id of the blob git last put in the worktree or staged,
// and the file's size then. That is enough to tell whether bytes on disk
// are what git wrote there — a checkout, pull, merge, rebase, cherry-pick,
// revert or reset — without reading the object store: hash the bytes as a
// blob and compare. The reader below follows the index format versions 2,
// 3 and 4 (Documentation/gitformat-index.txt), and a split index
// (core.splitIndex) merged with its shared index file.

// errIndexFormat: the index is not one this reader follows.
var errIndexFormat = errors.New("gitdir: index format not followed")

// Staged is what git's index holds for one file: its blob id, the size
// the file had, and the hash the repository names objects with.
type Staged struct {
	OID     []byte
	Size    int64
	NewHash func() hash.Hash
}

// Matches reports whether data starts with the blob s names, as git
// writes it into the worktree: the blob's bytes, or, for a file its
// attributes mark as text with CRLF line ends (eol=crlf, core.autocrlf),
// those bytes with each LF written as CRLF (the index records the size
// of the file on disk).
func (s Staged) Matches(data []byte) bool {
	if s.Size > int64(len(data)) {
		return false
	}
	b := data[:s.Size]
	if bytes.Equal(BlobID(s.NewHash, b), s.OID) {
		return true
	}
	return bytes.Contains(b, crlf) && bytes.Equal(BlobID(s.NewHash, bytes.ReplaceAll(b, crlf, lf)), s.OID)
}

var crlf, lf = []byte("\r\n"), []byte("\n")

// StagedFile reads the stage-0 entry for the file at rel (a
// slash-separated path relative to the worktree root) from the index of
// the worktree at root; ok is false when the index does not hold it or
// cannot be read.
func StagedFile(root, rel string) (s Staged, ok bool) {
	gitDir, commonDir, err := Dirs(root)
	if err != nil {
		return s, false
	}
	raw, err := readRegular(filepath.Join(gitDir, "index"))
	if err != nil {
		return s, false
	}
	s.NewHash = sha1.New
	if sha256Repo(commonDir) {
		s.NewHash = sha256.New
	}
	oid, size, err := stagedEntry(gitDir, raw, rel, s.NewHash().Size())
	if err != nil {
		return s, false
	}
	s.OID, s.Size = oid, int64(size)
	return s, true
}

// StagedPrefix reports how many leading bytes of data are exactly the
// blob git's index holds for the file at rel: the size the index
// recorded, when the blob id of that many bytes of data matches; ok is
// false when the index does not hold rel at stage 0, data is shorter,
// the bytes differ, or the index cannot be read.
func StagedPrefix(root, rel string, data []byte) (n int, ok bool) {
	s, ok := StagedFile(root, rel)
	if !ok || !s.Matches(data) {
		return 0, false
	}
	return int(s.Size), true
}

// BlobID is git's object id of data as a blob.
func BlobID(newHash func() hash.Hash, data []byte) []byte {
	h := newHash()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return h.Sum(nil)
}

// sha256Repo reports whether the repository's config names sha256 as its
// object format (extensions.objectFormat).
func sha256Repo(commonDir string) bool {
	b, err := readRegular(filepath.Join(commonDir, "config"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(strings.ToLower(string(b)), "\n") {
		k, v, found := strings.Cut(l, "=")
		if found && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) == "sha256" {
			return true
		}
	}
	return false
}

// stagedEntry finds rel's stage-0 entry in the index data raw (of the
// git directory gitDir): its object
// id (hashSize bytes) and the file size recorded with it.
func stagedEntry(gitDir string, raw []byte, rel string, hashSize int) (oid []byte, size uint32, err error) {
	found := false
	err = indexEntries(gitDir, raw, hashSize, func(name, id []byte, esize uint32, stage int) {
		if !found && stage == 0 && string(name) == rel {
			oid, size, found = id, esize, true
		}
	})
	if err != nil {
		return nil, 0, err
	}
	if !found {
		return nil, 0, os.ErrNotExist
	}
	return oid, size, nil
}

// indexEntry is one entry of an index file.
type indexEntry struct {
	name, oid []byte
	size      uint32
	stage     int
	stat      []byte // the 40 bytes of stat data (indexstat.go)
	flags     uint16 // the flags, and the extended flags of version 3+
	xflags    uint16
}

// indexEntries calls fn with each entry of the index data raw (read from
// the git directory gitDir), in order: its path, object id (hashSize
// bytes), recorded size and merge stage. A split index is merged with its
// shared index (splitEntries).
func indexEntries(gitDir string, raw []byte, hashSize int, fn func(name, oid []byte, size uint32, stage int)) error {
	entries, link, err := readIndex(raw, hashSize)
	if err != nil {
		return err
	}
	if link != nil {
		if entries, err = splitEntries(gitDir, entries, link, hashSize); err != nil {
			return err
		}
	}
	for _, e := range entries {
		fn(e.name, e.oid, e.size, e.stage)
	}
	return nil
}

// readIndex reads the entries of the index data raw and, for a split
// index, the data of its "link" extension.
func readIndex(raw []byte, hashSize int) (entries []indexEntry, link []byte, err error) {
	if len(raw) < 12 || string(raw[:4]) != "DIRC" {
		return nil, nil, errIndexFormat
	}
	version := binary.BigEndian.Uint32(raw[4:8])
	if version < 2 || version > 4 {
		return nil, nil, fmt.Errorf("%w: version %d", errIndexFormat, version)
	}
	count := binary.BigEndian.Uint32(raw[8:12])
	off := 12
	var prev []byte
	fixed := 40 + hashSize + 2 // stat data, object id, flags
	for i := uint32(0); i < count; i++ {
		if off+fixed > len(raw) {
			return nil, nil, errIndexFormat
		}
		e := raw[off:]
		esize := binary.BigEndian.Uint32(e[36:40])
		id := e[40 : 40+hashSize]
		flags := binary.BigEndian.Uint16(e[40+hashSize:])
		p := off + fixed
		var xflags uint16
		if flags&0x4000 != 0 { // extended flags (version 3 and later)
			if p+2 > len(raw) {
				return nil, nil, errIndexFormat
			}
			xflags = binary.BigEndian.Uint16(raw[p:])
			p += 2
		}
		if p > len(raw) {
			return nil, nil, errIndexFormat
		}
		var name []byte
		if version == 4 {
			strip, used := varint(raw[p:])
			if used == 0 || strip > uint64(len(prev)) {
				return nil, nil, errIndexFormat
			}
			if p += used; p > len(raw) {
				return nil, nil, errIndexFormat
			}
			end := bytes.IndexByte(raw[p:], 0)
			if end < 0 {
				return nil, nil, errIndexFormat
			}
			name = append(append([]byte(nil), prev[:uint64(len(prev))-strip]...), raw[p:p+end]...)
			off = p + end + 1
		} else {
			end := bytes.IndexByte(raw[p:], 0)
			if end < 0 {
				return nil, nil, errIndexFormat
			}
			name = raw[p : p+end]
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off += (p + end - off + 8) &^ 7
		}
		prev = name
		entries = append(entries, indexEntry{name: name, oid: id, size: esize, stage: int(flags>>12) & 3,
			stat: e[:40], flags: flags, xflags: xflags})
	}
	for off+8 <= len(raw)-hashSize {
		n := int(binary.BigEndian.Uint32(raw[off+4 : off+8]))
		if n < 0 || off+8+n > len(raw) {
			return nil, nil, errIndexFormat
		}
		if string(raw[off:off+4]) == "link" {
			link = raw[off+8 : off+8+n]
		}
		off += 8 + n
	}
	return entries, link, nil
}

// splitEntries merges a split index (gitformat-index, "Split index"):
// its entries main and its link extension's data link (the shared
// index's id, then EWAH bitmaps of the shared entries to delete and to
// replace) with the entries of gitDir/sharedindex.<id>. The first main
// entries, nameless, replace the shared entries the replace bitmap
// names, in order; the others are added; the deleted are dropped.
func splitEntries(gitDir string, main []indexEntry, link []byte, hashSize int) ([]indexEntry, error) {
	if len(link) < hashSize {
		return nil, fmt.Errorf("%w: split index", errIndexFormat)
	}
	id := hex.EncodeToString(link[:hashSize])
	var shared []indexEntry
	if strings.Trim(id, "0") != "" {
		raw, err := readRegular(filepath.Join(gitDir, "sharedindex."+id))
		if err != nil {
			return nil, fmt.Errorf("%w: split index: %v", errIndexFormat, err)
		}
		var sub []byte
		if shared, sub, err = readIndex(raw, hashSize); err != nil || sub != nil {
			return nil, fmt.Errorf("%w: split index: shared index", errIndexFormat)
		}
	}
	var del, repl []int
	if rest := link[hashSize:]; len(rest) > 0 {
		d, err := ewahBits(rest, len(shared), &del)
		if err != nil {
			return nil, err
		}
		r, err := ewahBits(rest[d:], len(shared), &repl)
		if err != nil {
			return nil, err
		}
		if d+r != len(rest) {
			return nil, fmt.Errorf("%w: split index: bytes after the bitmaps", errIndexFormat)
		}
	}
	out := slices.Clone(shared)
	if len(repl) > len(main) {
		return nil, fmt.Errorf("%w: split index: too many replacements", errIndexFormat)
	}
	for k, pos := range repl {
		if pos >= len(out) || len(main[k].name) != 0 {
			return nil, fmt.Errorf("%w: split index: bad replacement", errIndexFormat)
		}
		e := main[k]
		e.name = out[pos].name
		out[pos] = e
	}
	gone := make([]bool, len(out))
	for _, pos := range del {
		if pos >= len(out) {
			return nil, fmt.Errorf("%w: split index: bad deletion", errIndexFormat)
		}
		gone[pos] = true
	}
	kept := out[:0]
	for i, e := range out {
		if !gone[i] {
			kept = append(kept, e)
		}
	}
	for _, e := range main[len(repl):] {
		if len(e.name) == 0 {
			return nil, fmt.Errorf("%w: split index: nameless entry", errIndexFormat)
		}
		kept = append(kept, e)
	}
	return kept, nil
}

// ewahBits decodes one EWAH bitmap as git serializes it (ewah/ewah_io.c:
// the bit count, the word count, that many 64-bit words, the position of
// the last run-length word; big-endian) into out, the positions of its
// set bits, ascending, and returns the bytes it took. A bitmap of more
// than limit bits (the shared index's entries) is not one git wrote.
func ewahBits(b []byte, limit int, out *[]int) (used int, err error) {
	bad := fmt.Errorf("%w: split index: bitmap", errIndexFormat)
	if len(b) < 8 {
		return 0, bad
	}
	nbits := int(binary.BigEndian.Uint32(b[0:4]))
	nwords := int(binary.BigEndian.Uint32(b[4:8]))
	if len(b) < 12 || nwords > (len(b)-12)/8 || nbits > limit {
		return 0, bad
	}
	used = 8 + 8*nwords + 4
	words := make([]uint64, nwords)
	for i := range words {
		words[i] = binary.BigEndian.Uint64(b[8+8*i:])
	}
	var bits []int
	pos := 0
	for i := 0; i < len(words); {
		rlw := words[i]
		i++
		run, lits := int(rlw>>1&0xffffffff), int(rlw>>33)
		if pos+run*64 > nbits+63 {
			return 0, bad
		}
		if rlw&1 != 0 {
			for j := 0; j < run*64; j++ {
				bits = append(bits, pos+j)
			}
		}
		pos += run * 64
		if lits > len(words)-i || pos+lits*64 > nbits+63 {
			return 0, bad
		}
		for _, w := range words[i : i+lits] {
			for j := 0; j < 64; j++ {
				if w&(1<<j) != 0 {
					bits = append(bits, pos+j)
				}
			}
			pos += 64
		}
		i += lits
	}
	for len(bits) > 0 && bits[len(bits)-1] >= nbits {
		bits = bits[:len(bits)-1]
	}
	*out = bits
	return used, nil
}

// TrackedUnder lists the paths git's index (of the worktree at root)
// holds under the slash-separated directory prefix (ending in "/"), at
// any merge stage, each once; ok is false when the index cannot be read
// or is not one this reader follows.
func TrackedUnder(root, prefix string) (names []string, ok bool) {
	gitDir, commonDir, err := Dirs(root)
	if err != nil {
		return nil, false
	}
	raw, err := readRegular(filepath.Join(gitDir, "index"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, true // nothing staged yet
	}
	if err != nil {
		return nil, false
	}
	hashSize := sha1.Size
	if sha256Repo(commonDir) {
		hashSize = sha256.Size
	}
	err = indexEntries(gitDir, raw, hashSize, func(name, _ []byte, _ uint32, _ int) {
		if bytes.HasPrefix(name, []byte(prefix)) && (len(names) == 0 || names[len(names)-1] != string(name)) {
			names = append(names, string(name))
		}
	})
	return names, err == nil
}

// varint decodes git's offset varint (used by index version 4): the value
// and the bytes it took, 0 on a malformed one.
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		val++
		c = b[i]
		i++
		val = val<<7 | uint64(c&127)
	}
	return val, i
}

// Head is the commit id HEAD names in the worktree at root, or "" when it
// cannot be read from the files (an unborn branch, a damaged ref).
func Head(root string) string {
	gitDir, commonDir, err := Dirs(root)
	if err != nil {
		return ""
	}
	b, err := readRegular(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	head := strings.TrimSpace(string(b))
	ref, symbolic := strings.CutPrefix(head, "ref: ")
	if !symbolic {
		return head
	}
	if filepath.IsLocal(ref) {
		if b, err := readRegular(filepath.Join(commonDir, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	packed, _ := readRegular(filepath.Join(commonDir, "packed-refs"))
	for _, l := range strings.Split(string(packed), "\n") {
		if id, name, ok := strings.Cut(l, " "); ok && name == ref {
			return id
		}
	}
	return ""
}

// Holds reports whether git's index (of the worktree at root) holds the
// file at rel, at any merge stage; known is false when the index cannot
// be read or is not one this reader follows.
func Holds(root, rel string) (held, known bool) {
	names, known := TrackedUnder(root, rel)
	return slices.Contains(names, rel), known
}
