package wire

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on input, enforced at write time and again by the fold.
const (
	MaxIDLen       = 64
	MaxTitleLen    = 500
	MaxBodyLen     = 64 << 10
	MaxPriority    = 1_000_000
	MaxCheckpoint  = 16 << 10
	MaxListEntries = 256
	// A note's text and a fail's reason are at most MaxNoteLen bytes, its
	// author at most MaxAuthorLen, and a card keeps its last MaxNotes
	// notes: notes add at most about 140 KiB to a card line.
	MaxNoteLen   = 4 << 10
	MaxNotes     = 32
	MaxAuthorLen = 256
)

// idChar reports whether c may appear in a card id; the first character
// must also be a letter or digit.
func idChar(c byte, first bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return !first && (c == '.' || c == '_' || c == '-')
}

func validIDChars(id string) bool {
	for i := 0; i < len(id); i++ {
		if !idChar(id[i], i == 0) {
			return false
		}
	}
	return true
}

// ValidID reports why id cannot name a card, or nil.
func ValidID(id string) error {
	switch {
	case id == "":
		return Rule(ErrInvalid, "card id is empty")
	case len(id) > MaxIDLen:
		return Rule(ErrInvalid, "card id %q is longer than %d characters", id, MaxIDLen)
	case !validIDChars(id):
		return Rule(ErrInvalid, "card id %q may use only letters, digits, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// ValidAssignee reports why name cannot be a card's assignee, or nil: at
// most MaxAuthorLen bytes, no control characters, no space around it (it
// is compared with claim owners byte for byte). "" unassigns.
func ValidAssignee(name string) error {
	switch {
	case len(name) > MaxAuthorLen:
		return Rule(ErrInvalid, "assignee is longer than %d bytes", MaxAuthorLen)
	case strings.TrimSpace(name) != name:
		return Rule(ErrInvalid, "assignee %q has space around it", name)
	case name == "-":
		return Rule(ErrInvalid, `assignee "-" names nobody: it unassigns (bl assign ID -)`)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return Rule(ErrInvalid, "assignee %q holds a control character", name)
		}
	}
	return nil
}

// ValidName reports why name cannot be an actor or a lease owner, or nil:
// human output would not show it as written (notShown), so a list
// would show a name --owner could not find, or one owner dressed as
// another. what names the input in the message (owner, actor).
func ValidName(what, name string) error { return notShown(what, name) }

// ValidNames is ValidName on the names a new event carries: its actor,
// its owner and a handoff's new owner. held is the card as it stands (nil
// for a new one): the owner of its lease passes, so a lease a teammate's
// older bl took can still be renewed, completed or released. The writer
// runs it on the event as built; the fold does not (lines written before
// it hold what they hold).
func ValidNames(e *Event, held *Card) error {
	if err := ValidName("actor", e.Actor); err != nil {
		return err
	}
	if held == nil || e.Owner != held.ClaimOwner {
		if err := ValidName("owner", e.Owner); err != nil {
			return err
		}
	}
	if e.Op == OpHandoff {
		return ValidName("owner", e.To)
	}
	return nil
}

// ValidPhaseLabels refuses a phase, a label or an assignee a new event
// sets that human output would not show as written (notShown): a
// filter (--phase, --label, --assignee) could not name what a list shows.
// held is the card as it stands (nil for a new one): what it already holds
// passes, so a label edit keeps the labels a teammate's older bl wrote. As
// ValidNames, the writer runs it and the fold does not.
func ValidPhaseLabels(f *Fields, held *Card) error {
	if f == nil {
		return nil
	}
	if f.Phase != nil && (held == nil || *f.Phase != held.Phase) {
		if err := notShown("phase", *f.Phase); err != nil {
			return err
		}
	}
	if f.Assignee != nil && (held == nil || *f.Assignee != held.Assignee) {
		if err := notShown("assignee", *f.Assignee); err != nil {
			return err
		}
	}
	if f.Labels != nil {
		for _, l := range *f.Labels {
			if held != nil && slices.Contains(held.Labels, l) {
				continue
			}
			if err := notShown("label", l); err != nil {
				return err
			}
		}
	}
	return nil
}

// notShown says why human output would not show s, the named text, as it
// is written (export.Printable keeps it), or nil: a control character, a
// bidirectional control (dropped) or whitespace but the space (shown as a
// space). This is the one rule for names, phases, labels and assignees.
func notShown(what, s string) error {
	prev := ' '
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if !Refused(prev, r, s[i:]) {
			prev = r
			continue
		}
		switch {
		case unicode.IsControl(r):
			return Rule(ErrInvalid, "%s %q holds a control character", what, s)
		case unicode.IsSpace(r):
			return Rule(ErrInvalid, "%s %q holds whitespace other than a space (%U), which a terminal shows as a space", what, s, r)
		case bidiControl(r):
			return Rule(ErrInvalid, "%s %q holds a bidirectional control (%U), which a terminal does not show", what, s, r)
		}
		return Rule(ErrInvalid, "%s %+q holds an invisible character (%U), which a terminal does not show", what, s, r) // %+q: escaped, as %q does not all of them
	}
	return nil
}

// Refused reports whether the name rule refuses r, after prev and before
// rest: a control character, whitespace but the space, or a Hidden one.
// export.Name shows each such character of a name as <U+XXXX>.
func Refused(prev, r rune, rest string) bool {
	return unicode.IsControl(r) || unicode.IsSpace(r) && r != ' ' || Hidden(prev, r, rest)
}

// Hidden reports whether r, after prev and before rest, is drawn as
// nothing: a bidirectional control, or an invisible character that does
// not join (joins). It is notShown's rule, shared with the human
// renderings (export.OneLine, export.Name), which show such a character
// as <U+XXXX> so that a name a teammate's older bl wrote cannot look like
// another.
func Hidden(prev, r rune, rest string) bool {
	return bidiControl(r) || invisible(r) && !joins(prev, r, rest)
}

// bidiControl reports whether r changes the direction of the text around
// it (U+061C, U+200E-F, U+202A-E, U+2066-9).
func bidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
}

