package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/bl-backlog/bl/ledger"
)

// Options configure a Syncer.
type Options struct {
	// Remote is a configured remote's name, or a URL or path. Empty for
	// local commits only.
	Remote string
	// Branch is the branch to commit to and exchange; the checked-out
	// branch when empty.
	Branch string
	// Message is the commit subject; the summary of events follows it.
	// Empty: the summary is the subject.
	Message string
	// Actor is the author and committer name.
	Actor string
	// Tries bounds the fetch-merge-push rounds of a push; DefaultTries
	// when zero.
	Tries int
	// Now is the clock for commit times; time.Now when nil.
	Now func() time.Time
	// BeforeCommit, when set, runs just before the backlog is read for a
	// commit (in every round of a push, after the remote's events were
	// applied): bl regenerates the configured board there.
	BeforeCommit func(ctx context.Context) error
}

// DefaultTries is how many fetch-merge-push rounds a push makes before it
// gives up. Claims and other lease operations make LeaseTries rounds: many
// claimers may race for one remote, and each round only one push wins.
const (
	DefaultTries = 10
	LeaseTries   = 40
)

// Result says what a sync did.
type Result struct {
	Branch    string `json:"branch"`
	Remote    string `json:"remote,omitempty"`
	Commit    string `json:"commit,omitempty"` // the branch's commit afterwards
	Committed bool   `json:"committed"`        // a new commit was made
	Message   string `json:"message,omitempty"`
	Pulled    int    `json:"pulled"`  // events the remote had that the backlog lacked
	Rebased   int    `json:"rebased"` // local events now after the remote's history
	Conflicts int    `json:"conflicts"`
	Pushed    bool   `json:"pushed"`
	Tries     int    `json:"tries,omitempty"`
	Author    string `json:"author,omitempty"` // who a new commit names as author and committer
}

// Syncer commits a backlog to git and exchanges it with a remote.
type Syncer struct {
	b          *ledger.Backlog
	g          *Repo
	o          Options
	branch     plumbing.ReferenceName
	url        string // the remote's URL
	remoteName string // a configured remote's name, for its tracking ref
	triesSet   bool   // Options.Tries was given

	beforePush func(round int) // tests: runs just before each push
}

