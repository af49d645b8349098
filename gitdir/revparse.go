package gitdir

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Commit resolves rev to a commit id (hex) in process, for the forms
// git resolves alike with nothing but refs and commits: HEAD, a full
// object id, a ref name as git's rev-parse rules find it (refs/<name>,
// refs/tags/, refs/heads/, refs/remotes/, refs/remotes/<name>/HEAD, the
// first that exists), each followed by ~N and ^N steps; an annotated tag
// is peeled to its commit. Anything else — an abbreviated id, @{...},
// :path, a pseudo-ref, reftable, a shallow or grafted repository, a
// ref per worktree — is ErrUnsure: ask git. gitDir is the worktree's
// git directory (its HEAD), commonDir the repository's.
func (s *Store) Commit(gitDir, commonDir, rev string) (string, error) {
	if _, err := os.Lstat(filepath.Join(commonDir, "shallow")); err == nil {
		return "", ErrUnsure
	}
	if _, err := os.Lstat(filepath.Join(commonDir, "reftable")); err == nil {
		return "", ErrUnsure
	}
	base, steps := rev, ""
	if i := strings.IndexAny(rev, "~^"); i >= 0 {
		base, steps = rev[:i], rev[i:]
	}
	var id string
	switch {
	case base == "HEAD":
		var err error
		if id, err = readRef(gitDir, commonDir, "HEAD", 0); err != nil {
			return "", err
		}
	case len(base) == 2*s.hashSize && isLowerHex(base):
		id = base
	default:
		if !plainRefName(base) {
			return "", ErrUnsure
		}
		for _, rule := range []string{"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"} {
			name := strings.Replace(rule, "%s", base, 1)
			if rule == "%s" && !strings.HasPrefix(name, "refs/") {
				// A pseudo-ref (ORIG_HEAD, FETCH_HEAD), or a file of the
				// git directory git would try as a ref first: git's.
				if strings.ToUpper(name) == name || exists(gitDir, name) || exists(commonDir, name) {
					return "", ErrUnsure
				}
				continue
			}
			got, err := readRef(gitDir, commonDir, name, 0)
			if err == errNoRef {
				continue
			}
			if err != nil {
				return "", err
			}
			id = got
			break
		}
		if id == "" {
			return "", ErrUnsure // perhaps an abbreviated id: git's
		}
	}
	id, err := s.peel(id)
	if err != nil {
		return "", err
	}
	for steps != "" {
		op := steps[0]
		if op != '~' && op != '^' {
			return "", ErrUnsure // HEAD~1x, HEAD^{tree}, HEAD~1:path: git's
		}
		steps = steps[1:]
		k := 0
		for k < len(steps) && '0' <= steps[k] && steps[k] <= '9' {
			k++
		}
		n := 1
		if k > 0 {
			if k > 6 {
				return "", ErrUnsure
			}
			n, _ = strconv.Atoi(steps[:k])
		}
		steps = steps[k:]
		if op == '^' {
			if n == 0 {
				continue
			}
			if id, err = s.parent(id, n); err != nil {
				return "", err
			}
			continue
		}
		for range n {
			if id, err = s.parent(id, 1); err != nil {
				return "", err
			}
		}
	}
	return id, nil
}

// parent is the n-th parent of the commit id.
func (s *Store) parent(id string, n int) (string, error) {
	typ, data, err := s.Read(id)
	if err != nil || typ != "commit" {
		return "", ErrUnsure
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			break // the end of the header
		}
		if p, ok := strings.CutPrefix(line, "parent "); ok {
			if n--; n == 0 {
				if len(p) != 2*s.hashSize || !isLowerHex(p) {
					return "", ErrUnsure
				}
				return p, nil
			}
		}
	}
	return "", ErrUnsure // no such parent: git says so
}

// peel follows annotated tags to the commit they name.
func (s *Store) peel(id string) (string, error) {
	for range 16 {
		typ, data, err := s.Read(id)
		if err != nil {
			return "", err
		}
		switch typ {
		case "commit":
			return id, nil
		case "tag":
			line, _, _ := strings.Cut(string(data), "\n")
			next, ok := strings.CutPrefix(line, "object ")
			if !ok || len(next) != 2*s.hashSize || !isLowerHex(next) {
				return "", ErrUnsure
			}
			id = next
		default:
			return "", ErrUnsure
		}
	}
	return "", ErrUnsure
}

// errNoRef: no ref by that name (the next rule is tried).
var errNoRef = errors.New("gitdir: no such ref")

