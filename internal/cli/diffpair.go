package cli

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// bl diff OLD NEW in the lean bl: the two commits' backlogs are read
// in process from the repository's objects (gitdir.Store: loose objects
// and packs, HEAD~N-style revisions), or, where the store is unsure of
// anything, through one `git cat-file --batch-command` of the system git
// (the trees, then only the blobs that differ), so the command costs the
// change, not bl-git's start and go-git's reads. What it cannot read the
// way Git.BacklogPairAt reads it (A...B, a backlog path that is not a
// directory, a file that is a link or a submodule, no git on PATH when
// git is needed, any failure) it declines, and bl-git runs the command
// as before: the output is the same either way
// (testdata/script/diff_fast.txtar). A snapshot both commits hold that
// is also the backlog directory's (the same git blob id: from git's
// index when the file's stat data still match it, else hashed) is not
// read from git: the fold reads the file lazily, as Open does
// (ledger.DiffOnSnapshot).

// errDeclined: the fast read does not cover this pair; bl-git does.
var errDeclined = errors.New("declined")

// backlogPair is what Git.BacklogPairAt returns, read through objs.
type backlogPair struct {
	trees   [2]ledger.Tree
	loads   [2]ledger.Loader
	commits [2]string
	// onSnapshot: both commits' snapshot is the backlog directory's
	// snapshot file, as it was when hashed; left unread.
	onSnapshot os.FileInfo
}

// hashWorking is workingBlob (a variable for the test that proves the
// index spares the hash).
var hashWorking = workingBlob

// workingBlob reports whether the file name of the backlog in dir has
// the git blob id id, and its stat data when it has.
func workingBlob(dir, name, id string) (os.FileInfo, bool) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	// gitdir.BlobID, streamed: a snapshot is megabytes, and a buffer of
	// its size costs more in page faults than the hash.
	h := sha1.New()
	if len(id) == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", fi.Size())
	if n, err := io.CopyBuffer(h, f, make([]byte, 64<<10)); err != nil || n != fi.Size() {
		return nil, false
	}
	return fi, hex.EncodeToString(h.Sum(nil)) == id
}

// indexedBlob reports whether the file rel of the worktree at root has
// the git blob id id without reading it: git's index holds id for it and
// its stat data still match (gitdir.IndexBlobID), and the blob is as
// long as the file — where attributes convert the file (eol=crlf, a
// filter) the index holds the stored blob's id, not the file's bytes.
func indexedBlob(objs objectReader, root, rel, id string) (os.FileInfo, bool) {
	held, fi, ok := gitdir.IndexBlobID(root, rel)
	if !ok || held != id {
		return nil, false
	}
	if _, _, size, err := objs.Info(id); err != nil || size != fi.Size() {
		return nil, false
	}
	return fi, true
}

// stillSame reports whether the file name of the backlog in dir is the
// one fi describes: not replaced (a compaction renames a new one in) nor
// written since.
func stillSame(dir, name string, fi os.FileInfo) bool {
	now, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
	return err == nil && os.SameFile(fi, now) && now.Size() == fi.Size() && now.ModTime().Equal(fi.ModTime())
}