// New prepares to sync the backlog b with the git repository around it.
func New(b *ledger.Backlog, o Options) (*Syncer, error) {
	g, err := OpenRepo(b.Dir())
	if err != nil {
		return nil, err
	}
	triesSet := o.Tries > 0
	if !triesSet {
		o.Tries = DefaultTries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Syncer{b: b, g: g, o: o, triesSet: triesSet}
	if o.Branch != "" {
		s.branch = plumbing.NewBranchReferenceName(strings.TrimPrefix(o.Branch, "refs/heads/"))
	} else {
		if s.branch, err = g.currentBranch(); err != nil {
			return nil, err
		}
		if s.branch == "" {
			return nil, fmt.Errorf("%w: name the branch to sync with --branch", ErrDetached)
		}
	}
	if o.Remote != "" {
		if err := s.resolveRemote(o.Remote); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Syncer) resolveRemote(name string) error {
	cfg, err := s.g.repo.Config()
	if err != nil {
		return err
	}
	if rc, ok := cfg.Remotes[name]; ok && len(rc.URLs) > 0 {
		s.url, s.remoteName = rc.URLs[0], name
		return nil
	}
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		abs, err := filepath.Abs(name)
		if err != nil {
			return err
		}
		s.url = abs
		return nil
	}
	if strings.Contains(name, "://") || strings.Contains(name, "@") {
		s.url = name
		return nil
	}
	return &RemoteError{Remote: name, Op: "fetch", Err: errors.New("no such remote in the git config, and not a URL or a directory")}
}

func (s *Syncer) remoteLabel() string {
	if s.remoteName != "" {
		return s.remoteName + "/" + s.branch.Short()
	}
	return s.url + " " + s.branch.Short()
}

func (s *Syncer) result() Result {
	r := Result{Branch: s.branch.Short()}
	if s.o.Remote != "" {
		r.Remote = s.o.Remote
	}
	return r
}

// Commit commits the backlog as it is now to the branch. Nothing changed
// since the branch's commit is a quiet no-op (Committed false).
func (s *Syncer) Commit(ctx context.Context) (Result, error) {
	res := s.result()
	head, committed, msg, err := s.commit(func() (ledger.Tree, error) { return s.treeForCommit(ctx) }, plumbing.ZeroHash)
	res.Commit, res.Committed, res.Message = hashString(head), committed, msg
	return res, err
}

// Pull fetches the remote's branch, rebases the backlog onto its backlog
// (ApplyUpstream) and commits the result with the remote's commit as a
// second parent.
func (s *Syncer) Pull(ctx context.Context) (Result, error) {
	res := s.result()
	res.Tries = 1
	remote, _, err := s.pullOnce(ctx, &res)
	if err != nil {
		return res, err
	}
	head, committed, msg, err := s.commit(func() (ledger.Tree, error) { return s.treeForCommit(ctx) }, remote)
	res.Commit, res.Committed, res.Message = hashString(head), committed, msg
	return res, err
}

// treeForCommit runs the BeforeCommit hook, then reads the backlog's
// tracked files under its lock.
func (s *Syncer) treeForCommit(ctx context.Context) (ledger.Tree, error) {
	if s.o.BeforeCommit != nil {
		if err := s.o.BeforeCommit(ctx); err != nil {
			return nil, err
		}
	}
	return s.b.Tree(ctx)
}

// Hooks let a caller act inside every round of Push.
type Hooks struct {
	// Prepare runs after the remote's events were applied, before the
	// backlog is read for the commit. round counts from 1. ErrStop ends
	// Push without pushing.
	Prepare func(ctx context.Context, round int) error
	// Check sees the fold of exactly what is about to be pushed. ErrRetry
	// starts another round.
	Check func(s *ledger.State) error
}

var (
	// ErrStop, from Hooks.Prepare, ends Push quietly.
	ErrStop = errors.New("stop")
	// ErrRetry, from Hooks.Check, starts another round.
	ErrRetry = errors.New("retry")
)

// Push exchanges the backlog with the remote until the remote takes it:
// fetch, rebase the local events after the remote's (ApplyUpstream),
// commit with the fetched commit as a parent, push with the fetched
// commit as the expected old value. A push rejected because the remote
// moved starts another round after a jittered backoff, up to Options.Tries
// rounds. It never forces.
func (s *Syncer) Push(ctx context.Context, h Hooks) (Result, error) {
	return s.exchange(ctx, h, s.o.Tries)
}

func (s *Syncer) exchange(ctx context.Context, h Hooks, tries int) (Result, error) {
	res := s.result()
	var last error
	for round := 1; round <= tries; round++ {
		res.Tries = round
		if round > 1 {
			if err := sleep(ctx, backoff(round-1)); err != nil {
				return res, err
			}
		}
		remote, up, err := s.pullOnce(ctx, &res)
		if err != nil {
			return res, err
		}
		if round > 1 && h.Check != nil && len(up) > 0 {
			// Another bl process of this clone may have pushed our
			// events already: then there is nothing left to push.
			if st, err := up.Fold(); err == nil && h.Check(st) == nil {
				res.Pushed, res.Commit = true, remote.String()
				return res, nil
			}
		}
		if h.Prepare != nil {
			if err := h.Prepare(ctx, round); errors.Is(err, ErrStop) {
				return res, nil
			} else if err != nil {
				return res, err
			}
		}
		t, err := s.treeForCommit(ctx)
		if err != nil {
			return res, err
		}
		if h.Check != nil {
			st, err := t.Fold()
			if err != nil {
				return res, err
			}
			if err := h.Check(st); errors.Is(err, ErrRetry) {
				last = err
				continue
			} else if err != nil {
				return res, err
			}
		}
		// The tree just checked is the tree committed: if another commit
		// moved the branch meanwhile, start a new round rather than
		// commit a backlog older than the branch's.
		checked := false
		head, committed, msg, err := s.commit(func() (ledger.Tree, error) {
			if checked {
				return nil, errRefMoved
			}
			checked = true
			return t, nil
		}, remote)
		if errors.Is(err, errRefMoved) {
			last = err
			continue
		}
		if err != nil {
			return res, err
		}
		res.Commit = hashString(head)
		res.Committed = res.Committed || committed
		if committed {
			res.Message = msg
		}
		if head == remote {
			res.Pushed = true // the remote has it all already
			return res, nil
		}
		if s.beforePush != nil {
			s.beforePush(round)
		}
		err = s.push(ctx, head, remote)
		if err == nil {
			res.Pushed = true
			if s.remoteName != "" {
				_ = s.g.setRef(s.trackingRef(), head)
			}
			return res, nil
		}
		if !rejected(err) {
			return res, &RemoteError{Remote: s.o.Remote, Op: "push", Err: err}
		}
		last = err
	}
	return res, &RemoteError{Remote: s.o.Remote, Op: "push", Err: fmt.Errorf("still rejected after %d tries (%v); others keep pushing, try again", tries, last)}
}

// pullOnce fetches the remote branch and applies its backlog. It returns
// the fetched commit (zero when the remote has no such branch) and the
// backlog files it holds.
func (s *Syncer) pullOnce(ctx context.Context, res *Result) (plumbing.Hash, ledger.Tree, error) {
	base := s.settingsBase()
	remote, err := s.fetch(ctx)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if remote.IsZero() {
		return remote, nil, nil
	}
	up, err := s.g.readBacklog(remote)
	if err != nil {
		return remote, nil, err
	}
	if len(up) == 0 {
		return remote, up, nil // the remote has no backlog yet: nothing to rebase onto
	}
	before, err := s.b.Tree(ctx)
	if err != nil {
		return remote, nil, err
	}
	applied := maps.Clone(up)
	if err := s.keepLocalSettings(before, applied, base); err != nil {
		return remote, nil, err
	}
	_, rr, err := s.b.ApplyUpstream(ctx, applied)
	if err != nil {
		return remote, nil, fmt.Errorf("apply %s: %w", s.remoteLabel(), err)
	}
	res.Pulled += newEvents(before, up)
	res.Rebased, res.Conflicts = rr.Local, rr.Conflicts
	return remote, up, nil
}

// settingsBase is the commit whose settings count as "not edited here":
// the remote as this clone last fetched it, else the branch.
func (s *Syncer) settingsBase() plumbing.Hash {
	if s.remoteName != "" {
		if h, err := s.g.refHash(s.trackingRef()); err == nil && !h.IsZero() {
			return h
		}
	}
	h, _ := s.g.refHash(s.branch)
	return h
}

// keepLocalSettings keeps config.json and .gitignore as they are in the
// backlog when they were edited since base (the remote as last fetched):
// an edit not pushed yet, committed or not, wins over the remote's
// version, which otherwise replaces ours as a pull should.
func (s *Syncer) keepLocalSettings(local, up ledger.Tree, base plumbing.Hash) error {
	settings := func(name string) bool { return name == ledger.ConfigFile || name == ledger.IgnoreFile }
	committed, err := s.g.readBacklogFiles(base, settings)
	if err != nil {
		return err
	}
	for _, name := range []string{ledger.ConfigFile, ledger.IgnoreFile} {
		if data, ok := local[name]; ok && !bytes.Equal(data, committed[name]) {
			up[name] = data
		}
	}
	return nil
}

// newEvents counts the events of up that t lacks.
func newEvents(t, up ledger.Tree) int {
	have, err := t.Events()
	if err != nil {
		return 0
	}
	theirs, err := up.Events()
	if err != nil {
		return 0
	}
	ids := make(map[string]bool, len(have))
	for _, e := range have {
		ids[e.ID] = true
	}
	n := 0
	for _, e := range theirs {
		if !ids[e.ID] {
			n++
		}
	}
	return n
}

func (s *Syncer) trackingRef() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(s.remoteName, s.branch.Short())
}

