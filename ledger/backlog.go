package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// Options tune a Backlog (see store.Options). The zero value is ready to
// use.
type Options = store.Options

// DefaultSlowSync is the fsync time past which an append warns by
// default: an fsync takes milliseconds on a local disk, and a second
// means something is wrong with the disk or the machine (etcd warns past
// one second too).
const DefaultSlowSync = store.DefaultSlowSync

// DefaultLockTimeout is how long a writer waits for the lock by default.
const DefaultLockTimeout = store.DefaultLockTimeout

// OnAppended returns ctx carrying fn: each write made with it (or a
// context derived from it) gives fn its events once they are durable and
// folded, as Options.Appended does for every write of a handle, under the
// writers' lock. It is how one caller of a shared handle collects its own
// writes (a tool call's hooks) without seeing another caller's.
func OnAppended(ctx context.Context, fn func(events []*Event)) context.Context {
	return store.OnAppended(ctx, fn)
}

// Backlog is an open backlog directory. Its methods are safe for concurrent
// use; separate Backlog values on one directory, in one process or many,
// coordinate through the lock file. The files, and the state folded from
// them, are the store's (ledger/internal/store); a Backlog adds the rules
// of a write: replays, stages, epics and path limits.
type Backlog struct {
	st   *store.Store
	opts Options // as the store filled them in
	cfg  Config  // read once, at Open (or by the Reload that made this handle)
	gen  uint64  // the store's generation of cfg (see Reload)
}

// Mutation is what every write request carries.
type Mutation struct {
	Actor     string // who is writing; required
	RequestID string // makes the request idempotent when set

	// What a replay of RequestID must match, set by each request type
	// (see request.go).
	card  string
	title *string
}

// Open opens the backlog in dir (the directory holding ledger.jsonl) and
// folds its ledger. It takes no lock: a torn tail is left for the next
// writer, and only damage mid-file is an error.
func Open(dir string, opts Options) (*Backlog, error) {
	st, err := store.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &Backlog{st: st, opts: st.Options(), cfg: st.Config()}, nil
}

// Dir is the backlog directory.
func (b *Backlog) Dir() string { return b.st.Dir() }

// TornTail reports damaged bytes at the end of the ledger as of the last
// read; nil when the ledger ends cleanly.
func (b *Backlog) TornTail() *wire.TornTail { return b.st.TornTail() }

// Config returns the settings read from config.json when the backlog was
// opened, or by the Reload that returned b.
func (b *Backlog) Config() Config { return b.cfg }

// Reload is for a process that serves many requests on one handle (bl mcp,
// bl serve, bl run --loop): it returns the handle to make the next request
// on, with config.json's settings as the file holds them now, so that each
// request keeps the settings it started with whatever changes meanwhile.
// The file is read again only when its stat changed, and taken only when
// it passes the checks Open makes: a link out of the backlog, a FIFO or
// other special file, a file over MaxConfigBytes, one that does not decode
// or names a setting twice, and a file that is gone, keep the settings
// as they were, and the error says why, once per failure. The handle
// returned is b when the settings did not change, else one sharing b's
// files and state (closing either closes both).
func (b *Backlog) Reload() (*Backlog, error) {
	cfg, gen, err := b.st.ReloadConfig()
	if gen == b.gen {
		return b, err
	}
	return &Backlog{st: b.st, opts: b.opts, cfg: cfg, gen: gen}, err
}

// Warn passes msg to Options.Warn once per handle: for the parts of bl
// around the store (git sync) that find something a person should know.
func (b *Backlog) Warn(msg string) { b.st.Warn(msg) }

// Close releases the open ledger file. The lock is only ever held inside a
// call.
func (b *Backlog) Close() error { return b.st.Close() }

// Compact folds the ledger into snapshot.json and starts a fresh ledger,
// keeping the folded events in archive/<cursor>.jsonl so history stays
// readable (bl log). It holds the lock throughout. Its steps, and why a
// crash or a full disk at any of them loses nothing, are in the package
// documentation ("Snapshot and compaction").
func (b *Backlog) Compact(ctx context.Context) (CompactResult, error) { return b.st.Compact(ctx) }

// CompactThreshold is the ledger size at which a write compacts, or 0 when
// automatic compaction is off.
func (b *Backlog) CompactThreshold() int64 { return b.st.CompactThreshold() }

// View runs fn on an up-to-date state. fn must not keep the state. A
// snapshot line the state fails to read while fn runs is returned instead
// of fn's error: whatever fn found is void then (the line read as absent).
func (b *Backlog) View(fn func(s *State, now time.Time) error) error {
	return b.view(func(s *fold.State, now time.Time) error { return fn(&State{s}, now) })
}

// view is View for the API: fn gets the state itself, with the rules of
// selection config.json sets and no limit on path decisions but a signal.
func (b *Backlog) view(fn func(s *fold.State, now time.Time) error) error {
	return b.st.View(func(s *fold.State, now time.Time) error {
		b.policy(s)
		b.limitPaths(context.Background(), s, 0)
		err := fn(s, now)
		if ierr := pathsInterrupted(context.Background(), s); ierr != nil {
			return ierr
		}
		return err
	})
}