// readBacklogPair reads the backlogs of two commits of the repository
// holding the backlog directory dir as Git.BacklogPairAt does: archive
// segments both sides hold with the same blob are left unread (nil), a
// snapshot both hold is read once, everything else is read.
func readBacklogPair(objs objectReader, dir, oldRev, newRev string) (*backlogPair, error) {
	root, prefix, err := backlogPrefix(dir)
	if err != nil {
		return nil, err
	}
	p := &backlogPair{}
	var ids [2]map[string]string
	trees := map[string][]gitdir.TreeEntry{} // the archive tree is often the same
	for i, rev := range []string{oldRev, newRev} {
		if strings.Contains(rev, "...") || strings.HasPrefix(rev, "-") {
			return nil, errDeclined // a merge base: bl-git's
		}
		id, typ, data, err := objs.Get(rev + "^{commit}")
		if err != nil || typ != "commit" {
			return nil, errDeclined // bl-git says what is wrong with it
		}
		p.commits[i] = id
		tree, ok := strings.CutPrefix(commitTreeLine(data), "tree ")
		if !ok || !isObjectID(tree, len(id)) {
			// A crafted commit's "tree HEAD~1^{tree}" would be a
			// revision to git cat-file: go-git refuses it.
			return nil, errDeclined
		}
		if p.trees[i], ids[i], err = readBacklogTree(objs, trees, tree, prefix, len(id)/2); err != nil {
			return nil, err
		}
	}
	// A snapshot both commits hold as the backlog directory holds it is
	// not read from git: the fold reads the file lazily (onSnapshot).
	if id := ids[0][ledger.SnapshotFile]; id != "" && id == ids[1][ledger.SnapshotFile] {
		if fi, ok := indexedBlob(objs, root, path.Join(prefix, ledger.SnapshotFile), id); ok {
			p.onSnapshot = fi
		} else if fi, ok := hashWorking(dir, ledger.SnapshotFile, id); ok {
			p.onSnapshot = fi
		}
	}
	read := map[string][]byte{}
	blob := func(id string) ([]byte, error) {
		if data, ok := read[id]; ok {
			return data, nil
		}
		_, typ, data, err := objs.Get(id)
		if err == nil && typ != "blob" {
			err = errDeclined
		}
		if err != nil {
			return nil, err
		}
		read[id] = data
		return data, nil
	}
	for i := range p.trees {
		for name, id := range ids[i] {
			if other, ok := ids[1-i][name]; ok && other == id && name != ledger.SnapshotFile && isSegmentName(name) {
				continue // the same segment on both sides
			}
			if name == ledger.SnapshotFile && p.onSnapshot != nil {
				continue
			}
			data, err := blob(id)
			if err != nil {
				return nil, err
			}
			p.trees[i][name] = data
		}
	}
	for i := range p.loads {
		side := ids[i]
		p.loads[i] = func(name string) ([]byte, error) {
			id, ok := side[name]
			if !ok {
				return nil, fmt.Errorf("%s: no such file in the commit", name)
			}
			return blob(id)
		}
	}
	return p, nil
}

// backlogPrefix is the root of the worktree holding the backlog
// directory dir, and dir's path in it, slash separated ("" at the root),
// found as gitsync.OpenRepo finds it.
func backlogPrefix(dir string) (root, prefix string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", errDeclined
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	root, err = gitdir.Root(abs)
	if err != nil {
		return "", "", errDeclined
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", "", errDeclined
	}
	if rel == "." {
		return root, "", nil
	}
	return root, filepath.ToSlash(rel), nil
}

// readBacklogTree lists the tracked backlog files of the commit tree
// (names to blob ids), with their data left unread: the backlog
// directory at prefix, and its archive directory (no other directory
// holds a tracked file). A commit without the backlog directory has an
// empty backlog, as in gitsync.
func readBacklogTree(objs objectReader, trees map[string][]gitdir.TreeEntry, tree, prefix string, idLen int) (ledger.Tree, map[string]string, error) {
	t, ids := ledger.Tree{}, map[string]string{}
	entries, err := readTree(objs, trees, tree, idLen)
	if err != nil {
		return nil, nil, err
	}
	if prefix != "" {
		for _, part := range strings.Split(prefix, "/") {
			e, found := findEntry(entries, part)
			if !found {
				return t, ids, nil
			}
			if e.Mode != gitdir.ModeDir {
				return nil, nil, errDeclined // a link or a file where the backlog is
			}
			if entries, err = readTree(objs, trees, e.ID, idLen); err != nil {
				return nil, nil, err
			}
		}
	}
	var walk func(entries []gitdir.TreeEntry, dir string) error
	walk = func(entries []gitdir.TreeEntry, dir string) error {
		for _, e := range entries {
			name := e.Name
			if dir != "" {
				name = dir + "/" + e.Name
			}
			if e.Mode == gitdir.ModeDir {
				if dir != "" || e.Name != ledger.ArchiveDir {
					continue
				}
				sub, err := readTree(objs, trees, e.ID, idLen)
				if err != nil {
					return err
				}
				if err := walk(sub, name); err != nil {
					return err
				}
				continue
			}
			if !ledger.Tracked(name) {
				continue
			}
			if e.Mode != gitdir.ModeFile && e.Mode != gitdir.ModeExecutable {
				return errDeclined // a link or a submodule
			}
			ids[name], t[name] = e.ID, nil
		}
		return nil
	}
	return t, ids, walk(entries, "")
}