func (s *Syncer) auth() transport.AuthMethod {
	if !strings.HasPrefix(s.url, "http://") && !strings.HasPrefix(s.url, "https://") {
		return nil // ssh uses the agent; local paths need nothing
	}
	if pw := os.Getenv("BL_GIT_PASSWORD"); pw != "" {
		user := os.Getenv("BL_GIT_USERNAME")
		if user == "" {
			user = "git"
		}
		return &http.BasicAuth{Username: user, Password: pw}
	}
	return nil
}

// fetch brings the remote branch's objects in and returns its commit, or
// the zero hash when the remote has no such branch. It writes no ref but
// the remote-tracking one, and stores the objects loose: each appears in
// the repository atomically, so concurrent bl processes in one clone never
// read each other's half-written files.
func (s *Syncer) fetch(ctx context.Context) (h plumbing.Hash, err error) {
	fail := func(err error) (plumbing.Hash, error) {
		if ctx.Err() != nil {
			return plumbing.ZeroHash, ctx.Err()
		}
		return plumbing.ZeroHash, &RemoteError{Remote: s.o.Remote, Op: "fetch", Err: err}
	}
	ep, err := transport.NewEndpoint(s.url)
	if err != nil {
		return fail(err)
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return fail(err)
	}
	sess, err := cl.NewUploadPackSession(ep, s.auth())
	if err != nil {
		return fail(err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return fail(err)
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return fail(err)
	}
	ref, err := refs.Reference(s.branch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return fail(err)
	}
	h = ref.Hash()
	if s.g.repo.Storer.HasEncodedObject(h) != nil {
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		if ar.Capabilities.Supports(capability.NoProgress) {
			_ = req.Capabilities.Set(capability.NoProgress)
		}
		req.Wants = []plumbing.Hash{h}
		req.Haves = s.haves()
		r, err := sess.UploadPack(ctx, req)
		if err != nil && !errors.Is(err, transport.ErrEmptyUploadPackRequest) {
			return fail(err)
		}
		if r != nil {
			err = s.unpack(r, req.Capabilities)
			r.Close()
			if err != nil {
				return fail(err)
			}
		}
	}
	if s.remoteName != "" {
		_ = s.g.setRef(s.trackingRef(), h)
	}
	return h, nil
}

// haves are commits the remote likely has too, so it sends only what is
// new: the branch and its remote-tracking ref.
func (s *Syncer) haves() []plumbing.Hash {
	var out []plumbing.Hash
	names := []plumbing.ReferenceName{s.branch}
	if s.remoteName != "" {
		names = append(names, s.trackingRef())
	}
	for _, name := range names {
		if h, err := s.g.refHash(name); err == nil && !h.IsZero() && s.g.repo.Storer.HasEncodedObject(h) == nil && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// looseStorer hides the repository's packfile writer, so fetched objects
// are stored one by one, each with an atomic rename. Commits are held back
// and stored last, parents first: a process that finds a fetched commit
// can rely on its trees, blobs and ancestors being there too.
type looseStorer struct {
	storer.EncodedObjectStorer
	commits map[plumbing.Hash]plumbing.EncodedObject
	order   []plumbing.Hash
}

func (l *looseStorer) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if o.Type() != plumbing.CommitObject {
		return l.EncodedObjectStorer.SetEncodedObject(o)
	}
	h := o.Hash()
	if _, ok := l.commits[h]; !ok {
		l.commits[h] = o
		l.order = append(l.order, h)
	}
	return h, nil
}

func (l *looseStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := l.commits[h]; ok && (t == plumbing.AnyObject || t == plumbing.CommitObject) {
		return o, nil
	}
	return l.EncodedObjectStorer.EncodedObject(t, h)
}

func (l *looseStorer) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := l.commits[h]; ok {
		return nil
	}
	return l.EncodedObjectStorer.HasEncodedObject(h)
}

// flush stores the held-back commits, each after its parents.
func (l *looseStorer) flush() error {
	done := map[plumbing.Hash]bool{}
	var store func(h plumbing.Hash) error
	store = func(h plumbing.Hash) error {
		o, ok := l.commits[h]
		if !ok || done[h] {
			return nil
		}
		done[h] = true
		c, err := object.DecodeCommit(l.EncodedObjectStorer, o)
		if err != nil {
			return err
		}
		for _, p := range c.ParentHashes {
			if err := store(p); err != nil {
				return err
			}
		}
		_, err = l.EncodedObjectStorer.SetEncodedObject(o)
		return err
	}
	for _, h := range l.order {
		if err := store(h); err != nil {
			return err
		}
	}
	return nil
}

func (s *Syncer) unpack(r io.Reader, caps *capability.List) error {
	switch {
	case caps.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, r)
	case caps.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, r)
	}
	ls := &looseStorer{EncodedObjectStorer: s.g.repo.Storer, commits: map[plumbing.Hash]plumbing.EncodedObject{}}
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(r), ls)
	if err != nil {
		return err
	}
	if _, err := p.Parse(); err != nil {
		return err
	}
	return ls.flush()
}

