package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// push sends head to the remote branch, which must still be at expected
// (the zero hash: must not exist). It checks the advertised value first
// and sends it as the old value of the update, so git-receive-pack
// applies it only if the branch did not move meanwhile. Never forced.
func (s *Syncer) push(ctx context.Context, head, expected plumbing.Hash) error {
	return s.receivePack(ctx, func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error) {
		cur := plumbing.ZeroHash
		if refs != nil {
			if ref, err := refs.Reference(s.branch); err == nil {
				cur = ref.Hash()
			}
		}
		if cur == head {
			return nil, nil, nil
		}
		if cur != expected {
			return nil, nil, fmt.Errorf("stale info: %s is at %s, not %s as fetched", s.branch, short(cur), short(expected))
		}
		hashes, err := s.objectsToSend(head, expected)
		if err != nil {
			return nil, nil, err
		}
		cmds := []*packp.Command{{Name: s.branch, Old: expected, New: head}}
		if mark := s.retiredMark(refs); !mark.IsZero() {
			cmds, hashes = append(cmds, &packp.Command{Name: s.retiredRef(), Old: plumbing.ZeroHash, New: mark}), append(hashes, mark)
		}
		return cmds, hashes, nil
	})
}

// receivePack runs one push: plan sees the remote's advertised refs (nil
// for an empty repository) and returns the updates to request, each with
// its expected old value, and the objects to send; no updates ends the
// push quietly. What the remote's hooks print comes back in the error of
// a refused push.
func (s *Syncer) receivePack(ctx context.Context, plan func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error)) error {
	return s.receivePackReport(ctx, plan, nil)
}

// receivePackReport is receivePack; when the remote reports on each
// update, report gets the updates it refused (ref → the remote's
// reason), so a push of several refs that are not one atomic update can
// tell which landed. The error is still the first refusal's.
func (s *Syncer) receivePackReport(ctx context.Context, plan func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error), report func(refused map[plumbing.ReferenceName]error)) error {
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
	var refs storer.ReferenceStorer
	caps := capability.NewList()
	if ar != nil {
		all, err := ar.AllReferences()
		if err != nil {
			return err
		}
		refs, caps = all, ar.Capabilities
	}
	s.atomicSeen = caps.Supports(capability.Atomic)
	cmds, hashes, err := plan(refs)
	if err != nil || len(cmds) == 0 {
		return err
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	var said bytes.Buffer
	if caps.Supports(capability.Sideband64k) {
		_ = req.Capabilities.Set(capability.Sideband64k)
		req.Progress = &said
	}
	req.Commands = cmds
	if s.atomicPush {
		if !caps.Supports(capability.Atomic) {
			return errNoAtomic
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	if hashes == nil {
		// Deletes only: no pack goes with them.
		rs, err := sess.ReceivePack(ctx, req)
		if err != nil {
			return remoteSaid(err, said.String())
		}
		if rs != nil {
			return remoteSaid(rs.Error(), said.String())
		}
		return nil
	}
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
	if rs != nil && report != nil && rs.UnpackStatus == "ok" {
		refused := map[plumbing.ReferenceName]error{}
		for _, c := range rs.CommandStatuses {
			if cerr := c.Error(); cerr != nil {
				refused[c.ReferenceName] = remoteSaid(cerr, said.String())
			}
		}
		report(refused)
	}
	if err != nil {
		_ = rd.Close()
		<-done
		return remoteSaid(err, said.String())
	}
	if err := <-done; err != nil {
		return err
	}
	if rs != nil {
		return remoteSaid(rs.Error(), said.String())
	}
	return nil
}

// remoteSaid adds what the remote printed (a hook's message) to err.
func remoteSaid(err error, said string) error {
	said = strings.TrimSpace(said)
	if err == nil || said == "" {
		return err
	}
	return fmt.Errorf("%w; the remote said: %s", err, strings.Join(strings.Fields(said), " "))
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