// invisible reports whether r is one of Unicode's default ignorable code
// points, which a terminal draws as nothing: "alice\u200b" is shown as
// alice (zero-width spaces and joiners, U+FEFF, the soft hyphen, tag
// characters, Hangul fillers, variation selectors).
func invisible(r rune) bool {
	if r < 0xad {
		return false
	}
	if unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) {
		return true
	}
	return unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r) &&
		!(0xfff9 <= r && r <= 0xfffb) && !(0x13430 <= r && r <= 0x1343f)
}

// joins reports whether the invisible r, after prev and before rest, is
// part of what a terminal draws: a zero-width joiner or non-joiner
// between two characters beyond ASCII (an emoji sequence, a Persian
// word), a variation selector after one (U+2764 U+FE0F).
func joins(prev, r rune, rest string) bool {
	if prev < utf8.RuneSelf {
		return false
	}
	switch {
	case r == 0x200c, r == 0x200d:
		next, _ := utf8.DecodeRuneInString(rest)
		return next >= utf8.RuneSelf && next != utf8.RuneError
	case unicode.Is(unicode.Variation_Selector, r):
		return true
	}
	return false
}

// ValidUTF8 refuses an event carrying text that is not valid UTF-8. JSON
// stores each invalid byte as U+FFFD, so writing it would quietly record
// something other than what was asked for. The writer runs it on the event
// as built, before encoding; the fold needs no such rule, since decoding
// never yields invalid UTF-8.
func ValidUTF8(e *Event) error {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var f Fields
	if e.Fields != nil {
		f = *e.Fields
	}
	for _, t := range [...]struct{ name, s string }{
		{"actor", e.Actor}, {"card id", e.Card}, {"request id", e.RequestID}, {"owner", e.Owner},
		{"reason", e.Reason}, {"link target", e.To}, {"checkpoint", string(e.Checkpoint)},
		{"title", deref(f.Title)}, {"body", deref(f.Body)}, {"phase", deref(f.Phase)},
		{"parent", deref(f.Parent)}, {"idempotency key", f.IdempotencyKey}, {"assignee", deref(f.Assignee)},
	} {
		if !utf8.ValidString(t.s) {
			return invalidUTF8(e, t.name, t.s)
		}
	}
	for _, l := range [...]struct {
		name string
		list *[]string
	}{{"label", f.Labels}, {"acceptance criterion", f.Acceptance}, {"dependency", f.DependsOn}} {
		if l.list != nil {
			for _, s := range *l.list {
				if !utf8.ValidString(s) {
					return invalidUTF8(e, l.name, s)
				}
			}
		}
	}
	return nil
}