// push sends head to the remote branch, which must still be at expected
// (the zero hash: must not exist). It checks the advertised value first
// and sends it as the old value of the update, so git-receive-pack
// applies it only if the branch did not move meanwhile. Never forced.
func (s *Syncer) push(ctx context.Context, head, expected plumbing.Hash) error {
	ep, err := transport.NewEndpoint(s.url)
	if err != nil {
		return err
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, s.auth())
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return err
	}
	cur := plumbing.ZeroHash
	if ar != nil {
		refs, err := ar.AllReferences()
		if err != nil {
			return err
		}
		if ref, err := refs.Reference(s.branch); err == nil {
			cur = ref.Hash()
		}
	}
	if cur == head {
		return nil
	}
	if cur != expected {
		return fmt.Errorf("stale info: %s is at %s, not %s as fetched", s.branch, short(cur), short(expected))
	}
	hashes, err := s.objectsToSend(head, expected)
	if err != nil {
		return err
	}
	caps := capability.NewList()
	if ar != nil {
		caps = ar.Capabilities
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	req.Commands = []*packp.Command{{Name: s.branch, Old: expected, New: head}}
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		e := packfile.NewEncoder(wr, s.g.repo.Storer, !caps.Supports(capability.OFSDelta))
		if _, err := e.Encode(hashes, 10); err != nil {
			done <- wr.CloseWithError(err)
			return
		}
		done <- wr.Close()
	}()
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = rd.Close()
		<-done
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	if rs != nil {
		return rs.Error()
	}
	return nil
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}

