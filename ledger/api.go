package ledger

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// CreateRequest describes a new card. Zero values mean "not set".
type CreateRequest struct {
	Mutation
	ID             string // generated when empty
	Title          string
	Body           string
	Phase          string
	Priority       int
	Labels         []string
	DependsOn      []string
	Parent         string
	Acceptance     []string
	MaxAttempts    int
	DeferUntil     time.Time
	IdempotencyKey string
	Paths          []string // globs of the files the work touches
	Assignee       string   // who the card is planned for
}

// Create adds a card. With an idempotency key that already made a card, it
// returns that card and created=false, appending nothing.
func (b *Backlog) Create(ctx context.Context, r CreateRequest) (card Card, created bool, err error) {
	if r.ID != "" {
		if err := ValidID(r.ID); err != nil {
			return Card{}, false, err
		}
	}
	if err := fold.CheckNewPaths(r.Paths); err != nil {
		return Card{}, false, err
	}
	var existing *Card
	fresh := "" // a generated id, kept while build runs again (resolve)
	cards, err := b.write(ctx, r.Mutation.names(r.ID, &r.Title), OpCreate, func(s *fold.State, _ time.Time) ([]*Event, error) {
		existing = nil
		if r.IdempotencyKey != "" {
			if c, ok := s.CardByKey(r.IdempotencyKey); ok {
				existing = &c
				return nil, nil
			}
		}
		f := &Fields{Title: &r.Title, IdempotencyKey: r.IdempotencyKey}
		setIf(&f.Body, r.Body)
		setIf(&f.Phase, r.Phase)
		setIf(&f.Parent, r.Parent)
		setIf(&f.Assignee, r.Assignee)
		if r.Priority != 0 {
			f.Priority = &r.Priority
		}
		if r.MaxAttempts != 0 {
			f.MaxAttempts = &r.MaxAttempts
		}
		if !r.DeferUntil.IsZero() {
			t := r.DeferUntil.UTC()
			f.DeferUntil = &t
		}
		setList(&f.Labels, r.Labels)
		setList(&f.DependsOn, r.DependsOn)
		setList(&f.Acceptance, r.Acceptance)
		setList(&f.Paths, r.Paths)
		id := r.ID
		if id == "" {
			// Check the fields first so an error does not name an id
			// that never existed.
			if err := s.CheckFields("the new card", f); err != nil {
				return nil, err
			}
			for fresh == "" || s.Find(fresh) != nil {
				fresh = NewCardID()
			}
			id = fresh
		}
		return []*Event{{Op: OpCreate, Card: id, Fields: f}}, nil
	})
	switch {
	case err != nil:
		return Card{}, false, err
	case existing != nil:
		return *existing, false, nil
	}
	// A replayed request id also lands here; its card already existed.
	return cards[0], cards[0].Version == 1, nil
}

// NewCardID returns a fresh random card id such as "bl-k3x9q2mf": 40 random
// bits, so clones creating cards independently do not collide in practice.
// From crypto/rand, as event ids are (wire.NewEventID says why).
func NewCardID() string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz" // Crockford base32
	var b [5]byte
	_, _ = rand.Read(b[:])
	v := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
	id := []byte("bl-00000000")
	for i := len(id) - 1; i >= 3; i-- {
		id[i] = alphabet[v&31]
		v >>= 5
	}
	return string(id)
}

func setIf(dst **string, v string) {
	if v != "" {
		*dst = &v
	}
}

func setList(dst **[]string, v []string) {
	if len(v) > 0 {
		cp := append([]string(nil), v...)
		*dst = &cp
	}
}

// UpdateRequest edits fields of a card; nil fields stay as they are.
type UpdateRequest struct {
	Mutation
	ID     string
	Fields Fields
	// AddLabels and RemoveLabels edit the labels the card holds when the
	// update is written, the others kept (Fields.Labels replaces them all).
	AddLabels, RemoveLabels []string
}