// write is the append path: lock, catch up (setting aside a torn tail),
// replay check, build, validate, one write, fsync, apply, unlock. build sees
// the current state and the time the events will carry; it returns the
// events to append, or none. The result holds the card each event touched,
// as it stands after the write, or for a replay the card the request touched.
func (b *Backlog) write(ctx context.Context, m Mutation, op Op, build func(s *fold.State, at time.Time) ([]*Event, error)) (cards []Card, err error) {
	if m.Actor == "" {
		return nil, wire.Rule(ErrInvalid, "an actor is required")
	}
	err = b.st.Locked(ctx, func(s *fold.State) error {
		if err := readRequest(s, m.RequestID); err != nil {
			return err
		}
		b.limitPaths(ctx, s, LockedPathCells)
		cards, err = b.writeLocked(ctx, s, m, op, resolved(interruptible(ctx, build)))
		return err
	})
	return cards, err
}

// readRequest reads what the replay check of a request id looks at: its
// receipt and the card it touched.
func readRequest(s *fold.State, rid string) error {
	if rid == "" {
		return nil
	}
	return s.Resolve(func() {
		if r, ok := s.Receipt(rid); ok {
			s.Find(r.Card)
		}
	})
}

// resolved runs build under resolve: it sees only cards in memory, and a
// snapshot line it needs that does not read is returned before it answers.
// So is a tail checkpoint line that did not read while build ran (the
// state's fault): build went on without that card, and nothing it decided
// is written.
func resolved(build func(s *fold.State, at time.Time) ([]*Event, error)) func(s *fold.State, at time.Time) ([]*Event, error) {
	return func(s *fold.State, at time.Time) (evs []*Event, err error) {
		if rerr := s.Resolve(func() { evs, err = build(s, at) }); rerr != nil {
			return nil, rerr
		}
		if ferr := s.TakeFault(); ferr != nil {
			return nil, ferr
		}
		return evs, err
	}
}

// writeLocked is write under the lock, on the state s: the replay check,
// the stamps, build, and each event checked as every reader will decode it.
func (b *Backlog) writeLocked(ctx context.Context, s *fold.State, m Mutation, op Op, build func(s *fold.State, at time.Time) ([]*Event, error)) ([]Card, error) {
	if m.RequestID != "" {
		if r, ok := s.Receipt(m.RequestID); ok {
			c, _ := s.Card(r.Card)
			if err := m.replayOf(op, r, c); err != nil {
				return nil, err
			}
			// A replayed claim answers with the lease it took; if that
			// lease has ended since, the caller must not work on the card.
			if r.Op == OpClaim && (c.Status != StatusClaimed || c.ClaimEpoch != r.Epoch) {
				return nil, wire.Rule(ErrFenced, "request %q claimed %s at epoch %d, but that lease has ended (the card is %s at epoch %d); claim again", m.RequestID, r.Card, r.Epoch, c.Status, c.ClaimEpoch)
			}
			return []Card{c}, nil
		}
	}
	now := b.opts.Clock().UTC()
	if !wire.StampInRange(now) {
		return nil, fmt.Errorf("this machine's clock reads %s; bl stamps events from %d-01-01 to %d-12-31 only: set the clock right", now.Format(time.RFC3339), wire.MinStamp.Year(), wire.MaxStamp.Year()-1)
	}
	at := now
	if last := s.Last(); !last.At.IsZero() && !at.After(last.At) {
		at = last.At.Add(time.Nanosecond)
	}
	// Decide by this clock, not by a stamp an earlier fast clock pushed
	// ahead: the events then carry the clock (see MaxClockSkew).
	clock, decide := b.st.StampClock(at, now), at
	if clock != nil {
		decide = *clock
	}
	b.policy(s)
	events, err := build(s, decide)
	if err != nil || len(events) == 0 {
		return nil, err
	}
	var buf []byte
	for i, e := range events {
		if err := b.renamedAway(s, e); err != nil {
			return nil, err
		}
		told := e.Clock // when the caller says the event was made (HeartbeatRequest.At)
		e.ID, e.At, e.Clock, e.Actor, e.RequestID = wire.NewEventID(), at.Add(time.Duration(i)), clock, m.Actor, m.RequestID
		if told != nil && told.Before(e.WriterClock()) && wire.StampInRange(*told) {
			t := told.UTC() // earlier than the write: the fold times it by then
			e.Clock = &t
		}
		var held *wire.Card // what the card holds passes (store.WrittenLineOn)
		if (e.Fields != nil || e.Owner != "") && e.Op != OpCreate {
			held = s.Find(e.Card)
		}
		line, e, err := store.WrittenLineOn(e, held)
		if err != nil {
			return nil, err
		}
		if err := s.Check(e); err != nil {
			return nil, err
		}
		events[i] = e
		buf = append(buf, line...)
	}
	if st := b.stageOf(ctx); st != nil {
		w := &Staged{Events: events, Lines: buf}
		if err := st.check(&State{s}, w); err != nil {
			return nil, err
		}
		st.stage(w)
		return nil, errStaged
	}
	return b.st.Append(ctx, events, buf)
}