// objectsToSend lists the objects reachable from head that the remote,
// whose branch is at expected, may lack: the commits that are not
// ancestors of expected, and in their trees whatever differs from
// expected's tree. It may list more than needed, never less.
func (s *Syncer) objectsToSend(head, expected plumbing.Hash) ([]plumbing.Hash, error) {
	st := s.g.repo.Storer
	if expected.IsZero() || st.HasEncodedObject(expected) != nil {
		return revlist.Objects(st, []plumbing.Hash{head}, nil)
	}
	exp, err := object.GetCommit(st, expected)
	if err != nil {
		return nil, err
	}
	anc := &ancestry{st: st, known: map[plumbing.Hash]bool{expected: true}, queue: []*object.Commit{exp}}
	var commits []*object.Commit
	seen := map[plumbing.Hash]bool{}
	for stack := []plumbing.Hash{head}; len(stack) > 0; {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] || h == expected {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(st, h)
		if err != nil {
			return nil, err
		}
		if anc.has(c) {
			continue
		}
		commits = append(commits, c)
		stack = append(stack, c.ParentHashes...)
	}
	expTree, err := exp.Tree()
	if err != nil {
		return nil, err
	}
	out := map[plumbing.Hash]bool{}
	var list []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !out[h] {
			out[h] = true
			list = append(list, h)
		}
	}
	var walk func(t, e *object.Tree) error
	walk = func(t, e *object.Tree) error {
		if (e != nil && t.Hash == e.Hash) || out[t.Hash] {
			return nil
		}
		add(t.Hash)
		for _, entry := range t.Entries {
			var other *object.TreeEntry
			if e != nil {
				if oe, err := e.FindEntry(entry.Name); err == nil {
					other = oe
				}
			}
			if other != nil && other.Hash == entry.Hash {
				continue
			}
			switch entry.Mode {
			case filemode.Submodule:
			case filemode.Dir:
				sub, err := object.GetTree(st, entry.Hash)
				if err != nil {
					return err
				}
				var esub *object.Tree
				if other != nil && other.Mode == filemode.Dir {
					if esub, err = object.GetTree(st, other.Hash); err != nil {
						return err
					}
				}
				if err := walk(sub, esub); err != nil {
					return err
				}
			default:
				add(entry.Hash)
			}
		}
		return nil
	}
	for _, c := range commits {
		add(c.Hash)
		t, err := c.Tree()
		if err != nil {
			return nil, err
		}
		if err := walk(t, expTree); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// ancestry answers "is this commit an ancestor of the remote's commit?"
// by walking the remote commit's history newest first, only as far back
// as needed: a commit not found among ancestors up to a day older than
// itself is taken as new. Clock skew beyond that only means sending
// objects the remote has.
type ancestry struct {
	st    storer.EncodedObjectStorer
	known map[plumbing.Hash]bool
	queue []*object.Commit // newest first
}

func (a *ancestry) has(c *object.Commit) bool {
	cutoff := c.Committer.When.Add(-24 * time.Hour)
	for !a.known[c.Hash] && len(a.queue) > 0 && !a.queue[0].Committer.When.Before(cutoff) {
		top := a.queue[0]
		a.queue = a.queue[1:]
		for _, p := range top.ParentHashes {
			if a.known[p] {
				continue
			}
			a.known[p] = true
			pc, err := object.GetCommit(a.st, p)
			if err != nil {
				continue // not here (a shallow clone): nothing to walk
			}
			i, _ := slices.BinarySearchFunc(a.queue, pc, func(x, y *object.Commit) int {
				return y.Committer.When.Compare(x.Committer.When)
			})
			a.queue = slices.Insert(a.queue, i, pc)
		}
	}
	return a.known[c.Hash]
}

// commit commits the backlog tree t to the branch. With a remote commit
// it becomes a second parent (or the only one, when the branch has nothing
// the remote lacks). Outside the backlog the commit keeps the branch's
// files; when the remote changed files there too, only git can merge them
// and commit fails with ErrDiverged, leaving the branch as it was.
//
// read supplies the backlog tree; it is read again whenever another commit
// moved the branch meanwhile, so a commit never carries a backlog older
// than its parent's.
func (s *Syncer) commit(read func() (ledger.Tree, error), remote plumbing.Hash) (head plumbing.Hash, committed bool, msg string, err error) {
	for range 20 {
		// The branch as it was before the read: the commit's parent, and
		// the old value the ref update checks.
		local, err := s.g.refHash(s.branch)
		if err != nil {
			return head, false, "", err
		}
		t, err := read()
		if err != nil {
			return head, false, "", err
		}
		head, committed, msg, err = s.commitOnce(t, remote, local)
		if !errors.Is(err, errRefMoved) {
			return head, committed, msg, err
		}
	}
	return head, committed, msg, fmt.Errorf("%w: %s keeps moving", ErrGitLocked, s.branch)
}

func (s *Syncer) commitOnce(t ledger.Tree, remote, local plumbing.Hash) (plumbing.Hash, bool, string, error) {
	g := s.g
	checkedOut := false
	if cur, err := g.currentBranch(); err == nil && cur == s.branch {
		checkedOut = true
	}
	parents, base, err := s.parents(local, remote, checkedOut)
	if err != nil {
		return local, false, "", err
	}
	baseRoot, err := g.rootTree(base)
	if err != nil {
		return local, false, "", err
	}
	baseSub, err := g.subtree(baseRoot)
	if err != nil {
		return local, false, "", err
	}
	sub, blobs, err := g.backlogTree(baseSub, t)
	if err != nil {
		return local, false, "", err
	}
	root, err := g.splice(baseRoot, sub, true)
	if err != nil {
		return local, false, "", err
	}
	if len(parents) == 1 {
		if pt, err := g.rootTree(parents[0]); err == nil && pt != nil && pt.Hash == root {
			// Nothing new: at most a fast-forward to the remote.
			if parents[0] != local {
				if err := g.updateRef(s.branch, local, parents[0]); err != nil {
					return local, false, "", err
				}
				if checkedOut {
					_ = g.updateIndex(t, blobs)
				}
			}
			return parents[0], false, "", nil
		}
	}
	var first plumbing.Hash
	if len(parents) > 0 {
		first = parents[0]
	}
	prev, err := g.readBacklog(first)
	if err != nil {
		return local, false, "", err
	}
	msg := s.message(prev, t, len(parents) > 1)
	sig := s.signature()
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root, ParentHashes: parents}
	o := g.repo.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return local, false, "", err
	}
	h, err := g.store(o)
	if err != nil {
		return local, false, "", err
	}
	if err := g.updateRef(s.branch, local, h); err != nil {
		return local, false, "", err
	}
	if checkedOut {
		// The commit stands; a busy index only leaves git status showing
		// the backlog as modified until the next sync.
		_ = g.updateIndex(t, blobs)
	}
	return h, true, msg, nil
}