// Update edits a card's fields.
// An update that would change nothing appends nothing and returns the card.
func (b *Backlog) Update(ctx context.Context, r UpdateRequest) (Card, error) {
	if err := ValidID(r.ID); err != nil {
		return Card{}, err
	}
	edit := len(r.AddLabels) > 0 || len(r.RemoveLabels) > 0
	if edit && r.Fields.Labels != nil {
		return Card{}, wire.Rule(ErrInvalid, "labels of %s are replaced or edited, not both", r.ID)
	}
	if r.Fields.Paths != nil {
		if err := fold.CheckNewPaths(*r.Fields.Paths); err != nil {
			return Card{}, err
		}
	}
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), OpUpdate, func(s *fold.State, _ time.Time) ([]*Event, error) {
		f := r.Fields
		if edit {
			c := s.Find(r.ID)
			if c == nil {
				return nil, wire.Rule(ErrNotFound, "card %s not found", r.ID)
			}
			labels := slices.DeleteFunc(slices.Clone(c.Labels), func(l string) bool { return slices.Contains(r.RemoveLabels, l) })
			for _, l := range r.AddLabels {
				if !slices.Contains(labels, l) {
					labels = append(labels, l)
				}
			}
			f.Labels = &labels
		}
		if c := s.Find(r.ID); c != nil && f != (Fields{}) && f.IdempotencyKey == "" && !fold.FieldsChange(&f, c) {
			return nil, nil
		}
		return []*Event{{Op: OpUpdate, Card: r.ID, Fields: &f}}, nil
	})
	if err != nil || len(cards) > 0 {
		return firstCard(cards), err
	}
	return b.Get(r.ID)
}

func firstCard(cards []Card) Card {
	if len(cards) == 0 {
		return Card{}
	}
	return cards[0]
}

// ClaimRequest asks for a lease. With ID it claims that card or fails;
// without, it claims the best claimable card matching Phase and Label.
type ClaimRequest struct {
	Mutation
	Owner string
	TTL   time.Duration
	ID    string
	Phase string
	Label string
	// Without ID a claim passes over cards assigned to anyone but Owner
	// (they are planned for someone else). AnyAssignee takes them too;
	// Mine takes only the cards assigned to Owner. A claim that names
	// its card takes it whoever it is assigned to.
	AnyAssignee bool
	Mine        bool
	// Arbitrated: a claim arbiter decides the claim (it orders the card's
	// lease events), so the event names no card version to compare.
	Arbitrated bool
}

// Filter is what a claim without an id picks among.
func (r ClaimRequest) Filter() Filter {
	f := Filter{Phase: r.Phase, Label: r.Label}
	switch {
	case r.Mine:
		f.Assignee = r.Owner
	case !r.AnyAssignee:
		f.Claimer = r.Owner
	}
	return f
}

// DefaultTTL is the lease length when a claim names none.
const DefaultTTL = 15 * time.Minute

// Claim takes a lease: the card's epoch goes up by one and the card is
// returned with it. A nil card and nil error mean nothing was claimable.
func (b *Backlog) Claim(ctx context.Context, r ClaimRequest) (*Card, error) {
	ttl, err := r.leaseSeconds()
	if err != nil {
		return nil, err
	}
	cut := false // the overlaps ran past LockedPathCells: decide them unlocked, try again
	claim := func(s *fold.State, at time.Time) ([]*Event, error) {
		defer func() { _, cut = s.PathsStopped() }()
		var c *Card
		if r.ID != "" {
			cur := s.Find(r.ID)
			if cur == nil {
				return nil, wire.Rule(ErrNotFound, "card %s not found", r.ID)
			}
			if err := s.Selectable(cur, at, r.Owner); err != nil {
				return nil, err
			}
			if h := s.PathsHeldBy(cur, at); h != nil {
				return nil, fold.HeldError(cur, h)
			}
			c = cur
		} else if c = s.Pick(r.Filter(), at); c == nil {
			return nil, nil
		}
		expect := c.Version
		if r.Arbitrated {
			expect = 0
		}
		return []*Event{{Op: OpClaim, Card: c.ID, Owner: r.Owner, TTLSeconds: ttl, ExpectVersion: expect, Epoch: c.ClaimEpoch + 1}}, nil
	}
	cards, err := b.write(ctx, r.Mutation.names(r.ID, nil), OpClaim, claim)
	if cut && (errors.Is(err, ErrPathsHeld) || err == nil && len(cards) == 0) {
		if err := b.warmPaths(ctx, r); err != nil {
			return nil, err
		}
		cards, err = b.write(ctx, r.Mutation.names(r.ID, nil), OpClaim, claim)
	}
	if err != nil || len(cards) == 0 {
		return nil, err
	}
	return &cards[0], nil
}

// leaseSeconds is a claim's lease length in seconds, once it and the card
// id, if the claim names one, are valid (in that order).
func (r ClaimRequest) leaseSeconds() (int64, error) {
	ttl, err := ttlSeconds(r.TTL, DefaultTTL)
	if err != nil {
		return 0, err
	}
	if r.ID != "" {
		if err := ValidID(r.ID); err != nil {
			return 0, err
		}
	}
	return ttl, nil
}

