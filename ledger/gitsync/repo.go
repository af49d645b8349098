package gitsync

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitattributes"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// Repo is the git repository that holds a backlog directory.
type Repo struct {
	repo      *git.Repository
	root      string // the worktree root
	gitDir    string // this worktree's git directory: HEAD, index
	commonDir string // refs, objects and config, shared by linked worktrees
	prefix    string // the backlog directory relative to the worktree root, slash-separated; "" for the root itself

	eolOnce  sync.Once
	eolAuto  bool                  // core.autocrlf is true or input
	eolAttrs gitattributes.Matcher // the text and eol attributes; nil when none
}

// OpenRepo opens the git repository whose worktree contains the backlog
// directory dir.
func OpenRepo(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	// go-git opens the files with a blocking open: a FIFO there is
	// refused first, and one swapped in after still ends on a signal.
	if err := gitdir.CheckFiles(abs); err != nil {
		return nil, err
	}
	var r *git.Repository
	err = gitdir.MayBlock(func() (err error) {
		r, err = git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
		return err
	})
	if errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion) || errors.Is(err, git.ErrUnknownExtension) {
		r, err = openWorktreeConfig(abs, err)
	}
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("%w: %s is not inside one", ErrNoRepo, abs)
	}
	if err != nil {
		return nil, fmt.Errorf("open git repository at %s: %w", abs, err)
	}
	root, err := worktreeRoot(abs)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("%w: %s is outside the worktree %s", ErrNoRepo, abs, root)
	}
	if rel == "." {
		rel = ""
	}
	g := &Repo{repo: r, root: root, prefix: filepath.ToSlash(rel)}
	if g.gitDir, g.commonDir, err = gitdir.Dirs(root); err != nil {
		return nil, err
	}
	return g, nil
}

// openWorktreeConfig opens a repository that go-git refuses for its
// extensions.worktreeConfig (git sparse-checkout and git worktree set it):
// per-worktree settings live in config.worktree, which holds what bl does
// not use (sparse-checkout patterns), while the repository's config keeps
// remotes and branches. The storage hides that one extension from go-git's
// check; any other extension still fails with refused.
func openWorktreeConfig(abs string, refused error) (*git.Repository, error) {
	root, err := gitdir.Root(abs)
	if err != nil {
		return nil, refused
	}
	gitDir, common, err := gitdir.Dirs(root)
	if err != nil {
		return nil, refused
	}
	var fs billy.Filesystem = osfs.New(gitDir)
	if common != gitDir {
		fs = dotgit.NewRepositoryFilesystem(fs, osfs.New(common))
	}
	st := worktreeConfigStorage{filesystem.NewStorage(fs, cache.NewObjectLRUDefault())}
	cfg, err := st.Storage.Config()
	if err != nil || !cfg.Raw.HasSection("extensions") || cfg.Raw.Section("extensions").Option(worktreeConfigKey) == "" {
		return nil, refused
	}
	return git.Open(st, osfs.New(root))
}

const worktreeConfigKey = "worktreeConfig"

// worktreeConfigStorage is the repository's storage with
// extensions.worktreeConfig left out of the config go-git reads, and put
// back into any config written.
type worktreeConfigStorage struct{ *filesystem.Storage }

func (s worktreeConfigStorage) Config() (*gitconfig.Config, error) {
	cfg, err := s.Storage.Config()
	if err == nil && cfg.Raw.HasSection("extensions") {
		cfg.Raw.Section("extensions").RemoveOption(worktreeConfigKey)
	}
	return cfg, err
}

func (s worktreeConfigStorage) SetConfig(cfg *gitconfig.Config) error {
	cfg.Raw.Section("extensions").SetOption(worktreeConfigKey, "true")
	return s.Storage.SetConfig(cfg)
}

// worktreeRoot is the nearest directory at or above dir holding .git.
func worktreeRoot(dir string) (string, error) {
	root, err := gitdir.Root(dir)
	if err != nil {
		return "", fmt.Errorf("%w: no .git at or above %s", ErrNoRepo, dir)
	}
	return root, nil
}

// currentBranch is the branch HEAD points at, even when it has no commit
// yet; "" when HEAD is detached.
func (g *Repo) currentBranch() (plumbing.ReferenceName, error) {
	ref, err := g.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference {
		return "", nil
	}
	return ref.Target(), nil
}

// refHash is the commit a ref points at, or the zero hash when it does not
// exist.
func (g *Repo) refHash(name plumbing.ReferenceName) (plumbing.Hash, error) {
	return g.readRefHash(name, gitdir.MayBlock)
}