// parents picks the new commit's parents and the commit whose files
// outside the backlog it keeps.
func (s *Syncer) parents(local, remote plumbing.Hash, checkedOut bool) (parents []plumbing.Hash, base plumbing.Hash, err error) {
	g := s.g
	switch {
	case remote.IsZero() || remote == local:
		if local.IsZero() {
			return nil, local, nil
		}
		return []plumbing.Hash{local}, local, nil
	case local.IsZero():
		if checkedOut {
			if err := s.sameOutside(local, remote); err != nil {
				return nil, local, err
			}
		}
		return []plumbing.Hash{remote}, remote, nil
	}
	lc, err := g.commit(local)
	if err != nil {
		return nil, local, err
	}
	rc, err := g.commit(remote)
	if err != nil {
		return nil, local, err
	}
	if ok, err := rc.IsAncestor(lc); err != nil {
		return nil, local, err
	} else if ok {
		return []plumbing.Hash{local}, local, nil
	}
	if ok, err := lc.IsAncestor(rc); err != nil {
		return nil, local, err
	} else if ok {
		if checkedOut {
			if err := s.sameOutside(local, remote); err != nil {
				return nil, local, err
			}
		}
		return []plumbing.Hash{remote}, remote, nil
	}
	// Diverged: a merge. Outside the backlog one side must be unchanged.
	parents = []plumbing.Hash{local, remote}
	lt, _ := lc.Tree()
	rt, _ := rc.Tree()
	if same, err := g.sameOutside(lt, rt); err != nil || same {
		return parents, local, err
	}
	bases, err := lc.MergeBase(rc)
	if err != nil {
		return nil, local, err
	}
	if len(bases) == 1 {
		bt, err := bases[0].Tree()
		if err != nil {
			return nil, local, err
		}
		if same, err := g.sameOutside(bt, rt); err != nil || same {
			return parents, local, err // only we changed files outside the backlog
		}
		if same, err := g.sameOutside(bt, lt); err != nil {
			return nil, local, err
		} else if same && !checkedOut {
			return parents, remote, nil // only they did, and no worktree shows ours
		}
	}
	return nil, local, s.divergedError()
}