// plainRefName: a name made of the characters refs are commonly named
// with, none of git's revision syntax (@, :, .., {, and the like).
func plainRefName(name string) bool {
	if name == "" || name[0] == '-' || name[0] == '/' || name[0] == '.' || strings.HasSuffix(name, "/") ||
		strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") || strings.Contains(name, "..") ||
		strings.Contains(name, "//") || strings.Contains(name, "/.") {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readRef reads the ref name (loose, then packed-refs), following
// symbolic refs; errNoRef when neither holds it.
func readRef(gitDir, commonDir, name string, depth int) (string, error) {
	if depth > 5 {
		return "", ErrUnsure
	}
	for _, p := range []string{"refs/bisect/", "refs/worktree/", "refs/rewritten/", "worktrees/", "main-worktree/"} {
		if strings.HasPrefix(name, p) {
			return "", ErrUnsure // per worktree, or another worktree's
		}
	}
	dir := commonDir
	if name == "HEAD" {
		dir = gitDir
	}
	b, err := readRefFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err == nil {
		line := strings.TrimRight(string(b), "\n")
		if target, ok := strings.CutPrefix(line, "ref: "); ok {
			if !strings.HasPrefix(target, "refs/") || !plainRefName(target) {
				return "", ErrUnsure
			}
			return readRef(gitDir, commonDir, target, depth+1)
		}
		if isLowerHex(line) && (len(line) == 40 || len(line) == 64) {
			return line, nil
		}
		return "", ErrUnsure
	}
	if !os.IsNotExist(err) {
		if fi, serr := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); serr == nil && fi.IsDir() {
			return packedRef(commonDir, name) // refs/heads/a when refs/heads/a/b exists
		}
		return "", ErrUnsure
	}
	return packedRef(commonDir, name)
}

// maxRefFile bounds a loose ref's file: an id or "ref: " and a name.
const maxRefFile = 4096

// readRefFile reads a loose ref (or HEAD): a regular file of at most
// maxRefFile bytes, or ErrUnsure.
func readRefFile(name string) ([]byte, error) {
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRefFile+1))
	if err != nil || len(b) > maxRefFile {
		return nil, ErrUnsure
	}
	return b, nil
}

// packedRef finds name in packed-refs.
func packedRef(commonDir, name string) (string, error) {
	f, err := openRegular(filepath.Join(commonDir, "packed-refs"))
	if os.IsNotExist(err) {
		return "", errNoRef
	}
	if err != nil {
		return "", ErrUnsure
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line != "" && line[0] == '#' {
			continue
		}
		// git refuses a packed-refs holding any other line ("unexpected
		// line"), so a damaged one is git's to report.
		peeled, isPeel := strings.CutPrefix(line, "^")
		id, ref, ok := strings.Cut(line, " ")
		if isPeel {
			id, ref, ok = peeled, "", true
		}
		if !ok || !isLowerHex(id) || len(id) != 40 && len(id) != 64 || !isPeel && ref == "" {
			return "", ErrUnsure
		}
		if ref == name {
			return id, nil
		}
	}
	if sc.Err() != nil {
		return "", ErrUnsure
	}
	return "", errNoRef
}

// Size is the size of the object id (hex) as its header says, its bytes
// left unread (a delta's: the size it makes). Not checked against the
// id's hash: for a guess that only ever sends the caller to a full read.
func (s *Store) Size(id string) (int64, error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != s.hashSize {
		return 0, ErrUnsure
	}
	x := id
	f, err := openRegular(filepath.Join(s.objects, x[:2], x[2:]))
	if err != nil && !os.IsNotExist(err) {
		return 0, ErrUnsure
	}
	if err == nil {
		defer f.Close()
		// The header is in the first bytes: inflating only what the
		// first KB holds keeps a big blob's first 32 KB uninflated.
		z, err := s.zlib(io.LimitReader(f, 1<<10))
		if err != nil {
			return 0, ErrUnsure
		}
		head := make([]byte, 64)
		n, _ := io.ReadFull(z, head)
		nul := bytes.IndexByte(head[:n], 0)
		if nul < 0 {
			return 0, ErrUnsure
		}
		_, num, _ := strings.Cut(string(head[:nul]), " ")
		size, err := strconv.ParseInt(num, 10, 64)
		if err != nil || size < 0 {
			return 0, ErrUnsure
		}
		return size, nil
	}
	if err := s.listPacks(); err != nil {
		return 0, err
	}
	for _, p := range s.packs {
		off, found, err := p.find(raw)
		if err != nil {
			return 0, err
		}
		if found {
			return s.packedSize(p, off)
		}
	}
	return 0, ErrUnsure
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	return err == nil
}
