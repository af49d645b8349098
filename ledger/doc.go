// Package ledger is the storage and the rules of a bl backlog: an
// append-only log of events, a pure fold of those events into cards, and the
// append path that makes every acknowledged event durable.
//
// # The .backlog directory
//
// A backlog is one directory, usually .backlog at the root of a git
// repository's main worktree:
//
//	ledger.jsonl   the event log since the last compaction; the source of
//	               truth (tracked in git)
//	snapshot.json  the fold of every event before the ledger (tracked)
//	archive/       <cursor>.jsonl: the events each compaction folded,
//	               byte for byte, named after the newest of them, so
//	               history stays readable (tracked)
//	config.json    settings (tracked)
//	.gitignore     ignores the lock file and local caches (tracked)
//	.gitattributes tells git to merge the event files by keeping the lines
//	               of both sides (tracked; see Git)
//	lock           the writers' lock file; bl never deletes it (ignored)
//	ledger.jsonl.broken
//	               torn tails set aside by recovery, appended, never
//	               overwritten (ignored)
//	cache/snapshot.idx
//	               a derived index of snapshot.json; safe to delete
//	               (ignored; see "Snapshot index" below)
//	cache/tail.ckpt
//	               the state the ledger's first lines fold to over the
//	               snapshot, bound to this checkout's own files; safe to
//	               delete (ignored; see "Tail checkpoint" below)
//	cache/seen.json
//	               how much history this clone has seen: the number of
//	               events and the newest one's cursor, as JSON
//	               ({"events":120345,"cursor":"…"}); written by
//	               compaction, bl sync and bl doctor, never fsynced, so
//	               bl doctor can tell when a git revert or reset took
//	               events out of the files (ignored; see SeenFile)
//	cache/blobs.json
//	               bl sync's record of the git blob hash of each archive
//	               segment and of the snapshot, by name, size and
//	               modification time, so a sync round neither reads nor
//	               hashes a file it has seen;
//	               safe to delete (ignored; package gitsync)
//	hooks.json     commands and webhooks run on events (package hooks);
//	               local only: refused when git tracks it (ignored)
//	.staging/      a multi-file change being made (see Journal); gone
//	               when none is (ignored)
//
// # Line framing
//
// ledger.jsonl holds one event per line; snapshot.json and the archive
// segments use the same framing. A line is a JSON object in UTF-8 followed
// by a line end. bl writes '\n'; a reader accepts "\r\n" as well (a
// checkout with core.autocrlf=true, an editor), and a file's last line may
// lack its line end. The object's keys appear in a fixed order (v, id, at,
// actor, op, card, then the operation's fields) and the last key is always
// "crc":
//
//	{"v":1,"id":"9f2c51d0a4b7e361","at":"2026-11-22T01:50:00.000000001Z",...,"crc":"1a2b3c4d"}
//
// The crc is the CRC-32C (Castagnoli) of the line's bytes without its line
// end and with the `,"crc":"xxxxxxxx"` member removed, i.e. of the object as
// it was encoded before the checksum was added, written as eight lowercase
// hex digits. A line longer than 1 MiB is never written.
//
// Every framed file is read by one line reader (internal/wire/framing.go) whose one rule
// says what each line is:
//
//   - An event (or, in the snapshot, a valid snapshot line): the line is
//     complete and its checksum and content hold, whatever its line end:
//     '\n', "\r\n", or none for a last line that lost its newline.
//   - A torn tail: bytes that cannot be a finished append, with nothing
//     after them but more of the same. An append writes one whole line
//     with its newline in one write, so a crash leaves a prefix of it (an
//     unterminated final fragment that is not a valid line) or, where the
//     disk never got the data, NUL bytes (a line holding a NUL byte is
//     never an event).
//   - Damage, anything else: a complete line that fails its checksum or
//     holds no event (even the last line of the file), a blank line, a line
//     from a newer format (ErrVersion), a line over the limit, a line that
//     names one key twice in an object, a line stamped outside the
//     accepted range (see Stamps), and torn bytes with any other line
//     after them. It is reported as a
//     *CorruptError naming the file, line number and byte offset; nothing in
//     a damaged line is trusted.
//
// A key named twice ("op":"create","op":"claim") is damage in every framed
// file, whatever its spelling: keys compare as the JSON decoder matches them
// to fields, unescaped and regardless of case ("op", "o\u0070" and "OP" are
// one key), in every object of the line except inside a checkpoint, which
// is its writer's own JSON, kept as it is. The decoder would fold the last
// value while a person reading the diff sees the first, so neither is
// trusted. bl never writes such a line (its encoder writes each key once).
//
// Callers choose what to do with a torn tail, never their own rule (see
// Recovery). The snapshot index reads single snapshot lines by offset and
// checks each with the same frame check.
//
// # Events
//
// Every event has:
//
//	v       format version: the lowest that reads the line right. 1 for
//	        the ops and fields bl has always had; 2 for what a v1 reader
//	        would misread or take for damage: the fail and note ops, a
//	        writer's clock, a retry backoff; 3 for what a v2 reader would
//	        misread: the handoff, delete, restore and review ops (review,
//	        claim_review, approve, reject), a link or unlink with a type, a
//	        complete naming the child (to) whose completion closed an epic,
//	        and the fields commit, branch and paths (see Review and Paths);
//	        4 for a create or update that sets an assignee (see Assignee)
//	        or a source time, and a note with a source time (see Source
//	        times).
//	        This bl reads up to 4
//	        (FormatVersion). A line with a higher version was written by a
//	        newer bl and is refused (ErrVersion, "upgrade bl") rather than
//	        guessed at, and never set aside as a torn tail.
//	id      a random 64-bit event id in hex, unique across clones.
//	at      UTC time with nanoseconds. A writer stamps max(now, newest+1ns)
//	        and appends after every line, so a file bl alone wrote has
//	        (at, id) strictly increasing line by line. A file git merged
//	        may hold lines out of order and lines twice: readers settle
//	        both (see Git), neither is damage.
//	actor   who wrote it.
//	op      one of create, update, claim, heartbeat, release, reclaim,
//	        complete, block, unblock, reopen, link, unlink, note, fail,
//	        handoff, delete, restore, review, claim_review, approve, reject.
//	card    the card id the event is about.
//
// and, as the operation needs them: request_id (idempotent replays),
// expect_version and epoch (the lease compare-and-swap), owner, ttl_seconds,
// reason, to (the other end of a link, the new owner of a handoff, the
// last child of an epic a complete closes), type (a link's type other than
// blocks: supersedes, duplicates, discovered-from, related), progress,
// checkpoint, force,
// fields (the card fields a create or update sets), text (a note's text),
// backoff_seconds and backoff_max_seconds (the retry backoff a fail, or
// the reclaim of an expired lease, applies), and commit and branch (where
// a complete or review records the work).
//
// # Stamps
//
// bl accepts stamps from 2000-01-01T00:00:00Z up to, not including,
// 2201-01-01T00:00:00Z (MinStamp, MaxStamp): the years 2000 to 2200. An event
// whose at or clock lies outside them is damage on read (exit 6), named with
// its file, line and offset, whether a far-off clock or an edited line wrote
// it; bl doctor --repair moves such a line to ledger.jsonl.broken (from the
// ledger or an archive segment, every other event kept) and rebuilds the
// snapshot, and the backlog writes again. A writer whose own clock reads
// outside the range refuses to write (exit 1). A lease is at most MaxTTL
// (50 years): a claim or heartbeat with a longer ttl is refused at write
// (exit 2) and recorded as a conflict by the fold. Within these bounds every
// time the fold computes (a stamp plus a lease, plus a retry backoff of at
// most a century) encodes as RFC 3339, and every stamp's and lease end's
// Unix nanoseconds (a cursor, the snapshot index) fit an int64: no
// arithmetic on times or cursors overflows for a line that reads.
//
// An event may also carry clock, written right after at: the writer's clock
// reading (UTC, RFC 3339 with nanoseconds), present only when its stamp had
// to run more than MaxClockSkew (1s) ahead of that reading to come after
// the previous event, that is when an earlier event came from a clock ahead
// of the writer's:
//
//	{"v":2,"id":"…","at":"2099-01-01T00:00:00.000000001Z","clock":"2026-11-23T23:50:00.5Z","actor":…}
//
// Lines without it are byte for byte what they always were. A line with it
// is v2: a v1 reader would fold the event by its stamp and disagree about
// when a lease ends, so it refuses the line instead ("upgrade bl").
//
// # The fold
//
// State is the fold of the events in (at, id) order, each event id once. Folding is pure: no IO and no
// clock reads; the time an event happened is its writer's clock reading as
// the event carries it: clock when present, else at. Every time-based
// decision (a lease live or expired, defer_until passed) and every time the
// fold stores on a card (created_at, updated_at, claimed_at,
// lease_expires_at, last_heartbeat_at, closed_at) uses it; only the order of
// events uses (at, id). So a lease ends ttl after its claimer's clock said it
// began, give or take MaxClockSkew, whatever stamps came before it: one
// event from a fast clock does not stretch later leases, and a claim stamped
// after it does not see a live lease as expired. The writer decides by the
// same reading it records. A writer that finds the newest event stamped more
// than MaxClockSkew ahead of its clock warns once (Options.Warn), and bl
// doctor lists the events written by a clock ahead of its own
// (Report.FutureEvents). A clock that is itself ahead still times its own
// decisions by itself: the warning on every other machine is the signal.
//
// A card's encoded JSON is bounded so its snapshot line always fits what a
// reader accepts (1 MiB): after a create, update or link it is at most
// MaxCardBytes (1 MiB less 64 KiB, room kept for what leases add), and after
// any other event it must still fit the line. The writer refuses an event
// that would pass the bound (ErrInvalid, naming it) and the fold records a
// merged-in one as a conflict. Every event is validated
// against the state before it is applied, by the same code the writer ran
// before appending it. An event that does not validate (two claims of one card
// merged in from two clones, a heartbeat by an owner fenced out in the
// meantime) changes nothing and is kept in State.Conflicts. Because the
// fold takes events in (at, id) order whatever order the files hold them
// in, two clones holding the same events fold to the same state whatever
// order they learned them in.
//
// A claim carries expect_version (the card's version when the claimer looked)
// and epoch (the previous epoch plus one). A claim a claim arbiter decided
// carries expect_version 0: the arbiter ordered the card's lease events, and
// only its epoch is compared (the version also counts edits other clones
// may not have synced yet). Heartbeat, release and complete by
// an owner carry the owner and the epoch it holds, and are rejected once the
// card has been claimed again.
//
// A fail is a release by the owner that counts as a failed attempt: with
// the card's attempts used up (max_attempts) it goes to blocked, its reason
// in blocked_reason; otherwise to ready with defer_until set to at plus
// backoff_seconds·2^(attempts-1), at most backoff_max_seconds. The fold
// computes this from the event and the card alone, so the values config.json
// held when the event was written are the ones every clone applies. The
// reclaim of a lease that had expired at its at applies the same backoff. A
// note appends {text, author, at} to the card's notes (the owner, when it
// names one and is then fenced like a heartbeat, else the actor); the card
// keeps its last 32.
//
// Links. A link is on one card (the event's card) and points at another
// (to). Without a type it is a dependency (depends_on, "blocks": the card
// waits until to is done), readable by every version; with one it is kept
// in the card's links as {type, to}. supersedes and duplicates hold the card
// back while to is open, as blocks does; discovered-from and related hold
// nothing. A link that would close a cycle of holding links, of one type or
// mixed, is refused with the cycle named.
//
// Epics. The fold keeps on each card the number of cards naming it as
// parent that are neither done nor deleted nor themselves waiting on it by
// a holding link (open_children; such a child and its epic would wait for
// each other for good): every event that changes a card's parent, status,
// links or tombstone adjusts its parents' counts,
// so the count reads from the card itself. A snapshot of format v2 lacks
// it; a reader derives it from the snapshot's cards. Open children hold an
// epic back from claim, ready and list, unless config.json sets
// epics.wait_for_children to false: a rule of selection that the fold does
// not apply, so a claim folded from the ledger stands whatever the config
// says. With epics.auto_close, the writer that completes an epic's last open
// child then appends a complete of the epic, with the same actor and to
// naming the child, under the same hold of the lock; the fold applies it
// only if the child is done, no child of the epic is open and nobody holds
// the epic, so every clone agrees whatever was merged in between.
//
// A handoff carries the holder (owner) and its epoch, fenced like a
// heartbeat, and the new owner (to): the card is then held by to at epoch+1
// with a fresh lease of ttl_seconds (the lease's own ttl when 0); progress,
// checkpoint, notes and attempts are kept. A delete marks the card deleted
// (deleted_at, delete_reason) and drops its lease; no op but restore applies
// to a deleted card, nothing new may name it, and it leaves lists, the
// ready queue and exports. A restore clears the mark.
// A fail keeps {reason, owner, epoch, at} on the card as last_failure, and
// the reclaim of a lease that ran out keeps {"lease expired", its owner,
// epoch, the lease's end}. A complete records closed_by: its owner, else
// its actor (an approve, the reviewer); a reopen clears it.
//
// A card whose lease has run out with its attempts used up (max_attempts)
// can never be claimed again, and readers show it as it is from that
// moment, without an event: status blocked, the lease gone, a
// blocked_reason and a last_failure saying the lease expired (bl show,
// list, --json, the boards, stats, metrics; Card.view). The fold stores
// what the events said (claimed) until a reclaim stores the block; unblock
// takes such a card as it takes a blocked one. A stored state that depends
// only on the events is what keeps every clone's fold the same; the
// derived one depends only on the state and the reader's clock.
//
// # Review
//
// A card may pass through review between its work and done. A review
// event (bl complete --review) is fenced like a complete when it names an
// owner; it ends the lease, sets status review, and records the note
// (close_note), commit, branch and submitted_by (its owner, else its
// actor). A card in review does not satisfy depends_on, cannot be claimed
// or completed, and holds its paths. A claim_review leases it to a
// reviewer (owner, epoch+1, ttl, expect_version as a claim) without
// counting an attempt; heartbeat, note and release work on that lease as
// on a claim, a release giving the review back. An approve sets done,
// closed_at and closed_by (the reviewer); a reject, with its reason,
// sets ready and reject_reason, keeping attempts, branch and commit. Both
// carry the epoch the reviewer saw: a card that moved on since (not in
// review, another epoch) is refused as fenced; one naming an owner must
// come from the review lease's holder; one without an owner is refused
// while another reviewer's lease is live. A review event records who sent
// the card (submitted_by, and its actor as submitted_actor), and a verdict
// whose actor or owner is either of them is refused (ErrSelfReview, a
// conflict checked before the fence: the work stands) unless it carries
// force: true, which a writer sets when config.json allows it
// (review.allow_self, default false). The policy travels in the event,
// so every clone folds the same events alike; doctor lists the refused
// verdicts (Report.SelfApprovals) an older bl let through.
//
// # Paths
//
// A card's paths (set by create and update) are globs of the files its
// work touches. While it is claimed under a live lease, or in review, it
// holds them: a claim passes over a card whose paths overlap a held path
// of another card, and the claim of such a card by id is refused
// (ErrPathsHeld). This is a writer's rule of the claim, like the choice of
// card, and reads the state at the claim's time; the fold does not refuse
// a merged-in claim for it. The overlap of two globs is decided exactly,
// in time polynomial in their lengths, and never "no" when a path matches
// both (see PathsOverlap); a writer sets globs of at most 32 segments and
// 512 bytes, and a claim decides at most LockedPathCells under the lock.
//
// # Assignee
//
// A card's assignee (set by create and update, fields.assignee; "" clears
// it) names who a lead planned the card for. It is no lease and changes
// no status. A claim that names no card passes over the cards assigned to
// anyone but its owner (Filter.Claimer, ClaimRequest.Filter), unless it
// asks for any (AnyAssignee) — a writer's rule of the claim, like Paths:
// the fold never refuses a claim for it, and a claim that names its card
// takes it whoever it is assigned to. Names compare byte for byte.
//
// # Source times
//
// A card imported from another tracker keeps that tracker's times beside
// the ledger's stamps: fields.source_created_at, source_updated_at and
// source_closed_at (a zero time clears one), and a note's source_at, the
// comment's time. They decide nothing in the fold; a list sorted by
// created uses the source's time when a card has one (Card.Created).
// WriteBatch appends an import's events as one write, each checked with
// the ones before it applied: all of them or none. A batch never
// compacts; the import compacts once after its last (CompactDue).
//
// # Appending
//
// A writer takes the lock (package lock: a flock on the backlog directory,
// then on the lock file, each checked after it is granted against what is
// at its path, so git clean -X or a user deleting the lock file costs a
// retry, never two writers at once), reads whatever other writers
// appended since its last read, validates the new event against that state,
// encodes it as one complete line, writes it with a single write(2) on a file
// opened O_APPEND, fsyncs, releases the lock, and only then reports success.
// A write or fsync that fails is taken back before the lock is released:
// the ledger is cut back to where the append started, then replaced by a
// copy of itself (temp file, rename; only cut back when there is no room
// for the copy). A reader without the lock sees an append's line as soon
// as write(2) put it in the file, before its fsync: bl watch, bl log
// --follow and bl serve may show a line whose append then failed and was
// never acknowledged, as they may show one whose writer was killed after
// the write (a line that stays). The replacement keeps such a reader from
// going on at an offset the next append lands under: it reads the new file
// from its start, each event once.
//
// # Recovery
//
// A process killed mid-append can leave a torn tail (see Line framing).
// Readers without the lock stop quietly before it: it may be an append in
// progress. The next writer, which holds the lock and so knows no append is
// in progress, appends the torn bytes to ledger.jsonl.broken, fsyncs that,
// truncates the ledger to the last event and says so on stderr; bl doctor
// reports a torn tail and what ledger.jsonl.broken holds. A torn tail was
// never acknowledged, so nothing acknowledged is lost. bl doctor reads
// without the lock too, so what it finds wrong (a torn tail, a last line
// without its newline, files of two generations of a compaction, events
// missing from what the clone saw) it reads again once the lock was free
// for a moment, when whatever was in progress has finished; a finding
// that the second read repeats is reported. It never holds the lock for a
// read, which at 100k cards takes seconds.
//
// A last line that is an event but lost its newline is kept: readers fold
// it, and the next writer restores the newline (one write, fsync) before
// appending after it. A line end appearing right after such a line, because
// a writer restored it or an append finished while a reader looked,
// finishes that line; it is not read as a blank line.
//
// Damage cannot be a torn append: it is reported as a *CorruptError naming
// the file, line number and byte offset, and the backlog refuses to read or
// write until a person looks (bl doctor). bl doctor --repair fixes what
// loses no event (a torn tail, a lost final newline, blank lines, git
// conflict markers, a line stamped outside the accepted range, which it
// keeps in ledger.jsonl.broken, a stale snapshot, and a snapshot no history
// produces) and names the file to restore from git for the rest.
//
// Archive segments and the snapshot are written whole (temp file, fsync,
// rename), as are the files git stores, so in them a torn tail is damage
// too.
//
// # Snapshot and compaction
//
// snapshot.json uses the same line framing. Its first line is a header:
//
//	{"v":3,"seq":3,"events":120345,"last_at":"...","last_id":"...","cards":812,"receipts":40,"conflicts":2,"archives":"…","tail_bytes":5120,"tail_crc":"…","crc":"..."}
//
// The header's members, in this order:
//
//	v           format version, 3: cards may hold typed links, counts of
//	            open children and tombstones (2 added notes, and tail_bytes
//	            covering the whole ledger prefix the snapshot folded),
//	            which an older reader would misread, so it refuses the
//	            snapshot ("upgrade bl")
//	seq         the number of archive segments folded
//	events      the events folded, conflicts included
//	last_at, last_id
//	            the newest event folded: every ledger line the snapshot
//	            does not cover must sort after it
//	cards, receipts, conflicts
//	            how many lines of each kind follow; a count that does not
//	            match makes the snapshot stale (a union of two)
//	archives    16 hex digits: the first 8 bytes of the SHA-256 of the
//	            sorted segment names folded (archive/….jsonl), joined by
//	            "\n"; another set of segments in archive/ makes the
//	            snapshot stale
//	tail_bytes, tail_crc
//	            the ledger prefix the snapshot folded, as it was: its
//	            length and CRC-32C (8 hex digits); left out when 0. A
//	            ledger that still starts with exactly those bytes (a
//	            compaction cut short after step 2) is read after them
//
// Then one line per card sorted by id
// ({"card":{...}}), one per remembered request id sorted by id
// ({"receipt":{...}}, kept for ReceiptRetention after their event) and one
// per recorded conflict in fold order ({"conflict":{...}}). The same state
// always gives the same bytes, and a card's line changes only when the card
// does, so diffs stay small.
//
// A conflict line holds the refused event's id, its own stamp (at) and,
// when the event carries one, its writer's clock reading (clock), the op,
// card and actor, the owner who lost (owner: the event's owner, for the
// lease operations that name one), the owner who held the card instead
// (winner, when such an event found it claimed by someone else) and the
// reason:
//
//	{"conflict":{"event":"…","at":"…","op":"claim","card":"A1","actor":"host2","owner":"w2","winner":"w1","reason":"…"},"crc":"…"}
//
// clock, owner and winner are left out when empty; a snapshot written
// before they existed reads as conflicts without them, and a bl that
// predates them reads them as before, ignoring the members it does not
// know (its fast decoder declines the line and the JSON decoder skips
// them).
//
// A snapshot is a cache of the events, and git brings it from anyone with
// push access, so nothing in it is trusted before it is checked. Every line
// is validated on read, field by field, against what the fold can produce
// (validateCard): a known status; a valid card id, parent and dependencies;
// 1 <= version, 0 <= claim_epoch <= version, 0 <= attempts <= version,
// max_attempts >= 0; priority within ±MaxPriority, progress 0-100, at most
// MaxNotes notes; every event time (created_at, updated_at, claimed_at,
// last_heartbeat_at, closed_at, a note's at) within the accepted stamps. A
// claimed card has an owner, an epoch of at least 1, claimed_at and a ttl
// of 1s to MaxTTL, and its lease_expires_at is exactly claim_ttl_seconds
// after last_heartbeat_at, or claimed_at when it has none; any other card
// has no lease field. Receipts name a known op, a valid card, a stamp in
// range and 0 <= epoch <= version; conflicts an event id, a known op and
// stamps in range; the header non-negative counts and a newest stamp in
// range. A line that fails is damage (exit 6), an edited snapshot. bl
// doctor goes further: it folds the archive segments again (streaming them)
// and compares the fold with the snapshot line by line, so a snapshot edited
// consistently (a card claimed with no claim behind it) is reported as
// damage ("forged", naming the cards and fields that differ). For both,
// when the archives hold every event the snapshot counts, bl doctor
// --repair rebuilds the snapshot from them.
//
// Loading is the snapshot plus the ledger, whose lines must all come after
// the snapshot's (last_at, last_id); a ledger line that does not means the
// files disagree (see below).
//
// Compaction holds the lock and takes three atomic steps, each a temp file
// in the same directory, fsync, rename, fsync of the directory:
//
//  1. archive/<cursor of its newest event>.jsonl gets the ledger's lines
//     after the prefix the snapshot already covers, as they are;
//  2. snapshot.json gets the fold, with the new seq; its tail_bytes and
//     tail_crc name the ledger prefix it folded (the whole ledger as it
//     was);
//  3. ledger.jsonl is replaced by an empty file; readers holding the old
//     file notice the replacement and reload.
//
// Writers wait for the lock meanwhile; readers keep reading. A ledger a
// git union merge left out of order goes into its segment
// sorted, each event once; a crash before step 2 then leaves a segment
// that is not byte for byte the ledger, which reads as stale (below)
// rather than as a leftover, and loses nothing either.
//
// A crash or a failure (a full disk) at any step leaves a backlog that
// reads and writes as before. Before step 2 the old snapshot and the full
// ledger stand; the new segment is not named by the snapshot's archives
// fingerprint, and because its bytes are exactly the ledger's after the
// covered prefix a load recognises it as a leftover and ignores it (every
// event in it is still in the ledger). A compaction that fails removes its
// segment at once; the next compaction removes one a crash left, and any
// temp files. Between 2 and 3 the ledger still starts with the prefix the
// snapshot names; a load skips exactly those bytes. Readers that do not
// hold the lock open the snapshot, then the ledger, then check the
// snapshot was not replaced meanwhile (it is renamed before the ledger),
// and start over if it was.
//
// Files that disagree otherwise (a git merge brought in archive segments,
// ledger lines that sort before the snapshot, or a union of two snapshots)
// have a normal form: every event once, the archived ones in archive
// segments, the snapshot their fold. A reader never writes to answer: it
// folds the normal form in memory. A writer, under the lock, brings the
// files to it the way a compaction does, through a journal (.staging/):
// the ledger's events that no segment holds go, sorted and each once, into
// a new segment named after the newest of them, a segment git merged out
// of order is written back sorted (the same events), the snapshot becomes
// the fold of all segments, and the ledger is emptied. A writer that cannot
// write (a full disk) goes on from the normal form in memory.
//
// # Journal
//
// A change to several files at once (normalizing, applying a remote's
// backlog in bl sync) is journaled so a crash leaves the old backlog or the
// new one. Under the lock, the writer puts every file that changes into
// .staging/ under its own name (each a temp file, fsync, rename), then
// writes .staging/MANIFEST, JSON {"write":[names],"remove":[names]},
// archives first, then other files, the snapshot, the ledger. From the
// moment MANIFEST is renamed into place the change is decided: the files
// are copied into the backlog in that order (each atomically) and the
// removed ones deleted, the directory fsynced and .staging/ dropped. Any
// writer or opener that finds a MANIFEST finishes the change first (doing
// it twice is harmless); one that finds .staging/ without MANIFEST drops
// it, and the old backlog stands. A reader that cannot finish it (a full
// disk, a read-only directory) reads the files as they are, which fold, in
// their normal form, to the same state.
//
// # Git
//
// Every file git tracks under .backlog/ is either a grow-only set of event
// lines or a file bl derives from them, so any textual union of two
// versions is a valid backlog that folds to the same state as bl's own
// merge:
//
//	ledger.jsonl     a set of event lines: bl only appends to it, and a
//	                 compaction empties it after moving its lines into a
//	                 new archive segment
//	archive/*.jsonl  sets of event lines, named by their newest event, never
//	                 changed once written (normalizing writes a merged one
//	                 back sorted: the same set)
//	snapshot.json    derived: the fold of the archive segments; committed
//	                 for history, rebuilt by the next writer when it does
//	                 not match them
//	*.md             derived: the board sync.board names, regenerated by
//	                 bl sync
//	config.json, .gitignore, .gitattributes
//	                 text, merged by git as any other file
//
// bl init writes .backlog/.gitattributes, tracked with the backlog, so
// every clone merges alike with no setup, bl installed or not:
//
//	ledger.jsonl merge=union -text
//	archive/*.jsonl merge=union -text
//	snapshot.json merge=union -text
//	*.md merge=union -text
//
// merge=union is git's built-in driver: where both sides changed a file it
// keeps the lines of both, never conflict markers. -text keeps the bytes
// git stores in every checkout (core.autocrlf leaves them alone); a reader
// accepts "\r\n" anyway. Nothing about merging depends on .git/config.
// bl merge-driver, which writes the union in (at, id) order, is an optional
// accelerator a clone may configure for itself in .git/info/attributes
// (bl help merge-driver); its output and git's union fold alike. bl warns
// (once per command, on stderr) when a backlog inside a git repository has
// no .backlog/.gitattributes; bl init adds it, and removes the lines an
// older bl init put in the repository's root .gitattributes.
//
// Readers settle what a textual union leaves:
//
//   - Order and duplicates. The events of a file are taken in (at, id)
//     order, an event id once. A ledger whose lines are not strictly
//     increasing is read whole, sorted and deduplicated in memory (the
//     ledger is the tail since the last compaction, so this costs what
//     reading it costs); an archive segment likewise (bl log checks each
//     segment's order in a first pass that reads only at and id). A
//     ledger in order that repeats an event id is read the same way (the
//     reader keeps a hash of each id it folds from the ledger).
//   - Two stamps of one event. bl sync re-stamps a local event it moves
//     after the remote's history (ApplyUpstream, docs/SYNC.md), keeping its id; if the
//     first stamp was already committed (bl sync without a push, a plain
//     git commit) and git brings it back, a union holds both. Two lines
//     with one event id that differ only in at, clock and the v those
//     imply are one event, and the later stamp counts (at, then clock):
//     in the fold, in bl log, in compaction and in bl doctor (which counts
//     them as restamped_lines, not damage). The rule is the same whichever
//     copy a reader meets first, and re-stamping only moves a stamp later,
//     so every union settles to what bl sync settled. Normalization
//     takes an outranked copy out of its segment, so segments a snapshot
//     vouches for hold each event once and bl log checks the ledger's ids
//     alone against them; with segments a merge brought in, it checks
//     every id (a first pass over the lines' keys). Two lines with one
//     event id that differ in anything else are damage.
//   - One card id created twice. Two clones may each create a card with
//     one id before either syncs (bl create --id A4 on both, or a
//     generated id drawn twice). bl sync keeps the remote's card under
//     the id and, before pushing, gives the local card a fresh generated
//     id (bl-, derived from its create's event id, so a retried round
//     picks the same): every local, not yet pushed event that names it
//     (its card, a link's or a complete's to, a create's or update's
//     parent and depends_on: Event.NamesCard) is rewritten to the new id,
//     keeping its event id, and sync says so (stderr, and renamed in
//     --json). Two creates with one idempotency key are one request made
//     twice (bl import of one source on two clones): one card, kept once
//     as before, neither renamed nor named by doctor. It refuses instead (ErrIDCollision, exit 4, nothing
//     changed) when part of the card's history left this clone under the
//     id: a claim pushed through a lease ref, or one a claim arbiter
//     decided. A create that arrives by a plain git merge, or after this
//     clone pushed its own, cannot be renamed: the fold keeps the first
//     create by (at, id), records the second as a conflict ("card A4
//     already exists"), and folds every later event on the id onto the
//     first card, since nothing in an event says which create its writer
//     knew. bl sync warns, and bl doctor lists such cards
//     (Report.CreatedTwice); bl doctor --repair leaves them, and bl log
//     --id lists every event with its actor. A renamed event whose old
//     line was committed before (a plain git commit) and comes back by a
//     merge of a branch that kept it is two lines with one event id that
//     differ: the copy git brings in is quarantined and named by bl
//     doctor (see the quarantine below), never folded onto the other card.
//   - A union of two snapshots has two header lines, or card, receipt or
//     conflict lines out of order or repeated, or counts that do not match
//     its header, every line with a good checksum (or a git conflict
//     marker, from a merge made before the union rule). That is not damage: the
//     snapshot is stale and the backlog is folded in its normal form (see
//     Snapshot and compaction), in memory, until a writer rewrites it. A
//     snapshot whose archives hold fewer events than a header counts is
//     damage (the archives it folded are missing) when this clone wrote
//     it; one git wrote is rebuilt from the archives (below).
//   - A line that fails its checksum is damage everywhere (exit 6), with
//     one exception: lines git itself wrote. When the ledger does not
//     read and its bytes start with the blob git's index holds for it
//     (the blob id of that many bytes matches .git/index), the lines
//     among them that do not read — a teammate's push, taken by a plain
//     pull, merge, rebase or cherry-pick — are quarantined: moved to
//     ledger.jsonl.broken, listed in cache/quarantine.jsonl with the
//     commit HEAD names, and the ledger rewritten without them under the
//     lock (quarantine_git.go). Lines after those bytes are this clone's
//     own appends: damage there stays exit 6. A snapshot git tracks
//     (whatever bytes its attributes made of it on disk) that is not the
//     one last checked or compacted here (its sha256 in
//     cache/snapshot.vetted, believed only while git does not track that
//     file) is held to its events before it is indexed: one they do not
//     produce, or that counts events the archives do not hold (a line
//     dropped or damaged beside it, a revert), is rebuilt from the
//     archived events that read.
//   - Lines of git conflict markers (<<<<<<<, |||||||, =======, >>>>>>>),
//     from a merge made before the union rule, are damage that names
//     itself in the ledger and in an archive segment: the reader says "git
//     conflict markers" and points at bl doctor --repair, which drops the
//     marker lines and keeps every event between them (sorted, each once;
//     the ledger's repeated lines copied to ledger.jsonl.broken), then
//     rebuilds the snapshot. In the snapshot they make it stale.
//
// What each git operation does:
//
//	merge, pull        both sides' new lines kept (union); bl reads them in
//	                   order, each once
//	pull --rebase,     each replayed commit's appended lines are kept with
//	rebase, cherry-pick  the target's (union); same as a merge
//	both compacted     both segments kept (distinct names, or one name
//	                   holding the union of its lines); the snapshots'
//	                   union reads as stale; the ledger may get back lines
//	                   a compaction moved out, duplicates of archived
//	                   events, settled at read; the next writer normalizes
//	revert, reset      events are removed from the files; they come back
//	                   at the next merge of a branch that has them (a
//	                   grow-only set): undo is a bl command
//	autocrlf checkout  -text: no conversion; a file with "\r\n" lines from
//	                   elsewhere still reads
//	merge before the   conflict markers: exit 6 naming them until bl doctor
//	union rule         --repair
//
// These rules change no file bl writes, so they need no new format
// version (events and snapshots keep the versions above). A bl that
// predates them refuses, rather than misreads, what a union leaves: a ledger out of order or with
// a repeated line, and a snapshot with two headers or repeated cards, are
// damage to it (exit 6), and its bl doctor --repair sorts the ledger. The
// one file it could misread, an archive segment out of order (bl log would
// skip lines), only arises next to a union of two snapshots, which it
// refuses to open; a writer of this version writes such a segment back
// sorted when it rebuilds the snapshot.
//
// # Snapshot index
//
// cache/snapshot.idx is derived from snapshot.json so that a call reads
// only the snapshot lines it needs: a claim on a 100k-card backlog reads a
// handful of cards, not all of them. Compaction writes it; any load that
// finds it missing or not matching rebuilds it. It is little-endian binary:
//
//	magic "blidx005"
//	snapshot size (u64), mtime in ns (u64), CRC-32C of its header line (u32)
//	counts: cards, idempotency keys, request ids, claim-order entries (u32 each)
//	offset of the first conflict line in the snapshot (u64), references (u32)
//	four tables sorted by key (cards by id, cards by idempotency key,
//	  receipts by request id, and the references: a card's line under each
//	  id it names as parent, dependency or link, so bl show finds what
//	  names a card without reading the others), 20 bytes per entry: key offset and length in
//	  the string pool (u32, u32), line offset and length in the snapshot
//	  (u64, u32)
//	the ready, claimed and review cards in claim order: u32 position in
//	  the card table, then the end of the card's lease in Unix ns (i64, 0
//	  for none, the largest i64 for a card in review, which holds its
//	  paths until a verdict)
//	the string pool
//	a CRC-32 (IEEE) per 1 KiB block of all of the above (u32 each), the
//	  number of blocks (u32), and a CRC-32 (IEEE) of those two (u32); IEEE
//	  for the speed of its carry-less-multiply path, as the checkpoint's
//
// An index is used only when its trailer checksum holds and the snapshot's
// size, mtime and header checksum are the ones it names; each block is
// checked against its checksum when a call first reads it. Every line read
// through it is checked again (frame checksum, and that it holds the id,
// key or request asked for). The state reads through a source whose reads
// return errors: the first read the index cannot answer (a damaged block,
// a line that does not match) makes the source read the whole snapshot
// instead, from the same open file, and write a new index; that is the
// only fallback. A stale or damaged index therefore costs one full load,
// never a wrong answer. A read that still fails means the snapshot itself
// is damaged: the call that needed the line fails as corrupt (exit 6),
// never as "not found", and nothing is written. Cards changed since the
// snapshot come from the ledger, folded after the tail checkpoint.
//
// The fold itself never reads. The op rules, the selections, cycle and
// epic checks run on the cards in memory and list the ones they lacked;
// the store reads those lines and runs them again until nothing is lacking
// (resolve, internal/fold/reads.go), so a read error is returned before the fold, never
// met inside it. A claim reads the snapshot's claim order a few cards at a
// time, as far as its scan gets.
//
// # Tail checkpoint
//
// cache/tail.ckpt spares a call folding the whole ledger tail: at 100k
// cards a tail of a few hundred events touches a few hundred cards, each
// read from the snapshot, and decoding and folding them was most of what
// a heartbeat cost. It holds what the state is after the ledger's first
// bytes have been folded over the snapshot; a load applies it and folds
// only the lines after it. A writer, under the lock, rewrites it (temp
// file, rename) once 16 lines have been appended past it; a compaction
// removes it. It is not fsynced: nothing durable depends on it, and after
// a crash it is the old file (still the fold of the fsynced ledger bytes
// it names), the new one, or one whose checksums fail (empty, or a part
// of it), which a load ignores. A writer copies the lines of the cards it
// did not read since its load from the checkpoint it loaded, as they are,
// and encodes the rest. It is little-endian binary:
//
//	magic "bltail04"
//	20 u64 fields: the format version of the bl that wrote it; the
//	  snapshot's device, inode, size, mtime and ctime in ns and the
//	  CRC-32C of its header line; the ledger's device and inode; the
//	  ledger bytes and lines folded, where the ledger's own events start
//	  (past a prefix a cut-short compaction left), the CRC-32 (IEEE) of
//	  the folded bytes, summed as the writer read or appended them (a
//	  ledger rewritten in place under it writes no checkpoint); the
//	  state's event count, the cards created since the snapshot, the
//	  number of event id hashes, the number of cards held; the body's
//	  length and CRC-32 (IEEE); the CRC-32 (IEEE) of all of the header before this
//	  field (IEEE rather than CRC-32C: its fast path is ready at once,
//	  where CRC-32C's costs a short call ~0.2 ms to set up)
//	the body: the FNV-1a hashes of the event ids folded from the ledger
//	  (u64 each, ascending, what a later read checks a repeated id
//	  against, searched in place); each
//	  card's key, 36 bytes, in the order of the card lines: its priority
//	  (i64), its status (u32, its place in ready, claimed, review,
//	  blocked, done), its created_at and its lease's end (zero for none),
//	  each as Unix seconds (i64) and nanoseconds (u32); then framed lines:
//	  the newest event folded, as a ledger line; every card the state
//	  holds in memory (those the tail changed, and any it read), its
//	  receipts, and the conflicts the tail added, in fold order, as
//	  snapshot lines (the cards by id, each line starting {"card":{"id":)
//
// A load reads the file into memory (not mapped: bl replaces it by a
// rename, but a user or a tool may write it in place, and a mapping would
// then show bytes no check saw, or fault the process once it is cut
// short) and reads each card line's id and key,
// and decodes the line only when the call first needs that card (a
// heartbeat: one). The claim order
// (ready, claim) orders the cards by their keys, passes over those under a
// live lease when it looks for a claimable card, and decodes a card when
// it reaches it; the links to a card and its children decode the lines
// that hold the card's id in quotes, an idempotency key looked up those
// that hold the key in quotes (the encoder writes a string of printable
// ASCII without a quote or backslash as it is; a key with one decodes
// every line); a word typed for a card (an id prefix, a source key) those
// whose id has the prefix or that hold ":word" ending a string; the cards
// holding paths (a claim of a card with paths) those whose key says in
// review or under a live lease. Anything else that ranges over the cards
// in memory (a list of all cards, a rule that scans) decodes them all
// first. A line that does not decode to the card its id names, or to one
// with another key, fails the read that needs it, and a write
// that met it writes nothing. The checksums and the binding to the files
// are what make the keys trusted: a key forged to put a card out of a
// walk's reach is believed, as a forged card line is.
//
// A load uses it only when every check holds: its header and body
// checksums, the snapshot it was written for (device, inode, size,
// nanosecond mtime and ctime and header checksum are those of the
// snapshot being loaded: the ctime, which no one can set back, tells a
// snapshot rewritten in place with its mtime restored), the ledger (same
// device and inode, at least as long, and its first bytes have the
// checksum named, ending at a line end: every byte of that prefix is
// read and summed at each load, as nothing cheaper tells a line rewritten
// in place; a file's ctime or mtime would, but only to the kernel clock's
// tick, and a rewrite of the same size within the tick of the last
// append would pass), and every line reads (a card's: its id, in order, and a key for each, readable). Anything else (a compaction, a git pull, merge, rebase or
// reset, a normalization or quarantine rewriting the files, an import, a
// torn or garbage file, another format version) makes the load ignore it
// and fold the tail as without it: never an error, never another answer. A
// file force-added to git and pulled into another clone names that
// clone's inodes and mtimes only by chance no one can arrange, so it is
// never used there. A ledger that must be read sorted (a union merge) is
// folded without it. bl doctor reads the files, never the checkpoint.
//
// # Cursors
//
// A cursor names a point in history as "<unix nanoseconds>-<event id>" of
// the last event seen. Stamps lie within the years 2000 to 2200 (see
// Stamps), so the nanoseconds are always positive and fit an int64. Because history is ordered by (at, id), whichever
// file holds an event and wherever in it, "every event after the cursor"
// is well defined whichever file the events are in now.
//
// # Code map
//
// Where each section above is implemented. The package has five layers, each
// importing only the ones above it: internal/wire (the format: types, codec,
// framing, validation, errors; it imports nothing of the module),
// internal/fold (the pure fold: it imports wire and no package that reaches
// a file), internal/store (the files of a backlog directory and the state
// folded from them: loading, catching up, the append path, compaction, the
// quarantine of lines that arrive through git and do not read),
// internal/repair (bl doctor, the rebase of a sync round), and this package,
// the public API: the handle, the write requests and their rules (replays,
// stages, epics, paths), history, diff and git trees, naming the other
// layers' types with aliases (wire.go, fold.go, files.go). Neither store nor
// repair imports this package. Tests sit beside each file as <name>_test.go:
// the format's own (codec, framing, fast paths, their fuzz corpus) in
// internal/wire, the fold's tables in internal/fold, and here the store's,
// the API's and the fold's rules, which are tested through the API.
//
//	The .backlog directory   internal/store/init.go, file.go, config.go,
//	                         config_decode.go, config_reload.go, symlinks.go,
//	                         local_links.go, fs_linux.go, fs_other.go, seen.go;
//	                         files.go (the names)
//	Line framing             internal/wire/framing.go, json_value.go, crc.go;
//	                         internal/store/sync_linux.go, sync_other.go
//	Events                   internal/wire/schema.go (the wire types),
//	                         codec_gen.go (generated from schema.go),
//	                         event.go, event_encode.go, event_decode.go,
//	                         validate.go, version.go, errors.go, card.go,
//	                         linktypes.go, failure.go, snapshotline.go,
//	                         snapshot_decode.go; wire.go (the aliases)
//	Stamps                   internal/wire/stamps.go, validate.go;
//	                         internal/store/clock.go
//	The fold                 internal/fold/state.go (Apply, Check), ops.go
//	                         (the op table), fields.go (create and update,
//	                         and the fields' rules), reads.go and source.go
//	                         (what the fold is given), cycles.go, epics.go,
//	                         links.go, handoff.go, tombstone.go, select.go,
//	                         standing.go, paths.go, changes.go, snapshot.go,
//	                         restore.go (what the store builds a state with);
//	                         fold.go (the aliases), state.go (the public
//	                         State over the fold's), request.go
//	Review                   internal/fold/review.go; workflow.go
//	Paths                    internal/fold/paths.go, glob.go; paths.go
//	Assignee                 internal/fold/select.go (Filter.Claimer),
//	                         resolve.go (a card named by a prefix or a
//	                         source key); read.go, api.go
//	Appending                backlog.go (write, writeLocked), api.go (the
//	                         requests), workflow.go, publish.go, epics.go;
//	                         internal/store/store.go (Locked, Append: one
//	                         write, fsync, apply), batch.go (an import's
//	                         events, all or none), absorb.go
//	Reading                  read.go
//	Recovery                 internal/store/load.go, file.go, settled.go;
//	                         internal/repair/doctor.go, repair.go,
//	                         doctor_refold.go;
//	                         internal/wire/settle.go
//	Snapshot and compaction  internal/store/snapshot.go, snapshot_stream.go
//	                         (written line by line), compact.go,
//	                         normalize.go, segments.go
//	Journal                  internal/store/journal.go
//	Noted heartbeats         noted.go (answered through a remote without a
//	                         push; gitsync carries them)
//	Git                      git.go, diff.go, history.go; internal/store/tree.go,
//	                         history.go, quarantine.go (pulled lines that
//	                         do not read), quarantine_git.go (lines and
//	                         snapshots git itself wrote), tracked_local.go
//	                         (local files git tracks: not believed);
//	                         internal/repair/rebase.go, collide.go (a
//	                         card id two clones created; renamed.go, a
//	                         stale lease write under the old id);
//	                         internal/wire/cardrefs.go (the fields that
//	                         name a card); the git side is package gitsync
//	Snapshot index           internal/store/index.go, index_open.go,
//	                         index_write.go, source.go, mmap_*.go
//	Tail checkpoint          internal/store/checkpoint.go (format, checks,
//	                         load), checkpoint_write.go
//	Cursors                  internal/wire/cursor.go; history.go
//	Test histories           internal/wire/testing.go (shared by the tests)
package ledger