func ttlSeconds(d, def time.Duration) (int64, error) {
	if d == 0 {
		d = def
	}
	if d < time.Second {
		return 0, wire.Rule(ErrInvalid, "ttl %s is shorter than 1s", d)
	}
	if d > wire.MaxTTL {
		return 0, wire.Rule(ErrInvalid, "ttl %s is longer than the longest lease, %s", d, wire.MaxTTL)
	}
	return int64(d.Round(time.Second) / time.Second), nil
}

// HeartbeatRequest renews a lease and optionally reports progress.
type HeartbeatRequest struct {
	Mutation
	ID         string
	Owner      string
	Epoch      int64         // the epoch printed by claim; 0 skips the epoch check
	TTL        time.Duration // new lease length; 0 keeps the current one
	Progress   *int          // 0-100
	Checkpoint json.RawMessage
	// At is when the agent heartbeated, for a heartbeat written later
	// (one a git remote's push carries along, gitsync): the lease runs
	// from then, not from the write. Zero, or not before the write: now.
	At time.Time
}

// Heartbeat extends the lease of its current owner. Anyone else, or a stale
// epoch, gets ErrFenced.
func (b *Backlog) Heartbeat(ctx context.Context, r HeartbeatRequest) (Card, error) {
	var ttl int64
	if r.TTL != 0 {
		var err error
		if ttl, err = ttlSeconds(r.TTL, 0); err != nil {
			return Card{}, err
		}
	}
	if r.Checkpoint != nil && !json.Valid(r.Checkpoint) {
		return Card{}, wire.Rule(ErrInvalid, "checkpoint is not valid JSON")
	}
	e := &Event{Op: OpHeartbeat, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch,
		TTLSeconds: ttl, Progress: r.Progress, Checkpoint: compactJSON(r.Checkpoint)}
	if !r.At.IsZero() {
		at := r.At
		e.Clock = &at
	}
	return b.single(ctx, r.Mutation, e)
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return raw
	}
	return out
}

// LeaseRequest names a lease holder acting on its card: release, complete
// and block carry it. Owner empty means an administrative action that is not
// fenced.
type LeaseRequest struct {
	Mutation
	ID     string
	Owner  string
	Epoch  int64
	Reason string // release reason, completion note or block reason
	// Commit and Branch record where the work lives (complete, submit).
	Commit, Branch string
}

// Release gives a claimed card back to the pool (or to blocked when its
// attempts are used up). Fenced on owner and epoch.
func (b *Backlog) Release(ctx context.Context, r LeaseRequest) (Card, error) {
	return b.single(ctx, r.Mutation, &Event{Op: OpRelease, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason})
}

// Complete marks a card done. With Owner set it is fenced like a heartbeat.
// With epics.auto_close, an epic whose last open child it was is completed
// after it (see rollUp).
func (b *Backlog) Complete(ctx context.Context, r LeaseRequest) (Card, error) {
	if err := ValidID(r.ID); err != nil {
		return Card{}, err
	}
	e := &Event{Op: OpComplete, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason, Commit: r.Commit, Branch: r.Branch}
	cards, err := b.completeRollingUp(ctx, r.Mutation.names(r.ID, nil), func(*fold.State, time.Time) ([]*Event, error) { return []*Event{e}, nil })
	if err != nil {
		return Card{}, err
	}
	return cards[0], nil
}

// Block parks a card with a reason, dropping any lease.
func (b *Backlog) Block(ctx context.Context, r LeaseRequest) (Card, error) {
	return b.single(ctx, r.Mutation, &Event{Op: OpBlock, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason})
}

// Fail gives a claimed card back as failed: the attempt counts toward
// max_attempts (blocked, with Reason, once they are used up), and otherwise
// the card waits out the retry backoff of config.json before it is
// claimable again. Fenced on owner and epoch.
func (b *Backlog) Fail(ctx context.Context, r LeaseRequest) (Card, error) {
	initial, maxSeconds, err := retrySeconds(b.cfg.RetryBackoff)
	if err != nil {
		return Card{}, err
	}
	return b.single(ctx, r.Mutation, &Event{Op: OpFail, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Reason: r.Reason,
		BackoffSeconds: initial, BackoffMaxSeconds: maxSeconds})
}

// NoteRequest adds a note to a card's case file. Anyone may; with Owner
// set, only the current lease holder (and, with Epoch, of that lease).
type NoteRequest struct {
	Mutation
	ID    string
	Text  string
	Owner string
	Epoch int64
}

