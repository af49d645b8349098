package gitsync

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bl-backlog/bl/ledger"
)

// Writing the backlog's tree into the repository's: the objects, the
// backlog directory's nested trees, the splice at the backlog's path, and
// comparing two trees outside the backlog.

// store writes an object unless the repository has it already, and
// returns its hash.
func (g *Repo) store(o plumbing.EncodedObject) (plumbing.Hash, error) {
	h := o.Hash()
	if g.repo.Storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	return g.repo.Storer.SetEncodedObject(o)
}

func (g *Repo) storeBlob(data []byte) (plumbing.Hash, error) {
	if h := plumbing.ComputeHash(plumbing.BlobObject, data); g.repo.Storer.HasEncodedObject(h) == nil {
		return h, nil // stored already: no copy to make
	}
	o := g.repo.Storer.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.store(o)
}

// storeTree writes a tree of entries (sorted here) and returns its hash;
// with write false it only computes the hash.
func (g *Repo) storeTree(entries []object.TreeEntry, write bool) (plumbing.Hash, error) {
	sort.Sort(object.TreeEntrySorter(entries))
	t := &object.Tree{Entries: entries}
	var o plumbing.EncodedObject = &plumbing.MemoryObject{}
	if write {
		o = g.repo.Storer.NewEncodedObject()
	}
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	if !write {
		return o.Hash(), nil
	}
	return g.store(o)
}

// treeFile is a file of a tree to store: its mode and blob.
type treeFile struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// backlogTree builds the tree for the backlog directory: the files of t,
// plus whatever files base (the directory as committed before) holds that
// bl does not manage, such as a README. A file t names unread (nil data)
// is the blob known gives. It returns the tree's hash and the blob hash of
// each file of t.
func (g *Repo) backlogTree(base *object.Tree, t ledger.Tree, known map[string]plumbing.Hash) (plumbing.Hash, map[string]plumbing.Hash, error) {
	files := map[string]treeFile{}
	if base != nil {
		err := walkFiles(base, "", func(name string, e object.TreeEntry) error {
			if !ledger.Tracked(name) && name != ledger.LockFile {
				files[name] = treeFile{e.Mode, e.Hash}
			}
			return nil
		})
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	blobs := map[string]plumbing.Hash{}
	for name, data := range t {
		h, ok := known[name]
		switch {
		case data == nil && !ok:
			return plumbing.ZeroHash, nil, fmt.Errorf("%s: neither read nor hashed", name)
		case data != nil:
			var err error
			if h, err = g.storeBlob(g.clean(name, data)); err != nil {
				return plumbing.ZeroHash, nil, err
			}
		}
		blobs[name] = h
		files[name] = treeFile{filemode.Regular, h}
	}
	h, err := g.nestTrees(files)
	return h, blobs, err
}

// nestTrees stores the nested trees of a flat list of files (slash
// paths) bottom-up and returns the top one's hash.
func (g *Repo) nestTrees(files map[string]treeFile) (plumbing.Hash, error) {
	children := map[string][]string{} // dir -> entries (files and subdirs)
	for name := range files {
		for p := name; p != "."; p = path.Dir(p) {
			parent := path.Dir(p)
			if parent == "." {
				parent = ""
			}
			children[parent] = append(children[parent], p)
		}
	}
	var build func(dir string) (plumbing.Hash, error)
	build = func(dir string) (plumbing.Hash, error) {
		seen := map[string]bool{}
		var entries []object.TreeEntry
		for _, p := range children[dir] {
			if seen[p] {
				continue
			}
			seen[p] = true
			if f, ok := files[p]; ok {
				entries = append(entries, object.TreeEntry{Name: path.Base(p), Mode: f.mode, Hash: f.hash})
				continue
			}
			h, err := build(p)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: path.Base(p), Mode: filemode.Dir, Hash: h})
		}
		return g.storeTree(entries, true)
	}
	return build("")
}

// splice returns root with the tree at the backlog path replaced by sub
// (a nil root is an empty tree). With write false it only computes the
// hash, which is how two trees are compared outside the backlog.
func (g *Repo) splice(root *object.Tree, sub plumbing.Hash, write bool) (plumbing.Hash, error) {
	if g.prefix == "" {
		return sub, nil
	}
	return g.spliceAt(root, strings.Split(g.prefix, "/"), sub, write)
}

func (g *Repo) spliceAt(t *object.Tree, parts []string, sub plumbing.Hash, write bool) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	var child *object.Tree
	if t != nil {
		for _, e := range t.Entries {
			if e.Name == parts[0] {
				if e.Mode == filemode.Dir && len(parts) > 1 {
					c, err := t.Tree(e.Name)
					if err != nil {
						return plumbing.ZeroHash, err
					}
					child = c
				}
				continue
			}
			entries = append(entries, e)
		}
	}
	h := sub
	if len(parts) > 1 {
		var err error
		if h, err = g.spliceAt(child, parts[1:], sub, write); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	entries = append(entries, object.TreeEntry{Name: parts[0], Mode: filemode.Dir, Hash: h})
	return g.storeTree(entries, write)
}

// sameOutside reports whether two commits' trees are equal outside the
// backlog directory, other backlogs of the repository aside (see
// otherBacklogs): a sync brings those in through their own ledgers.
func (g *Repo) sameOutside(a, b *object.Tree) (bool, error) {
	if g.prefix == "" {
		return true, nil
	}
	var marker plumbing.Hash // any fixed value will do
	ha, err := g.splice(a, marker, false)
	if err != nil {
		return false, err
	}
	hb, err := g.splice(b, marker, false)
	if err != nil || ha == hb {
		return ha == hb, err
	}
	_, same, err := g.otherBacklogs(a, b)
	return same, err
}

// otherBacklogs compares two trees outside this backlog: same is true when
// they differ only in the tracked files of other backlog directories (a
// second .backlog in another subdirectory), which it returns.
func (g *Repo) otherBacklogs(a, b *object.Tree) (others []string, same bool, err error) {
	if a == nil || b == nil || g.prefix == "" {
		return nil, a == b || g.prefix == "", nil
	}
	// Equal outside this backlog (the usual case): two tree hashes.
	var marker plumbing.Hash
	ha, err := g.splice(a, marker, false)
	if err != nil {
		return nil, false, err
	}
	if hb, err := g.splice(b, marker, false); err != nil || ha == hb {
		return nil, err == nil, err
	}
	changes, err := object.DiffTree(a, b)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]bool{}
	for _, ch := range changes {
		name := ch.From.Name
		if name == "" {
			name = ch.To.Name
		}
		if strings.HasPrefix(name, g.prefix+"/") {
			continue
		}
		i := strings.LastIndex("/"+name, "/"+backlogDirName+"/")
		if i < 0 {
			return nil, false, nil
		}
		dir, rel := strings.TrimPrefix(name[:max(i-1, 0)]+"/"+backlogDirName, "/"), name[i+len(backlogDirName)+1:]
		if i == 0 {
			dir = backlogDirName
		}
		if !ledger.Tracked(rel) || dir == g.prefix {
			return nil, false, nil
		}
		if !seen[dir] {
			seen[dir] = true
			others = append(others, dir)
		}
	}
	sort.Strings(others)
	return others, true, nil
}

// backlogDirName is the name another backlog's directory has, for
// otherBacklogs to recognise it.
const backlogDirName = ".backlog"
