package wire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"
)

// This file holds the one rule for an event id met more than once (see
// "Git" in doc.go). A textual union of two versions of the backlog's
// files can hold an event twice: as the same line, kept once; or as the
// same event with two stamps, because bl sync re-stamps a local event it
// moves after the remote's history (Rebase) and the first stamp may
// already have been committed elsewhere. The later stamp wins: it is the
// copy the remote accepted, and re-stamping only ever moves a stamp later.
// Anything else under one id is damage.

// ErrSharedID: two different events carry one event id.
var ErrSharedID = errors.New("two events cannot share an id")

// SettleCopies returns the copy of an event that stands when a and b carry
// one id, and whether it is b. Copies that differ in anything but their
// stamp (at, clock and the line version these imply) are an error.
func SettleCopies(a, b *Event) (*Event, bool, error) {
	if !SameButStamp(a, b) {
		return nil, false, fmt.Errorf("event id %s is also used by a different event (at %s): %w",
			a.ID, a.At.Format(TimeLayout), ErrSharedID)
	}
	if LaterCopy(b, a) {
		return b, true, nil
	}
	return a, false, nil
}

// LaterCopy reports whether copy a of an event stands over copy b: the
// later stamp, then the later clock reading, so every reader picks the
// same copy whatever order it meets them in.
func LaterCopy(a, b *Event) bool {
	if c := a.At.Compare(b.At); c != 0 {
		return c > 0
	}
	return a.WriterClock().After(b.WriterClock())
}

// SameButStamp reports whether a and b are one event, stamped alike or not.
func SameButStamp(a, b *Event) bool {
	if a == b {
		return true
	}
	ca, cb := *a, *b
	ca.V, ca.At, ca.Clock = 0, time.Time{}, nil
	cb.V, cb.At, cb.Clock = 0, time.Time{}, nil
	la, err := EncodeLine(&ca)
	if err != nil {
		return false
	}
	lb, err := EncodeLine(&cb)
	return err == nil && bytes.Equal(la, lb)
}

// SettleEvents returns evs with each event id once, by SettleCopies, in
// (at, id) order. evs is not modified.
func SettleEvents(evs []*Event) ([]*Event, error) {
	out := make([]*Event, 0, len(evs))
	byID := make(map[string]int, len(evs))
	for _, e := range evs {
		i, dup := byID[e.ID]
		if !dup {
			byID[e.ID] = len(out)
			out = append(out, e)
			continue
		}
		win, _, err := SettleCopies(out[i], e)
		if err != nil {
			return nil, err
		}
		out[i] = win
	}
	slices.SortStableFunc(out, ByAtID)
	return out, nil
}