// readTree reads the tree id, once: trees holds the ones read.
func readTree(objs objectReader, trees map[string][]gitdir.TreeEntry, id string, idLen int) ([]gitdir.TreeEntry, error) {
	if entries, ok := trees[id]; ok {
		return entries, nil
	}
	_, typ, data, err := objs.Get(id)
	if err != nil || typ != "tree" {
		return nil, errDeclined
	}
	entries, err := gitdir.ParseTree(data, idLen)
	if err != nil {
		return nil, errDeclined
	}
	trees[id] = entries
	return entries, nil
}

func findEntry(entries []gitdir.TreeEntry, name string) (gitdir.TreeEntry, bool) {
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return gitdir.TreeEntry{}, false
}

// commitTreeLine is a commit object's first line, "tree <id>".
func commitTreeLine(data []byte) string {
	line, _, _ := strings.Cut(string(data), "\n")
	return line
}

// isObjectID: a full lowercase hex id of n digits.
func isObjectID(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isSegmentName(name string) bool { return strings.HasPrefix(name, ledger.ArchiveDir+"/") }

// objectReader reads objects by git's names: a hex id, or REV^{commit}.
// gitdir.Objects (git cat-file) is one, localObjects (in process) the
// other.
type objectReader interface {
	Get(name string) (id, typ string, data []byte, err error)
	// Info is the object's size, its bytes unread (its type may be "").
	Info(name string) (id, typ string, size int64, err error)
}

// localObjects reads objects in process (gitdir.Store); whatever the
// store is unsure of fails, and the pair is read through git instead.
type localObjects struct {
	s                 *gitdir.Store
	gitDir, commonDir string
}

func (l *localObjects) Get(name string) (string, string, []byte, error) {
	id := name
	if rev, ok := strings.CutSuffix(name, "^{commit}"); ok {
		var err error
		if id, err = l.s.Commit(l.gitDir, l.commonDir, rev); err != nil {
			return "", "", nil, err
		}
	}
	typ, data, err := l.s.Read(id)
	return id, typ, data, err
}

func (l *localObjects) Info(name string) (string, string, int64, error) {
	size, err := l.s.Size(name)
	return name, "", size, err
}

// diffPairFast is bl diff OLD NEW through readBacklogPair, reading the
// objects in process and, when the store is unsure of anything, through
// git cat-file; errDeclined (or any failure) leaves the command to
// bl-git.
// The lines of the event files that do not read are set aside and named
// (diffaside.go).
func diffPairFast(ctx context.Context, dir, oldRev, newRev string) (*ledger.BacklogDiff, []ledger.Quarantined, [2]string, error) {
	root, err := gitdir.Root(dir)
	if err != nil {
		return nil, nil, [2]string{}, errDeclined
	}
	if gitDir, commonDir, err := gitdir.Dirs(root); err == nil {
		if s, err := gitdir.OpenStore(commonDir); err == nil {
			d, aside, commits, err := diffPairWith(&localObjects{s, gitDir, commonDir}, dir, oldRev, newRev)
			s.Close()
			if err == nil {
				return d, aside, commits, nil
			}
		}
	}
	objs, err := gitdir.OpenObjects(ctx, root)
	if err != nil {
		return nil, nil, [2]string{}, err
	}
	defer objs.Close()
	return diffPairWith(objs, dir, oldRev, newRev)
}

// diffPairWith reads and compares the pair through objs.
func diffPairWith(objs objectReader, dir, oldRev, newRev string) (*ledger.BacklogDiff, []ledger.Quarantined, [2]string, error) {
	p, err := readBacklogPair(objs, dir, oldRev, newRev)
	if err != nil {
		return nil, nil, [2]string{}, err
	}
	sides := [2]diffSide{{oldRev, p.commits[0]}, {newRev, p.commits[1]}}
	d, aside, err := diffSettingAside(dir, sides, p.trees, p.loads, func(t [2]ledger.Tree, l [2]ledger.Loader) (*ledger.BacklogDiff, error) {
		if p.onSnapshot != nil {
			d, err := ledger.DiffOnSnapshot(t[0], t[1], l[0], l[1], dir)
			if err == nil && stillSame(dir, ledger.SnapshotFile, p.onSnapshot) {
				return d, nil
			}
			// The file changed under the fold, or did not read: the
			// snapshot is read from git instead.
		}
		return ledger.DiffUnread(t[0], t[1], l[0], l[1])
	})
	return d, aside, p.commits, err
}
