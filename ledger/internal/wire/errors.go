package wire

import (
	"errors"
	"fmt"
)

// Errors returned by the ledger. Callers match them with errors.Is; the CLI
// maps each to an exit code.
var (
	// ErrNotFound: no card has the given id.
	ErrNotFound = errors.New("ledger: card not found")
	// ErrInvalid: the request itself is malformed (bad id, priority out of
	// range, missing title, self-link, ...). Nothing was written.
	ErrInvalid = errors.New("ledger: invalid input")
	// ErrConflict: the request is well formed but the card's state does not
	// allow it (invalid transition, duplicate id, cycle, claimed by another
	// owner).
	ErrConflict = errors.New("ledger: conflict")
	// ErrFenced: a heartbeat, release, complete or progress came from
	// someone who no longer holds the lease, or with a stale epoch. The
	// caller must stop working on the card.
	ErrFenced = errors.New("ledger: lease fenced")
	// ErrCorrupt: the ledger is damaged beyond a torn final line.
	ErrCorrupt = errors.New("ledger: corrupt backlog")
	// ErrVersion: the ledger was written by a newer format version.
	ErrVersion = errors.New("ledger: unsupported format version")
	// ErrNotInitialized: the directory holds no backlog.
	ErrNotInitialized = errors.New("ledger: no backlog here")

	// ErrNetworkFS: the backlog is on NFS, CIFS/SMB or AFS and the caller
	// did not allow it (Options.AllowNetworkFS).
	ErrNetworkFS = errors.New("ledger: backlog on a network filesystem")

	ErrFraming  = errors.New("bad line framing")
	ErrChecksum = errors.New("checksum mismatch")
)

// CorruptError locates damage in a ledger file that recovery must not guess
// about: a damaged line with good lines after it, or lines out of order.
type CorruptError struct {
	Path   string // file
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line's start
	Err    error  // what is wrong with it
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s line %d (byte offset %d): %v", e.Path, e.Line, e.Offset, e.Err)
}

// Unwrap lets errors.Is(err, ErrCorrupt) and the cause both match.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// Conflict is an event the fold kept but did not apply because its
// expectation did not hold when folded. At and Clock are the event's own
// stamp and writer's clock reading, as the event carries them. Owner is
// the owner who lost: the event's owner, for the lease operations that
// name one (claim, heartbeat, release, complete); Winner is who held the
// card instead, when such an event found it claimed by someone else. Owner,
// Winner and Clock are absent from conflicts recorded by a bl that
// predates them, and from those that have nothing to say.
type Conflict struct {
	Event  string `json:"event"`
	At     string `json:"at"`
	Clock  string `json:"clock,omitempty"`
	Op     Op     `json:"op"`
	Card   string `json:"card"`
	Actor  string `json:"actor"`
	Owner  string `json:"owner,omitempty"`
	Winner string `json:"winner,omitempty"`
	Reason string `json:"reason"`
}

// RuleError is a validation failure: a sentence for people, a sentinel for
// programs.
type RuleError struct {
	kind error
	msg  string
}

func (e *RuleError) Error() string { return e.msg }
func (e *RuleError) Unwrap() error { return e.kind }

// rule builds a validation failure of the given kind.
func Rule(kind error, format string, args ...any) error {
	return &RuleError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Errorf returns an error that matches kind (one of the sentinels above)
// with errors.Is but reads only as the formatted message, so a person sees
// what went wrong without the sentinel's own text in front of it.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// kindError is Errorf's error. Unlike a RuleError it is not a validation
// failure, so the fold never records it as a conflict.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// TornTail describes bytes at the end of the ledger that cannot be a
// finished append (an unterminated fragment that is not a valid line, NUL
// bytes), so were never acknowledged. See LineReader.judge.
type TornTail struct {
	Line   int    `json:"line"`   // 1-based line number where the tail starts
	Offset int64  `json:"offset"` // byte offset where the tail starts
	Bytes  int64  `json:"bytes"`  // how many bytes it spans
	Reason string `json:"reason"`
	// Growing: the file grew past the line while it was read, so it is
	// an append still being written, seen by a reader without the lock.
	// Nothing is set aside for it.
	Growing bool `json:"growing,omitempty"`
}

const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"
