package gitdir

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Store reads objects from a repository's object directory in process,
// read-only: loose objects and packs (.idx version 2), for a caller that
// needs a few objects and would otherwise start git for them. It reads
// only what it is sure of: anything else — alternates, an object it does
// not find (a partial clone's, one only a multi-pack-index names),
// replace refs, a damaged or unexpected object, a size over the cap — is
// ErrUnsure, and the caller asks git (Objects). Every object returned
// hashes to the id asked for, so a damaged pack cannot pass off other
// bytes. Objects arrive in teammates' pushes: every size, offset and
// delta chain is bounded. Not safe for concurrent use.
type Store struct {
	objects  string
	hashSize int
	newHash  func() hash.Hash
	packs    []*packIndex
	listed   bool
	// MaxSize caps an object's size (and each delta's): bigger is
	// ErrUnsure; one Read inflates, and makes from deltas, at most
	// 4×MaxSize in all.
	MaxSize int64
	spent   int64
	// z and buf are the zlib reader (and the buffer over a loose file)
	// every read resets: a new one allocates its tables and 32 KB window
	// each time, most of the cost of reading a small object.
	z   io.ReadCloser
	buf *bufio.Reader
	// commits holds the commits and tags read, by id: resolving HEAD~1
	// and then reading it and HEAD reads each several times.
	commits map[string]object
	reads   int // objects read from the files (a test's count)
}

type object struct {
	typ  string
	data []byte
}

// ErrUnsure: the store does not read this in process; ask git.
var ErrUnsure = errors.New("gitdir: object not read in process")

// maxDeltaDepth bounds a delta chain (git writes 50 by default, 4095 at
// most).
const maxDeltaDepth = 4095

// OpenStore opens the object store of the repository whose common
// directory is commonDir. ErrUnsure when objects may live elsewhere
// (alternates, the environment's object directories) or git would
// substitute some (replace refs, grafts).
func OpenStore(commonDir string) (*Store, error) {
	for _, v := range []string{"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_REPLACE_REF_BASE"} {
		if os.Getenv(v) != "" {
			return nil, ErrUnsure
		}
	}
	objects := filepath.Join(commonDir, "objects")
	for _, p := range []string{filepath.Join(objects, "info", "alternates"), filepath.Join(commonDir, "info", "grafts")} {
		if _, err := os.Lstat(p); err == nil {
			return nil, ErrUnsure
		}
	}
	if hasReplaceRefs(commonDir) {
		return nil, ErrUnsure
	}
	s := &Store{objects: objects, hashSize: 20, newHash: sha1.New, MaxSize: 256 << 20}
	if sha256Repo(commonDir) {
		s.hashSize, s.newHash = 32, sha256.New
	}
	return s, nil
}

// HashSize is the length of the repository's object ids in bytes.
func (s *Store) HashSize() int { return s.hashSize }

func hasReplaceRefs(commonDir string) bool {
	if ents, err := os.ReadDir(filepath.Join(commonDir, "refs", "replace")); err == nil && len(ents) > 0 {
		return true
	}
	f, err := openRegular(filepath.Join(commonDir, "packed-refs"))
	if errors.Is(err, ErrUnsure) {
		return true // not a file: let git judge it
	}
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return err != nil || bytes.Contains(b, []byte(" refs/replace/"))
}

// readRegular is os.ReadFile of a regular file; ErrUnsure for a FIFO
// or a device (git's own files, but a FIFO would block every command).
func readRegular(name string) ([]byte, error) {
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// openRegular opens a file of the repository for reading; ErrUnsure
// when it is not a regular file (a FIFO would block the open and every
// read, a device would never end). Links are followed, as git follows
// them. Other errors are os.Open's (os.IsNotExist holds).
func openRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, ErrUnsure
	}
	return f, nil
}

var objectTypes = [...]string{1: "commit", 2: "tree", 3: "blob", 4: "tag"}

