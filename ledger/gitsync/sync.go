package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync/result"
)

// Options configure a Syncer.
type Options struct {
	// Remote is a configured remote's name, or a URL or path. Empty for
	// local commits only.
	Remote string
	// RemoteTracked says Remote came from config.json, which the clone
	// received: then it may not be a local path (trust.go).
	RemoteTracked bool
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
type Result = result.Result

// Syncer commits a backlog to git and exchanges it with a remote.
type Syncer struct {
	b            *ledger.Backlog
	g            *Repo
	o            Options
	branch       plumbing.ReferenceName
	url          string // the remote's URL
	remoteName   string // a configured remote's name, for its tracking ref
	sendAuth     bool   // credentials may go to url (trust.go)
	triesSet     bool   // Options.Tries was given
	segs         segments
	lv           leaseView     // the remote's lease refs as last fetched
	lc           *leaseCache   // their lines by commit, read once (leasecache.go)
	leasePrefix  string        // this backlog's lease refs: LeaseRefPrefix, its namespace, "/"
	legacyPrefix string        // where an older bl put them, read only (legacyNamespace)
	round        int           // the round of the lease write in flight
	vetAll       bool          // fetch every lease ref's tip, cached or not (LeaseDoctor)
	atomicPush   bool          // the next receivePack is atomic (retire.go)
	noAtomic     bool          // the remote refused an atomic push: no guard, no retirement
	refetched    bool          // the remote's identity changed leasePrefix, and it was fetched again
	atomicSeen   bool          // the last push's remote advertised atomic pushes
	fastRetry    bool          // a push without a fetch found the branch moved: try the one push again after the fetch (leasefast.go)
	applied      plumbing.Hash // the remote commit the backlog last took in: rebased onto, or pushed (leasefast.go)

	// renamed maps the local cards this Syncer's pulls gave a fresh id,
	// old id to new (renamedError).
	renamed map[string]string

	beforePush      func(round int)              // tests: runs just before each push
	beforeLeasePush func(card string, round int) // tests: runs just before a lease ref push
	pick            func(n int) int              // tests: which of the n best cards a claim takes (mrand.N)
	onRequestWait   func()                       // tests: runs when another process holds the request id
	beforeFastPush  func() bool                  // tests: runs before a fast lease push (leasefast.go); true stops there
	afterFastPush   func() bool                  // tests: runs after a fast lease push landed; true stops there
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
	s.leasePrefix = s.leasePrefixFor(b.Config().ID)
	s.legacyPrefix = LeaseRefPrefix + legacyNamespace(s.branch, g.prefix) + "/"
	if o.Remote != "" {
		if err := s.resolveRemote(o.Remote, o.RemoteTracked); err != nil {
			return nil, err
		}
	}
	return s, nil
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
	head, committed, msg, err := s.commit(func() (backlogFiles, error) { return s.treeForCommit(ctx, nil) }, plumbing.ZeroHash)
	res.Commit, res.Committed, res.Message = hashString(head), committed, msg
	return res, err
}

// Pull fetches the remote's branch, rebases the backlog onto its backlog
// (ApplyUpstream) and commits the result with the remote's commit as a
// second parent.
func (s *Syncer) Pull(ctx context.Context) (Result, error) {
	res := s.result()
	res.Tries = 1
	remote, _, _, err := s.pullOnce(ctx, &res)
	if err != nil {
		return res, s.stopDiverged(ctx, &res, err)
	}
	head, committed, msg, err := s.commit(func() (backlogFiles, error) { return s.treeForCommit(ctx, nil) }, remote)
	res.Commit, res.Committed, res.Message = hashString(head), committed, msg
	return res, err
}

// treeForCommit runs the BeforeCommit hook, then reads the backlog's
// tracked files under its lock, the archive segments by blob hash
// (readFiles). check, when set, sees the state those files fold to.
func (s *Syncer) treeForCommit(ctx context.Context, check func(*ledger.State) error) (backlogFiles, error) {
	if s.o.BeforeCommit != nil {
		if err := s.o.BeforeCommit(ctx); err != nil {
			return backlogFiles{}, err
		}
	}
	return s.readFiles(ctx, check)
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
		remote, up, upLoad, err := s.pullOnce(ctx, &res)
		if err != nil {
			return res, s.stopDiverged(ctx, &res, err)
		}
		if round > 1 && h.Check != nil && len(up) > 0 {
			// Another bl process of this clone may have pushed our
			// events already: then there is nothing left to push.
			if st, err := up.FoldWith(upLoad); err == nil && h.Check(st) == nil {
				res.Pushed, res.Commit = true, remote.String()
				return res, nil
			}
		}
		if h.Prepare != nil {
			// A claim or lease call writes locally in Prepare; pullOnce
			// found out first that the commit can be made at all, so a
			// diverged branch leaves nothing behind that nobody was told of.
			if err := h.Prepare(ctx, round); errors.Is(err, ErrStop) {
				return res, nil
			} else if err != nil {
				return res, err
			}
		}
		// Check sees the state of exactly the files read, under the
		// backlog lock: the fold of what is committed below.
		var checked error
		var check func(*ledger.State) error
		if h.Check != nil {
			check = func(st *ledger.State) error { checked = h.Check(st); return nil }
		}
		f, err := s.treeForCommit(ctx, check)
		if err != nil {
			return res, err
		}
		if errors.Is(checked, ErrRetry) {
			last = checked
			continue
		} else if checked != nil {
			return res, checked
		}
		// The tree just checked is the tree committed: if another commit
		// moved the branch meanwhile, start a new round rather than
		// commit a backlog older than the branch's.
		read := false
		head, committed, msg, err := s.commit(func() (backlogFiles, error) {
			if read {
				return backlogFiles{}, errRefMoved
			}
			read = true
			return f, nil
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
// the fetched commit (zero when the remote has no such branch), the
// backlog files it holds, and how to read the archive segments they name
// unread: those the local backlog holds with the same blob, which are
// neither read nor decoded (ledger.Backlog.ApplyUpstreamUnread).
func (s *Syncer) pullOnce(ctx context.Context, res *Result) (plumbing.Hash, ledger.Tree, ledger.Loader, error) {
	return s.pullFrom(ctx, res, s.settingsBase())
}

// pullFrom is pullOnce with base, the commit whose settings count as not
// edited here, read before the fetch moved the remote-tracking ref.
func (s *Syncer) pullFrom(ctx context.Context, res *Result, base plumbing.Hash) (plumbing.Hash, ledger.Tree, ledger.Loader, error) {
	remote, err := s.fetch(ctx)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	if remote.IsZero() {
		// A branch the remote lacks (a feature branch not pushed yet)
		// still takes the backlog's lease refs in.
		return remote, nil, nil, s.pullLeases(ctx, res)
	}
	// Whether the remote's commit can be merged at all is a matter of
	// commits, not of the backlog: decide it before the backlog takes the
	// remote's files, so a sync that stops leaves them as they were.
	if err := s.mergeable(remote); err != nil {
		return remote, nil, nil, err
	}
	var segErr error
	shared := func(name string, blob plumbing.Hash) bool {
		h, _, ok, err := s.segmentBlob(name)
		if err != nil && segErr == nil {
			segErr = err
		}
		return ok && h == blob
	}
	up, hashes, err := s.g.readBacklogUnread(remote, ledger.Tracked, shared)
	s.saveSegments()
	if err == nil {
		err = segErr
	}
	if err != nil {
		return remote, nil, nil, err
	}
	if data, ok := up[ledger.ConfigFile]; ok && !s.refetched {
		if p := s.leasePrefixFor(ledger.ConfigID(data)); p != s.leasePrefix {
			// The remote's identity names the lease refs (leaseNamespace):
			// fetch again for the right ones.
			s.leasePrefix, s.refetched = p, true
			return s.pullFrom(ctx, res, base)
		}
	}
	if err := s.quarantine(remote, up); err != nil {
		return remote, nil, nil, err
	}
	load := s.blobLoader(hashes)
	if len(up) > 0 {
		if up, err = s.withLeaseLines(up, load); err != nil { // and the lease refs' events (leaseref.go)
			return remote, nil, nil, err
		}
	}
	if len(up) == 0 {
		return remote, up, load, nil // the remote has no backlog yet: nothing to rebase onto
	}
	settings, err := localSettings(s.b.Dir())
	if err != nil {
		return remote, nil, nil, err
	}
	applied := maps.Clone(up)
	if err := s.keepLocalSettings(settings, applied, base); err != nil {
		return remote, nil, nil, err
	}
	rr, err := s.b.ApplyUpstreamUnread(ctx, applied, load)
	if err != nil {
		return remote, nil, nil, fmt.Errorf("apply %s: %w", s.remoteLabel(), err)
	}
	res.Pulled += rr.Pulled
	res.Rebased, res.Conflicts = rr.Local, rr.Conflicts
	renamed := map[string]string{}
	for _, r := range rr.Renamed {
		res.Renamed = append(res.Renamed, result.Renamed(r))
		if s.renamed == nil {
			s.renamed = map[string]string{}
		}
		s.renamed[r.From], renamed[r.From] = r.To, r.To
	}
	_ = s.b.NoteRenamed(renamed) // an agent's stale lease writes under the old id (ledger.renamedFile)
	res.CreatedTwice = rr.Twice
	s.applied = remote
	return remote, up, load, nil
}

// pullLeases applies the lease lines this clone lacks when the remote
// has no such branch: onto the local branch's own backlog, as a pull
// applies them onto the remote's.
func (s *Syncer) pullLeases(ctx context.Context, res *Result) error {
	if len(s.lv.tips) == 0 && len(s.lv.legacy) == 0 {
		return nil
	}
	head, err := s.g.refHash(s.branch)
	if err != nil || head.IsZero() {
		return err
	}
	base := s.settingsBase()
	up, hashes, err := s.g.readBacklogUnread(head, ledger.Tracked, func(name string, blob plumbing.Hash) bool {
		h, _, ok, _ := s.segmentBlob(name)
		return ok && h == blob
	})
	if err != nil || len(up) == 0 {
		return err
	}
	load := s.blobLoader(hashes)
	if up, err = s.withLeaseLines(up, load); err != nil || s.lv.pending == 0 {
		return err
	}
	settings, err := localSettings(s.b.Dir())
	if err != nil {
		return err
	}
	if err := s.keepLocalSettings(settings, up, base); err != nil {
		return err
	}
	rr, err := s.b.ApplyUpstreamUnread(ctx, up, load)
	if err != nil {
		return fmt.Errorf("apply the lease refs of %s: %w", s.o.Remote, err)
	}
	res.Pulled += rr.Pulled
	return nil
}

// stopDiverged commits the backlog as it stands, onto the branch alone,
// when err says the branch and the remote diverged: the sync stops with
// the backlog committed, so the git pull its error names merges cleanly
// (git refuses to merge over uncommitted changes to the same files).
func (s *Syncer) stopDiverged(ctx context.Context, res *Result, err error) error {
	if !errors.Is(err, ErrDiverged) {
		return err
	}
	c, cerr := s.Commit(ctx)
	if cerr != nil {
		return fmt.Errorf("%w (and committing the backlog failed: %v)", err, cerr)
	}
	res.Commit, res.Committed, res.Message = c.Commit, c.Committed, c.Message
	return err
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
// version, which otherwise replaces ours as a pull should. A file that was
// never committed here and is what bl init wrote is not an edit.
func (s *Syncer) keepLocalSettings(local, up ledger.Tree, base plumbing.Hash) error {
	settings := func(name string) bool { return name == ledger.ConfigFile || name == ledger.IgnoreFile }
	committed, err := s.g.readBacklogFiles(base, settings)
	if err != nil {
		return err
	}
	for _, name := range []string{ledger.ConfigFile, ledger.IgnoreFile} {
		data, ok := local[name]
		if !ok || bytes.Equal(s.g.clean(name, data), committed[name]) {
			continue
		}
		if _, had := committed[name]; !had {
			// Never committed here: only what bl init wrote is not an edit.
			if fresh, _ := ledger.InitContent(name); bytes.Equal(data, fresh) || (name == ledger.ConfigFile && ledger.InitConfig(data)) {
				continue
			}
		}
		if remote, ok := up[name]; ok && name == ledger.ConfigFile {
			// An edit keeps the backlog's identity, which is the remote's.
			data = ledger.SetConfigID(data, ledger.ConfigID(remote))
		}
		up[name] = data
	}
	return nil
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

// localSettings reads this clone's config.json and .gitignore, which a
// pull keeps where the remote's differ: as Open reads config.json, without
// waiting on a FIFO and no more than ledger.MaxConfigBytes. A missing file
// is left out.
func localSettings(dir string) (ledger.Tree, error) {
	settings := ledger.Tree{}
	for _, name := range []string{ledger.ConfigFile, ledger.IgnoreFile} {
		data, err := fsutil.ReadRegularMax(filepath.Join(dir, name), ledger.MaxConfigBytes)
		if err == nil {
			settings[name] = data
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return settings, nil
}