// sameOutside fails with ErrDiverged unless the two commits hold the same
// files outside the backlog: moving a checked-out branch to the remote's
// files would leave the worktree behind.
func (s *Syncer) sameOutside(local, remote plumbing.Hash) error {
	lt, err := s.g.rootTree(local)
	if err != nil {
		return err
	}
	rt, err := s.g.rootTree(remote)
	if err != nil {
		return err
	}
	same, err := s.g.sameOutside(lt, rt)
	if err != nil {
		return err
	}
	if !same {
		return s.divergedError()
	}
	return nil
}

func (s *Syncer) divergedError() error {
	return fmt.Errorf("%w: %s has commits that change files outside %s; bring them in with git first (git pull %s %s; bl's merge driver merges the backlog), then sync again, or exchange the backlog on a branch of its own (--branch)",
		ErrDiverged, s.remoteLabel(), s.g.prefix, s.o.Remote, s.branch.Short())
}

func (s *Syncer) signature() object.Signature {
	name, email, _ := s.identity()
	return object.Signature{Name: name, Email: email, When: s.o.Now()}
}

// identity is who sync commits as: the actor's name, with the email of
// GIT_AUTHOR_EMAIL or git's user.email. guessed is true when neither is
// set and the email was made up from the name.
func (s *Syncer) identity() (name, email string, guessed bool) {
	name = s.o.Actor
	if name == "" {
		name = "bl"
	}
	email = os.Getenv("GIT_AUTHOR_EMAIL")
	if email == "" {
		if cfg, err := s.g.repo.ConfigScoped(config.GlobalScope); err == nil {
			email = cfg.User.Email
		}
	}
	if email != "" {
		return name, email, false
	}
	if strings.Contains(name, "@") {
		return name, name, true
	}
	return name, name + "@localhost", true
}

// Identity is who sync commits as ("name <email>"), and whether the email
// was made up because git has no user.email.
func (s *Syncer) Identity() (string, bool) {
	name, email, guessed := s.identity()
	return name + " <" + email + ">", guessed
}