// readRefHash is refHash, the read run by guard: gitdir.MayBlock, or a
// plain call where a signal must not end the process (updateRef holds
// git's lock file, which an exit would leave behind for every later git
// and bl write of the ref).
func (g *Repo) readRefHash(name plumbing.ReferenceName, guard func(func() error) error) (plumbing.Hash, error) {
	// go-git opens a loose ref with a blocking open: a FIFO there is
	// refused first (OpenRepo checked only the branch's).
	if err := gitdir.CheckRef(g.commonDir, string(name)); err != nil {
		return plumbing.ZeroHash, err
	}
	var ref *plumbing.Reference
	err := guard(func() (err error) {
		ref, err = g.repo.Storer.Reference(name)
		return err
	})
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", name, err)
	}
	if ref.Type() == plumbing.SymbolicReference {
		ref, err = g.repo.Reference(name, true)
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return ref.Hash(), nil
}

// lockTimeout bounds the wait for git's own lock files (ref.lock,
// index.lock), which git and other bl processes hold only briefly.
const lockTimeout = 10 * time.Second

// lockFile takes git's lock for path: path.lock created exclusively. The
// caller writes the new content into it and renames it over path, or
// removes it to give up.
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for wait := time.Millisecond; ; wait = min(wait*2, 50*time.Millisecond) {
		f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s.lock exists; another git process is running, or one crashed and left it behind (remove it if no git process is running)", ErrGitLocked, path)
		}
		time.Sleep(jitter(wait))
	}
}

// withLockFile replaces path with git's lock-file protocol: it takes
// <path>.lock (waiting up to timeout), lets write fill it, and renames it
// over path. When anything fails the lock file is removed and path is left
// as it was.
func withLockFile(path string, timeout time.Duration, write func(f *os.File) error) (err error) {
	f, err := lockFile(path, timeout)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// errRefMoved says a ref no longer held the value a compare-and-swap
// expected.
var errRefMoved = errors.New("ref moved")

// updateRef moves ref name from old to new with git's locking protocol,
// so git and other bl processes see either value, never a torn file. It
// fails with errRefMoved when the ref no longer holds old (the zero hash:
// does not exist).
func (g *Repo) updateRef(name plumbing.ReferenceName, old, new plumbing.Hash) error {
	p := filepath.Join(g.commonDir, filepath.FromSlash(name.String()))
	return withLockFile(p, lockTimeout, func(f *os.File) error {
		cur, err := g.readRefHash(name, func(fn func() error) error { return fn() })
		if err != nil {
			return err
		}
		if cur != old {
			return errRefMoved
		}
		_, err = f.WriteString(new.String() + "\n")
		return err
	})
}

// setRef points ref name at h whatever it held (remote-tracking refs).
func (g *Repo) setRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	for range 5 {
		cur, err := g.refHash(name)
		if err != nil {
			return err
		}
		if cur == h {
			return nil
		}
		if err := g.updateRef(name, cur, h); !errors.Is(err, errRefMoved) {
			return err
		}
	}
	return nil
}

// commit returns the commit object for h.
func (g *Repo) commit(h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(g.repo.Storer, h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	return c, nil
}

// rootTree is the tree of commit h; nil for the zero hash.
func (g *Repo) rootTree(h plumbing.Hash) (*object.Tree, error) {
	if h.IsZero() {
		return nil, nil
	}
	c, err := g.commit(h)
	if err != nil {
		return nil, err
	}
	return c.Tree()
}

// subtree is the tree at the backlog path inside root; nil when root is
// nil or has no backlog there.
func (g *Repo) subtree(root *object.Tree) (*object.Tree, error) {
	if root == nil || g.prefix == "" {
		return root, nil
	}
	t, err := root.Tree(g.prefix)
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	return t, err
}

// readBacklog reads the tracked backlog files a commit holds. A commit
// without a backlog gives an empty Tree.
func (g *Repo) readBacklog(h plumbing.Hash) (ledger.Tree, error) {
	return g.readBacklogFiles(h, ledger.Tracked)
}

// readBacklogFiles reads the backlog files of commit h that want accepts.
func (g *Repo) readBacklogFiles(h plumbing.Hash, want func(name string) bool) (ledger.Tree, error) {
	t, _, err := g.readBacklogUnread(h, want, func(string, plumbing.Hash) bool { return false })
	return t, err
}

// readBacklogUnread reads the backlog files of commit h that want accepts,
// leaving the archive segments and the snapshot unread (nil data) that
// skip accepts given their blob hash. It returns the blob hash of every file it names.
func (g *Repo) readBacklogUnread(h plumbing.Hash, want func(name string) bool, skip func(name string, blob plumbing.Hash) bool) (ledger.Tree, map[string]plumbing.Hash, error) {
	root, err := g.rootTree(h)
	if err != nil {
		return nil, nil, err
	}
	sub, err := g.subtree(root)
	if err != nil {
		return nil, nil, err
	}
	t, hashes := ledger.Tree{}, map[string]plumbing.Hash{}
	if sub == nil {
		return t, hashes, nil
	}
	err = walkFiles(sub, "", func(name string, e object.TreeEntry) error {
		if !ledger.Tracked(name) || !want(name) {
			return nil
		}
		if !isFile(e.Mode) && path.Ext(name) != ".md" { // a board bl writes, never reads
			return &NotAFileError{Commit: h, Path: path.Join(g.prefix, name), Mode: e.Mode}
		}
		hashes[name] = e.Hash
		if mayBeUnread(name) && skip(name, e.Hash) {
			t[name] = nil
			return nil
		}
		if mayBeUnread(name) {
			trace("blob", name)
		}
		data, err := g.blob(e.Hash)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", g.prefix, name, err)
		}
		if data == nil {
			data = []byte{}
		}
		t[name] = data
		return nil
	})
	return t, hashes, err
}

