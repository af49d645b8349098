package gitsync

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
)

// trackingRef is the remote-tracking ref fetch updates for the synced
// branch: refs/remotes/<remote>/<branch>.
func (s *Syncer) trackingRef() plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(s.remoteName, s.branch.Short())
}

// auth is what an https remote the user chose is given: BL_GIT_PASSWORD
// (with BL_GIT_USERNAME, else "git") as basic auth, when set. ssh uses the
// agent; local paths need nothing; plain http and remotes a tracked file
// named get nothing (trust.go).
func (s *Syncer) auth() transport.AuthMethod {
	if !s.authAllowed() {
		return nil
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
	// The lease refs' tips come along (leaseref.go), also when the remote
	// lacks the branch: they are the backlog's, whatever the branch.
	wants := s.leaseWants(refs)
	s.settleLeaseTips()
	ref, err := refs.Reference(s.branch)
	if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return fail(err)
	}
	if err == nil {
		h = ref.Hash()
		if s.g.repo.Storer.HasEncodedObject(h) != nil {
			wants = append(wants, h)
		}
	}
	if len(wants) > 0 {
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		if ar.Capabilities.Supports(capability.NoProgress) {
			_ = req.Capabilities.Set(capability.NoProgress)
		}
		req.Wants = wants
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
	if s.remoteName != "" && !h.IsZero() {
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