// message is the commit message: the caller's subject if any, and a
// summary of the events that are new since the branch's commit, by kind.
func (s *Syncer) message(prev, next ledger.Tree, merge bool) string {
	summary := Summarize(prev, next)
	if merge {
		summary += " (merged " + s.remoteLabel() + ")"
	}
	if s.o.Message != "" {
		return strings.TrimSpace(s.o.Message) + "\n\nbl: " + summary + "\n"
	}
	return "bl: " + summary + "\n"
}

var verbs = map[ledger.Op]string{
	ledger.OpCreate: "created", ledger.OpUpdate: "updated", ledger.OpClaim: "claimed",
	ledger.OpHeartbeat: "heartbeats", ledger.OpRelease: "released", ledger.OpReclaim: "reclaimed",
	ledger.OpComplete: "completed", ledger.OpBlock: "blocked", ledger.OpUnblock: "unblocked",
	ledger.OpReopen: "reopened", ledger.OpLink: "linked", ledger.OpUnlink: "unlinked",
}

// Summarize names, by kind, the cards of the events next holds that prev
// does not, for a reviewer reading git log: "A1 claimed by w1; A2 done;
// created A5 A6". Heartbeats are only counted, and a long list of cards
// ends in "+N more". Files the two trees share byte for byte are skipped,
// so the cost follows what changed, not all history.
func Summarize(prev, next ledger.Tree) string {
	changed := func(t, other ledger.Tree) ledger.Tree {
		out := ledger.Tree{}
		for name, data := range t {
			if name == ledger.SnapshotFile || name == ledger.ConfigFile || name == ledger.IgnoreFile {
				continue
			}
			if o, ok := other[name]; !ok || string(o) != string(data) {
				out[name] = data
			}
		}
		return out
	}
	old, _ := changed(prev, next).Events()
	neu, _ := changed(next, prev).Events()
	seen := make(map[string]bool, len(old))
	for _, e := range old {
		seen[e.ID] = true
	}
	byOp := map[ledger.Op][]*ledger.Event{}
	for _, e := range neu {
		if !seen[e.ID] {
			byOp[e.Op] = append(byOp[e.Op], e)
		}
	}
	var parts []string
	for _, op := range ledger.Ops {
		evs := byOp[op]
		switch {
		case len(evs) == 0:
		case op == ledger.OpHeartbeat:
			parts = append(parts, plural(len(evs), "heartbeat"))
		case op == ledger.OpClaim:
			// Grouped by owner, in the order of their first claim.
			var owners []string
			cards := map[string][]string{}
			for _, e := range evs {
				if _, ok := cards[e.Owner]; !ok {
					owners = append(owners, e.Owner)
				}
				cards[e.Owner] = append(cards[e.Owner], e.Card)
			}
			var claims []string
			for _, o := range owners {
				claims = append(claims, cardList(cards[o])+" claimed by "+o)
			}
			parts = append(parts, strings.Join(claims, ", "))
		case op == ledger.OpComplete:
			parts = append(parts, cardList(cardsOf(evs))+" done")
		case op == ledger.OpLink || op == ledger.OpUnlink:
			var pairs []string
			for _, e := range evs {
				pairs = append(pairs, e.Card+"→"+e.To)
			}
			parts = append(parts, verbs[op]+" "+cardList(pairs))
		default:
			parts = append(parts, verbs[op]+" "+cardList(cardsOf(evs)))
		}
	}
	if len(parts) == 0 {
		return "backlog files updated"
	}
	return strings.Join(parts, "; ")
}

func cardsOf(evs []*ledger.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Card
	}
	return out
}

// cardList names up to five distinct cards, then how many more.
func cardList(ids []string) string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	const shown = 5
	if len(out) > shown {
		return strings.Join(out[:shown], " ") + fmt.Sprintf(" +%d more", len(out)-shown)
	}
	return strings.Join(out, " ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// backoff is the pause before round n+1: exponential from 10ms, capped
// at 400ms (so a loser does not fall far behind the others), jittered so
// racing clones spread out.
func backoff(n int) time.Duration {
	d := 10 * time.Millisecond << min(n, 6)
	return jitter(min(d, 400*time.Millisecond))
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