// invalidUTF8 says where s, the named text of e, stops being UTF-8.
func invalidUTF8(e *Event, name, s string) error {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	return Rule(ErrInvalid, "the %s of this %s is not valid UTF-8 (byte 0x%02x at offset %d); bl stores text as UTF-8", name, e.Op, s[i], i)
}

// ErrSnapshotField is the damage of a snapshot line whose frame holds but
// whose content no fold produces.
var ErrSnapshotField = errors.New("snapshot line holds what no fold writes")

// A snapshot is a cache of the events, and git brings it from anyone with
// push access: every line is checked, field by field, against what the
// fold can produce before anything in it is used. The rules are only those
// the fold guarantees for every card, so a snapshot bl wrote always
// passes; a line that does not is damage (the snapshot was edited), and bl
// doctor --repair rebuilds the snapshot from the archived events.

// validateCard reports why c, read from a snapshot, is no card the fold
// produces, or nil.
func validateCard(c *Card) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: card %.80q: %s", ErrSnapshotField, c.ID, fmt.Sprintf(format, args...))
	}
	if err := ValidID(c.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshotField, err)
	}
	if !knownStatus(c.Status) {
		return bad("status %.40q is not one of the statuses bl writes", c.Status)
	}
	if c.Priority > MaxPriority || c.Priority < -MaxPriority {
		return bad("priority %d is outside ±%d", c.Priority, MaxPriority)
	}
	if c.Version < 1 || c.ClaimEpoch < 0 || c.ClaimEpoch > c.Version || c.Attempts < 0 || int64(c.Attempts) > c.Version || c.MaxAttempts < 0 {
		return bad("version %d, claim_epoch %d, attempts %d, max_attempts %d: epochs and attempts count claims, each an event the version counts", c.Version, c.ClaimEpoch, c.Attempts, c.MaxAttempts)
	}
	if c.Progress != nil && (*c.Progress < 0 || *c.Progress > 100) {
		return bad("progress %d is outside 0-100", *c.Progress)
	}
	if c.Parent != "" && ValidID(c.Parent) != nil {
		return bad("parent %.80q is not a card id", c.Parent)
	}
	for _, d := range c.DependsOn {
		if ValidID(d) != nil {
			return bad("dependency %.80q is not a card id", d)
		}
	}
	if len(c.Notes) > MaxNotes {
		return bad("%d notes; a card keeps at most %d", len(c.Notes), MaxNotes)
	}
	for _, t := range [...]struct {
		name string
		t    *time.Time
	}{{"created_at", &c.CreatedAt}, {"updated_at", &c.UpdatedAt}, {"claimed_at", c.ClaimedAt},
		{"last_heartbeat_at", c.LastHeartbeatAt}, {"closed_at", c.ClosedAt}} {
		if t.t != nil && !StampInRange(*t.t) {
			return bad("%s %s is outside the stamps bl accepts", t.name, t.t.Format(time.RFC3339Nano))
		}
	}
	for _, n := range c.Notes {
		if !StampInRange(n.At) {
			return bad("a note stamped %s is outside the stamps bl accepts", n.At.Format(time.RFC3339Nano))
		}
	}
	return validateLease(c, bad)
}

