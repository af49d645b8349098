package gitdir

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// packEntryHeader is a pack entry's type and size (gitformat-pack).
func packEntryHeader(typ int, size int) []byte {
	b := []byte{byte(typ<<4) | byte(size&15)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

func deflate(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	z.Write(data)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func deltaVarint(v int) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// TestStoreDeltaChainMakesBounded: a chain of deltas, each a few bytes
// of copy instructions making 1 MB from its base, is a pack of a few KB
// that makes levels × 1 MB; one Read makes at most 4×MaxSize from it,
// though every object of the pack is valid (git index-pack took it).
func TestStoreDeltaChainMakesBounded(t *testing.T) {
	repo, _ := smallRepo(t)
	const mb, levels = 1 << 20, 8
	base := bytes.Repeat([]byte("a"), 1<<16)
	var pack bytes.Buffer
	pack.WriteString("PACK")
	binary.Write(&pack, binary.BigEndian, uint32(2))
	binary.Write(&pack, binary.BigEndian, uint32(1+levels))
	prevOff, prevSize := pack.Len(), len(base)
	pack.Write(packEntryHeader(3, len(base)))
	pack.Write(deflate(t, base))
	var top []byte
	for range levels {
		// 16 copies of base's first 64 KB (op 0x80: offset 0, size 0x10000).
		delta := append(deltaVarint(prevSize), deltaVarint(mb)...)
		delta = append(delta, bytes.Repeat([]byte{0x80}, mb>>16)...)
		off := pack.Len()
		pack.Write(packEntryHeader(packOfsDelta, len(delta)))
		rel := off - prevOff
		ofs := []byte{byte(rel & 0x7f)}
		for rel >>= 7; rel > 0; rel >>= 7 {
			rel--
			ofs = append([]byte{0x80 | byte(rel&0x7f)}, ofs...)
		}
		pack.Write(ofs)
		pack.Write(deflate(t, delta))
		prevOff, prevSize = off, mb
		top = bytes.Repeat(base[:1<<16], mb>>16)
	}
	sum := sha1.Sum(pack.Bytes())
	pack.Write(sum[:])
	dir := filepath.Join(repo, ".git", "objects", "pack")
	name := filepath.Join(dir, "pack-bomb.pack")
	if err := os.WriteFile(name, pack.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "index-pack", name).CombinedOutput(); err != nil {
		t.Fatalf("git index-pack: %v\n%s", err, out)
	}
	h := sha1.New()
	h.Write([]byte("blob 1048576\x00"))
	h.Write(top)
	id := h.Sum(nil)
	s, err := OpenStore(filepath.Join(repo, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.MaxSize = mb
	if _, data, err := s.Read(string(hexOf(id))); !errors.Is(err, ErrUnsure) {
		t.Errorf("a %d KB pack making %d MB in one Read (cap %d MB): %d bytes, %v; want ErrUnsure",
			pack.Len()>>10, levels, 4, len(data), err)
	}
}

func hexOf(b []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return out
}

// TestCommitRevSyntax: a revision whose steps hold anything but ~N and
// ^N is not resolved in process: git reads HEAD~1x, HEAD^{tree},
// HEAD~1:f otherwise (or not at all), and a wrong commit would be
// diffed without a word.
func TestCommitRevSyntax(t *testing.T) {
	repo, git := smallRepo(t)
	for range 4 {
		git("commit", "-q", "--allow-empty", "-m", "more")
	}
	gitDir := filepath.Join(repo, ".git")
	s, err := OpenStore(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rev := range []string{"HEAD~1x", "HEAD~1x2", "HEAD^{tree}", "HEAD^{commit}", "HEAD~1:f.txt", "HEAD~-1", "HEAD^!", "HEAD^@", "main~1/x"} {
		if got, err := s.Commit(gitDir, gitDir, rev); !errors.Is(err, ErrUnsure) {
			t.Errorf("Commit(%q) = %s, %v; want ErrUnsure", rev, got, err)
		}
	}
	for _, rev := range []string{"HEAD~2", "HEAD^^", "HEAD^0", "HEAD~", "main~1^1", "HEAD^1~2"} {
		got, err := s.Commit(gitDir, gitDir, rev)
		if want := git("rev-parse", rev); err != nil || got != want {
			t.Errorf("Commit(%q) = %s, %v; want %s", rev, got, err, want)
		}
	}
}

// TestCommitPackedRefsGarbage: git refuses a packed-refs holding a line
// that is neither a ref, a peeled id nor a comment; so does Commit
// (ErrUnsure: git's to report), while a clean one with peeled lines
// resolves as git does.
func TestCommitPackedRefsGarbage(t *testing.T) {
	repo, git := smallRepo(t)
	git("tag", "-a", "-m", "annotated", "v1")
	git("pack-refs", "--all")
	gitDir := filepath.Join(repo, ".git")
	s, err := OpenStore(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Commit(gitDir, gitDir, "v1"); err != nil || got != git("rev-parse", "v1^{commit}") {
		t.Fatalf("v1 from a clean packed-refs: %s, %v", got, err)
	}
	f, err := os.OpenFile(filepath.Join(gitDir, "packed-refs"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("garbage line\n")
	f.Close()
	if got, err := s.Commit(gitDir, gitDir, "v1"); !errors.Is(err, ErrUnsure) {
		t.Errorf("v1 from a packed-refs git refuses: %s, %v; want ErrUnsure", got, err)
	}
}
