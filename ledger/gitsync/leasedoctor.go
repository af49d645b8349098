package gitsync

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/gitsync/result"
)

// LeaseReport is what LeaseDoctor found.
type LeaseReport = result.LeaseReport

// LeaseDoctor fetches the remote and vets every lease ref of this backlog
// afresh (the cache of lines read before is not used), listing what each
// sets aside (vetLease). With retire naming a card whose lease ref is bad,
// it replaces that ref's tip by a commit without parent that holds only
// the lines bl folds: a compare-and-swap against the tip it vetted, never
// a blind delete, so a lease write that landed meanwhile is never lost
// (the retirement then fails and can be run again).
func (s *Syncer) LeaseDoctor(ctx context.Context, retire string) (LeaseReport, error) {
	rep := LeaseReport{Remote: s.o.Remote, Prefix: s.leasePrefix, Bad: []LeaseRefusal{}}
	s.vetAll = true
	remote, err := s.fetch(ctx)
	if err != nil {
		return rep, err
	}
	if !remote.IsZero() {
		// The remote's identity names the lease refs (leaseNamespace).
		files, err := s.g.readBacklogFiles(remote, func(name string) bool { return name == ledger.ConfigFile })
		if err != nil {
			return rep, err
		}
		if p := s.leasePrefixFor(ledger.ConfigID(files[ledger.ConfigFile])); files[ledger.ConfigFile] != nil && p != s.leasePrefix {
			s.leasePrefix = p
			if _, err := s.fetch(ctx); err != nil {
				return rep, err
			}
		}
		rep.Prefix = s.leasePrefix
	}
	rep.Refs = len(s.lv.tips)
	var keep [][]byte
	found := false
	for _, card := range sortedCards(s.lv.tips) {
		tip := s.lv.tips[card]
		lines, bad, err := s.vetLease(s.leaseRef(card).String(), card, tip)
		if err != nil {
			bad = []LeaseRefusal{{Ref: s.leaseRef(card).String(), Card: card, Commit: tip.String(), Reason: err.Error()}}
		}
		rep.Bad = append(rep.Bad, bad...)
		if card == retire {
			keep, found = lines, len(bad) > 0
		}
	}
	if retire == "" {
		return rep, nil
	}
	if !found {
		return rep, ledger.Errorf(ledger.ErrInvalid, "the lease ref of %s on %s holds nothing bl sets aside: bl doctor --remote retires only a bad lease ref", retire, s.o.Remote)
	}
	old := s.lv.tips[retire]
	var msg strings.Builder
	msg.WriteString(leaseSubject + retire + "\n\n")
	for _, l := range keep {
		msg.Write(l)
	}
	tip, err := s.storeLeaseCommit(msg.String(), plumbing.ZeroHash)
	if err != nil {
		return rep, err
	}
	name := s.leaseRef(retire)
	err = s.receivePack(ctx, func(refs storer.ReferenceStorer) ([]*packp.Command, []plumbing.Hash, error) {
		cur := plumbing.ZeroHash
		if refs != nil {
			if r, err := refs.Reference(name); err == nil {
				cur = r.Hash()
			}
		}
		if cur != old {
			return nil, nil, errLeaseMoved
		}
		return []*packp.Command{{Name: name, Old: old, New: tip}}, []plumbing.Hash{tip, emptyTree}, nil
	})
	if errors.Is(err, errLeaseMoved) || (err != nil && rejected(err)) {
		return rep, ledger.Errorf(ledger.ErrConflict, "the lease ref of %s moved since it was vetted (a lease write landed): run bl doctor --remote again", retire)
	}
	if err != nil {
		return rep, &RemoteError{Remote: s.o.Remote, Op: "push", Err: err}
	}
	rep.Retired, rep.Tip = name.String(), tip.String()
	return rep, nil
}