// walkFiles calls fn for every file under t, by slash-separated name.
func walkFiles(t *object.Tree, dir string, fn func(name string, e object.TreeEntry) error) error {
	for _, e := range t.Entries {
		name := path.Join(dir, e.Name)
		if e.Mode == filemode.Dir {
			sub, err := t.Tree(e.Name)
			if err != nil {
				return err
			}
			if err := walkFiles(sub, name, fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(name, e); err != nil {
			return err
		}
	}
	return nil
}

func (g *Repo) blob(h plumbing.Hash) ([]byte, error) {
	o, err := g.repo.Storer.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// at is the same repository with the backlog at prefix instead.
func (g *Repo) at(prefix string) *Repo {
	return &Repo{repo: g.repo, root: g.root, gitDir: g.gitDir, commonDir: g.commonDir, prefix: prefix}
}

// updateIndex makes the index hold the committed backlog files, so that
// git status shows them unchanged. Tracked backlog files the commit no
// longer has are dropped from the index. The stat data is left empty, so
// git compares contents, never trusting a file that changed meanwhile.
func (g *Repo) updateIndex(t ledger.Tree, blobs map[string]plumbing.Hash, sizes map[string]int64) error {
	p := filepath.Join(g.gitDir, "index")
	return withLockFile(p, 2*time.Second, func(f *os.File) error {
		idx := &index.Index{Version: 2}
		if in, err := os.Open(p); err == nil {
			err = index.NewDecoder(bufio.NewReader(in)).Decode(idx)
			in.Close()
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		g.setIndexEntries(idx, t, blobs, sizes)
		w := bufio.NewWriter(f)
		if err := index.NewEncoder(w).Encode(idx); err != nil {
			return err
		}
		return w.Flush()
	})
}

// setIndexEntries puts the committed backlog files in idx in place of the
// tracked backlog files it held, keeping the rest (the work tree's other
// files, other backlogs) as they were.
func (g *Repo) setIndexEntries(idx *index.Index, t ledger.Tree, blobs map[string]plumbing.Hash, sizes map[string]int64) {
	full := func(name string) string {
		if g.prefix == "" {
			return name
		}
		return g.prefix + "/" + name
	}
	ours := map[string]bool{}
	for name := range t {
		ours[full(name)] = true
	}
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		rel, inside := strings.CutPrefix(e.Name, g.prefix+"/")
		if g.prefix == "" {
			rel, inside = e.Name, true
		}
		if ours[e.Name] || (inside && ledger.Tracked(rel)) {
			continue
		}
		kept = append(kept, e)
	}
	idx.Entries = kept
	for name, data := range t {
		size := int64(len(data))
		if data == nil {
			size = sizes[name]
		}
		idx.Entries = append(idx.Entries, &index.Entry{Name: full(name), Hash: blobs[name], Mode: filemode.Regular, Size: uint32(size)})
	}
	sort.SliceStable(idx.Entries, func(i, j int) bool {
		a, b := idx.Entries[i], idx.Entries[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Stage < b.Stage
	})
	idx.Cache = nil // the cached tree no longer matches; git rebuilds it
	idx.EndOfIndexEntry = nil
	if idx.Version < 2 {
		idx.Version = 2
	}
}