// Read is the object id (hex): its type and bytes.
func (s *Store) Read(id string) (typ string, data []byte, err error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != s.hashSize {
		return "", nil, ErrUnsure
	}
	if o, ok := s.commits[string(raw)]; ok {
		return o.typ, bytes.Clone(o.data), nil
	}
	s.spent = 0
	typ, data, err = s.read(raw, 0)
	if err != nil {
		return "", nil, err
	}
	h := s.newHash()
	h.Write([]byte(typ + " " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	if !bytes.Equal(h.Sum(nil), raw) {
		return "", nil, fmt.Errorf("%w: %s does not hash to its name", ErrUnsure, id)
	}
	if typ == "commit" || typ == "tag" {
		if s.commits == nil {
			s.commits = map[string]object{}
		}
		s.commits[string(raw)] = object{typ, bytes.Clone(data)}
	}
	return typ, data, nil
}

// read finds id loose or in a pack; depth counts the delta bases above.
func (s *Store) read(id []byte, depth int) (string, []byte, error) {
	if depth > maxDeltaDepth {
		return "", nil, ErrUnsure
	}
	s.reads++
	x := hex.EncodeToString(id)
	f, err := openRegular(filepath.Join(s.objects, x[:2], x[2:]))
	if err == nil {
		defer f.Close()
		return s.loose(f)
	}
	if !os.IsNotExist(err) {
		return "", nil, ErrUnsure
	}
	if err := s.listPacks(); err != nil {
		return "", nil, err
	}
	for _, p := range s.packs {
		off, found, err := p.find(id)
		if err != nil {
			return "", nil, err
		}
		if found {
			return s.packed(p, off, depth)
		}
	}
	return "", nil, ErrUnsure // missing here: a promisor's, or only a multi-pack-index knows it
}

// loose reads a loose object: zlib of "<type> <size>\0<bytes>".
func (s *Store) loose(f *os.File) (string, []byte, error) {
	z, err := s.zlib(f)
	if err != nil {
		return "", nil, ErrUnsure
	}
	br := &limitedByteReader{r: z, n: 64}
	var head []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return "", nil, ErrUnsure
		}
		if b == 0 {
			break
		}
		head = append(head, b)
	}
	t, n, ok := strings.Cut(string(head), " ")
	size, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || size < 0 || size > s.MaxSize || !validType(t) {
		return "", nil, ErrUnsure
	}
	if s.spent += size; s.spent > 4*s.MaxSize {
		return "", nil, ErrUnsure
	}
	data, err := readExactly(z, size)
	if err != nil {
		return "", nil, err
	}
	return t, data, nil
}

// zlib is the store's zlib reader reset to read r (buffered unless it
// reads by the byte already). It holds nothing of the previous read: each
// caller reads its object to the end, or drops it, before the next one.
func (s *Store) zlib(r io.Reader) (io.Reader, error) {
	if _, ok := r.(flate.Reader); !ok {
		if s.buf == nil {
			s.buf = bufio.NewReader(r)
		} else {
			s.buf.Reset(r)
		}
		r = s.buf
	}
	if s.z == nil {
		z, err := zlib.NewReader(r)
		if err != nil {
			return nil, err
		}
		s.z = z
		return z, nil
	}
	if err := s.z.(zlib.Resetter).Reset(r, nil); err != nil {
		return nil, err
	}
	return s.z, nil
}

func validType(t string) bool {
	return t == "commit" || t == "tree" || t == "blob" || t == "tag"
}

// readExactly reads exactly size bytes of r and makes sure r ends there.
func readExactly(r io.Reader, size int64) ([]byte, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, ErrUnsure
	}
	var one [1]byte
	if n, _ := r.Read(one[:]); n != 0 {
		return nil, ErrUnsure
	}
	return data, nil
}

type limitedByteReader struct {
	r io.Reader
	n int
}

func (l *limitedByteReader) ReadByte() (byte, error) {
	if l.n <= 0 {
		return 0, ErrUnsure
	}
	l.n--
	var b [1]byte
	if _, err := io.ReadFull(l.r, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// listPacks opens the .idx of every pack that has its .pack, once. A
// pack marked .promisor (a partial clone's) is read as any: an object it
// lacks is ErrUnsure.
func (s *Store) listPacks() error {
	if s.listed {
		return nil
	}
	s.listed = true
	names, err := filepath.Glob(filepath.Join(s.objects, "pack", "pack-*.idx"))
	if err != nil {
		return ErrUnsure
	}
	sort.Strings(names)
	for _, n := range names {
		p, err := openPackIndex(n, s.hashSize)
		if err != nil {
			return err
		}
		s.packs = append(s.packs, p)
	}
	return nil
}
