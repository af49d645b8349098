package wire

import (
	"fmt"
	"hash/fnv"
	"slices"
)

// ErrIDCollision: a card id was created on two clones (two create events
// of one id) and bl cannot tell which of the card's events belong to
// which card, so it changed nothing (see RenameCard's callers). A conflict
// (exit 4).
var ErrIDCollision = fmt.Errorf("%w: card id created twice", ErrConflict)

// toIsCard reports whether an op's to names a card (a link's other end,
// the child a complete closes an epic with); a handoff's to is an owner.
func toIsCard(op Op) bool { return op == OpLink || op == OpUnlink || op == OpComplete }

// NamesCard reports whether e is about the card id or refers to it:
// its card, a link's or a complete's to, a create's or update's parent or
// depends_on. These are every field of an event that names a card.
func (e *Event) NamesCard(id string) bool {
	if e.Card == id || toIsCard(e.Op) && e.To == id {
		return true
	}
	if f := e.Fields; f != nil {
		return f.Parent != nil && *f.Parent == id || f.DependsOn != nil && slices.Contains(*f.DependsOn, id)
	}
	return false
}

// RenameCards returns a copy of e with every card id it names (see
// NamesCard) that ids maps replaced by the id it maps to, and false when
// e names none of them (e itself is returned). The event keeps its id:
// it is the same event, about the card under its new name.
func RenameCards(e *Event, ids map[string]string) (*Event, bool) {
	named := false
	for from := range ids {
		named = named || e.NamesCard(from)
	}
	if !named {
		return e, false
	}
	cp := *e
	if to, ok := ids[cp.Card]; ok {
		cp.Card = to
	}
	if to, ok := ids[cp.To]; ok && toIsCard(cp.Op) {
		cp.To = to
	}
	if e.Fields != nil {
		f := *e.Fields
		if f.Parent != nil {
			if to, ok := ids[*f.Parent]; ok {
				f.Parent = &to
			}
		}
		if f.DependsOn != nil {
			deps := slices.Clone(*f.DependsOn)
			for i, d := range deps {
				if to, ok := ids[d]; ok {
					deps[i] = to
				}
			}
			f.DependsOn = &deps
		}
		cp.Fields = &f
	}
	return &cp, true
}

// SameCards reports whether two copies of one event (one event id) name
// the same cards (see NamesCard). They differ only when one is a rename
// of the other: a rebase gave a card whose id another clone created a
// fresh id (RenameCards), and the other copy left the clone before it.
func SameCards(a, b *Event) bool {
	if a.Card != b.Card || (toIsCard(a.Op) || toIsCard(b.Op)) && a.To != b.To {
		return false
	}
	var ap, bp *string
	var ad, bd *[]string
	if a.Fields != nil {
		ap, ad = a.Fields.Parent, a.Fields.DependsOn
	}
	if b.Fields != nil {
		bp, bd = b.Fields.Parent, b.Fields.DependsOn
	}
	return (ap == nil) == (bp == nil) && (ap == nil || *ap == *bp) &&
		(ad == nil) == (bd == nil) && (ad == nil || slices.Equal(*ad, *bd))
}

// DerivedCardID is a generated card id (bl-xxxxxxxx: 40 bits in Crockford
// base32, as bl create makes) taken from seed rather than from a random
// source, so a rebase that renames a card picks the same id each time it
// is run on the same events.
func DerivedCardID(seed string) string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	h := fnv.New64a()
	h.Write([]byte(seed))
	v := h.Sum64() >> 24 // its top 40 bits
	id := []byte("bl-00000000")
	for i := len(id) - 1; i >= 3; i-- {
		id[i] = alphabet[v&31]
		v >>= 5
	}
	return string(id)
}