// Note adds a note to a card.
func (b *Backlog) Note(ctx context.Context, r NoteRequest) (Card, error) {
	return b.single(ctx, r.Mutation, &Event{Op: OpNote, Card: r.ID, Owner: r.Owner, Epoch: r.Epoch, Text: r.Text})
}

// Unblock returns a blocked card to ready.
func (b *Backlog) Unblock(ctx context.Context, m Mutation, id string) (Card, error) {
	return b.single(ctx, m, &Event{Op: wire.OpUnblock, Card: id})
}

// Reopen returns a done card to ready.
func (b *Backlog) Reopen(ctx context.Context, m Mutation, id string) (Card, error) {
	return b.single(ctx, m, &Event{Op: wire.OpReopen, Card: id})
}

// Link makes from depend on to. A link that would close a cycle is refused
// with the cycle named.
func (b *Backlog) Link(ctx context.Context, m Mutation, from, to string) (Card, error) {
	if err := ValidID(to); err != nil {
		return Card{}, err
	}
	return b.single(ctx, m, &Event{Op: OpLink, Card: from, To: to})
}

// Unlink removes the dependency of from on to.
func (b *Backlog) Unlink(ctx context.Context, m Mutation, from, to string) (Card, error) {
	if err := ValidID(to); err != nil {
		return Card{}, err
	}
	return b.single(ctx, m, &Event{Op: OpUnlink, Card: from, To: to})
}

// ReclaimRequest returns leases to the pool: every expired lease, or with ID
// that one card's lease whether expired or not.
type ReclaimRequest struct {
	Mutation
	ID     string
	Reason string
}

// Reclaim returns the cards it put back (to ready, or to blocked when their
// attempts are used up).
func (b *Backlog) Reclaim(ctx context.Context, r ReclaimRequest) ([]Card, error) {
	if r.ID != "" {
		if err := ValidID(r.ID); err != nil {
			return nil, err
		}
	}
	// An expired lease counts as a failed attempt: its reclaim carries the
	// retry backoff, as a fail does.
	initial, maxSeconds, err := retrySeconds(b.cfg.RetryBackoff)
	if err != nil {
		return nil, err
	}
	return b.write(ctx, r.Mutation.names(r.ID, nil), OpReclaim, func(s *fold.State, at time.Time) ([]*Event, error) {
		if r.ID != "" {
			c := s.Find(r.ID)
			if c == nil {
				return nil, wire.Rule(ErrNotFound, "card %s not found", r.ID)
			}
			e := &Event{Op: OpReclaim, Card: c.ID, Epoch: c.ClaimEpoch, Force: true, Reason: r.Reason}
			if c.Expired(at) {
				e.BackoffSeconds, e.BackoffMaxSeconds = initial, maxSeconds
			}
			return []*Event{e}, nil
		}
		var evs []*Event
		for _, id := range s.Expired(at) {
			evs = append(evs, &Event{Op: OpReclaim, Card: id, Epoch: s.Find(id).ClaimEpoch, Reason: r.Reason,
				BackoffSeconds: initial, BackoffMaxSeconds: maxSeconds})
		}
		return evs, nil
	})
}

// single appends one event about one card and returns the card after it.
func (b *Backlog) single(ctx context.Context, m Mutation, e *Event) (Card, error) {
	if err := ValidID(e.Card); err != nil {
		return Card{}, err
	}
	cards, err := b.write(ctx, m.names(e.Card, nil), e.Op, func(*fold.State, time.Time) ([]*Event, error) { return []*Event{e}, nil })
	if err != nil {
		return Card{}, err
	}
	return cards[0], nil
}

// retrySeconds returns the backoff r in whole seconds, or an error naming the
// setting that does not parse.
func retrySeconds(r RetryBackoff) (initial, maxSeconds int64, err error) {
	parse := func(name, v string, def time.Duration) (int64, error) {
		if v == "" {
			return int64(def / time.Second), nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, Errorf(ErrInvalid, "%s: retry_backoff.%s %q is not a duration such as \"30s\" or \"1h\"", ConfigFile, name, v)
		}
		return int64((d + time.Second - 1) / time.Second), nil
	}
	if initial, err = parse("initial", r.Initial, DefaultRetryInitial); err != nil {
		return 0, 0, err
	}
	if maxSeconds, err = parse("max", r.Max, DefaultRetryMax); err != nil {
		return 0, 0, err
	}
	return initial, max(initial, maxSeconds), nil
}