// validateLease checks the lease fields against the status: a claimed card
// has an owner, an epoch, a claim time and a ttl of at most MaxTTL, and its
// lease ends exactly ttl after its last heartbeat, or its claim when it
// has had none (applyClaim, applyHeartbeat); a ready, blocked or done card
// has none of them (ClearLease). A status added later states its own rule
// here.
func validateLease(c *Card, bad func(string, ...any) error) error {
	switch c.Status {
	case StatusClaimed:
	case StatusReady, StatusBlocked, StatusDone:
		if c.ClaimOwner != "" || c.ClaimedAt != nil || c.ClaimTTLSeconds != 0 || c.LeaseExpiresAt != nil || c.LastHeartbeatAt != nil {
			return bad("status %s with lease fields (owner %.80q): a card holds a lease only while claimed", c.Status, c.ClaimOwner)
		}
		return nil
	default:
		return nil
	}
	switch {
	case c.ClaimOwner == "" || c.ClaimEpoch < 1 || c.ClaimedAt == nil || c.LeaseExpiresAt == nil:
		return bad("claimed without an owner, an epoch, claimed_at or lease_expires_at")
	case c.ClaimTTLSeconds < 1 || c.ClaimTTLSeconds > MaxTTLSeconds:
		return bad("claim_ttl_seconds %d is outside 1 to %d (MaxTTL)", c.ClaimTTLSeconds, MaxTTLSeconds)
	}
	from := *c.ClaimedAt
	if c.LastHeartbeatAt != nil {
		from = *c.LastHeartbeatAt
	}
	if want := from.Add(time.Duration(c.ClaimTTLSeconds) * time.Second); !c.LeaseExpiresAt.Equal(want) {
		return bad("lease_expires_at %s is not claim_ttl_seconds (%d) after the lease began or was last renewed (%s)",
			c.LeaseExpiresAt.Format(time.RFC3339Nano), c.ClaimTTLSeconds, from.Format(time.RFC3339Nano))
	}
	return nil
}

// validateReceipt reports why r, read from a snapshot, is no receipt the
// fold records, or nil.
func validateReceipt(r *Keyed) error {
	switch {
	case r.RequestID == "" || r.Event == "":
		return fmt.Errorf("%w: receipt without a request id or an event", ErrSnapshotField)
	case !knownOp(r.Op) || ValidID(r.Card) != nil:
		return fmt.Errorf("%w: receipt %.80q names op %.40q of card %.80q", ErrSnapshotField, r.RequestID, r.Op, r.Card)
	case !StampInRange(r.At):
		return fmt.Errorf("%w: receipt %.80q stamped %s, outside the stamps bl accepts", ErrSnapshotField, r.RequestID, r.At.Format(time.RFC3339Nano))
	case r.Epoch < 0 || r.Version < 1 || r.Epoch > r.Version:
		return fmt.Errorf("%w: receipt %.80q with epoch %d and version %d", ErrSnapshotField, r.RequestID, r.Epoch, r.Version)
	}
	return nil
}

// validateConflict reports why c, read from a snapshot, is no conflict the
// fold records, or nil. A conflict keeps what the refused event said, so
// only its event id, op and times are checked.
func validateConflict(c *Conflict) error {
	if c.Event == "" || !knownOp(c.Op) {
		return fmt.Errorf("%w: conflict of event %.80q with op %.40q", ErrSnapshotField, c.Event, c.Op)
	}
	for _, s := range [...]string{c.At, c.Clock} {
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !StampInRange(t) {
			return fmt.Errorf("%w: conflict of event %.80q stamped %.40q, not a stamp bl accepts", ErrSnapshotField, c.Event, s)
		}
	}
	if c.At == "" {
		return fmt.Errorf("%w: conflict of event %.80q has no stamp", ErrSnapshotField, c.Event)
	}
	return nil
}

// validateHeader reports why h, a snapshot's header, is no header bl
// writes, or nil.
func validateHeader(h *SnapshotHeader) error {
	switch {
	case h.Seq < 0 || h.Events < 0 || h.Cards < 0 || h.Receipts < 0 || h.Conflicts < 0 || h.TailBytes < 0:
		return fmt.Errorf("%w: header counts seq %d, events %d, cards %d, receipts %d, conflicts %d, tail_bytes %d", ErrSnapshotField, h.Seq, h.Events, h.Cards, h.Receipts, h.Conflicts, h.TailBytes)
	case (h.Events > 0 || !h.LastAt.IsZero()) && !StampInRange(h.LastAt):
		return fmt.Errorf("%w: header's newest event stamped %s, outside the stamps bl accepts", ErrSnapshotField, h.LastAt.Format(time.RFC3339Nano))
	}
	return nil
}
